"""On a machine without a GPU, Triton kernels run under the interpreter; the switch must be set
before anything imports triton, so it lives here (pytest loads conftest first)."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    """Files in the order `make test` hands them to its workers (--dist loadfile --no-loadscope-reorder):
    the notebook replays first (~2.5 min in two tests of a 5-test file, which xdist's own order, most
    tests first, left to the end of the run), then the rest by test count as xdist would order them."""
    count, first = {}, {}
    for i, item in enumerate(items):
        count[item.path] = count.get(item.path, 0) + 1
        first.setdefault(item.path, i)
    items.sort(key=lambda it: (it.path.name != "test_notebooks.py", -count[it.path], first[it.path]))


if torch.cuda.is_available() and os.environ.get("PYTEST_XDIST_WORKER"):
    @pytest.fixture(autouse=True)
    def _share_the_card():
        """Workers share one GPU: a test that held several GB in torch's cache keeps it from the others
        (799dab6's whole suite ran 2 tests out of memory with 12 workers on 80 GB), so hand it back."""
        yield
        if torch.cuda.memory_reserved() > 2 << 30:
            torch.cuda.empty_cache()
