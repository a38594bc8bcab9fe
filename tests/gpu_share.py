"""Workers of one pytest-xdist run sharing one GPU: a test that runs out of GPU memory beside the others is run
again alone on the card, and the run says so.

Every test holds a shared lock on one file for its setup, call and teardown. A test whose call raises
`torch.OutOfMemoryError` drops its frames, takes the lock exclusively - which waits until every test running in
the other workers has ended and lets none start - and runs once more; that second run's verdict is the test's.
An out-of-memory error is then a fact about the shared card (799dab6's whole suite at 12 workers on an 80 GB H100
ran 2 tests out of memory; alone they pass), not a verdict on the test, and a test that runs out of memory alone
still fails. The terminal summary and each report's `user_properties` (the junit XML's properties) name the tests
that ran again.

`tests/conftest.py` registers this plugin on any machine with a GPU; `-p gpu_share` (with `tests/` on the path)
registers it anywhere, which is how `tests/test_gpu_share.py` checks it on a CPU with a simulated error.
"""

import fcntl
import gc
import os
import sys
import tempfile

import pytest
import torch

RERUN_KEY = "rerun_alone_after_cuda_oom"
LOCK_PATH = os.environ.get("MLA_GPU_SHARE_LOCK") or os.path.join(
    tempfile.gettempdir(), f"mla-gpu-share-{os.getuid()}.lock")
_lock = None


def _flock(mode):
    global _lock
    if _lock is None:
        _lock = open(LOCK_PATH, "a+")
    fcntl.flock(_lock, mode)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _flock(fcntl.LOCK_SH)
    try:
        yield
    finally:
        _flock(fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    if outcome.excinfo is None or not issubclass(outcome.excinfo[0], torch.OutOfMemoryError):
        return
    first = str(outcome.excinfo[1]).splitlines()[0][:160]
    # the failed attempt's tensors live on in its traceback's frames: drop every reference to them, then free
    outcome.force_result(None)
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    item.user_properties.append((RERUN_KEY, first))
    _flock(fcntl.LOCK_EX)  # flock converts by releasing the shared lock first, so two such tests cannot deadlock
    try:
        item.runtest()
    except BaseException as exc:  # the verdict of the run alone
        outcome.force_exception(exc)
    finally:
        _flock(fcntl.LOCK_SH)


def pytest_terminal_summary(terminalreporter):
    reruns = sorted({rep.nodeid for reps in terminalreporter.stats.values() for rep in reps
                     if any(k == RERUN_KEY for k, _ in getattr(rep, "user_properties", ()))})
    if reruns:
        terminalreporter.write_sep("=", f"{len(reruns)} tests ran out of GPU memory beside other workers and ran "
                                        "again alone (their verdicts are the second runs')")
        for nodeid in reruns:
            terminalreporter.write_line(nodeid)
