"""The quantization accuracy study: what KV (and Q) formats cost before any kernel runs.

For each case and each (kv_format, q_format, MXFP4 scale rule) we pass KV and Q through the format
(quantize, dequantize), run exact fp32 attention and round the output to bf16 (what a perfect kernel
would return). That candidate is compared with two references:

* **truth**: fp32 attention on the bf16 KV and bf16 Q (:func:`mla.reference`): the error floor of the
  format. A real kernel adds its own (accumulation order, bf16 or fp8 P) on top.
* **the leaderboard's check, simulated** (:func:`simulated_a8w8_reference`): the GPU MODE
  ``amd-mixed-mla`` checker compares a submission with AITER's a8w8 decode output (fp8 Q quantized on
  the fly, the fp8 KV of the inputs, bf16 output), element-wise at rtol = atol = 0.1, and passes it
  when at most 5 % of the elements fail. We cannot run AITER here; this is a CPU simulation of what
  that kernel computes, with its one unknown (whether it rounds P) bracketed by ``p_format``.

MXFP4 scale rules (block of 32, E8M0 scale ``2**e``, E2M1 elements up to 6):

* ``even``  aiter's ``dynamic_mxfp4_quant`` rule, the one :mod:`mla.quant` implements and the
  leaderboard's inputs were made with: round amax's mantissa at bit 21 before taking the exponent.
* ``floor`` the OCP MX v1.0 spec's rule ``e = floor(log2(amax)) - 2``: a block whose amax mantissa
  is >= 1.5 has its largest elements saturate at 6 x 2**e (up to 25 % clipped).

Cost and honesty: the full leaderboard does not fit this CPU (bs256 x kv8192 is 1.2 G KV values).
``max_tokens`` caps each case's total KV tokens by reducing the *batch* only, never the KV length:
batch elements are independent draws of the same distribution, so the per-element error
statistics are those of the full case, from fewer samples (per-tensor fp8 is the one exception, and
a tiny one: its scale follows the tensor's amax, which grows slowly with the element count; fp8 is a
floating-point format, so its relative rounding error hardly depends on that scale).
The ``bs_used`` column says what ran.

CLI (writes the two CSVs notebook 01 replays; the histogram file goes beside ``--out``):

    python -m mla accuracy --write      # = python -m mla.analysis.accuracy --out data/accuracy/quant_accuracy.csv
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import problem as P
from ..argtypes import nonneg_int
from ..check import LEADERBOARD_ATOL, LEADERBOARD_MAX_MISMATCH, LEADERBOARD_RTOL, accuracy_metrics
from ..inputs import check_fp8_scale, generate_case, validate_data
from ..quant import (E8M0_BIAS, _e2m1_encode, dequantize_fp8, e2m1_to_float, fp8_max, mxfp4_scale_exponent,
                     quantize_fp8)
from ..quant import fake_quant as _fake_quant
from ..reference import attend_batches, decode_causal_mask, dequantize_kv, reference

SCALE_RULES = ("even", "floor")
P_FORMATS = ("fp32", "bf16", "fp8")  # what the simulated a8w8 reference does to P before P.V
DEFAULT_MAX_TOKENS = 1 << 18  # 262,144 KV tokens per case: bs32 x kv8192, bs256 x kv1024
DEFAULT_CSV = Path(__file__).resolve().parents[2] / "data" / "accuracy" / "quant_accuracy.csv"  # tracked
SCRATCH_CSV = Path(__file__).resolve().parents[2] / "out" / "accuracy" / "quant_accuracy.csv"  # CLI default
HIST_NAME = "error_hist.csv"  # written beside the study's CSV
DEFAULT_HIST_CSV = DEFAULT_CSV.with_name(HIST_NAME)
COMMAND = "python -m mla accuracy --write"
# The histogram's combinations and bins: |out - truth| from 1e-10 to 1 in 10 log bins a decade. Exact
# zeros and anything outside the edges get rows of their own, so every element is counted.
HIST_COMBOS = (("bf16", "bf16"), ("fp8", "bf16"), ("mxfp4", "bf16"), ("fp8", "fp8"), ("mxfp4", "mxfp4"))
HIST_EDGES = np.logspace(-10, 0, 101)


# --- MXFP4 with a chosen scale rule ------------------------------------------------------------
def mxfp4_scale_exponent_floor(amax: torch.Tensor) -> torch.Tensor:
    """OCP MX v1.0: ``e = floor(log2(amax)) - 2`` (unbiased, int32), clamped to E8M0's range."""
    bits = amax.float().contiguous().view(torch.int32)
    biased = torch.bitwise_right_shift(bits, 23) & 0xFF  # floor(log2) + 127 for normal amax; 0 for 0
    return (biased - E8M0_BIAS - 2).clamp(-127, 127)


def fake_quant_mxfp4(x: torch.Tensor, rule: str = "even") -> torch.Tensor:
    """Quantize to MXFP4 along the last dim with ``rule`` and dequantize (fp32). Finite inputs only."""
    if rule not in SCALE_RULES:
        raise ValueError(f"unknown MXFP4 scale rule {rule!r}; choose from {SCALE_RULES}")
    n = x.shape[-1]
    if n % P.MXFP4_BLOCK:
        raise ValueError(f"MXFP4 needs the last dim to be a multiple of {P.MXFP4_BLOCK}, got {n}")
    xb = x.float().reshape(-1, n // P.MXFP4_BLOCK, P.MXFP4_BLOCK)
    amax = xb.abs().amax(-1)
    e = mxfp4_scale_exponent(amax) if rule == "even" else mxfp4_scale_exponent_floor(amax)
    scale = torch.exp2(e.float()).unsqueeze(-1)
    vals = e2m1_to_float(_e2m1_encode(xb / scale)) * scale
    return vals.reshape(x.shape)


def fake_quant(x: torch.Tensor, fmt: str, rule: str = "even") -> torch.Tensor:
    """``x`` (fp32 result) after passing through ``fmt``; ``rule`` matters for MXFP4 only."""
    if fmt == "mxfp4":
        return fake_quant_mxfp4(x, rule)
    return _fake_quant(x, fmt)


def clip_fraction(x: torch.Tensor, rule: str) -> float:
    """Fraction of elements whose |x| / 2**e exceeds E2M1's 6 (they saturate) under ``rule``."""
    xb = x.float().reshape(-1, x.shape[-1] // P.MXFP4_BLOCK, P.MXFP4_BLOCK)
    amax = xb.abs().amax(-1)
    e = mxfp4_scale_exponent(amax) if rule == "even" else mxfp4_scale_exponent_floor(amax)
    return float((xb.abs() / torch.exp2(e.float()).unsqueeze(-1) > 6.0).double().mean())


def fp8_scale_sensitivity(x: torch.Tensor, factors=(1.0, 1.05, 1.1)) -> pd.DataFrame:
    """Relative L2 and max abs error of per-tensor e4m3fn on ``x`` when its scale is taken from
    ``factor x amax`` instead of amax: how much the error depends on the tensor's amax (a larger
    batch has a slightly larger amax). One row per factor."""
    xf = x.float()
    amax = float(xf.abs().amax())
    rows = []
    for f in factors:
        if not f >= 1.0:  # below 1 the largest elements would saturate: a different question
            raise ValueError(f"scale factors must be >= 1, got {f}")
        scale = torch.tensor([amax * f / fp8_max()], dtype=torch.float32)
        d = dequantize_fp8(*quantize_fp8(xf, scale=scale))
        rows.append(dict(amax_factor=f, scale=float(scale), rel_l2=float((d - xf).norm() / xf.norm()),
                         max_abs=float((d - xf).abs().max())))
    return pd.DataFrame(rows)


def fp8_math_difference(cases, max_tokens: int = DEFAULT_MAX_TOKENS) -> pd.DataFrame:
    """Per case (those with at most ``max_tokens`` KV tokens) and tensor (KV, Q): per-tensor e4m3fn in
    fp32 arithmetic against the contract's bf16 arithmetic (``quantize_fp8``'s ``compute_dtype``):
    both scales and the fraction of fp8 bytes that differ. The inputs' fp8 KV is the bf16 one."""
    rows = []
    for case in cases:
        if case.total_kv > max_tokens:
            continue
        q, kv_data, *_ = generate_case(case)
        for name, x in (("kv", kv_data["bf16"]), ("q", q)):
            (a, sa), (b, sb) = quantize_fp8(x), quantize_fp8(x, compute_dtype=None)
            rows.append(dict(case=case.name, tensor=name, scale_fp32_math=float(sa), scale_bf16_math=float(sb),
                             bytes_differ=float((a.view(torch.uint8) != b.view(torch.uint8)).double().mean())))
    return pd.DataFrame(rows)


# --- the leaderboard's reference, simulated ----------------------------------------------------
def _attend_p(qb: torch.Tensor, kvb: torch.Tensor, sm_scale: float, p_format: str) -> torch.Tensor:
    """Like :func:`mla.reference._attend`, but P = exp(s - max) is rounded to ``p_format`` before
    P.V, and the row sum (from the unrounded P) divides afterwards, as AITER's own fp8 test golden
    (op_tests/test_mla_persistent.py, ``ref_masked_attention``) computes it."""
    s, n = qb.shape[1], kvb.shape[1]
    scores = torch.einsum("bshd,bnd->bshn", qb, kvb) * sm_scale
    if s > 1:
        scores = scores.masked_fill(~decode_causal_mask(s, n, qb.device)[None, :, None, :], float("-inf"))
    e = torch.exp(scores - scores.amax(-1, keepdim=True))
    total = e.sum(-1, keepdim=True)
    if p_format == "bf16":
        e = e.bfloat16().float()
    elif p_format == "fp8":  # P in (0, 1] fits e4m3fn unscaled; under 2**-10 it flushes to 0
        e = e.to(torch.float8_e4m3fn).float()
    return torch.einsum("bshn,bnd->bshd", e, kvb[..., : P.V_HEAD_DIM]) / total


def simulated_a8w8_reference(data, *, p_format: str = "fp32") -> torch.Tensor:
    """A CPU *simulation* of the leaderboard's reference output, ``(total_q, H, 512)`` bf16.

    The GPU MODE ``amd-mixed-mla`` checker (gpu-mode/reference-kernels,
    problems/amd_202602/mixed-mla/reference.py, ``ref_kernel`` with its defaults Q_DTYPE = KV_DTYPE =
    "fp8") quantizes Q per tensor to fp8 on the fly (:func:`mla.quant.quantize_fp8` with
    ``compute_dtype=None``: bf16 math), takes the fp8 KV of the inputs as given (``kv_data["fp8"]`` and
    its scale) and runs AITER's a8w8 decode kernel (``mla_decode_fwd``) into a bf16 output; the submission must match it at rtol = atol = 0.1 with
    at most 5 % of the elements failing. Here: the same fp8 Q and KV, dequantized, attention in fp32,
    output rounded to bf16. What the kernel (an assembly code object) does with P is not in any source
    we can read, so ``p_format`` brackets it: "fp32" (P unrounded), "bf16" (AITER's test golden for
    fp8 Q rounds exp(s - max) to bf16) or "fp8" (e4m3fn, as an fp8 P.V product would need)."""
    if p_format not in P_FORMATS:
        raise ValueError(f"unknown p_format {p_format!r}; choose from {P_FORMATS}")
    kv_lens = validate_data(data, "fp8")
    q, kv_data, _, _, config = data
    check_fp8_scale(kv_data)
    q8, q_scale = quantize_fp8(q, compute_dtype=None)
    qf = dequantize_fp8(q8, q_scale)
    kv = dequantize_kv(kv_data, "fp8")
    out = attend_batches(qf, kv, kv_lens, int(config["q_seq_len"]), float(config.get("sm_scale", P.SM_SCALE)),
                         attend=lambda qb, kvb, sm: _attend_p(qb, kvb, sm, p_format))
    return out.bfloat16()


def checker_mismatch(out: torch.Tensor, ref: torch.Tensor, rtol=LEADERBOARD_RTOL, atol=LEADERBOARD_ATOL) -> float:
    """The fraction of elements the leaderboard's checker counts as failing: ``~torch.isclose`` on the
    two tensors as they are (bf16 against bf16 there), NaN failing."""
    if out.shape != ref.shape:
        raise ValueError(f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    return float((~torch.isclose(out, ref.to(out.dtype), rtol=rtol, atol=atol)).double().mean())


# --- the study ---------------------------------------------------------------------------------
def reduced_case(case: P.Case, max_tokens: int | None) -> P.Case:
    """The case with its batch cut so total KV tokens <= max_tokens (KV length kept)."""
    if max_tokens is None or case.total_kv <= max_tokens or case.kv_lens is not None:
        return case
    bs = max(1, max_tokens // case.kv_seq_len)
    return P.Case(bs, case.kv_seq_len, seed=case.seed, q_seq_len=case.q_seq_len, num_heads=case.num_heads)


def combos(kv_formats=P.KV_FORMATS, q_formats=P.Q_FORMATS, rules=SCALE_RULES):
    """(kv_format, q_format, rule); rule 'none' where neither side is MXFP4."""
    for kvf, qf in itertools.product(kv_formats, q_formats):
        if "mxfp4" in (kvf, qf):
            for r in rules:
                yield kvf, qf, r
        else:
            yield kvf, qf, "none"


def _quantized_output(data, kv_format: str, q_format: str, rule: str, cache: dict) -> torch.Tensor:
    """fp32 attention on (Q, KV) passed through their formats, rounded to bf16."""
    q, kv_data, _, _, config = data
    key_kv, key_q = ("kv", kv_format, rule if kv_format == "mxfp4" else ""), ("q", q_format, rule if q_format == "mxfp4" else "")
    if key_kv not in cache:
        if kv_format == "mxfp4" and rule == "floor":
            cache[key_kv] = fake_quant_mxfp4(kv_data["bf16"].float().reshape(-1, P.QK_HEAD_DIM), "floor")
        else:  # the stored formats: exactly what the kernels read
            cache[key_kv] = dequantize_kv(kv_data, kv_format)
    if key_q not in cache:
        cache[key_q] = q.float() if q_format == "bf16" else fake_quant(q.float(), q_format, rule)
    if "kv_lens" not in cache:  # from the indptr, as mla.reference reads them (ragged batches included)
        cache["kv_lens"] = validate_data(data, kv_format)
    out = attend_batches(cache[key_q], cache[key_kv], cache["kv_lens"], int(config["q_seq_len"]),
                         float(config["sm_scale"]))
    return out.bfloat16()


def tolerance_ratio(out: torch.Tensor, truth: torch.Tensor, rtol=LEADERBOARD_RTOL, atol=LEADERBOARD_ATOL):
    """|out - ref| / (atol + rtol |ref|) per element: > 1 fails the checker's isclose."""
    o, t = out.double(), truth.double()
    return (o - t).abs() / (atol + rtol * t.abs())


def _quantiles(ratio: torch.Tensor) -> tuple[float, float]:
    """(median, 99th percentile) of a flat ratio tensor (sampled down to ~2 M elements)."""
    q = torch.quantile(ratio[:: max(1, ratio.numel() // 2_000_000)].float(), torch.tensor([0.5, 0.99], device=ratio.device))
    return float(q[0]), float(q[1])


def device_label(device) -> str:
    """The device of a row: provenance.device_name (a GPU's name, a CPU's model and architecture)."""
    from ..bench import provenance as prov

    return prov.device_name(device)


def _provenance(device, max_tokens) -> dict:
    from ..bench import provenance as prov

    commit, dirty = prov.git_state()
    return dict(torch=torch.__version__, git_commit=commit, git_dirty=dirty, source_hash=prov.source_hash(),
                device=device_label(device), max_tokens=max_tokens or 0)


def study(cases=P.LEADERBOARD, *, kv_formats=P.KV_FORMATS, q_formats=P.Q_FORMATS, rules=SCALE_RULES,
          max_tokens: int | None = DEFAULT_MAX_TOKENS, device="cpu", progress=None) -> pd.DataFrame:
    """One row per (case, kv_format, q_format, rule): error of the format vs the fp32 truth (columns
    without prefix) and vs the simulated a8w8 reference (``a8w8_*``; P unrounded, and the worst
    element and mismatch with P rounded to bf16 / fp8: ``a8w8_pbf16_*``, ``a8w8_pfp8_*``)."""
    from ..bench import provenance as prov

    base = _provenance(device, max_tokens)
    rows = []
    for case in cases:
        run = reduced_case(case, max_tokens)
        data = generate_case(run, device=device)
        truth = reference(data)
        refs = {p: simulated_a8w8_reference(data, p_format=p) for p in P_FORMATS}
        cache: dict = {}
        for kvf, qf, rule in combos(kv_formats, q_formats, rules):
            t0 = time.perf_counter()
            out = _quantized_output(data, kvf, qf, rule, cache)
            m = accuracy_metrics(out, truth)
            ratio = tolerance_ratio(out, truth).flatten()
            p50, p99 = _quantiles(ratio)
            ratio_ref = tolerance_ratio(out, refs["fp32"]).flatten()
            mism_ref = checker_mismatch(out, refs["fp32"])
            row = dict(
                case=case.name, bs=case.batch_size, kv=case.kv_seq_len, heads=case.num_heads,
                q_seq_len=case.q_seq_len, seed=case.seed, bs_used=run.batch_size, reduced=run != case,
                kv_format=kvf, q_format=qf, scale_rule=rule,
                max_abs=m["max_abs"], mean_abs=m["mean_abs"], rel_l2=m["rel_l2"], mismatch=m["mismatch"],
                margin=LEADERBOARD_MAX_MISMATCH - m["mismatch"], passes=m["mismatch"] <= LEADERBOARD_MAX_MISMATCH,
                tol_ratio_max=float(ratio.max()), tol_ratio_p99=p99, tol_ratio_p50=p50,
                a8w8_max_abs=float((out.double() - refs["fp32"].double()).abs().max()),
                a8w8_mismatch=mism_ref, a8w8_passes=mism_ref <= LEADERBOARD_MAX_MISMATCH,
                a8w8_tol_ratio_max=float(ratio_ref.max()), a8w8_tol_ratio_p99=_quantiles(ratio_ref)[1])
            for p in ("bf16", "fp8"):
                row[f"a8w8_p{p}_tol_ratio_max"] = float(tolerance_ratio(out, refs[p]).max())
                row[f"a8w8_p{p}_mismatch"] = checker_mismatch(out, refs[p])
            rows.append(dict(row, out_abs_mean=float(truth.abs().mean()), numel=m["numel"],
                             seconds=time.perf_counter() - t0, timestamp_utc=prov.utc_now(), **base))
            if progress:
                progress(rows[-1])
        del data, truth, cache, refs
    return pd.DataFrame(rows)


def error_samples(case: P.Case, kv_format: str, q_format: str = "bf16", rule: str = "even",
                  device="cpu", max_tokens: int | None = DEFAULT_MAX_TOKENS) -> dict:
    """Per-element errors of one combination (for histograms): ``diff`` (out - truth) and
    ``ratio`` (tolerance ratio), numpy float arrays, plus the case actually run."""
    run = reduced_case(case, max_tokens)
    data = generate_case(run, device=device)
    truth = reference(data)
    out = _quantized_output(data, kv_format, q_format, rule, {})
    return dict(case=run, diff=(out.double() - truth.double()).flatten().cpu().numpy(),
                ratio=tolerance_ratio(out, truth).flatten().cpu().numpy(),
                truth=truth.flatten().cpu().numpy())


def error_histogram(cases, combos=HIST_COMBOS, *, edges=HIST_EDGES, device="cpu",
                    max_tokens: int | None = DEFAULT_MAX_TOKENS) -> pd.DataFrame:
    """|out - truth| of each (case, kv_format, q_format) (even rule) counted into ``edges``: one row per
    bin (``lo`` <= |d| < ``hi``), plus a row for exact zeros (lo = hi = 0), one for 0 < |d| < edges[0]
    and one for |d| >= edges[-1]; ``count`` sums to ``numel`` per combination."""
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or len(edges) < 2 or not (np.diff(edges) > 0).all() or edges[0] <= 0:
        raise ValueError("histogram edges must be a 1-d, increasing array of positive numbers")
    from ..bench import provenance as prov

    base = _provenance(device, max_tokens)
    rows = []
    for case in cases:
        for kvf, qf in combos:
            s = error_samples(case, kvf, qf, device=device, max_tokens=max_tokens)
            d = np.abs(s["diff"])
            inner, _ = np.histogram(d, bins=edges)  # numpy's last bin is closed: move |d| == edges[-1] out
            inner[-1] -= int((d == edges[-1]).sum())
            bins = [(0.0, 0.0, int((d == 0).sum())), (0.0, float(edges[0]), int(((d > 0) & (d < edges[0])).sum()))]
            bins += [(float(lo), float(hi), int(c)) for lo, hi, c in zip(edges[:-1], edges[1:], inner)]
            bins.append((float(edges[-1]), math.inf, int((d >= edges[-1]).sum())))
            for lo, hi, c in bins:
                rows.append(dict(case=case.name, bs_used=s["case"].batch_size, kv=case.kv_seq_len, kv_format=kvf,
                                 q_format=qf, scale_rule="even" if "mxfp4" in (kvf, qf) else "none",
                                 lo=lo, hi=hi, count=c, numel=d.size, timestamp_utc=prov.utc_now(), **base))
    return pd.DataFrame(rows)


def load(path=None) -> pd.DataFrame | None:
    path = Path(path or DEFAULT_CSV)
    return pd.read_csv(path) if path.exists() else None


# --- views the notebook reads ------------------------------------------------------------------
def rule_rows(df: pd.DataFrame, rule: str = "even") -> pd.DataFrame:
    """The rows of one MXFP4 scale rule plus the rows without MXFP4 (rule 'none'): one row per
    (case, kv_format, q_format)."""
    if rule not in SCALE_RULES:
        raise ValueError(f"unknown MXFP4 scale rule {rule!r}; choose from {SCALE_RULES}")
    return df[df.scale_rule.isin(("none", rule))]


def format_grid(frame: pd.DataFrame, col: str, agg="max") -> pd.DataFrame:
    """``col`` aggregated over shapes as a KV-format x Q-format table (rows KV, columns Q, in the
    canonical order)."""
    if col not in frame.columns:
        raise ValueError(f"no column {col!r} in the accuracy rows")
    g = frame.groupby(["kv_format", "q_format"])[col].agg(agg).unstack("q_format")
    return g.reindex(index=list(P.KV_FORMATS), columns=list(P.Q_FORMATS))


def rule_comparison(df: pd.DataFrame, cols=("rel_l2", "tol_ratio_max", "a8w8_tol_ratio_max")) -> pd.DataFrame:
    """Per (case, kv_format, q_format) with MXFP4: each column under both scale rules and the
    ratio floor / even (``<col>_floor_over_even``)."""
    mx = df[df.scale_rule.isin(SCALE_RULES)]
    wide = mx.pivot_table(index=["case", "kv", "kv_format", "q_format"], columns="scale_rule", values=list(cols))
    out = pd.DataFrame(index=wide.index)
    for c in cols:
        out[f"{c}_even"], out[f"{c}_floor"] = wide[(c, "even")], wide[(c, "floor")]
        out[f"{c}_floor_over_even"] = out[f"{c}_floor"] / out[f"{c}_even"]
    return out.reset_index()


def softmax_anatomy(case: P.Case, device="cpu") -> dict:
    """Why |out| is small on the random inputs: the fp32 reference's scores and weights on ``case``.

    ``score_std``: std of the scaled scores; ``n_eff``: mean over rows of 1 / sum(p**2), the
    number of keys the softmax effectively averages; ``out_abs_mean``: mean |out|;
    ``flat_prediction``: the mean |out| a flat softmax would give, E|N(0,1)| / sqrt(kv);
    ``tilt_prediction``: mean |q[:512] / sqrt(576)|, the part of out that follows q because V is the
    first 512 dims of K (exp-tilting a standard normal k towards q shifts its mean by q * sm_scale);
    ``corr_q``: the correlation of out with q[:512] * sm_scale over all elements."""
    if case.q_seq_len != 1 or case.kv_lens is not None:
        raise ValueError("softmax_anatomy takes uniform decode cases (q_seq_len 1, no kv_lens)")
    q, kv_data, _, _, config = generate_case(case, device=device)
    bs, h = case.batch_size, case.num_heads
    qf, kv = q.float().reshape(bs, h, -1), kv_data["bf16"].float().reshape(bs, case.kv_seq_len, -1)
    sm = float(config["sm_scale"])
    scores = torch.einsum("bhd,bnd->bhn", qf, kv) * sm
    p = torch.softmax(scores, -1)
    out = torch.einsum("bhn,bnd->bhd", p, kv[..., : P.V_HEAD_DIM])
    tilt = qf[..., : P.V_HEAD_DIM] * sm
    corr = torch.corrcoef(torch.stack([out.flatten(), tilt.flatten()]))[0, 1]
    return dict(case=case.name, kv=case.kv_seq_len, score_std=float(scores.std()),
                n_eff=float((1 / (p * p).sum(-1)).mean()), out_abs_mean=float(out.abs().mean()),
                flat_prediction=math.sqrt(2 / math.pi) / math.sqrt(case.kv_seq_len),
                tilt_prediction=float(tilt.abs().mean()), corr_q=float(corr))


# --- CLI ---------------------------------------------------------------------------------------
def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", default="leaderboard",
                   help="case set or comma-separated case names (default: leaderboard, minutes on a CPU)")
    p.add_argument("--max-tokens", type=nonneg_int, default=DEFAULT_MAX_TOKENS,
                   help=f"cap total KV tokens per case by reducing the batch (0: no cap; default: "
                        f"{DEFAULT_MAX_TOKENS})")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--out", default=None,
                   help="CSV path (default out/accuracy/quant_accuracy.csv, git-ignored; --write: the tracked "
                        "data/accuracy/quant_accuracy.csv the notebooks read); the error histogram of the "
                        f"first two cases goes beside it as {HIST_NAME}")
    p.add_argument("--write", action="store_true", help="without --out: update data/accuracy/quant_accuracy.csv")


def _run(args) -> int:
    from ..bench.cli import check_device
    from ..bench.harness import resolve_cases

    check_device(args.device)
    cases = resolve_cases(args.cases)
    t0 = time.perf_counter()

    def show(r):
        print(f"{r['case']:22s} bs_used={r['bs_used']:<4d} kv={r['kv_format']:5s} q={r['q_format']:5s} "
              f"rule={r['scale_rule']:5s} max_abs={r['max_abs']:.4f} mismatch={r['mismatch']:.3%} "
              f"a8w8 mismatch={r['a8w8_mismatch']:.3%} ({time.perf_counter() - t0:.0f}s)", flush=True)

    df = study(cases, max_tokens=args.max_tokens or None, device=args.device, progress=show)
    out = Path(args.out) if args.out else (DEFAULT_CSV if args.write else SCRATCH_CSV)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(f"wrote {len(df)} rows to {out}")
    # the first two cases: the leaderboard's two bs4 shapes by default, full size
    hist = error_histogram(list(cases)[:2], device=args.device, max_tokens=args.max_tokens or None)
    hist.to_csv(out.with_name(HIST_NAME), index=False)
    print(f"wrote {len(hist)} rows to {out.with_name(HIST_NAME)}")
    return 0


def register(sub) -> None:
    """For ``python -m mla accuracy`` (add this module to mla.cli._COMMAND_MODULES)."""
    p = sub.add_parser("accuracy", help="quantization accuracy study -> out/accuracy/quant_accuracy.csv and "
                                        "error_hist.csv beside it (--write: data/accuracy/)")
    _add_args(p)
    p.set_defaults(func=_run)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m mla.analysis.accuracy", description=__doc__.split("\n")[0])
    _add_args(p)
    return _run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
