#!/usr/bin/env python3
"""One-call H200 probe of the Triton MLA backend: check, then time, then sweep.

    PYTHONPATH=. GIT_COMMIT=$(git rev-parse HEAD) python3 scripts/h200_triton_probe.py

1. correctness on fresh inputs, every KV x Q format, ragged / q_seq_len 4 / 32 heads, graph and
   plain calls: own-format error (rel_l2 vs the fp32 reference on the dequantized KV and the Q the
   kernel uses) and the leaderboard rule (mla.check);
2. the 8 leaderboard shapes x 3 KV formats with the default variant and the split heuristic:
   ``cold_graph`` (whole Python call, graph replay, L2 flushed + synced: the leaderboard's way),
   ``cold_plain`` (same, plain launches) and ``kernel`` (graph replay, flush not awaited, so the
   events bracket device work only) - each row only after its own check passed;
3. a sweep of variants x num_splits on three shapes (kernel time) to pick defaults.
Writes $OUT/triton-probe.csv (every row with provenance) and prints a compact table last.
Phase 3 stops early when the time budget (PROBE_BUDGET_S, default 330 s) runs out.

PROBE_PHASES=variants (comma list of correctness,leaderboard,sweep,variants) runs only the named
phases; ``variants`` checks the new variants of PROBE_VARIANTS (default "words") on ragged / q4 /
32-head inputs, then checks and times them against the default on bs256-kv8192, bs32-kv8192 and
bs4-kv1024 (kernel time). PROBE_CSV names the CSV under $OUT.
"""

from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import triton
import triton.language as tl

import mla
from mla.bench.timers import L2Flush
from mla.kernels.triton import VARIANTS, TritonDecodePlan, quantize_q_like_kernel, race_num_splits
from mla.kernels.triton.kernels import _decode_fp8_words, _decode_mx_words
from mla.reference import decode_causal_mask

T0 = time.time()
BUDGET_S = float(os.environ.get("PROBE_BUDGET_S", 330))
OUT = os.environ.get("OUT", "out")
os.makedirs(OUT, exist_ok=True)
DEV = torch.device("cuda")
ROWS: list[dict] = []


def provenance() -> dict:
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        driver = "unknown"
    commit = os.environ.get("GIT_COMMIT", "").strip()
    if len(commit) != 40 or any(ch not in "0123456789abcdef" for ch in commit):
        commit = "uncommitted"  # e.g. `git rev-parse HEAD` in a repo without commits prints "HEAD"
    return dict(device=torch.cuda.get_device_name(DEV), driver=driver, torch=torch.__version__,
                triton=triton.__version__, commit=commit,
                utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                sms=torch.cuda.get_device_properties(DEV).multi_processor_count)


PROV: dict = {}
FLUSH = None  # an L2Flush, made in main()


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


def record(**row):
    row = dict(PROV, **row)
    ROWS.append(row)
    return row


def own_format_reference(data, kv_format, q_format):
    """fp32 attention on the dequantized KV and the Q the kernel quantizes (on the GPU)."""
    q, kv_data, _, kv_indptr, cfg = data
    s = int(cfg["q_seq_len"])
    if q_format != "fp8":  # the kernel's bf16 / mxfp4 Q are exactly mla.reference's
        return mla.reference(data, kv_format=kv_format, q_format=q_format)
    qf = quantize_q_like_kernel(q, q_format)
    kv = mla.dequantize_kv(kv_data, kv_format, torch.float32)
    ind = kv_indptr.tolist()
    out = torch.empty(q.shape[0], q.shape[1], 512, dtype=torch.float32, device=q.device)
    for b in range(len(ind) - 1):
        a, e = ind[b], ind[b + 1]
        sc = torch.einsum("shd,nd->shn", qf[b * s:(b + 1) * s], kv[a:e]) * float(cfg["sm_scale"])
        sc = sc.masked_fill(~decode_causal_mask(s, e - a, q.device)[:, None, :], float("-inf"))
        out[b * s:(b + 1) * s] = torch.einsum("shn,nd->shd", sc.softmax(-1), kv[a:e, :512])
    return out


def check(plan, data, kv_format, q_format, ref=None):
    """Poison, run, compare: (ok, rel_l2 own format, leaderboard message)."""
    for t in plan.outputs:
        t.fill_(float("nan"))
    out = plan.run(data)
    torch.cuda.synchronize()
    ref = own_format_reference(data, kv_format, q_format) if ref is None else ref
    m = mla.accuracy_metrics(out, ref)
    lb_ok, lb_msg = mla.check(data, out, reference_output=mla.reference(data, kv_format=kv_format,
                                                                          q_format=q_format))
    ok = m["nonfinite"] == 0 and m["rel_l2"] < 1e-2 and lb_ok
    return ok, m["rel_l2"], lb_msg


def t_cold(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    xs = []
    for _ in range(reps):
        FLUSH.flush()
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        xs.append(start.elapsed_time(end) * 1e3)
    return statistics.median(xs), min(xs)


def t_kernel(graph, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    xs = []
    for _ in range(reps):
        FLUSH.flush()  # not awaited: the replay's launch overlaps the flush
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        xs.append(start.elapsed_time(end) * 1e3)
    return statistics.median(xs), min(xs)


def graph_of(plan, data):
    plan.graph = True
    plan.run(data)  # captures for these addresses
    return plan._graphs[plan._ptr_key(data)]


def bytes_of(case, kv_format):
    return mla.problem.io_bytes(case, kv_format)


# --- 1. correctness --------------------------------------------------------------------------
def phase_correctness():
    seed = int(time.time()) % 100000
    cases = [
        ("bs4-kv1024", dict(batch_size=4, q_seq_len=1, kv_seq_len=1024)),
        ("ragged", dict(batch_size=6, q_seq_len=1, kv_seq_len=8192, kv_lens=(1, 7, 33, 1000, 8192, 513))),
        ("q4", dict(batch_size=8, q_seq_len=4, kv_seq_len=1024, kv_lens=(4, 9, 1024, 100, 333, 1024, 77, 600))),
        ("h32", dict(batch_size=8, q_seq_len=1, kv_seq_len=2048, num_heads=32)),
        ("h32q4", dict(batch_size=4, q_seq_len=4, kv_seq_len=512, num_heads=32)),
    ]
    for cname, kw in cases:
        seed += 1
        data = mla.generate_input(seed=seed, device=DEV, **kw)
        for kvf in mla.KV_FORMATS:
            for qf in mla.Q_FORMATS:
                mixed = (kvf, qf) in (("mxfp4", "fp8"), ("fp8", "mxfp4"))
                if qf != "bf16" and not (cname == "bs4-kv1024" or (cname == "q4" and mixed)):
                    continue
                ref = own_format_reference(data, kvf, qf)
                for graph, splits in ((False, "auto"), (True, "auto"), (False, 3)):
                    if True:
                        try:
                            p = TritonDecodePlan(data, kv_format=kvf, q_format=qf, num_splits=splits, graph=graph)
                            ok, rel, msg = check(p, data, kvf, qf, ref)
                            if graph:  # a second call replays; fresh-address inputs must re-capture
                                d2 = (data[0].clone(),) + tuple(data[1:])
                                ok2, rel2, _ = check(p, d2, kvf, qf, ref)
                                ok, rel = ok and ok2 and len(p._graphs) == 2, max(rel, rel2)
                            record(phase="check", case=cname, kv_format=kvf, q_format=qf, variant=p.variant.name,
                                   num_splits=p.num_splits, graph=graph, ok=ok, rel_l2=rel, lb=msg)
                            if not ok:
                                log("CHECK FAIL", cname, kvf, qf, graph, splits, rel, msg)
                        except Exception as e:  # noqa: BLE001
                            record(phase="check", case=cname, kv_format=kvf, q_format=qf, graph=graph, ok=False,
                                   error=f"{type(e).__name__}: {e}"[:300])
                            log("CHECK ERROR", cname, kvf, qf, graph, splits, traceback.format_exc()[-1500:])
        del data
    n_ok = sum(r.get("ok") is True for r in ROWS if r["phase"] == "check")
    log(f"correctness: {n_ok}/{sum(r['phase'] == 'check' for r in ROWS)} passed")


# --- 2. leaderboard shapes -------------------------------------------------------------------
def phase_leaderboard():
    for case in mla.LEADERBOARD:
        data = mla.generate_input(case.batch_size, 1, case.kv_seq_len, seed=case.seed + 7, device=DEV)
        for kvf in mla.KV_FORMATS:
            row = dict(phase="leaderboard", case=case.name, kv_format=kvf, q_format="bf16")
            try:
                p = TritonDecodePlan(data, kv_format=kvf, graph=False)
                ok, rel, msg = check(p, data, kvf, "bf16")
                truth_ok, truth_msg = mla.check(data, p.run(data))
                row.update(variant=p.variant.name, num_splits=p.num_splits, ok=ok, rel_l2=rel, lb=msg,
                           truth_ok=truth_ok, truth=truth_msg)
                if ok:
                    row["cold_plain_us"], row["cold_plain_min_us"] = t_cold(lambda: p.run(data), 20)
                    g = graph_of(p, data)
                    row["cold_graph_us"], row["cold_graph_min_us"] = t_cold(lambda: p.run(data), 30)
                    row["kernel_us"], row["kernel_min_us"] = t_kernel(g, 30)
                    row["gbs"] = bytes_of(case, kvf) / (row["kernel_us"] * 1e-6) / 1e9
                    row["bw_frac"] = row["gbs"] / 4340.0
                    # the graph must have replayed the right inputs: check once more after timing
                    ok3, rel3, _ = check(p, data, kvf, "bf16")
                    row["ok"] = ok and ok3
            except Exception as e:  # noqa: BLE001
                row.update(ok=False, error=f"{type(e).__name__}: {e}"[:300])
                log("LB ERROR", case.name, kvf, traceback.format_exc()[-1500:])
            record(**row)
            log("LB", case.name, kvf, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()
                                        if k in ("variant", "num_splits", "ok", "rel_l2", "cold_graph_us",
                                                 "cold_plain_us", "kernel_us", "bw_frac")})
        del data
        torch.cuda.empty_cache()


# --- 3. sweep ----------------------------------------------------------------------------------
SWEEP_VARIANTS = {  # the 2026-11-30 run's winners first, then the then-unmeasured prefetch variants
    "bf16": ["v4_n32_w4_s3", "v2_n64_w4_s2", "v1_n32_w4_s2", "v16_n64_w8_s2_pf", "v3_n64_w8_s2"],
    "fp8": ["v13_n64_w8_s2_f16", "v15_n64_w8_s2_f16_pf", "v1_n32_w4_s2", "v12_n32_w8_s2_f16", "v3_n64_w8_s2"],
    "mxfp4": ["v1_n32_w4_s2", "v14_n32_w4_s2_pf", "v16_n64_w8_s2_pf", "v3_n64_w8_s2", "v10_n32_w4_s2_intmx"],
}
SWEEP_SHAPES = [(256, 8192, (1, 2)), (32, 8192, (2, 4, 8, 16)), (4, 1024, (2, 8, 16, 32))]


def phase_sweep():
    for kvf in ("mxfp4", "fp8", "bf16"):
        for bs, kv, splits in SWEEP_SHAPES:
            data = mla.generate_input(bs, 1, kv, seed=bs * 31 + kv, device=DEV)
            case = mla.Case(bs, kv)
            ref = mla.reference(data, kv_format=kvf)
            for var in SWEEP_VARIANTS[kvf]:
                for s in splits:
                    if time.time() - T0 > BUDGET_S:
                        log("budget reached: sweep stops")
                        return
                    row = dict(phase="sweep", case=case.name, kv_format=kvf, q_format="bf16", variant=var, num_splits=s)
                    try:
                        p = TritonDecodePlan(data, kv_format=kvf, variant=var, num_splits=s)
                        ok, rel, msg = check(p, data, kvf, "bf16", ref)
                        row.update(ok=ok, rel_l2=rel, lb=msg)
                        if ok:
                            g = graph_of(p, data)
                            row["kernel_us"], row["kernel_min_us"] = t_kernel(g, 15)
                            row["bw_frac"] = bytes_of(case, kvf) / (row["kernel_us"] * 1e-6) / 1e9 / 4340.0
                    except Exception as e:  # noqa: BLE001
                        row.update(ok=False, error=f"{type(e).__name__}: {e}"[:300])
                        log("SWEEP ERROR", case.name, kvf, var, s, str(e)[:300])
                    record(**row)
                log("SWEEP", case.name, kvf, var, [(r["num_splits"], round(r.get("kernel_us", -1), 1))
                                                   for r in ROWS[-len(splits):]])
            if bs == 32 and time.time() - T0 < BUDGET_S:
                try:
                    best, times = race_num_splits(data, kv_format=kvf, candidates=(1, 2, 4, 8, 16),
                                                  save_to=os.path.join(OUT, "triton-split-decisions.csv"))
                    log("RACE", case.name, kvf, best, {k: round(v, 1) for k, v in times.items()})
                except Exception as e:  # noqa: BLE001
                    log("RACE ERROR", str(e)[:300])
            del data, ref
            torch.cuda.empty_cache()


# --- 4. word-decode variants vs the defaults (second probe, 2026-11-30) ----------------------------
VARIANT_SETS = {  # PROBE_VARIANTS=name picks one; the first of each list is the default at the time
    "words": {
        "mxfp4": ["v1_n32_w4_s2", "v17_n32_w4_s2_mxw", "v30_n32_w4_s2_mxw_tr", "v31_n64_w4_s2_mxw",
                  "v27_n32_w4_s3_mxw", "v19_n32_w4_s2_mxw_pf", "v20_n32_w4_s2_mxp"],
        "fp8": ["v13_n64_w8_s2_f16", "v32_n32_w4_s2_f16wp", "v35_n32_w4_s2_f16wp_tr", "v33_n64_w4_s2_f16wp",
                "v34_n32_w4_s3_f16wp", "v23_n32_w4_s2_f16w", "v25_n64_w4_s2_f16w"],
        "bf16": ["v4_n32_w4_s3", "v28_n32_w4_s3_tr"],
    },
}
VCHECK = {"mxfp4": ["v17_n32_w4_s2_mxw", "v30_n32_w4_s2_mxw_tr"], "fp8": ["v32_n32_w4_s2_f16wp", "v35_n32_w4_s2_f16wp_tr"],
          "bf16": ["v28_n32_w4_s3_tr"]}
VARIANT_CHECKS = [  # extra correctness cases for the new variants: (case, generate_input kwargs, splits)
    ("ragged", dict(batch_size=6, q_seq_len=1, kv_seq_len=8192, kv_lens=(1, 7, 33, 1000, 8192, 513)), "auto"),
    ("q4", dict(batch_size=8, q_seq_len=4, kv_seq_len=1024, kv_lens=(4, 9, 1024, 100, 333, 1024, 77, 600)), 3),
    ("h32", dict(batch_size=4, q_seq_len=1, kv_seq_len=2048, num_heads=32), 2),
]
# (batch, kv_len, splits, how many of each list: the default + the first new ones); bf16 only where
# splits > 1 (it is here for the tile reduce)
VARIANT_SHAPES = [(256, 8192, (1,), 9), (4, 1024, (16, 32), 9), (4, 8192, (64,), 3), (32, 8192, (8,), 9)]


@triton.jit
def _mx_unit_kernel(w_ptr, s_ptr, o_ptr, USE_PTX: tl.constexpr):
    r = tl.arange(0, 32)
    w = tl.load(w_ptr + r[:, None] * 64 + tl.arange(0, 64)[None, :])
    sc = tl.load(s_ptr + r[:, None] * 16 + tl.arange(0, 16)[None, :])
    x = _decode_mx_words(w, sc[:, :, None], 16, 32, USE_PTX, tl.float16)
    tl.store(o_ptr + r[:, None] * 512 + tl.arange(0, 512)[None, :], x)


@triton.jit
def _f8_unit_kernel(w_ptr, o_ptr, USE_PTX: tl.constexpr):
    r = tl.arange(0, 32)
    w = tl.load(w_ptr + r[:, None] * 128 + tl.arange(0, 128)[None, :])
    x = _decode_fp8_words(w, 128, 32, USE_PTX, tl.float16)
    tl.store(o_ptr + r[:, None] * 512 + tl.arange(0, 512)[None, :], x)


PTX_MODES = (True, False)  # the smoke test on CPU runs the portable path only


def phase_decode():
    """Unit check of the inline-PTX word decodes against their portable twins (bit-exact expected)."""
    g = torch.Generator(device=DEV).manual_seed(1)
    words = torch.randint(-2**31, 2**31 - 1, (32, 64), dtype=torch.int32, device=DEV, generator=g)
    scales = torch.randint(104, 137, (32, 16), dtype=torch.int32, device=DEV, generator=g)
    outs = []
    for ptx in PTX_MODES:
        o = torch.full((32, 512), float("nan"), dtype=torch.float16, device=DEV)
        _mx_unit_kernel[(1,)](words, scales, o, USE_PTX=ptx)
        outs.append(o)
    # reference from mla's own dequantizer semantics: nibble i of the row, value e2m1 * 2**(e - 127)
    nib = torch.stack([(words >> (4 * i)) & 0xF for i in range(8)], -1).reshape(32, 512)
    lut = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6], device=DEV)
    ref = lut[nib & 7] * torch.where(nib >= 8, -1.0, 1.0) * torch.exp2(scales.float() - 127).repeat_interleave(32, 1)
    mx_ok = bool((outs[0].float() == ref).all() and (outs[1].float() == ref).all())
    f8 = torch.randint(-2**31, 2**31 - 1, (32, 128), dtype=torch.int32, device=DEV, generator=g)
    b8 = f8.view(torch.uint8)
    b8[(b8 & 0x7F) == 0x7F] = 0  # no e4m3fn NaN bytes (0x7F / 0xFF): the portable decode does not handle them
    o8 = []
    for ptx in PTX_MODES:
        o = torch.full((32, 512), float("nan"), dtype=torch.float16, device=DEV)
        _f8_unit_kernel[(1,)](f8, o, USE_PTX=ptx)
        o8.append(o)
    bytes_ = f8.view(torch.uint8).view(torch.float8_e4m3fn).float().reshape(32, 512)
    f8_ok = bool(torch.equal(o8[0].float(), bytes_) and torch.equal(o8[1].float(), bytes_))
    record(phase="decode", case="unit", kv_format="mxfp4", ok=mx_ok,
           max_abs=float((outs[0].float() - ref).abs().max()))
    record(phase="decode", case="unit", kv_format="fp8", ok=f8_ok,
           max_abs=float((o8[0].float() - bytes_).abs().nan_to_num(99.0).max()))
    write_csv()
    log("DECODE unit: mxfp4 ptx==portable==ref", mx_ok, "fp8", f8_ok)


def phase_variants():
    sets = VARIANT_SETS[os.environ.get("PROBE_VARIANTS", "words")]
    seed = int(time.time()) % 100000
    for cname, kw, splits in VARIANT_CHECKS:  # new variants only: the defaults were checked before
        seed += 1
        data = mla.generate_input(seed=seed, device=DEV, **kw)
        for kvf, names in VCHECK.items():
            ref = own_format_reference(data, kvf, "bf16")
            for var in names:
                row = dict(phase="vcheck", case=cname, kv_format=kvf, q_format="bf16", variant=var)
                try:
                    p = TritonDecodePlan(data, kv_format=kvf, variant=var, num_splits=splits)
                    ok, rel, msg = check(p, data, kvf, "bf16", ref)
                    row.update(num_splits=p.num_splits, ok=ok, rel_l2=rel, lb=msg)
                except Exception as e:  # noqa: BLE001
                    row.update(ok=False, error=f"{type(e).__name__}: {e}"[:300])
                record(**row)
                write_csv()
                log("VCHECK", cname, kvf, var, row.get("ok"), row.get("rel_l2"), row.get("error", ""))
        del data
    for bs, kv, splits, first in VARIANT_SHAPES:
        data = mla.generate_input(bs, 1, kv, seed=bs * 37 + kv, device=DEV)  # fresh inputs
        case = mla.Case(bs, kv)
        for kvf, names in sets.items():
            if kvf == "bf16" and splits == (1,):
                continue  # bf16 is here for the reduce only
            ref = mla.reference(data, kv_format=kvf)
            for var in names[:first]:
                for sp in splits:
                    if sp == 1 and var.endswith("_tr"):
                        continue  # one split: no reduce, the same kernel as its parent
                    if time.time() - T0 > BUDGET_S:
                        log("budget reached: variants phase stops")
                        return
                    row = dict(phase="variants", case=case.name, kv_format=kvf, q_format="bf16", variant=var,
                               num_splits=sp)
                    try:
                        p = TritonDecodePlan(data, kv_format=kvf, variant=var, num_splits=sp)
                        ok, rel, msg = check(p, data, kvf, "bf16", ref)
                        row.update(ok=ok, rel_l2=rel, lb=msg)
                        if ok:
                            g = graph_of(p, data)
                            row["kernel_us"], row["kernel_min_us"] = t_kernel(g, 15)
                            row["bw_frac"] = bytes_of(case, kvf) / (row["kernel_us"] * 1e-6) / 1e9 / 4340.0
                            ok3, _, _ = check(p, data, kvf, "bf16", ref)  # the graph replayed the right inputs
                            row["ok"] = ok and ok3
                    except Exception as e:  # noqa: BLE001
                        row.update(ok=False, error=f"{type(e).__name__}: {e}"[:300])
                    record(**row)
                    write_csv()
                    log("VAR", case.name, kvf, var, sp, row.get("ok"), round(row.get("kernel_us", -1), 1),
                        row.get("error", "")[:200])
            del ref
        del data
        torch.cuda.empty_cache()


def write_csv():
    keys = []
    for r in ROWS:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(OUT, os.environ.get("PROBE_CSV", "triton-probe.csv")), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(ROWS)


def main():
    global FLUSH
    PROV.update(provenance())
    FLUSH = L2Flush(DEV)
    log("provenance", PROV)
    phases = dict(correctness=phase_correctness, leaderboard=phase_leaderboard, sweep=phase_sweep,
                  decode=phase_decode, variants=phase_variants)
    wanted = os.environ.get("PROBE_PHASES", "correctness,leaderboard,sweep").split(",")
    for phase in (phases[w] for w in wanted):
        try:
            phase()
        except Exception:  # noqa: BLE001
            log("PHASE ERROR", phase.__name__, traceback.format_exc()[-2000:])
        write_csv()
    # compact table last
    print("\n== sweep: best kernel_us per (case, kv_format) ==")
    best = {}
    for r in ROWS:
        if r["phase"] == "sweep" and r.get("ok") and "kernel_us" in r:
            k = (r["case"], r["kv_format"])
            if k not in best or r["kernel_us"] < best[k]["kernel_us"]:
                best[k] = r
    for (c, f), r in sorted(best.items()):
        print(f"{c:22s} {f:6s} {r['variant']:22s} splits={r['num_splits']:<3d} {r['kernel_us']:8.1f} us  "
              f"bw={r['bw_frac']:.2f}")
    print("\n== variants: kernel_us (graph replay, cold L2) ==")
    for r in ROWS:
        if r["phase"] in ("variants", "vcheck"):
            print(f"{r['phase']:8s} {r['case']:20s} {r['kv_format']:6s} {str(r.get('variant')):22s} "
                  f"spl={str(r.get('num_splits')):>4s} ok={'Y' if r.get('ok') else 'N'} rel={r.get('rel_l2', float('nan')):.2e} "
                  f"{r.get('kernel_us', float('nan')):8.1f} us bw={r.get('bw_frac', 0):.2f} {r.get('error', '')[:120]}")
    checks = [r for r in ROWS if r["phase"] == "check"]
    print(f"\n== correctness: {sum(bool(r.get('ok')) for r in checks)}/{len(checks)} passed ==")
    for r in checks:
        if not r.get("ok"):
            print("  FAIL", r.get("case"), r.get("kv_format"), r.get("q_format"), r.get("graph"), r.get("rel_l2"),
                  r.get("error", r.get("lb")))
    print("\n== leaderboard shapes (default variant, heuristic splits, bf16 Q) ==")
    print(f"{'case':22s} {'kv':6s} {'variant':16s} {'spl':>3s} {'ok':>3s} {'rel_l2':>8s} {'cold_graph':>10s} "
          f"{'cold_plain':>10s} {'kernel':>8s} {'bw':>5s}")
    for r in ROWS:
        if r["phase"] == "leaderboard":
            f = lambda k: f"{r[k]:.1f}" if isinstance(r.get(k), float) else "-"  # noqa: E731
            print(f"{r['case']:22s} {r['kv_format']:6s} {str(r.get('variant')):16s} {str(r.get('num_splits')):>3s} "
                  f"{'Y' if r.get('ok') else 'N':>3s} {r.get('rel_l2', float('nan')):8.2e} {f('cold_graph_us'):>10s} "
                  f"{f('cold_plain_us'):>10s} {f('kernel_us'):>8s} {r.get('bw_frac', 0):5.2f}")
    for kvf in mla.KV_FORMATS:
        xs = [r["cold_graph_us"] for r in ROWS if r["phase"] == "leaderboard" and r["kv_format"] == kvf
              and "cold_graph_us" in r]
        if len(xs) == 8:
            print(f"geomean cold_graph {kvf}: {statistics.geometric_mean(xs):.1f} us")
    print(f"total {time.time() - T0:.0f}s")


if __name__ == "__main__":
    sys.exit(main())
