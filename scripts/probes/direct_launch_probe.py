#!/usr/bin/env python3
"""Host time of one plain launch of the default Triton plan: the JIT's dispatch (``kernel[grid](...)``)
against the direct launch (mla/kernels/triton/direct.py), per KV format, in one process, beside the
same run's host floor (one tiny torch op). Every row's output is checked (NaN-poisoned before).

    H200:  PYTHONPATH=. python3 scripts/probes/direct_launch_probe.py $OUT      # -> $OUT/direct-launch.csv

Host time: perf_counter around a burst of ``--calls`` launches, divided by the count (the GPU is busier
than the host here for small kernels only when the host is faster; a sync closes each burst).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

import mla
from mla.bench import provenance as prov
from mla.bench.bandwidth import measure_host_floor
from mla.bench.stats import StoppingRule
from mla.kernels.triton import TritonDecodePlan


def jit_launch(plan, data):
    """What plan.launch did before the direct launch: the JIT's dispatch for each kernel."""
    args = plan._args(data)
    plan.kernel[plan.direct.grid](*args, **plan.constexprs)
    if plan.launches > 1:
        r = plan.direct_reduce
        out = plan.out
        r.kernel[r.grid](plan.part_o, plan.part_lse, out, out.stride(0), out.stride(1), plan.num_splits, **r.constexprs)
    return plan.out


def host_us(fn, calls: int, bursts: int) -> list[float]:
    per = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return per


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default="out")
    ap.add_argument("--cases", default="bs4-kv1024-q1-h16,bs64-kv8192-q1-h16,bs256-kv8192-q1-h16")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--bursts", type=int, default=9)
    args = ap.parse_args(argv)
    device = torch.device("cuda")
    base = prov.provenance(device, prov.new_run_id(device))
    floor = measure_host_floor(device, StoppingRule(min_runs=50, max_runs=200, max_seconds=1.0))
    rows = []
    for name in args.cases.split(","):
        case = mla.problem.case_from_name(name)
        for fmt in ("bf16", "fp8", "mxfp4"):
            data = mla.generate_input(case.batch_size, 1, case.kv_seq_len, seed=31, device="cuda")
            plan = TritonDecodePlan(data, kv_format=fmt, graph=False)
            ref = mla.reference(data, kv_format=fmt)
            result = {}
            for path, fn in (("jit", lambda: jit_launch(plan, data)), ("direct", lambda: plan.launch(data))):
                plan.out.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                ok, msg = mla.check(data, plan.out, reference_output=ref)
                before = plan.direct.direct_calls
                samples = host_us(fn, args.calls, args.bursts)
                result[path] = statistics.median(samples)
                rows.append(dict(base, case=name, kv_format=fmt, variant=plan.variant.name, path=path,
                                 status="ok" if ok else "fail", message=msg, host_median_us=result[path],
                                 host_min_us=min(samples), calls=args.calls * args.bursts,
                                 direct_calls=plan.direct.direct_calls - before, launches=plan.launches,
                                 host_floor_us=floor, command=prov.invocation()))
            print(f"{name} {fmt:5s} {plan.variant.name:45s} jit {result['jit']:7.1f} us  direct {result['direct']:6.1f} "
                  f"us  ({plan.launches} launch(es); host floor {floor:.1f})", flush=True)
    out = prov.write_rows(Path(args.out_dir) / "direct-launch.csv", rows)
    print(f"wrote {len(rows)} rows to {out}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
