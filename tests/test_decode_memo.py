"""mla.decode's memo of its previous call (issue 10: the default call at the graph floor).

A call that repeats the previous one on inputs with the same fingerprint skips the plan lookup and
the per-call guard (and, on CUDA, replays the plan's graph directly). These tests hold it to the
guard's own rules: anything the guard would look at again (an indptr written in place, a KV entry
replaced, config lengths or sm_scale changed, a check that failed since) takes the checked path.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import weakref

import pytest
import torch

import mla
import mla.backends as B
from mla import validate as V
from mla.backends import call_guard, clear_plans

BACKENDS = ["torch"]
if importlib.util.find_spec("triton") is not None and os.environ.get("TRITON_INTERPRET") == "1" \
        and not torch.cuda.is_available():
    BACKENDS.append("triton")
SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 and not torch.version.hip


@pytest.fixture(autouse=True)
def _fresh_plans():
    clear_plans()
    yield
    clear_plans()


def good(seed=0, **kw):
    return mla.generate_input(2, 1, 64, seed=seed, **kw)


@pytest.fixture
def guard_calls(monkeypatch):
    """How often the per-call guard ran (the memo's whole point is that it does not)."""
    calls = []
    orig = V.CallGuard.__call__

    def counting(self, data, validate="auto"):
        calls.append(1)
        return orig(self, data, validate)
    monkeypatch.setattr(V.CallGuard, "__call__", counting)
    return calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
def test_a_repeated_call_skips_the_guard_and_stays_right(backend, kv_format, guard_calls):
    data = good()
    first = mla.decode(data, backend=backend, kv_format=kv_format).clone()
    for _ in range(4):
        out = mla.decode(data, backend=backend, kv_format=kv_format)
        assert torch.equal(out, first)
    assert guard_calls == []  # (the build validated them; the memo matched every call after)
    assert mla.check(data, out)[0]
    # the same tensors in a new tuple are the same inputs: still the memo
    mla.decode(tuple(data), backend=backend, kv_format=kv_format)
    assert guard_calls == []
    # new contents written into the same q buffer (a serving loop): the memo, and the new answer
    other = good(seed=7)
    data[0].copy_(other[0])
    out = mla.decode(data, backend=backend, kv_format=kv_format)
    assert guard_calls == []
    assert mla.check(data, out)[0] and not torch.equal(out, first)


def test_another_request_takes_the_checked_path(guard_calls):
    data = good()
    mla.decode(data, backend="torch", kv_format="fp8")
    mla.decode(data, backend="torch", kv_format="fp8")
    assert guard_calls == []
    mla.decode(data, backend="torch", kv_format="bf16")  # another format: another plan (built, admitted)
    mla.decode(data, backend="torch", kv_format="fp8")  # back: the memo is the bf16 call's, so checked
    assert len(guard_calls) == 1
    mla.decode(data, backend="torch", kv_format="fp8", validate="full")  # another request
    assert len(guard_calls) == 2


def test_an_indptr_written_in_place_is_caught_after_memo_hits():
    data = good()
    for _ in range(3):
        mla.decode(data, backend="torch", kv_format="fp8")
    data[3][1] = 0  # the version counter moves: the fingerprint differs
    with pytest.raises(ValueError, match="zero-length sequence"):
        mla.decode(data, backend="torch", kv_format="fp8")
    with pytest.raises(ValueError, match="zero-length sequence"):
        mla.decode(data, backend="torch", kv_format="fp8")


def test_a_replaced_kv_entry_is_read_not_the_memo():
    data = good()
    mla.decode(data, backend="torch", kv_format="bf16")
    other = good(seed=3)
    data[1]["bf16"] = other[1]["bf16"]  # (the dict edited in place: same tuple, same dict object)
    out = mla.decode(data, backend="torch", kv_format="bf16")
    assert mla.check(data, out)[0]
    assert torch.equal(out, mla.decode(other, backend="torch", kv_format="bf16"))


def test_config_lengths_edited_in_place_are_seen():
    lens = [40, 64]
    data = good(kv_lens=lens)
    data[4]["kv_lens"] = list(lens)  # a list, as a user might pass it
    mla.decode(data, backend="torch", kv_format="fp8")
    data[4]["kv_lens"][0] = 41  # disagrees with the indptrs now: the guard must say so
    with pytest.raises(ValueError, match="kv_lens"):
        mla.decode(data, backend="torch", kv_format="fp8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_sm_scale_is_part_of_the_plan(backend):
    """Plans bake config's sm_scale in at build: two configs differing only there get two plans
    (before, the second call silently reused the first one's scale)."""
    data = good()
    a = mla.decode(data, backend=backend, kv_format="bf16").clone()
    scaled = data[:4] + (dict(data[4], sm_scale=data[4]["sm_scale"] * 3.0),)
    b = mla.decode(scaled, backend=backend, kv_format="bf16")
    assert mla.check(scaled, b)[0] and not torch.equal(a, b)
    data[4]["sm_scale"] *= 3.0  # edited in place on the memo's own inputs
    assert torch.equal(mla.decode(data, backend=backend, kv_format="bf16"), b)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf"), "0.04", True])
def test_a_bad_sm_scale_is_a_value_error(value):
    data = good()
    data[4]["sm_scale"] = value
    with pytest.raises(ValueError, match=r"config\['sm_scale'\] must be a finite number > 0"):
        mla.decode(data, backend="torch", kv_format="bf16")


def test_a_check_that_fails_later_voids_the_memo(monkeypatch):
    """The memo's last call queued a contents check that fails after the call returned, and another
    caller collects it (wait_pending): the next call on those inputs must raise, not replay."""
    from mla.validate import _Pending

    finished = []
    monkeypatch.setattr(_Pending, "done", lambda self: bool(finished))  # (a GPU check still running)
    monkeypatch.setattr(_Pending, "wait", lambda self: finished.append(1))
    data = good()
    mla.decode(data, backend="torch", kv_format="bf16")
    bad = data[:3] + (torch.tensor([0, 100, 128], dtype=torch.int32), data[4])
    mla.decode(bad, backend="torch", kv_format="bf16")  # queued, not finished: returns (the memo is bad's)
    assert B._last is not None and not finished
    with pytest.raises(ValueError, match="kv_indptr gives batch element 0 100 KV tokens"):
        V.wait_pending()
    assert not V._PENDING
    with pytest.raises(ValueError, match="kv_indptr gives batch element 0 100 KV tokens"):
        mla.decode(bad, backend="torch", kv_format="bf16")  # (checked again: queued, finished, raised)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_memo_keeps_no_input_alive(backend):
    data = good()
    mla.decode(data, backend=backend, kv_format="mxfp4")
    mla.decode(data, backend=backend, kv_format="mxfp4")
    refs = [weakref.ref(t) for t in (data[0], data[1]["mxfp4"][0], data[1]["mxfp4"][1], data[2], data[3])]
    del data
    gc.collect()
    assert [r() for r in refs] == [None] * 5


def test_clear_plans_clears_the_memo(guard_calls):
    data = good()
    mla.decode(data, backend="torch", kv_format="fp8")
    assert B._last is not None
    clear_plans()
    assert B._last is None
    mla.decode(data, backend="torch", kv_format="fp8")  # a new plan: built and admitted, no guard call
    mla.decode(data, backend="torch", kv_format="fp8")
    assert guard_calls == []
    assert call_guard(mla.plan(data, backend="torch", kv_format="fp8")).full_checks == 1


@pytest.mark.skipif(not SM90, reason="needs an sm90 GPU (CUDA graphs, the Triton default)")
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
def test_gpu_memo_replays_the_graph_directly(kv_format):
    data = mla.generate_input(4, 1, 1024, seed=0, device="cuda")
    outs = [mla.decode(data, backend="triton", kv_format=kv_format).clone() for _ in range(4)]
    kp = mla.plan(data, backend="triton", kv_format=kv_format).kernel_plan
    assert B._last is not None and B._last.replay is not None  # launch, capture, then the direct replay
    before = dict(kp.call_paths)
    out = mla.decode(data, backend="triton", kv_format=kv_format)
    assert kp.call_paths["replay"] == before["replay"] + 1 and kp.call_paths["launch"] == before["launch"]
    assert all(torch.equal(o, out) for o in outs) and mla.check(data, out)[0]
    # new contents in the same buffers: the graph reads them
    data[0].copy_(mla.generate_input(4, 1, 1024, seed=5, device="cuda")[0])
    assert mla.check(data, mla.decode(data, backend="triton", kv_format=kv_format))[0]
    # inside someone else's capture the memo does not replay a graph: the plan launches plainly
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        captured = mla.decode(data, backend="triton", kv_format=kv_format)
    torch.cuda.current_stream().wait_stream(s)
    captured.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert mla.check(data, captured)[0]
