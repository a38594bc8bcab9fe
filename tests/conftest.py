"""On a machine without a GPU, Triton kernels run under the interpreter; the switch must be set
before anything imports triton, so it lives here (pytest loads conftest first)."""

import os
import zlib

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
    shard = _shard(config)
    if shard is not None:
        i, n = shard
        mine = [zlib.crc32(it.nodeid.encode()) % n == i - 1 for it in items]
        config.hook.pytest_deselected(items=[it for it, m in zip(items, mine) if not m])
        items[:] = [it for it, m in zip(items, mine) if m]


def pytest_addoption(parser):
    parser.addoption("--shard", default=None, metavar="I/N",
                     help="run the I-th of N disjoint parts of the collected tests (1-based; by a stable hash of "
                          "each test's id), so a run too long for one device call splits into calls that each end")


def _shard(config):
    spec = config.getoption("--shard")
    if spec is None:
        return None
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard takes I/N, e.g. 1/2, not {spec!r}") from None
    if not 1 <= i <= n:
        raise pytest.UsageError(f"--shard {spec}: I must be 1..N")
    return i, n


def pytest_configure(config):
    _shard(config)  # a bad spec stops the run before collection
    if torch.cuda.is_available():
        # xdist workers share the card: a test out of GPU memory beside the others runs again alone (gpu_share.py)
        import gpu_share
        config.pluginmanager.register(gpu_share, "gpu_share")


if torch.cuda.is_available() and os.environ.get("PYTEST_XDIST_WORKER"):
    @pytest.fixture(autouse=True)
    def _share_the_card():
        """Workers share one GPU: a test that held several GB in torch's cache keeps it from the others, so hand
        it back (an out-of-memory error that still comes runs the test again alone: gpu_share.py)."""
        yield
        if torch.cuda.memory_reserved() > 2 << 30:
            torch.cuda.empty_cache()
