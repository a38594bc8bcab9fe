#!/usr/bin/env python3
"""Issue 10, "small shapes at the floor": where the default call's time over its kernels goes, per KV
format, at one shape (bs4-kv1024 by default), every path timed in ONE process.

    H200:  PYTHONPATH=. python3 scripts/probes/issue10_gap.py            # -> $OUT/issue10-gap.csv (or ./out/...)
           python3 scripts/probes/issue10_gap.py some/dir --rounds 1 --max-seconds 0.1
    CPU:   TRITON_INTERPRET=1 python3 scripts/probes/issue10_gap.py out/x --case bs2-kv64-q1-h16 --min-runs 2
           (the same loops with perf_counter instead of events: a smoke test of the script only)

Campaign 4 (data/measured/h200/campaign4-triton.csv) at bs4-kv1024: cold 32.5 / 55.0 / 80.8 us and
fresh 14.7 / 44.6 / 70.9 us (bf16 / fp8 / MXFP4) over kernels of 13.5 / 14.1 / 20.4 us; at
bs4-kv8192 and bs64-kv1024 the same fp8 / MXFP4 code paths had bf16's ~21-23 us cold gap, and
campaign 3's MXFP4 bs4-kv1024 row (same v86 kernel, same replay path) had 17 us. This script
separates the path from the state the harness leaves, with the repository's own timers
(mla.bench.timers: L2Flush, time_events = the harness's 'cold', time_fresh = its 'fresh' (eval.py's
order), time_kernel = its 'kernel'):

  harness           mla.bench.harness.run_bench on this case and format (modes cold, warm, kernel,
                    fresh): the campaign row reproduced in this process; its counters are the plan's
                    over the whole row (every mode, warm-ups and the checks included)
  kernel            time_kernel(plan.run(timing)): the kernels alone, graph replay, L2 flushed
  flush             time_events(flush.flush): device time of one L2 flush (what eval.py's order hides
                    host work behind: a fresh call whose host part is longer than this shows it)
  then each path in mode cold (the timing set, L2 flushed and synchronized, events around the call)
  and mode fresh (new inputs before every call, seed + 13 per repeat, flush not awaited, every
  output checked), on a plan made for this loop set (clear_plans first):
  replay            fn = plan.bind(data); fn(): the plan's own CUDA graph, no Python of ours
                    (fresh: the new repeat's contents copied into the bound tensors before the sync)
  run               plan.run(data): graph policy, no validation
  decode            mla.decode(data, backend="triton", kv_format=...): the default call (cold: a repeated
                    call, so mla.decode's memo of its previous call replays the graph directly)
  decode_checked    (cold only) decode with that memo cleared before each call: the plan lookup, the
                    guard and plan.run's graph policy, every call (the default call before the memo)
  decode_noguard    decode minus the CallGuard (validate has no "off": VALIDATE_MODES is
                    ("auto", "full")): the plan-cache key and lookup, then plan.run on the guard's
                    trusted tuple, as mla.backends._guarded / decode do
  decode_queued     (fresh only) decode with the guard's signature memory cleared before each repeat,
                    so every call queues the contents check on the side stream (the default path
                    for address sets the guard has not seen; the A/B sets eval.py's order recycles
                    are remembered and skip it: see 'queued_checks' of the decode rows)
  decode_nograph    mla.decode(..., graph=False): plain launches (the Triton launch path per format)

  queue_step:<v>:<s> (GPU only) host time of each step s of CallGuard._queue (wait_stream, check_ops,
                    d2h_copy, event_record, stream_exit) in eval.py's order, flush not awaited, for
                    the one-kernel check (v = one_kernel: mla/kernels/triton/contents_check.py, no copy
                    step), the four torch ops it replaced (v = torch_ops; gap-r4 called them "current")
                    and the ones before 5cb5538 (5 / 11 launches)
  tma_descriptors:<s> (MXFP4) host time of the warp-specialized kernel's two TMA descriptors for a new
                    cache address: Gluon's checked constructor against ws_tma_descriptors' re-based copies

Every loop records the device median and p90 (events) and host_median_us / host_p90_us (perf_counter
around the same call), and the plan's call_paths / CallGuard deltas (launches, captures, replays,
full_checks, queued_checks); block_host_floor_us is the host floor measured again just before each
(round, format) block. Each loop starts with the graph policy's recent keys cleared (a loop's first
address set can be the last one of the loop before: in r1 that made one capture in a fresh loop).

Round 1 (data/measured/h200/issue10/gap-r1.csv, commit 5cb5538 without the validate change that
follows it): cold decode 34-37 us for all three formats in both rounds (replay 16-18, run 20-22,
decode_noguard 24-28: the CallGuard ~9 us); fresh decode 14-16 us = the kernel, with host 150-220 us
against a 237-us flush; decode_queued 110-424 us (host 310-590 us); one harness row per round 2x slow
in cold / warm / fresh (r1 fp8, r2 bf16) while the isolated loops of that format were not.
Rounds run the formats in opposite orders (round 1 bf16, fp8, mxfp4; round 2 reversed): a gap that
follows the position and not the format is process / order state, not the format's call path.
Budget: r1 took 10 s on the H200 (warm Triton cache); a cold cache adds the compiles; --budget (55 s)
stops starting loops after it.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this tree's mla, not an installed copy
import mla  # noqa: E402
from mla.backends import _plans, clear_plans, shape_key  # noqa: E402
from mla.bench import harness  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.bandwidth import measure_graph_floor, measure_host_floor  # noqa: E402
from mla.bench.harness import resolve_cases, run_bench  # noqa: E402
from mla.bench.stats import StoppingRule, summarize  # noqa: E402
from mla.bench.timers import FRESH_SEED_STEP, L2Flush, time_cpu, time_events, time_fresh, time_kernel  # noqa: E402
from mla.inputs import generate_case  # noqa: E402

_spec = importlib.util.spec_from_file_location("h200_issue10_fresh", ROOT / "scripts" / "h200_issue10_fresh.py")
_fresh_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fresh_script)
counters, refill = _fresh_script.counters, _fresh_script.refill  # the issue-10 script's helpers

BACKEND = "triton"
COLD_PATHS = ("replay", "run", "decode", "decode_checked", "decode_noguard", "decode_nograph")
FRESH_PATHS = ("replay", "run", "decode", "decode_noguard", "decode_queued", "decode_nograph")
HARNESS_MODES = ("cold", "warm", "kernel", "fresh")
FIELDS = ("timestamp_utc", "round", "position", "case", "kv_format", "variant", "mode", "path", "status", "message",
          "median_us", "min_us", "iqr_us", "n", "host_median_us", "launches", "captures", "replays", "full_checks",
          "queued_checks", "plan_config", "flush_us", "host_floor_us", "graph_floor_us",
          # added after gap-r1 (data/measured/h200/issue10/gap-r1.csv has the columns above only)
          "p90_us", "host_p90_us", "block_host_floor_us")
QUEUE_STEPS = ("wait_stream", "check_ops", "d2h_copy", "event_record", "stream_exit")
NAN = math.nan


def host_timed(fn, sink: list):
    """``fn`` with perf_counter around every call (us appended to ``sink``)."""
    def timed(*a):
        t0 = time.perf_counter()
        out = fn(*a)
        sink.append((time.perf_counter() - t0) * 1e6)
        return out
    return timed


def p90(samples) -> float:
    return float(np.percentile(np.asarray(samples, dtype=np.float64), 90)) if len(samples) else NAN


def bad_before_5cb5538(guard, qo, kv, scale):
    """CallGuard._bad as it was up to commit 5cb5538 (5 launches; 11 with the fp8 scale): the
    queue_step rows time it beside the current one."""
    bad = (qo != guard.canonical[0]).any() | (kv != guard.canonical[1]).any()
    if scale is not None:
        bad = bad | ~((scale > 0) & (scale < float("inf"))).all()
    return bad


def queue_steps(guard, kv_format, make, flush, device, n: int) -> dict:
    """Host time of each step of CallGuard._queue in eval.py's order (synchronize, flush not awaited,
    then the steps), for the current check ops and the ones before 5cb5538. gap-r1's decode_queued
    rows spent 310-590 us of host time per call, more than the 237-us flush: if one step waits for
    the device (the flush, then the side stream's ops), it is the one near or above the flush here.
    -> {(variant, step): [us, ...]}"""
    side = mla.validate._side_stream(device)
    flags, events = guard._ring
    res: dict = {}
    variants = [("torch_ops", guard._bad), ("before_5cb5538", lambda *a: bad_before_5cb5538(guard, *a))]
    if getattr(guard, "_check", None) is not None:  # the one-kernel check (it writes the flag: no copy)
        variants.insert(0, ("one_kernel", guard._check))
    for variant, bad_fn in variants:
        for i in range(n):
            d = make(10_000 + i)
            scale = d[1]["fp8"][1] if kv_format == "fp8" else None
            torch.cuda.synchronize()
            flush.flush()  # not awaited, as time_fresh / eval.py
            t = [time.perf_counter()]
            side.wait_stream(torch.cuda.current_stream(device))
            t.append(time.perf_counter())
            with torch.cuda.stream(side):
                if variant == "one_kernel":
                    bad_fn(d[2], d[3], scale, flags[i % len(flags)])
                    t.append(time.perf_counter())
                else:
                    bad = bad_fn(d[2], d[3], scale)
                    t.append(time.perf_counter())
                    flags[i % len(flags)].copy_(bad, non_blocking=True)
                t.append(time.perf_counter())
                events[i % len(events)].record(side)
                t.append(time.perf_counter())
            t.append(time.perf_counter())
            torch.cuda.synchronize()
            for step, a, b in zip(QUEUE_STEPS, t, t[1:]):
                res.setdefault((variant, step), []).append((b - a) * 1e6)
    return res


def descriptor_steps(make, flush, n: int) -> dict:
    """Host time of the warp-specialized MXFP4 kernel's two TMA descriptors for a new cache address in
    eval.py's order: Gluon's checked constructor (what every new address paid up to gap probe 4) against
    ws_tma_descriptors' re-based copies of fields kept per cache shape. -> {step: [us, ...]}"""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from mla.kernels.triton.gluon_sm90 import WS_TMA_BLOCKS, ws_tma_descriptors, ws_tma_layout
    res: dict = {}
    for i in range(n):
        packed = make(20_000 + i)[1]["mxfp4"][0]
        stride = packed.stride(0)
        torch.cuda.synchronize()
        flush.flush()  # not awaited
        t0 = time.perf_counter()
        tuple(TensorDescriptor(packed, [packed.shape[0], 288], [stride, 1], WS_TMA_BLOCKS[w], ws_tma_layout(w))
              for w in ("lat", "rope"))
        t1 = time.perf_counter()
        ws_tma_descriptors(packed, stride)
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        res.setdefault("constructor", []).append((t1 - t0) * 1e6)
        res.setdefault("rebased", []).append((t2 - t1) * 1e6)
    return res


def noguard(kv_format: str):
    """mla.decode without the CallGuard: the key _guarded computes, the cached plan, run on the
    guard's trusted tuple (canonical indptrs, as decode runs)."""
    def call(d):
        p, guard = _plans[(BACKEND, kv_format, "bf16", (), shape_key(d))]
        return p.run(guard.trusted(d))
    return call


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(os.environ.get("OUT") or "out", "issue10-gap"))
    ap.add_argument("--case", default="bs4-kv1024-q1-h16")
    ap.add_argument("--kv-format", default="bf16,fp8,mxfp4")
    ap.add_argument("--rounds", type=int, default=2, help="round 2 runs the formats in the reverse order")
    ap.add_argument("--max-seconds", type=float, default=0.12, help="sampling cap per loop (and per harness mode)")
    ap.add_argument("--min-runs", type=int, default=10)
    ap.add_argument("--max-runs", type=int, default=120)
    ap.add_argument("--budget", type=float, default=55.0, help="seconds; loops after it are skipped")
    ap.add_argument("--no-harness", action="store_true", help="skip the run_bench reproduction of the campaign row")
    ap.add_argument("--queue-steps", type=int, default=20, help="repeats of the step-by-step queued-check timing")
    args = ap.parse_args(argv)
    t_start = time.time()

    on_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "issue10-gap.csv"
    if path.exists():
        print(f"error: {path} exists (never overwritten)", file=sys.stderr)
        return 2
    rule = StoppingRule(min_runs=args.min_runs, max_runs=max(args.min_runs, args.max_runs),
                        max_seconds=args.max_seconds)
    (case,) = resolve_cases(args.case)
    formats = [f for f in args.kv_format.split(",") if f]
    base = prov.provenance(device, prov.new_run_id(device))
    flush = L2Flush(device) if on_gpu else None
    floors = dict(host_floor_us=measure_host_floor(device, rule),
                  graph_floor_us=measure_graph_floor(device, rule) if on_gpu else NAN)
    flush_us = summarize(time_events(flush.flush, rule, flush=None))["median"] if on_gpu else NAN
    print(f"run {base['run_id']} on {base['device']}, commit {base['git_commit'][:12]}; host floor "
          f"{floors['host_floor_us']:.1f} us, graph floor {floors['graph_floor_us']:.1f} us, one L2 flush "
          f"{flush_us:.1f} us", flush=True)

    rows: list[dict] = []
    f = path.open("w", newline="")
    writer = csv.DictWriter(f, fieldnames=list(base) + list(FIELDS))
    writer.writeheader()

    def emit(**row):
        row = dict(base, timestamp_utc=prov.utc_now(), case=case.name, flush_us=flush_us, **floors, **row)
        writer.writerow({k: row.get(k, "") for k in writer.fieldnames})
        f.flush()
        rows.append(row)

    def over_budget() -> bool:
        return time.time() - t_start > args.budget

    def cold(fn):
        return time_events(fn, rule, flush=flush) if on_gpu else time_cpu(fn, rule)

    timing = generate_case(case, device=device)
    bound = generate_case(case, device=device, seed=case.seed + 104729)  # replay's fixed addresses (fresh)

    for rnd in range(1, args.rounds + 1):
        order = formats if rnd % 2 else formats[::-1]
        for pos, kvf in enumerate(order, 1):
            common = dict(round=rnd, position=pos, kv_format=kvf)
            if over_budget():
                emit(**common, path="*", status="skipped", message="script budget spent")
                continue
            # the host floor again, now: a block whose floor is up is a slow-host episode (gap-r1: one
            # harness row per round 2x slower in cold / warm / fresh, a different format each round)
            common["block_host_floor_us"] = measure_host_floor(device, rule)
            if over_budget():
                emit(**common, path="*", status="skipped", message="script budget spent")
                continue
            # 1. the campaign row, through the harness, in this process
            if not args.no_harness:
                snap: dict = {}
                orig_clear = harness.clear_plans

                def snapshot_then_clear(_kvf=kvf, _snap=snap):
                    for key, (p, _g) in list(_plans.items()):
                        if key[0] == BACKEND and key[1] == _kvf and not key[3]:
                            _snap.update(counters(p), variant=p.config.get("variant"),
                                         plan_config=json.dumps(p.config, sort_keys=True, default=str))
                    orig_clear()
                harness.clear_plans = snapshot_then_clear
                try:
                    df = run_bench([case], [BACKEND], kv_formats=[kvf], modes=HARNESS_MODES if on_gpu else ("cpu",),
                                   device=device, rule=rule, bandwidth=dict(read_gbs=NAN, copy_gbs=NAN, **floors))
                finally:
                    harness.clear_plans = orig_clear
                r = df.iloc[0]
                for mode in HARNESS_MODES if on_gpu else ("cpu",):
                    emit(**common, **snap, mode=mode, path="harness", status=r["status"],
                         message=(r["message"] if isinstance(r["message"], str) else "") + " (counters: the whole row)",
                         median_us=r[f"{mode}_median_us"], min_us=r[f"{mode}_min_us"], iqr_us=r[f"{mode}_iqr_us"],
                         n=r[f"{mode}_n"])
            # 2. the paths, on plans made for them
            clear_plans()
            plan = mla.plan(timing, backend=BACKEND, kv_format=kvf)
            kp = plan.kernel_plan
            nograph = mla.plan(timing, backend=BACKEND, kv_format=kvf, graph=False)
            meta = dict(variant=plan.config["variant"],
                        plan_config=json.dumps(plan.config, sort_keys=True, default=str))
            guard = mla.backends.call_guard(plan)
            if on_gpu:
                samples, method = time_kernel(lambda: kp.run(timing), rule, flush)
                st = summarize(samples)
                emit(**common, **meta, mode="kernel", path="kernel", status="ok", message=method,
                     median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"], p90_us=p90(samples))

            def decode(d, _kvf=kvf, **cfg):
                return mla.decode(d, backend=BACKEND, kv_format=_kvf, **cfg)

            for mode, names in (("cold", COLD_PATHS), ("fresh", FRESH_PATHS)):
                for name in names:
                    if over_budget():
                        emit(**common, **meta, mode=mode, path=name, status="skipped", message="script budget spent")
                        continue
                    counted = nograph if name == "decode_nograph" else plan
                    failures: list[str] = []
                    host: list[float] = []

                    def make(i):
                        return generate_case(case, device=device, seed=case.seed + FRESH_SEED_STEP * i)

                    def verify(d, out, _failures=failures):
                        ok, msg = mla.check(d, out)
                        if not ok and not _failures:
                            _failures.append(msg)

                    if name == "replay":
                        fn_b = plan.bind(timing if mode == "cold" else bound)
                        fn = (lambda _d=None, _fn=fn_b: (_fn(), kp.out)[1])

                        def make(i, _make=make):  # noqa: F811  new contents, the bound addresses
                            refill(bound, _make(i))
                            return bound
                    elif name == "run":
                        fn = kp.run
                    elif name == "decode":
                        fn = decode
                    elif name == "decode_checked":
                        def fn(d, _decode=decode):
                            mla.backends._last = None  # (the memo of the previous call, forgotten)
                            return _decode(d)
                    elif name == "decode_noguard":
                        fn = noguard(kvf)
                    elif name == "decode_queued":
                        fn = decode

                        def make(i, _make=make):  # noqa: F811  forget the remembered address sets first
                            guard._seen.clear()
                            return _make(i)
                    else:  # decode_nograph
                        fn = (lambda d: decode(d, graph=False))
                    # a loop's first address set can be the previous loop's last one (freed between
                    # them): 'consecutive' for GraphAutoPolicy, a capture (gap-r1: bf16 decode_queued)
                    counted.kernel_plan._auto.recent.clear()
                    before = counters(counted)
                    try:
                        if mode == "cold":
                            samples = cold(host_timed(lambda _fn=fn: _fn(timing), host))
                            out = fn(timing)
                            verify(timing, out)
                        else:
                            samples = time_fresh(make, host_timed(fn, host), rule, flush=flush, verify=verify)
                        st = summarize(samples)
                        st["p90"] = p90(samples)
                        status, message = ("failed", failures[0]) if failures else ("ok", "")
                    except Exception as e:  # one path failing must not lose the others' rows
                        st, status, message = dict(median=NAN, min=NAN, iqr=NAN, n=0, p90=NAN), "error", \
                            f"{type(e).__name__}: {e}"[:500]
                    after = counters(counted)
                    hs = host[-st["n"]:] if st["n"] else []
                    emit(**common, **meta, mode=mode, path=name, status=status, message=message,
                         median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"], p90_us=st["p90"],
                         host_median_us=summarize(hs)["median"] if hs else NAN, host_p90_us=p90(hs),
                         **{k: after[k] - before[k] for k in after})
            if on_gpu and not over_budget():
                mla.validate.wait_pending()  # the ring's flags are reused below: no check of the loops in flight

                def make_q(i):
                    return generate_case(case, device=device, seed=case.seed + FRESH_SEED_STEP * i)
                for (variant, step), us in queue_steps(guard, kvf, make_q, flush, device, args.queue_steps).items():
                    st = summarize(us)
                    emit(**common, **meta, mode="fresh", path=f"queue_step:{variant}:{step}", status="ok",
                         message="host us of one step of CallGuard._queue, flush not awaited",
                         host_median_us=st["median"], host_p90_us=p90(us), min_us=st["min"], n=st["n"])
                if kvf == "mxfp4":
                    for step, us in descriptor_steps(make_q, flush, args.queue_steps).items():
                        st = summarize(us)
                        emit(**common, **meta, mode="fresh", path=f"tma_descriptors:{step}", status="ok",
                             message="host us of the two TMA descriptors for a new cache address, flush not awaited",
                             host_median_us=st["median"], host_p90_us=p90(us), min_us=st["min"], n=st["n"])
            clear_plans()
    f.close()

    # the table: device median (host median) per path and mode, one column per round
    def cell(kvf, mode, pth, rnd):
        v = [r for r in rows if r["kv_format"] == kvf and r.get("mode") == mode and r["path"] == pth
             and r["round"] == rnd and r["status"] == "ok"]
        if not v:
            return "-"
        r = v[0]
        h = r.get("host_median_us", NAN)
        return f"{r['median_us']:.1f}" + (f" ({h:.1f})" if isinstance(h, float) and h == h else "")

    rounds = range(1, args.rounds + 1)
    print("\ndevice median us (host median us in parentheses); r<k> = round k; harness = run_bench's row")
    head = f"{'fmt':6s} {'mode':6s} {'path':15s} " + " ".join(f"{'r' + str(k):>16s}" for k in rounds) \
        + "   fresh L/C/R full/queued (last round)"
    print(head)
    for kvf in formats:
        lines = [("harness", m) for m in (HARNESS_MODES if on_gpu else ("cpu",))] + [("kernel", "kernel")] \
            + [(p, "cold") for p in COLD_PATHS] + [(p, "fresh") for p in FRESH_PATHS]
        for pth, mode in lines:
            cells = " ".join(f"{cell(kvf, mode, pth, k):>16s}" for k in rounds)
            last = [r for r in rows if r["kv_format"] == kvf and r.get("mode") == mode and r["path"] == pth
                    and r["status"] == "ok"]
            tail = ""
            if last and mode == "fresh" and last[-1].get("launches", "") != "":
                r = last[-1]
                tail = f"   {r['launches']}/{r['captures']}/{r['replays']} {r['full_checks']}/{r['queued_checks']}"
            print(f"{kvf:6s} {mode:6s} {pth:15s} {cells}{tail}")
    steps = [r for r in rows if str(r["path"]).startswith("queue_step:")]
    if steps:
        print("\nqueued contents check, host us per step (median / p90), flush not awaited")
        for kvf in formats:
            for variant in ("one_kernel", "torch_ops", "before_5cb5538"):
                mine = {r["path"].split(":")[2]: r for r in steps if r["kv_format"] == kvf
                        and r["path"].split(":")[1] == variant}
                if mine:
                    print(f"{kvf:6s} {variant:15s} " + "  ".join(
                        f"{k} {mine[k]['host_median_us']:.1f}/{mine[k]['host_p90_us']:.1f}"
                        for k in QUEUE_STEPS if k in mine))
    bad = [r for r in rows if r["status"] not in ("ok", "skipped")]
    for r in bad:
        print(f"NOT OK {r['kv_format']} {r.get('mode')} {r['path']}: {r['status']}: {str(r['message'])[:200]}")
    print(f"wrote {len(rows)} rows to {path} in {time.time() - t_start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
