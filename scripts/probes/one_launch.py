#!/usr/bin/env python3
"""One decode of a case with a named Triton variant, for Nsight Compute (``ncu --launch-skip 1``):
the first call compiles and warms up, the second is the one to profile.

    ncu --launch-skip 1 --launch-count 1 -k regex:gluon python scripts/probes/one_launch.py \\
        bs256-kv8192-q1-h16 fp8 v91_n64_w4_s3_gl      (kv_format "auto": the variant's first format;
                                                      variant "default": the default call's plan)
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import mla  # noqa: E402
from mla.problem import case_from_name  # noqa: E402

case_name, kv_format, variant = sys.argv[1:4]
if kv_format == "auto":  # the variant's own format (generation 3 variants take one)
    from mla.kernels.triton.variants import VARIANTS
    kv_format = VARIANTS[variant].kv_formats[0]
c = case_from_name(case_name)
data = mla.generate_case(c, device="cuda")
kw = {} if variant == "default" else dict(variant=variant)
p = mla.plan(data, backend="triton", kv_format=kv_format, graph=False, **kw)
for _ in range(2):
    out = p.run(data)
torch.cuda.synchronize()
ok, msg = mla.check(data, out)  # a profiled launch is reported only beside its own passing check
print(case_name, kv_format, variant, p.config, "check:", msg)
sys.exit(0 if ok else 1)
