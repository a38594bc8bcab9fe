#!/usr/bin/env python3
"""Issue 10 on the H200: what one fresh-input call costs in eval.py's leaderboard order, path by path.

    device:  MLA_GIT_COMMIT=<sha> python3 scripts/h200_issue10_fresh.py        # -> $OUT/issue10-fresh.csv, < 90 s
             python3 scripts/h200_issue10_fresh.py some/dir                     # the directory as an argument
    CPU:     TRITON_INTERPRET=1 python3 scripts/h200_issue10_fresh.py out/x --cases bs2-kv64-q1-h16 --min-runs 2

Per (case, KV format) every path below is timed with mla.bench.timers.time_fresh, the harness's
'fresh' mode loop: new inputs before every repeat (seed + 13 per repeat, the previous set alive until
the next exists), synchronize, L2 flush NOT waited for, start event, the call, end event; every output
is checked (mla.check, outside the timed region).

  decode_full     mla.decode(data, backend="triton", validate="full"): the validation before issue 10
                  (one synchronous full check, a device sync, per new tensor set)
  decode          mla.decode(data, backend="triton"): the default (validate="auto", graph="auto")
  decode_nograph  mla.decode(..., graph=False): the same without any graph policy (plain launches)
  run             plan.run(data): the lean call of the default plan, no validation
  bind            fn = plan.bind(bound); fn(): the graph replay on tensors that keep their addresses, the
                  new repeat's contents copied into them before the synchronize (outside the timed region)
  kernel          device time of the default plan (the harness's kernel mode: graph replay, L2 flushed);
  kernel_tile     the same shape with fused_reduce=False, in two interleaved rounds, where the default
                  chose the fused reduce (fp8 at bs32 / bs64-kv8192): the same-run A/B of the rule

Floors, same process: host_floor_us (one add_ launched, cold order) and graph_floor_us (a one-kernel
graph replay, cold order), both from mla.bench.bandwidth as on every harness row, and
graph_floor_fresh_us (that replay timed in eval.py's order, the floor of the paths above).
Counted over each timed loop (warm-up included): launches / captures / replays (TritonDecodePlan.call_paths),
full_checks / queued_checks (the plan's CallGuard); ``sync_free`` (decode only): five more fresh calls ran
under torch.cuda.set_sync_debug_mode("error") without an error. Rows carry the harness's provenance
columns (mla.bench.provenance: MLA_GIT_COMMIT wins over .git).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's mla, not an installed copy
import mla  # noqa: E402
from mla.backends import call_guard, clear_plans  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.bandwidth import measure_graph_floor, measure_host_floor  # noqa: E402
from mla.bench.harness import resolve_cases  # noqa: E402
from mla.bench.stats import StoppingRule, summarize  # noqa: E402
from mla.bench.timers import FRESH_SEED_STEP, L2Flush, capture_graph, time_fresh, time_kernel  # noqa: E402
from mla.inputs import generate_case  # noqa: E402

PATHS = ("decode_full", "decode", "decode_nograph", "run", "bind")
FIELDS = ("timestamp_utc", "case", "kv_format", "path", "round", "config", "plan_config", "status", "message",
          "median_us", "min_us", "iqr_us", "n", "method", "host_floor_us", "graph_floor_us", "graph_floor_fresh_us",
          "launches", "captures", "replays", "full_checks", "queued_checks", "sync_free")


def counters(plan) -> dict:
    kp, guard = plan.kernel_plan, call_guard(plan)
    return dict(launches=kp.call_paths["launch"], captures=kp.call_paths["capture"],
                replays=kp.call_paths["replay"], full_checks=guard.full_checks, queued_checks=guard.queued_checks)


def refill(bound, new) -> None:
    """Copy ``new``'s contents into ``bound``'s tensors (what a plan.bind handle allows: same addresses);
    every KV format, as mla.check's reference reads the bf16 cache."""
    pairs = [(bound[0], new[0]), (bound[2], new[2]), (bound[3], new[3])]
    for fmt, entry in bound[1].items():
        pairs += [(entry, new[1][fmt])] if torch.is_tensor(entry) else list(zip(entry, new[1][fmt]))
    for dst, src in pairs:
        dst.copy_(src)


def sync_free(case, device, kv_format) -> tuple[bool | None, str]:
    """Five fresh default calls under torch's sync debug mode 'error' (a synchronizing op raises)."""
    if device.type != "cuda":
        return None, ""
    sets = [generate_case(case, device=device, seed=case.seed + 7919 + i) for i in range(5)]
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for d in sets:
            mla.decode(d, backend="triton", kv_format=kv_format)
        return True, ""
    except RuntimeError as e:
        return False, f"sync in the default call: {str(e)[:300]}"
    finally:
        torch.cuda.set_sync_debug_mode("default")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir", nargs="?", default=os.environ.get("OUT", "out/issue10-fresh"))
    p.add_argument("--cases", default="bs4-kv1024-q1-h16,bs64-kv8192-q1-h16")
    p.add_argument("--ab-cases", default="bs32-kv8192-q1-h16,bs64-kv8192-q1-h16",
                   help="cases of the kernel A/B (default reduce vs fused_reduce=False) where the rule fires")
    p.add_argument("--kv-format", default="bf16,fp8,mxfp4")
    p.add_argument("--max-seconds", type=float, default=0.25, help="sampling cap per loop")
    p.add_argument("--min-runs", type=int, default=8)
    p.add_argument("--budget", type=float, default=65.0, help="seconds; loops after it are skipped")
    args = p.parse_args(argv)
    t_start = time.time()

    on_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "issue10-fresh.csv"
    if path.exists():
        print(f"error: {path} exists (never overwritten)", file=sys.stderr)
        return 2
    rule = StoppingRule(min_runs=args.min_runs, max_runs=max(args.min_runs, 40), max_seconds=args.max_seconds)
    run_id = prov.new_run_id(device)
    base = prov.provenance(device, run_id)
    flush = L2Flush(device) if on_gpu else None
    floors = dict(host_floor_us=measure_host_floor(device, rule), graph_floor_us=math.nan,
                  graph_floor_fresh_us=math.nan)
    if on_gpu:
        floors["graph_floor_us"] = measure_graph_floor(device, rule)
        x = torch.zeros(1, device=device)
        g = capture_graph(lambda: x.add_(1))
        floors["graph_floor_fresh_us"] = summarize(time_fresh(lambda i: None, lambda _: g.replay(), rule,
                                                              flush=flush))["median"]
        del g
    print(f"run {run_id} on {base['device']}, commit {base['git_commit'][:12]}, floors: "
          + ", ".join(f"{k} {v:.1f}" for k, v in floors.items()), flush=True)

    formats = [f for f in args.kv_format.split(",") if f]
    cases = resolve_cases(args.cases)
    ab_names = {c.name for c in resolve_cases(args.ab_cases)} if args.ab_cases else set()
    cases += [c for c in (resolve_cases(args.ab_cases) if args.ab_cases else []) if c.name not in {x.name for x in cases}]
    rows = []
    f = path.open("w", newline="")
    writer = csv.DictWriter(f, fieldnames=list(base) + list(FIELDS))
    writer.writeheader()

    def emit(**row):
        row = dict(base, timestamp_utc=prov.utc_now(), **floors, **row)
        writer.writerow({k: row.get(k, "") for k in writer.fieldnames})
        f.flush()
        rows.append(row)

    def over_budget() -> bool:
        return time.time() - t_start > args.budget

    for case in cases:
        timing = generate_case(case, device=device)
        timing_only = case.name not in {c.name for c in resolve_cases(args.cases)}  # an A/B-only case
        bound = None if timing_only else generate_case(case, device=device, seed=case.seed + 104729)  # bind's
        for kvf in formats:
            clear_plans()
            if over_budget():
                emit(case=case.name, kv_format=kvf, path="*", status="skipped", message="script budget spent")
                continue
            plan = mla.plan(timing, backend="triton", kv_format=kvf)
            kp = plan.kernel_plan
            calls = {
                "decode_full": (lambda d: mla.decode(d, backend="triton", kv_format=kvf, validate="full"), {}),
                "decode": (lambda d: mla.decode(d, backend="triton", kv_format=kvf), {}),
                "decode_nograph": (lambda d: mla.decode(d, backend="triton", kv_format=kvf, graph=False),
                                   {"graph": False}),
                "run": (kp.run, {}),
            }
            for name in () if timing_only else PATHS:
                if over_budget():
                    emit(case=case.name, kv_format=kvf, path=name, status="skipped", message="script budget spent")
                    continue
                failures = []

                def make(i):
                    return generate_case(case, device=device, seed=case.seed + FRESH_SEED_STEP * i)

                def verify(data, out):
                    ok, msg = mla.check(data, out)
                    if not ok and not failures:
                        failures.append(msg)

                if name == "bind":
                    fn_b = plan.bind(bound)

                    def make(i, _make=make):  # noqa: F811  new contents, same addresses
                        refill(bound, _make(i))
                        return bound

                    def fn(_d, _fn=fn_b):
                        _fn()
                        return kp.out
                    cfg = {}
                    counted = plan
                else:
                    fn, cfg = calls[name]
                    counted = mla.plan(timing, backend="triton", kv_format=kvf, **cfg)
                before = counters(counted)
                try:
                    st = summarize(time_fresh(make, fn, rule, flush=flush, verify=verify))
                    status, message = ("failed", failures[0]) if failures else ("ok", "")
                except Exception as e:  # one path failing must not lose the others' rows
                    st, status, message = dict(median=math.nan, min=math.nan, iqr=math.nan, n=0), "error", \
                        f"{type(e).__name__}: {e}"[:500]
                after = counters(counted)
                free, why = sync_free(case, device, kvf) if name == "decode" and status == "ok" else (None, "")
                emit(case=case.name, kv_format=kvf, path=name, round=1, config=json.dumps(cfg, sort_keys=True),
                     plan_config=json.dumps(counted.config, sort_keys=True, default=str), status=status,
                     message=message or why, median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"],
                     sync_free=free, **{k: after[k] - before[k] for k in after})
            # device time: the default plan, and the same-run A/B of the reduce rule where it fired
            ab = kp.fused_reduce and case.name in ab_names
            if not on_gpu or (timing_only and not ab):
                continue
            tile = mla.plan(timing, backend="triton", kv_format=kvf, fused_reduce=False) if ab else None
            for rnd in (1, 2) if ab else (1,):
                for name, pl in (("kernel", plan), ("kernel_tile", tile)):
                    if pl is None or over_budget():
                        continue
                    samples, method = time_kernel(lambda: pl.run(timing), rule, flush)
                    st = summarize(samples)
                    emit(case=case.name, kv_format=kvf, path=name, round=rnd, status="ok", method=method,
                         config=json.dumps({} if pl is plan else {"fused_reduce": False}),
                         plan_config=json.dumps(pl.config, sort_keys=True, default=str),
                         median_us=st["median"], min_us=st["min"], iqr_us=st["iqr"], n=st["n"])
        del timing, bound
        clear_plans()
        if on_gpu:
            torch.cuda.empty_cache()
    f.close()

    # the compact table: one line per (case, format), medians in us
    print(f"\n{'case':20s} {'fmt':5s} {'floor':>6s} " + " ".join(f"{p:>14s}" for p in PATHS)
          + f" {'kernel':>7s} {'k_tile':>7s}  decode: L/C/R full/queued sync_free")
    keys = sorted({(r["case"], r["kv_format"]) for r in rows}, key=lambda k: (k[0], formats.index(k[1])))
    for c, kvf in keys:
        mine = [r for r in rows if r["case"] == c and r["kv_format"] == kvf]

        def med(pth):
            v = [r["median_us"] for r in mine if r["path"] == pth and r["status"] == "ok"]
            return f"{sum(v) / len(v):.1f}" if v else "-"
        d = next((r for r in mine if r["path"] == "decode"), None)
        tail = (f"  {d['launches']}/{d['captures']}/{d['replays']} {d['full_checks']}/{d['queued_checks']} "
                f"{d['sync_free']}" if d and d["status"] == "ok" else "")
        print(f"{c:20s} {kvf:5s} {floors['graph_floor_fresh_us']:6.1f} " + " ".join(f"{med(p):>14s}" for p in PATHS)
              + f" {med('kernel'):>7s} {med('kernel_tile'):>7s}{tail}")
    bad = [r for r in rows if r["status"] not in ("ok", "skipped")]
    for r in bad:
        print(f"NOT OK {r['case']} {r['kv_format']} {r['path']}: {r['status']}: {r['message'][:200]}")
    print(f"wrote {len(rows)} rows to {path} in {time.time() - t_start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
