"""Backends on CPU: the torch backend against the reference, plan reuse on fresh inputs, and the
registry's refusals (unknown names, unsupported formats/configs, backends unavailable here)."""

from __future__ import annotations

import functools
import importlib

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
