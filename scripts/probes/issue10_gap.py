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
  decode            mla.decode(data, backend="triton", kv_format=...): the default call
  decode_noguard    decode minus the CallGuard (validate has no "off": VALIDATE_MODES is
                    ("auto", "full")): the plan-cache key and lookup, then plan.run on the guard's
                    trusted tuple, as mla.backends._guarded / decode do
  decode_queued     (fresh only) decode with the guard's signature memory cleared before each repeat,
                    so every call queues the contents check on the side stream (the default path
                    for address sets the guard has not seen; the A/B sets eval.py's order recycles
                    are remembered and skip it: see 'queued_checks' of the decode rows)
  decode_nograph    mla.decode(..., graph=False): plain launches (the Triton launch path per format)

Every loop records the device median (events) and host_median_us (perf_counter around the same call),
and the plan's call_paths / CallGuard deltas (launches, captures, replays, full_checks, queued_checks).
Rounds run the formats in opposite orders (round 1 bf16, fp8, mxfp4; round 2 reversed): a gap that
follows the position and not the format is process / order state, not the format's call path.
Budget: ~35-55 s of GPU time on a warm Triton cache (--budget stops starting loops after it).
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
COLD_PATHS = ("replay", "run", "decode", "decode_noguard", "decode_nograph")
FRESH_PATHS = ("replay", "run", "decode", "decode_noguard", "decode_queued", "decode_nograph")
HARNESS_MODES = ("cold", "warm", "kernel", "fresh")
FIELDS = ("timestamp_utc", "round", "position", "case", "kv_format", "variant", "mode", "path", "status", "message",
          "median_us", "min_us", "iqr_us", "n", "host_median_us", "launches", "captures", "replays", "full_checks",
          "queued_checks", "plan_config", "flush_us", "host_floor_us", "graph_floor_us")
NAN = math.nan


def host_timed(fn, sink: list):
    """``fn`` with perf_counter around every call (us appended to ``sink``)."""
    def timed(*a):
        t0 = time.perf_counter()
        out = fn(*a)
        sink.append((time.perf_counter() - t0) * 1e6)
        return out
    return timed


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
                     median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"])

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
                    elif name == "decode_noguard":
                        fn = noguard(kvf)
                    elif name == "decode_queued":
                        fn = decode

                        def make(i, _make=make):  # noqa: F811  forget the remembered address sets first
                            guard._seen.clear()
                            return _make(i)
                    else:  # decode_nograph
                        fn = (lambda d: decode(d, graph=False))
                    before = counters(counted)
                    try:
                        if mode == "cold":
                            samples = cold(host_timed(lambda _fn=fn: _fn(timing), host))
                            out = fn(timing)
                            verify(timing, out)
                        else:
                            samples = time_fresh(make, host_timed(fn, host), rule, flush=flush, verify=verify)
                        st = summarize(samples)
                        status, message = ("failed", failures[0]) if failures else ("ok", "")
                    except Exception as e:  # one path failing must not lose the others' rows
                        st, status, message = dict(median=NAN, min=NAN, iqr=NAN, n=0), "error", \
                            f"{type(e).__name__}: {e}"[:500]
                    after = counters(counted)
                    hs = host[-st["n"]:] if st["n"] else []
                    emit(**common, **meta, mode=mode, path=name, status=status, message=message,
                         median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"],
                         host_median_us=summarize(hs)["median"] if hs else NAN,
                         **{k: after[k] - before[k] for k in after})
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
    bad = [r for r in rows if r["status"] not in ("ok", "skipped")]
    for r in bad:
        print(f"NOT OK {r['kv_format']} {r.get('mode')} {r['path']}: {r['status']}: {str(r['message'])[:200]}")
    print(f"wrote {len(rows)} rows to {path} in {time.time() - t_start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
