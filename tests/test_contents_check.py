"""The queued contents check as one kernel (mla/kernels/triton/contents_check.py) against the torch rule
of mla.validate (CallGuard._bad over _contents_bounds): the same verdict on every case, on CPU under the
interpreter and, on a GPU, compiled and writing a pinned host flag, as CallGuard._queue uses it."""

import os

import pytest
import torch

import mla
from mla import validate

CUDA = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"
pytestmark = pytest.mark.skipif(not CUDA and os.environ.get("TRITON_INTERPRET", "0") != "1",
                                reason="CPU runs need TRITON_INTERPRET=1 (set by the test suite's conftest)")


def _indptrs(lens, device):
    kv = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=device)
    qo = torch.arange(len(lens) + 1, dtype=torch.int32, device=device)
    return qo, kv


SCALES = [1.0, 0.0173, 1e-40, 3.4e38, 0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("with_scale", [False, True])
def test_one_kernel_check_gives_the_torch_rules_verdict(with_scale):
    from mla.kernels.triton.contents_check import ContentsCheck

    device = "cuda" if CUDA else "cpu"
    lens = [5, 17, 3, 1024]
    ref = tuple(t.clone() for t in _indptrs(lens, device))
    guard = validate.CallGuard("fp8" if with_scale else "bf16")
    guard.canonical = ref
    guard._bounds = validate._contents_bounds(ref, with_scale)
    check = ContentsCheck(ref, with_scale)
    flags = torch.zeros(4, dtype=torch.bool, pin_memory=CUDA)

    cases = []
    qo, kv = _indptrs(lens, device)
    for s in SCALES if with_scale else [None]:
        cases.append((qo, kv, None if s is None else torch.tensor([s], dtype=torch.float32, device=device)))
    scale_ok = torch.tensor([0.5], dtype=torch.float32, device=device) if with_scale else None
    for i in range(len(lens) + 1):  # one entry off, in either indptr
        for which in (0, 1):
            a, b = (t.clone() for t in _indptrs(lens, device))
            (a if which == 0 else b)[i] += 1
            cases.append((a, b, scale_ok))
    verdicts = []
    for k, (a, b, s) in enumerate(cases):
        want = bool(guard._bad(a, b, s))
        slot = k % 2  # both pointer alignments of the ring's flags
        flags[slot] = not want
        check(a, b, s, flags[slot])
        if CUDA:
            torch.cuda.synchronize()
        assert bool(flags[slot]) == want, (k, a.tolist(), b.tolist(), None if s is None else s.item())
        verdicts.append(want)
    assert True in verdicts and (False in verdicts)  # both verdicts were exercised


def test_a_long_batch_takes_several_steps():
    from mla.kernels.triton.contents_check import CHECK_BLOCK, ContentsCheck

    device = "cuda" if CUDA else "cpu"
    n = CHECK_BLOCK + 7
    ref = (torch.arange(n, dtype=torch.int32, device=device), 3 * torch.arange(n, dtype=torch.int32, device=device))
    check = ContentsCheck(ref, False)
    flag = torch.zeros(1, dtype=torch.bool, pin_memory=CUDA)
    for pos, expect in ((None, False), (n - 1, True), (CHECK_BLOCK, True), (0, True)):
        kv = ref[1].clone()
        if pos is not None:
            kv[pos] -= 1
        flag[0] = not expect
        check(ref[0], kv, None, flag[0])
        if CUDA:
            torch.cuda.synchronize()
        assert bool(flag[0]) == expect, pos


def test_wrong_length_is_a_value_error():
    from mla.kernels.triton.contents_check import ContentsCheck

    ref = _indptrs([4, 4], "cpu")
    check = ContentsCheck(ref, False)
    with pytest.raises(ValueError, match="entries"):
        check(*_indptrs([4, 4, 4], "cpu"), None, torch.zeros(1, dtype=torch.bool))


@pytest.mark.skipif(not CUDA, reason="the guard builds the one-kernel check on CUDA only")
def test_the_guard_queues_the_kernel_check_and_a_bad_indptr_still_raises():
    mla.backends.clear_plans()
    data = mla.generate_input(4, 1, 256, seed=0, device="cuda")
    mla.decode(data, backend="triton", kv_format="fp8")
    guard = next(g for _, g in mla.backends._plans.values())
    assert guard._check is not None
    fresh = mla.generate_input(4, 1, 256, seed=13, device="cuda")
    before = guard.queued_checks
    mla.decode(fresh, backend="triton", kv_format="fp8")
    assert guard.queued_checks == before + 1
    validate.wait_pending()
    bad = mla.generate_input(4, 1, 256, seed=26, device="cuda")
    bad[3][2] += 1  # kv_indptr no longer what config's lengths imply (the version counter moves: a new signature)
    with pytest.raises(ValueError):
        mla.decode(bad, backend="triton", kv_format="fp8")
        validate.wait_pending()
    mla.backends.clear_plans()
