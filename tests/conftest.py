"""On a machine without a GPU, Triton kernels run under the interpreter; the switch must be set
before anything imports triton, so it lives here (pytest loads conftest first)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
