"""The quantization accuracy study: what KV (and Q) formats cost before any kernel runs.

For each case and each (kv_format, q_format, MXFP4 scale rule) we pass KV and Q through the format
(quantize, dequantize), run exact fp32 attention, round the output to bf16 (what a perfect kernel
would return) and compare with the truth: fp32 attention on the bf16 KV and bf16 Q
(:func:`mla.reference`). That is the error floor of the format: a real kernel adds its own
(accumulation order, fp32 vs bf16 P) on top.

MXFP4 scale rules (block of 32, E8M0 scale ``2**e``, E2M1 elements up to 6):

* ``even``  aiter's ``dynamic_mxfp4_quant`` rule, the one :mod:`mla.quant` implements and the
  leaderboard's inputs were made with: round amax's mantissa at bit 21 before taking the exponent.
* ``floor`` the OCP MX v1.0 spec's rule ``e = floor(log2(amax)) - 2``: a block whose amax mantissa
  is >= 1.5 has its largest elements saturate at 6 x 2**e (up to 25 % clipped).

Cost and honesty: the full leaderboard does not fit this CPU (bs256 x kv8192 is 1.2 G KV values).
``max_tokens`` caps each case's total KV tokens by reducing the *batch* only, never the KV length:
batch elements are independent draws of the same distribution, so the per-element error
statistics are those of the full case, from fewer samples. The ``bs_used`` column says what ran.

CLI (writes the CSV notebook 01 replays):

    python -m mla.analysis.accuracy --out data/accuracy/quant_accuracy.csv
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from .. import problem as P
from ..check import LEADERBOARD_ATOL, LEADERBOARD_MAX_MISMATCH, LEADERBOARD_RTOL, accuracy_metrics
from ..inputs import generate_case
from ..quant import E8M0_BIAS, _e2m1_encode, e2m1_to_float, mxfp4_scale_exponent
from ..quant import fake_quant as _fake_quant
from ..reference import _attend, dequantize_kv, reference

SCALE_RULES = ("even", "floor")
DEFAULT_MAX_TOKENS = 1 << 18  # 262,144 KV tokens per case: bs32 x kv8192, bs256 x kv1024
DEFAULT_CSV = Path(__file__).resolve().parents[2] / "data" / "accuracy" / "quant_accuracy.csv"  # tracked
SCRATCH_CSV = Path(__file__).resolve().parents[2] / "out" / "accuracy" / "quant_accuracy.csv"  # CLI default
COMMAND = "python -m mla.analysis.accuracy --out data/accuracy/quant_accuracy.csv"


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
    """fp32 attention on (Q, KV) passed through their formats, rounded to bf16 (uniform batches)."""
    q, kv_data, _, _, config = data
    bs, s, h = config["batch_size"], config["q_seq_len"], config["num_heads"]
    key_kv, key_q = ("kv", kv_format, rule if kv_format == "mxfp4" else ""), ("q", q_format, rule if q_format == "mxfp4" else "")
    if key_kv not in cache:
        if kv_format == "mxfp4" and rule == "floor":
            cache[key_kv] = fake_quant_mxfp4(kv_data["bf16"].float().reshape(-1, P.QK_HEAD_DIM), "floor")
        else:  # the stored formats: exactly what the kernels read
            cache[key_kv] = dequantize_kv(kv_data, kv_format)
    if key_q not in cache:
        cache[key_q] = q.float() if q_format == "bf16" else fake_quant(q.float(), q_format, rule)
    n = cache[key_kv].shape[0] // bs
    out = _attend(cache[key_q].reshape(bs, s, h, -1), cache[key_kv].reshape(bs, n, -1), float(config["sm_scale"]))
    return out.reshape(bs * s, h, P.V_HEAD_DIM).bfloat16()


def tolerance_ratio(out: torch.Tensor, truth: torch.Tensor, rtol=LEADERBOARD_RTOL, atol=LEADERBOARD_ATOL):
    """|out - truth| / (atol + rtol |truth|) per element: > 1 fails the leaderboard's isclose."""
    o, t = out.double(), truth.double()
    return (o - t).abs() / (atol + rtol * t.abs())


def study(cases=P.LEADERBOARD, *, kv_formats=P.KV_FORMATS, q_formats=P.Q_FORMATS, rules=SCALE_RULES,
          max_tokens: int | None = DEFAULT_MAX_TOKENS, device="cpu", progress=None) -> pd.DataFrame:
    """One row per (case, kv_format, q_format, rule): error of the format vs the fp32 truth."""
    from ..bench import provenance as prov

    commit, dirty = prov.git_state()
    base = dict(torch=torch.__version__, git_commit=commit, git_dirty=dirty, source_hash=prov.source_hash(),
                device=prov.device_name(device), max_tokens=max_tokens or 0)
    rows = []
    for case in cases:
        run = reduced_case(case, max_tokens)
        data = generate_case(run, device=device)
        truth = reference(data)
        cache: dict = {}
        for kvf, qf, rule in combos(kv_formats, q_formats, rules):
            t0 = time.perf_counter()
            out = _quantized_output(data, kvf, qf, rule, cache)
            m = accuracy_metrics(out, truth)
            ratio = tolerance_ratio(out, truth).flatten()
            q = torch.quantile(ratio[:: max(1, ratio.numel() // 2_000_000)].float(), torch.tensor([0.5, 0.99], device=ratio.device))
            rows.append(dict(
                case=case.name, bs=case.batch_size, kv=case.kv_seq_len, heads=case.num_heads,
                q_seq_len=case.q_seq_len, seed=case.seed, bs_used=run.batch_size, reduced=run != case,
                kv_format=kvf, q_format=qf, scale_rule=rule,
                max_abs=m["max_abs"], mean_abs=m["mean_abs"], rel_l2=m["rel_l2"], mismatch=m["mismatch"],
                margin=LEADERBOARD_MAX_MISMATCH - m["mismatch"], passes=m["mismatch"] <= LEADERBOARD_MAX_MISMATCH,
                tol_ratio_max=float(ratio.max()), tol_ratio_p99=float(q[1]), tol_ratio_p50=float(q[0]),
                out_abs_mean=float(truth.abs().mean()), numel=m["numel"], seconds=time.perf_counter() - t0,
                timestamp_utc=prov.utc_now(), **base))
            if progress:
                progress(rows[-1])
        del data, truth, cache
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


def load(path=None) -> pd.DataFrame | None:
    path = Path(path or DEFAULT_CSV)
    return pd.read_csv(path) if path.exists() else None


# --- CLI ---------------------------------------------------------------------------------------
def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", default="leaderboard", help="case set or comma-separated case names")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                   help="cap total KV tokens per case by reducing the batch (0: no cap)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=None,
                   help="CSV path (default out/accuracy/quant_accuracy.csv, git-ignored; --write: the tracked "
                        "data/accuracy/quant_accuracy.csv the notebooks read)")
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
              f"({time.perf_counter() - t0:.0f}s)", flush=True)

    df = study(cases, max_tokens=args.max_tokens or None, device=args.device, progress=show)
    out = Path(args.out) if args.out else (DEFAULT_CSV if args.write else SCRATCH_CSV)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(f"wrote {len(df)} rows to {out}")
    return 0


def register(sub) -> None:
    """For ``python -m mla accuracy`` (add this module to mla.cli._COMMAND_MODULES)."""
    p = sub.add_parser("accuracy", help="quantization accuracy study -> data/accuracy/quant_accuracy.csv")
    _add_args(p)
    p.set_defaults(func=_run)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m mla.analysis.accuracy", description=__doc__.split("\n")[0])
    _add_args(p)
    return _run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
