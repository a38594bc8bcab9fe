"""mla.analysis.accuracy: the simulated a8w8 reference (the leaderboard's check), the checker's mismatch
count, the error histogram that counts every element, and the views notebook 01 reads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import mla
from mla import problem as P
from mla import quant
from mla.analysis import accuracy
from mla.check import accuracy_metrics
from mla.reference import _attend, dequantize_kv


def test_quantize_fp8_in_the_inputs_dtype_rounds_in_bf16_like_the_leaderboard():
    g = torch.Generator().manual_seed(0)
    x32 = torch.randn(64, 576, generator=g) * 3
    a, sa = quant.quantize_fp8(x32, compute_dtype=None)
    b, sb = quant.quantize_fp8(x32)
    assert torch.equal(sa, sb) and torch.equal(a.view(torch.uint8), b.view(torch.uint8))  # fp32 in: fp32 math
    x16 = x32.bfloat16()
    a, sa = quant.quantize_fp8(x16, compute_dtype=None)
    b, sb = quant.quantize_fp8(x16)
    assert sa.dtype == torch.float32 and sa.shape == (1,)
    assert float(sa) == float(sa.bfloat16().float())  # the scale itself is a bf16 value
    assert float(sa) != float(sb)  # ... which mla.quant's fp32 scale is not
    assert (a.view(torch.uint8) != b.view(torch.uint8)).any()
    # the contract's arithmetic, written out: bf16 amax / 448, bf16 quotient, then the cast
    want = (x16 / (x16.abs().amax().clamp(min=1e-12) / 448.0)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    assert torch.equal(a.view(torch.uint8), want.view(torch.uint8))
    assert float(quant.dequantize_fp8(a, sa).sub(x16.float()).norm() / x16.float().norm()) < 0.04
    with pytest.raises(ValueError, match="compute_dtype"):
        quant.quantize_fp8(x16, compute_dtype=torch.int32)


def test_generate_input_fp8_kv_is_the_contracts():
    """The fp8 KV of generate_input is what the leaderboard's reference.py makes from the same bf16 cache."""
    q, kv_data, *_ = mla.generate_input(2, 1, 256, seed=11)
    kv = kv_data["bf16"]
    kv8, scale = kv_data["fp8"]
    want_scale = kv.abs().amax().clamp(min=1e-12) / 448.0
    want = (kv / want_scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    assert torch.equal(kv8.view(torch.uint8), want.view(torch.uint8))
    assert float(scale) == float(want_scale.float())


def test_simulated_a8w8_reference_quantizes_q_and_uses_the_fp8_kv():
    data = mla.generate_input(2, 1, 128, seed=5)
    ref = accuracy.simulated_a8w8_reference(data)
    truth = mla.reference(data)
    assert ref.dtype == torch.bfloat16 and ref.shape == truth.shape
    q, kv_data, qo, kvi, cfg = data
    q8, qs = quant.quantize_fp8(q, compute_dtype=None)  # what it should compute: this Q, the inputs' fp8 KV, fp32 attention
    want = _attend(quant.dequantize_fp8(q8, qs).reshape(2, 1, 16, -1), dequantize_kv(kv_data, "fp8").reshape(2, 128, -1),
                   cfg["sm_scale"]).reshape(truth.shape)
    assert accuracy_metrics(ref, want)["rel_l2"] < 3e-3  # the bf16 output rounding only
    near = mla.reference(data, kv_format="fp8", q_format="fp8")  # Q scale in fp32 math: ~2 % of Q's bytes differ
    assert 3e-3 < accuracy_metrics(ref, near)["rel_l2"] < 3e-2
    assert accuracy_metrics(ref, truth)["rel_l2"] > 5 * accuracy_metrics(truth.bfloat16(), truth)["rel_l2"]
    # the KV is the one the inputs carry (zeroed here: the output follows), not a re-quantization of the bf16 KV
    buf, scale = kv_data["fp8"]
    zero = (q, dict(kv_data, fp8=(torch.zeros_like(buf), scale)), qo, kvi, cfg)
    assert accuracy.simulated_a8w8_reference(zero).abs().max() == 0


def _expected(data):
    """The simulation by hand, one batch element at a time: Q quantized in bf16 math, the inputs' fp8 KV,
    mla.reference's fp32 attention (with its decode-causal mask)."""
    q, kv_data, qo, kvi, cfg = data
    q8, qs = quant.quantize_fp8(q, compute_dtype=None)
    qf, kv = quant.dequantize_fp8(q8, qs), dequantize_kv(kv_data, "fp8")
    parts = [_attend(qf[qo[b]:qo[b + 1]].unsqueeze(0), kv[kvi[b]:kvi[b + 1]].unsqueeze(0), cfg["sm_scale"])[0]
             for b in range(len(qo) - 1)]
    return torch.cat(parts)


def test_simulated_a8w8_reference_masks_ragged_and_multi_token_batches():
    for data in (mla.generate_input(3, 1, 100, seed=1, kv_lens=(5, 100, 37)),
                 mla.generate_input(2, 2, 4, seed=2)):  # q_seq_len 2 over 4 keys: the mask matters a lot
        ref = accuracy.simulated_a8w8_reference(data)
        assert accuracy_metrics(ref, _expected(data))["rel_l2"] < 3e-3
    q, kv_data, qo, kvi, cfg = data  # the same without the mask: far off
    qf = quant.dequantize_fp8(*quant.quantize_fp8(q, compute_dtype=None)).reshape(2, 2, 16, -1)
    kv = dequantize_kv(kv_data, "fp8").reshape(2, 4, -1)
    p = torch.softmax(torch.einsum("bshd,bnd->bshn", qf, kv) * cfg["sm_scale"], -1)
    unmasked = torch.einsum("bshn,bnd->bshd", p, kv[..., :512]).reshape(ref.shape)
    assert accuracy_metrics(ref, unmasked)["rel_l2"] > 0.05


def test_p_format_brackets_and_rejects():
    data = mla.generate_input(2, 1, 256, seed=3)
    outs = {p: accuracy.simulated_a8w8_reference(data, p_format=p) for p in accuracy.P_FORMATS}
    assert not torch.equal(outs["fp32"], outs["fp8"])  # rounding P to e4m3 changes the output
    for p in ("bf16", "fp8"):
        assert accuracy_metrics(outs[p], outs["fp32"])["rel_l2"] < 3e-2
    with pytest.raises(ValueError, match="p_format"):
        accuracy.simulated_a8w8_reference(data, p_format="fp16")
    q, kv_data, qo, kvi, cfg = data
    with pytest.raises(ValueError):
        accuracy.simulated_a8w8_reference((q, {"bf16": kv_data["bf16"]}, qo, kvi, cfg))


def test_checker_mismatch_counts_isclose_failures_and_nan():
    ref = torch.zeros(8, dtype=torch.bfloat16)
    out = ref.clone()
    out[0], out[1], out[2] = 0.09, 0.2, float("nan")  # inside atol, outside, NaN
    assert accuracy.checker_mismatch(out, ref) == 2 / 8
    with pytest.raises(ValueError, match="shape"):
        accuracy.checker_mismatch(out, torch.zeros(9))


def test_study_has_both_references():
    df = accuracy.study([P.Case(2, 128, seed=1)], max_tokens=None)
    for p in ("a8w8_", "a8w8_pbf16_", "a8w8_pfp8_"):
        assert {f"{p}tol_ratio_max", f"{p}mismatch"} <= set(df.columns)
    assert (df.a8w8_passes == (df.a8w8_mismatch <= 0.05)).all()
    bb = df[(df.kv_format == "bf16") & (df.q_format == "bf16")].iloc[0]
    # bf16 is nearly the truth, so against the a8w8 reference it carries that reference's own error
    assert bb.a8w8_tol_ratio_max > 5 * bb.tol_ratio_max
    assert df.device.iloc[0] == accuracy.device_label("cpu") and df.device.iloc[0]


def test_study_and_cli_run_ragged_batches(tmp_path):
    """A ragged batch (each element attends its own KV segment) runs through the study, the error
    samples and the CLI; the candidates' outputs are attention per batch element (checked by hand)."""
    ragged, multi = P.Case(3, 40, seed=1, kv_lens=(5, 40, 17)), P.Case(2, 9, seed=2, q_seq_len=3, kv_lens=(3, 9))
    df = accuracy.study([ragged, multi], max_tokens=None)
    assert len(df) == 2 * len(list(accuracy.combos()))
    bb = df[(df.kv_format == "bf16") & (df.q_format == "bf16")]
    assert (bb.rel_l2 < 3e-3).all() and (bb.mismatch == 0).all()  # the bf16 output rounding only
    for case in (ragged, multi):
        data = mla.generate_case(case)
        q, kv_data, qo, kvi, cfg = data
        kv = dequantize_kv(kv_data, "fp8")
        want = torch.cat([_attend(q[qo[b]:qo[b + 1]].float().unsqueeze(0), kv[kvi[b]:kvi[b + 1]].unsqueeze(0),
                                  cfg["sm_scale"])[0] for b in range(case.batch_size)])
        got = accuracy._quantized_output(data, "fp8", "bf16", "none", {})
        assert accuracy_metrics(got, want)["rel_l2"] < 3e-3
    s = accuracy.error_samples(ragged, "mxfp4", max_tokens=None)
    assert s["diff"].size == 3 * 16 * 512 and 0 < np.abs(s["diff"]).max() < 1
    out = tmp_path / "acc.csv"  # the CLI on the smoke set's ragged case (python -m mla accuracy --cases ...)
    name = next(c.name for c in P.SMOKE if c.kv_lens is not None)
    assert accuracy.main(["--cases", name, "--out", str(out)]) == 0
    assert (pd.read_csv(out).case == name).all() and (tmp_path / accuracy.HIST_NAME).exists()


def test_error_histogram_counts_every_element():
    case = P.Case(1, 64, seed=0)
    edges = np.array([1e-3, 1e-2])  # narrow on purpose: most errors fall outside, and must still be counted
    h = accuracy.error_histogram([case], combos=(("bf16", "bf16"), ("mxfp4", "mxfp4")), edges=edges, max_tokens=None)
    for (kvf, qf), g in h.groupby(["kv_format", "q_format"]):
        assert g["count"].sum() == g.numel.iloc[0] == 16 * 512
        d = np.abs(accuracy.error_samples(case, kvf, qf, max_tokens=None)["diff"])
        under = g[(g.lo == 0) & (g.hi == edges[0])]["count"].item()
        assert under == ((d > 0) & (d < edges[0])).sum()
        assert g[(g.lo == 0) & (g.hi == 0)]["count"].item() == (d == 0).sum()
        assert g[g.hi == np.inf]["count"].item() == (d >= edges[-1]).sum()
    assert h[(h.kv_format == "bf16") & (h.lo == 0) & (h.hi == edges[0])]["count"].item() > 0
    with pytest.raises(ValueError, match="edges"):
        accuracy.error_histogram([case], edges=[1e-3, 1e-4])


def test_views_rule_rows_grid_and_comparison():
    df = accuracy.study([P.Case(2, 64, seed=0)], max_tokens=None)
    even = accuracy.rule_rows(df, "even")
    assert len(even) == 9 and not even.duplicated(["kv_format", "q_format"]).any()
    assert set(accuracy.rule_rows(df, "floor").scale_rule) == {"none", "floor"}
    g = accuracy.format_grid(even, "rel_l2")
    assert list(g.index) == list(P.KV_FORMATS) and list(g.columns) == list(P.Q_FORMATS)
    assert g.loc["mxfp4", "fp8"] == even[(even.kv_format == "mxfp4") & (even.q_format == "fp8")].rel_l2.item()
    cmp = accuracy.rule_comparison(df)
    assert len(cmp) == 5  # the combinations with MXFP4 on either side
    r = cmp.iloc[0]
    assert r.tol_ratio_max_floor_over_even == pytest.approx(r.tol_ratio_max_floor / r.tol_ratio_max_even)
    with pytest.raises(ValueError):
        accuracy.rule_rows(df, "none")
    with pytest.raises(ValueError):
        accuracy.format_grid(even, "no_such_column")


def test_softmax_anatomy_says_why_out_is_small():
    a = accuracy.softmax_anatomy(P.Case(2, 1024, seed=0))
    assert 0.9 < a["score_std"] < 1.1  # q.k / 24 over 576 unit-variance dims
    assert 1024 / np.e * 0.8 < a["n_eff"] < 1024 / np.e * 1.25  # not flat: ~kv / e keys for unit-variance scores
    assert a["out_abs_mean"] > 1.5 * a["flat_prediction"]
    assert a["corr_q"] > 0.5  # V = K[:512]: the weights lean towards q
    with pytest.raises(ValueError):
        accuracy.softmax_anatomy(P.Case(2, 64, q_seq_len=2))


def test_fp8_scale_sensitivity_is_small_for_a_floating_point_format():
    x = torch.randn(256, 576, generator=torch.Generator().manual_seed(0))
    t = accuracy.fp8_scale_sensitivity(x, factors=(1.0, 1.1, 2.0))
    assert isinstance(t, pd.DataFrame) and list(t.amax_factor) == [1.0, 1.1, 2.0]
    assert abs(t.rel_l2.iloc[1] / t.rel_l2.iloc[0] - 1) < 0.01
    assert t.rel_l2.iloc[2] == pytest.approx(t.rel_l2.iloc[0], rel=1e-3)  # a power of two moves no rounding
    with pytest.raises(ValueError):
        accuracy.fp8_scale_sensitivity(x, factors=(0.5,))


def test_fp8_math_difference_counts_bytes_and_skips_large_cases():
    small, large = P.Case(2, 128, seed=3), P.Case(4, 1024, seed=3)
    df = accuracy.fp8_math_difference([small, large], max_tokens=small.total_kv)
    assert list(df.case.unique()) == [small.name] and sorted(df.tensor) == ["kv", "q"]
    q, kv_data, *_ = mla.generate_case(small)
    a, b = quant.quantize_fp8(q)[0], quant.quantize_fp8(q, compute_dtype=None)[0]
    want = float((a.view(torch.uint8) != b.view(torch.uint8)).double().mean())
    assert df.set_index("tensor").bytes_differ["q"] == want > 0
    assert df.set_index("tensor").scale_bf16_math["kv"] == float(kv_data["fp8"][1])  # the inputs' KV is the bf16 one
