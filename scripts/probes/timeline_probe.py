#!/usr/bin/env python3
"""Where a split kernel's time goes, program by program: the program timeline (``timeline=True``).

Every program of a generation-3 launch stamps five events into its row of ``plan.kernel_plan.timeline``:
start, Q ready, the first KV tile ready, the loop's end, the end (%globaltimer for all SMs, %clock64 for the
precise in-program spans), its SM and its tiles (gluon_sm90.TIMELINE_FIELDS). Per case and KV format this
probe runs the default call's plan (or ``--variant``) with and without the instrument:

* timeline rows: ``--repeats`` launches, each on fresh inputs (seed + 13 r, eval.py's rule) with the outputs
  NaN-poisoned and the L2 flushed by the write flush (the kernel mode's; ``--flush read`` leaves clean lines
  instead, the write-back's control), every output checked
  (``mla.check``); a repeat whose check fails writes no stamps and fails the probe's exit status;
* cost rows: the kernel-mode time of the same plan with the timeline on and off (graph replay behind the
  write flush, the harness's window), each graph's output checked after its timing.

    python scripts/probes/timeline_probe.py $OUT/timeline --cases bs32-kv8192-q1-h16,bs4-kv1024-q1-h16 \\
        --formats fp8,mxfp4 --repeats 20

Writes ``timeline.csv`` (one row per program per repeat: mla.analysis.timeline.load_timeline_csv) and
``timeline-cost.csv`` (one row per case and format), provenance on every row.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import mla  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.stats import StoppingRule  # noqa: E402
from mla.bench.timers import L2Flush, capture_graph, time_graph  # noqa: E402
from mla.kernels.triton.gluon_sm90 import TIMELINE_FIELDS  # noqa: E402
from mla.problem import case_from_name  # noqa: E402

DEFAULT_CASES = ("bs4-kv1024-q1-h16", "bs4-kv8192-q1-h16", "bs32-kv1024-q1-h16", "bs64-kv1024-q1-h16",
                 "bs32-kv8192-q1-h16", "bs64-kv8192-q1-h16", "bs256-kv1024-q1-h16", "bs256-kv8192-q1-h16")


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _case(case, kv_format, args, base, command, flush, rule, stamp_rows: list, cost: dict) -> int:
    """One case and format: the stamped launches (rows into stamp_rows) and the cost (into cost); returns the
    number of failed checks."""
    device = torch.device("cuda")
    failed = 0
    kw = {} if args.variant is None else dict(variant=args.variant)
    if args.num_splits is not None:
        kw["num_splits"] = args.num_splits
    if args.steal_helpers is not None:  # (v154: helper programs per owner)
        kw["steal_helpers"] = args.steal_helpers
    if args.fused_reduce:  # (one launch: each element's last program merges; the cost row's launches says 1)
        kw["fused_reduce"] = True
    data = mla.generate_case(case, device=device)
    plans = {on: mla.plan(data, backend="triton", kv_format=kv_format, graph=False, timeline=on, **kw)
             for on in (False, True)}
    kp = plans[True].kernel_plan
    if kp.variant.name != plans[False].kernel_plan.variant.name or kp.grid != plans[False].kernel_plan.grid:
        raise RuntimeError(f"the instrument changed the plan ({kp.variant.name} {kp.grid} against "
                           f"{plans[False].kernel_plan.variant.name} {plans[False].kernel_plan.grid})")
    what = dict(case=case.name, kv_format=kv_format, variant=kp.variant.name, grid0=kp.grid[0], grid1=kp.grid[1],
                grid2=kp.grid[2], num_splits=kp.num_splits, launches=kp.launches,
                sm_count=torch.cuda.get_device_properties(device).multi_processor_count,
                steal_helper_programs=getattr(kp, "steal_helper_programs", 0))  # (v154: the grid's last rows)
    cost.update(what)
    # -- stamped launches on fresh inputs ---------------------------------------------------------------------
    for r in range(args.repeats):
        d = mla.generate_case(case, device=device, seed=case.seed + 13 * r)
        plans[True].poison()
        kp.timeline.fill_(-1)
        flush.flush()
        out = plans[True].run(d)
        torch.cuda.synchronize()
        ok, msg = mla.check(d, out)
        if not ok:
            failed += 1
            print(f"{case.name} {kv_format} repeat {r}: check FAILED: {msg}", flush=True)
            continue
        cost["checks_passed"] += 1
        for row in kp.timeline.cpu().tolist():
            stamp_rows.append(dict(base, **what, repeat=r, **dict(zip(TIMELINE_FIELDS, row)), command=command))
    # -- the instrument's cost: kernel mode with it on and off ----------------------------------------------------
    for on in (False, True):
        p = plans[on]
        graph = capture_graph(lambda p=p: p.run(data))
        us = time_graph(graph, rule, flush)
        p.poison()
        graph.replay()
        torch.cuda.synchronize()
        ok, msg = mla.check(data, p.kernel_plan.out)
        failed += not ok
        key = "on" if on else "off"
        cost.update({f"kernel_{key}_median_us": _median(us), f"kernel_{key}_n": len(us), f"check_{key}": ok})
        del graph
    cost["timeline_cost_ratio"] = cost["kernel_on_median_us"] / cost["kernel_off_median_us"]
    print(f"{case.name:20s} {kv_format:5s} {kp.variant.name:40s} grid {kp.grid} checks "
          f"{cost['checks_passed']}/{args.repeats}  kernel off {cost['kernel_off_median_us']:.2f} on "
          f"{cost['kernel_on_median_us']:.2f} us", flush=True)
    return failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", default="out/timeline")
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--formats", default="fp8,mxfp4")
    ap.add_argument("--variant", default=None, help="a generation-3 variant (default: the default call's plan)")
    ap.add_argument("--num-splits", type=int, default=None, help="the plan's split count (default: its own)")
    ap.add_argument("--steal-helpers", type=float, default=None,
                    help="work-stealing variants (v154): helper programs per owner (default: the variant's)")
    ap.add_argument("--fused-reduce", action="store_true",
                    help="the one-launch fused reduce (default: the plan's own); name --variant and --num-splits too, "
                         "since a reduce given by hand turns off the default call's kernel rules")
    ap.add_argument("--repeats", type=int, default=20, help="stamped launches per case and format")
    ap.add_argument("--seconds", type=float, default=0.5, help="kernel-mode window per cost row")
    ap.add_argument("--flush", default="write", choices=("write", "read"),
                    help="the L2 flush before every launch: 'write' (the kernel mode's, dirty lines: the leaderboard's "
                         "state) or 'read' (clean lines: how much of a phase is the dirty lines' write-back)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():  # the stamps are sm90 PTX (%globaltimer, %smid): nothing to run on a CPU
        print(f"error: the timeline probe needs an NVIDIA GPU (sm90); this machine has none (torch {torch.__version__})",
              file=sys.stderr)
        return 2
    device = torch.device("cuda")
    run_id = prov.new_run_id(device)
    base = prov.provenance(device, run_id)
    command = prov.invocation()
    flush = L2Flush(device, args.flush)
    base = dict(base, l2_flush=args.flush)
    rule = StoppingRule(min_runs=20, max_runs=100000, max_seconds=args.seconds, kernel_min_seconds=args.seconds)
    stamp_rows, cost_rows, failed = [], [], 0
    out = Path(args.out_dir)
    for case_name in args.cases.split(","):
        case = case_from_name(case_name)
        for kv_format in args.formats.split(","):
            cost = dict(base, case=case_name, kv_format=kv_format, variant=None, grid0=None, grid1=None, grid2=None,
                        num_splits=None, launches=None, sm_count=None, steal_helper_programs=None,
                        repeats=args.repeats, checks_passed=0,
                        kernel_off_median_us=None, kernel_off_n=None, check_off=None, kernel_on_median_us=None,
                        kernel_on_n=None, check_on=None, timeline_cost_ratio=None, status="ok", message="",
                        command=command)
            try:  # (one case's failure - a compile on this triton, say - is a row, not the end of the probe)
                failed += _case(case, kv_format, args, base, command, flush, rule, stamp_rows, cost)
            except Exception as exc:  # noqa: BLE001 - reported in the row and the exit status
                failed += 1
                cost.update(status="error", message=f"{type(exc).__name__}: {exc}"[:2000])
                print(f"{case_name} {kv_format}: {cost['message']}", flush=True)
            cost_rows.append(cost)
            # (rewritten after every case: a run stopped at its time limit keeps what it measured)
            if stamp_rows:
                prov.write_rows(out / "timeline.csv", stamp_rows)
            prov.write_rows(out / "timeline-cost.csv", cost_rows)
    print(f"wrote {len(stamp_rows)} program rows and {len(cost_rows)} cost rows under {out} (run {run_id}); "
          f"{failed} failed checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
