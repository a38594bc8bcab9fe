"""Backends on CPU: the torch backend against the reference, plan reuse on fresh inputs, and the
registry's refusals (unknown names, unsupported formats/configs, backends unavailable here)."""

from __future__ import annotations

import functools
import importlib
import sys
import types
import warnings

import pytest
import torch

import mla
from mla.backends import BackendUnavailable, clear_plans, decode, get_backend
from mla.backends import plan as get_plan
from mla.inputs import generate_case
from mla.problem import SMOKE, Case
from mla.reference import reference

reg = importlib.import_module("mla.backends")


@functools.cache
def _smoke(case: Case):
    data = generate_case(case)
    return data, reference(data)


@pytest.mark.parametrize("case", SMOKE, ids=lambda c: c.name)
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
def test_torch_backend_matches_reference(case, kv_format):
    data, truth = _smoke(case)
    out = decode(data, backend="torch", kv_format=kv_format)
    assert out.dtype == torch.bfloat16 and out.shape == (case.batch_size * case.q_seq_len, case.num_heads, 512)
    # against the same-format reference: only bf16 rounding remains (the format's own error is
    # ~3e-2 for fp8 and ~1.3e-1 for MXFP4 against the bf16 truth, far above this bound)
    m = mla.accuracy_metrics(out, reference(data, kv_format=kv_format))
    assert m["rel_l2"] < 1e-2 and m["nonfinite"] == 0
    ok, msg = mla.check(data, out, reference_output=truth)
    assert ok, msg


@pytest.mark.parametrize("kv_format", ["fp8", "mxfp4"])
def test_plan_is_reused_on_fresh_inputs(kv_format):
    """A plan is per shape: running it on new inputs (another fp8 scale, other MXFP4 scales) must
    compute on those inputs, not on anything captured at plan time."""
    case = Case(3, 96, seed=21)
    a, b = generate_case(case), generate_case(case, seed=99)
    # rebuild b's quantized caches from 3x its bf16 cache, so its fp8 scale surely differs from a's
    # (two random draws can share a bf16 amax, hence an fp8 scale)
    kv3 = (b[1]["bf16"].float() * 3).bfloat16()
    packed, scales = mla.quant.quantize_mxfp4(kv3.reshape(-1, 576))
    padded = torch.zeros_like(b[1]["mxfp4"][1])
    padded[:, :18] = scales
    b = (b[0], {"bf16": kv3, "fp8": mla.quant.quantize_fp8(kv3), "mxfp4": (packed.reshape(-1, 1, 288), padded)},
         *b[2:])
    assert not torch.equal(a[1]["fp8"][1], b[1]["fp8"][1])  # the two scales differ
    p = get_plan(a, backend="torch", kv_format=kv_format)
    assert get_plan(b, backend="torch", kv_format=kv_format) is p  # same shape: cached plan
    out_b = p.run(b).clone()
    assert mla.accuracy_metrics(out_b, reference(b, kv_format=kv_format))["rel_l2"] < 1e-2
    assert mla.accuracy_metrics(out_b, reference(a, kv_format=kv_format))["rel_l2"] > 0.5
    clear_plans()


def test_poison_marks_every_output():
    data = generate_case(Case(2, 64, seed=5))
    p = get_plan(data, backend="torch", kv_format="bf16")
    p.run(data)
    p.poison()
    assert all(torch.isnan(t.float()).all() for t in p.outputs)
    assert not torch.isnan(p.run(data).float()).any()  # and the call writes all of it
    clear_plans()


def test_registry_refusals():
    data = generate_case(Case(2, 64, seed=5))
    with pytest.raises(ValueError, match="unknown backend"):
        decode(data, backend="cudnn")
    with pytest.raises(ValueError, match="unknown kv_format"):
        decode(data, backend="torch", kv_format="int8")
    with pytest.raises(ValueError, match="does not support q_format"):
        decode(data, backend="torch", kv_format="fp8", q_format="fp8")
    with pytest.raises(ValueError, match="takes no config"):
        decode(data, backend="torch", kv_format="fp8", num_splits=4)
    with pytest.raises(ValueError, match="does not support kv_format"):
        decode(data, backend="flashinfer", kv_format="mxfp4")


@pytest.mark.parametrize("name, why", [("flashinfer", "NVIDIA GPU"), ("aiter", "ROCm")])
def test_gpu_backends_unavailable_here_say_why(name, why):
    if torch.cuda.is_available() and name == "flashinfer":
        pytest.skip("on a CUDA machine flashinfer may be available, or missing for another reason")
    ok, reason = get_backend(name).availability()
    assert not ok and why in reason
    with pytest.raises(BackendUnavailable, match=why):
        decode(generate_case(Case(2, 64, seed=5)), backend=name, kv_format="bf16")


def test_listing_names_every_backend_with_a_reason():
    from mla.bench.cli import backend_table

    rows = {r["name"]: r for r in backend_table()}
    assert set(rows) == set(reg._BACKEND_MODULES)
    assert rows["torch"]["available"]
    for r in rows.values():
        assert r["available"] or r["reason"]  # never unavailable without saying why


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_torch_backend_on_gpu_matches_reference():  # runs on the device machine only
    data = generate_case(Case(4, 1024, seed=1), device="cuda")
    for fmt in ("bf16", "fp8", "mxfp4"):
        out = decode(data, backend="torch", kv_format=fmt)
        assert mla.accuracy_metrics(out, reference(data, kv_format=fmt))["rel_l2"] < 1e-2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
@pytest.mark.parametrize("case", [Case(4, 1000, seed=2, kv_lens=(1, 7, 33, 1000)), Case(3, 70, seed=3, q_seq_len=4),
                                  Case(2, 300, seed=4, num_heads=32)], ids=lambda c: c.name)
def test_triton_backend_on_gpu_matches_reference(kv_format, case):
    """On a GPU the Triton kernels run compiled (tests/test_triton_kernels.py covers them under the
    CPU interpreter): default variants and graphs, fresh inputs, poisoned outputs, own-format check."""
    data = generate_case(case, device="cuda")
    for graph in (False, True):
        p = get_plan(data, backend="triton", kv_format=kv_format, graph=graph)
        p.poison()
        out = p.run(data)
        assert not torch.isnan(out.float()).any()
        assert mla.accuracy_metrics(out, reference(data, kv_format=kv_format))["rel_l2"] < 1e-2
        ok, msg = mla.check(data, out)
        assert ok, msg
    clear_plans()


@pytest.mark.skipif(not torch.cuda.is_available() or importlib.util.find_spec("flashinfer") is None,
                    reason="needs a GPU with flashinfer")
def test_flashinfer_fp8_on_fresh_inputs_folds_the_scale_without_a_host_read():
    """The plan's scale is read once (its float reused while that tensor comes back unmodified); a new
    input's scale is folded into q and the output on the device. Both are right against the fp8 reference,
    and a fresh call makes no host read (torch's sync debug mode would raise on one)."""
    try:
        get_backend("flashinfer").plan(generate_case(Case(2, 64, seed=1), device="cuda"), kv_format="fp8",
                                        q_format="bf16")
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    plan = get_plan(generate_case(Case(4, 1000, seed=5), device="cuda"), backend="flashinfer", kv_format="fp8")
    for seed in (5, 18, 31):  # 5: the plan's own inputs (the float path); 18, 31: fresh tensors (folded)
        data = generate_case(Case(4, 1000, seed=seed), device="cuda")
        for t in plan.outputs:
            t.fill_(float("nan"))
        if seed == 5:
            out = plan.run(data)
        else:  # torch raises on a synchronizing call (a .item()) in this mode
            torch.cuda.set_sync_debug_mode("error")
            try:
                out = plan.run(data)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        m = mla.accuracy_metrics(out, reference(data, kv_format="fp8"))
        assert m["rel_l2"] < 1e-2 and m["nonfinite"] == 0, (seed, m)
        ok, msg = mla.check(data, out, reference_output=reference(data))
        assert ok, (seed, msg)


class _FakeFlashInferWrapper:
    """A stand-in for FlashInfer's BatchMLAPagedAttentionWrapper: records its plan/run calls."""

    last = None

    def __init__(self, workspace, backend="auto"):
        self._backend, self.plans, self.runs = "fa3", [], []
        _FakeFlashInferWrapper.last = self


class _StructuralFakeWrapper(_FakeFlashInferWrapper):  # FlashInfer 0.7.2's signatures, trimmed
    def plan(self, qo_indptr=None, kv_indptr=None, kv_indices=None, kv_len_arr=None, num_heads=None,
             head_dim_ckv=None, head_dim_kpe=None, page_size=None, causal=None, sm_scale=None, q_data_type=None,
             kv_data_type=None, use_profiler=False, *, metadata=None, query_layout=None, kv_cache_layout=None,
             scale_mode="default"):
        self.plans.append(dict(locals(), self=None))

    def run(self, q_nope=None, q_pe=None, ckv_cache=None, kpe_cache=None, out=None, lse=None, return_lse=False, *,
            query=None, kv_cache=None, ckv_scale=None, kpe_scale=None):
        self.runs.append(dict(locals(), self=None))
        return out


class _LegacyFakeWrapper(_FakeFlashInferWrapper):  # FlashInfer < 0.7.2
    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv, head_dim_kpe, page_size,
             causal, sm_scale, q_data_type, kv_data_type, use_profiler=False):
        self.plans.append(dict(locals(), self=None))

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None, return_lse=False, *, ckv_scale=None,
            kpe_scale=None):
        self.runs.append(dict(locals(), self=None))
        return out


class _FakePlanMetadata(types.SimpleNamespace):
    @classmethod
    def csr(cls, qo_indptr, kv_indptr, kv_indices, kv_len_arr):
        return cls(qo_indptr=qo_indptr, kv_indptr=kv_indptr, kv_indices=kv_indices, kv_len_arr=kv_len_arr)


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.data_ptr(), a.shape, a.stride(), a.dtype) == (b.data_ptr(), b.shape, b.stride(), b.dtype)


def _joined(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """The one [..., 576] tensor whose [..., :512] and [..., 512:] views left and right are (asserted)."""
    whole = left.as_strided(left.shape[:-1] + (576,), left.stride())
    assert _same_view(left, whole[..., :512]) and _same_view(right, whole[..., 512:])
    return whole


@pytest.mark.parametrize("kv_format", ["bf16", "fp8"])
@pytest.mark.parametrize("api", ["structural", "legacy"])
def test_flashinfer_call_form_passes_views_of_the_calls_q_and_cache(monkeypatch, api, kv_format):
    """The call form is read from the wrapper's signatures at plan time: FlashInfer >= 0.7.2 (run(query=,
    kv_cache=), plan(metadata=)) gets the call's packed q and cache themselves, by keyword; an older one the
    positional q_nope/q_pe/ckv/kpe views of them. No copies either way, fresh inputs reach the wrapper (not the
    plan's tensors), and the fp8 scale goes as ckv_scale = kpe_scale. (A fake flashinfer module: runs on a CPU.)"""
    from mla.backends.flashinfer_backend import FlashInferBackend

    mla_mod = types.ModuleType("flashinfer.mla")
    mla_mod.BatchMLAPagedAttentionWrapper = _StructuralFakeWrapper if api == "structural" else _LegacyFakeWrapper
    if api == "structural":
        mla_mod.MLAPlanMetadata = _FakePlanMetadata
    fi = types.ModuleType("flashinfer")
    fi.mla, fi.__version__ = mla_mod, f"fake-{api}"
    monkeypatch.setitem(sys.modules, "flashinfer", fi)
    monkeypatch.setitem(sys.modules, "flashinfer.mla", mla_mod)

    case, device = Case(3, 70, seed=3), ("cuda" if torch.cuda.is_available() else "cpu")  # (the fold: Triton)
    data = generate_case(case, device=device)
    plan = FlashInferBackend().plan(data, kv_format=kv_format, q_format="bf16")
    wrapper = _FakeFlashInferWrapper.last
    assert plan.config["fi_api"] == api
    (p,) = wrapper.plans
    if api == "structural":  # all by keyword: canonical CSR metadata, packed layouts
        assert p["qo_indptr"] is p["kv_indptr"] is p["kv_indices"] is p["kv_len_arr"] is None
        assert p["metadata"].qo_indptr is data[2] and p["metadata"].kv_indptr is data[3]
        assert p["query_layout"] == p["kv_cache_layout"] == "packed"
    else:
        assert p["qo_indptr"] is data[2] and p["kv_indptr"] is data[3]
    assert (p["num_heads"], p["head_dim_ckv"], p["head_dim_kpe"], p["page_size"]) == (16, 512, 64, 1)
    assert p["causal"] is False

    for d in (data, generate_case(case, device=device, seed=77)):  # the plan's inputs, then fresh tensors
        out = plan.run(d)
        r = wrapper.runs[-1]
        assert out is r["out"] is plan.outputs[0]
        q, kv = d[0], (d[1]["bf16"] if kv_format == "bf16" else d[1]["fp8"][0])
        if api == "structural":  # FlashInfer's fa2/fa3 split these into the legacy form's views themselves
            assert r["q_nope"] is r["q_pe"] is r["ckv_cache"] is r["kpe_cache"] is None
            got_q, got_kv = r["query"], r["kv_cache"]
        else:
            got_q, got_kv = _joined(r["q_nope"], r["q_pe"]), _joined(r["ckv_cache"], r["kpe_cache"])
        assert _same_view(got_kv, kv)
        if kv_format == "bf16":
            assert _same_view(got_q, q) and r["ckv_scale"] is None and r["kpe_scale"] is None
        elif d is data:  # the plan's scale: its float
            assert _same_view(got_q, q) and r["ckv_scale"] == r["kpe_scale"] == d[1]["fp8"][1].item()
        else:  # a fresh scale, folded on the device: the query is the fold's buffer (q * s), the scale 1.0
            assert got_q.data_ptr() != q.data_ptr() and got_q.shape == q.shape
            assert torch.allclose(got_q.float(), q.float() * d[1]["fp8"][1].float(), rtol=2.0**-7, atol=0)
            assert r["ckv_scale"] == r["kpe_scale"] == 1.0


@pytest.mark.skipif(not torch.cuda.is_available() or importlib.util.find_spec("flashinfer") is None,
                    reason="needs a GPU with flashinfer")
@pytest.mark.parametrize("kv_format", ["bf16", "fp8"])
def test_flashinfer_on_gpu_raises_no_deprecation_and_matches_reference(monkeypatch, kv_format):
    """FlashInfer >= 0.7.2 deprecates the flat plan, the positional and the q_nope/q_pe/ckv/kpe run forms: a fresh
    plan and its runs (own inputs, then fresh ones) raise none of its DeprecationWarnings, are right against the
    reference, and give bitwise the legacy call's output (the same views reach the same kernel)."""
    import flashinfer

    import mla.backends.flashinfer_backend as fb

    backend, case = get_backend("flashinfer"), Case(4, 1000, seed=6)
    ok, why = backend.availability()
    if not ok:
        pytest.skip(why)
    data, fresh = generate_case(case, device="cuda"), generate_case(case, device="cuda", seed=61)
    structural, _ = fb.call_forms(flashinfer.mla)
    # FlashInfer attributes its API deprecations to its caller, our backend module: the error filter is scoped
    # to that module, so that an unrelated deprecation (JIT toolchain, torch) cannot fail this test
    ours = r"mla\.backends\.flashinfer_backend\Z"
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", category=DeprecationWarning, module=ours)
            plan = backend.plan(data, kv_format=kv_format, q_format="bf16")
            outs = [plan.run(d).clone() for d in (data, fresh)]
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    assert plan.config["fi_api"] == ("structural" if structural else "legacy")
    for d, out in zip((data, fresh), outs):
        m = mla.accuracy_metrics(out, reference(d, kv_format=kv_format))
        assert m["rel_l2"] < 1e-2 and m["nonfinite"] == 0, m
        ok, msg = mla.check(d, out, reference_output=reference(d))
        assert ok, msg
    if structural:  # the legacy form on the same inputs (it warns: ignored here)
        monkeypatch.setattr(fb, "call_forms", lambda mla_mod: (False, True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            legacy = backend.plan(data, kv_format=kv_format, q_format="bf16")
            assert legacy.config["fi_api"] == "legacy"
            for d, out in zip((data, fresh), outs):
                assert torch.equal(legacy.run(d), out)


@pytest.mark.parametrize("value", [0.37, 2.0**-7, 0.0, -1.0, float("inf"), float("nan")])
def test_fp8_scale_fold_is_q_times_s_or_nan_for_a_refused_scale(value):
    """FlashInfer's fresh-input path (its fold kernel; under the Triton interpreter on a CPU): q * s rounded
    once to bf16, and the factor s for the output; a scale the validation would refuse gives NaN."""
    from mla.backends.flashinfer_backend import FOLD_BLOCK, fold_fp8_scale

    if importlib.util.find_spec("triton") is None:
        pytest.skip("needs triton")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    q = torch.randn(3, 7, 576, device=device).to(torch.bfloat16)
    assert q.numel() % FOLD_BLOCK != 0  # (a partial last block)
    out, factor = torch.empty_like(q), torch.empty((), device=device)
    fold_fp8_scale(q, torch.tensor([value], device=device), out, factor)
    if value > 0 and value < float("inf"):
        assert factor.item() == torch.tensor(value, dtype=torch.float32).item()
        exact = q.float() * torch.tensor(value, dtype=torch.float32, device=device)
        # one bf16 rounding of the fp32 product (the interpreter's cast may truncate: within one ulp, 2**-7)
        assert torch.allclose(out.float(), exact, rtol=2.0**-7, atol=0), (out.float() - exact).abs().max()
    else:
        assert torch.isnan(factor) and torch.isnan(out.float()).all()
    with pytest.raises(ValueError, match="contiguous"):
        fold_fp8_scale(q.transpose(0, 1), torch.tensor([value], device=device), out, factor)
