#!/usr/bin/env python3
"""What input validation costs per call, next to the call itself (mla/validate.py; the timers are
mla.bench's).

    OUT=out python scripts/validation_cost.py                     # H200: torch + triton (graphs), 3 shapes
    python scripts/validation_cost.py --cases bs4-kv256-q1-h16 --backend torch --out out/vc.csv   # CPU

One row per (case, backend, KV format), written to ``$OUT/validation-cost.csv`` (or ``--out``):
  guard_hit_us    the per-call check of mla.decode when the inputs are ones already validated
                  (signature built and looked up; no device sync) -- what every steady-state call pays
  sync_free_us    check_inputs(deep=False): dtypes, shapes, devices, keys, strides, scale shapes
  full_check_us   check_inputs(deep=True): the above plus the indptr contents (one device sync) --
                  what a plan build pays, and validate="full" for every new set of input tensors
  queued_check_us the default (validate="auto") for new tensors of a known structure: the contents
                  compared on a side stream into a pinned flag (host cost of queueing; no sync)
  decode_us       mla.decode(...) warm: plan lookup + guard + the call (device events on a GPU)
  run_us          plan.run(data) warm: the lean call alone (decode_min_us / run_min_us: the minima)
  overhead_us     decode_us - run_us (plan-cache lookup + guard; overhead_min_us from the minima),
                  and guard_pct = guard_hit_us / decode_us
  memo_hit_us     mla.decode's memo check on a repeated call: the inputs' fingerprint built and
                  compared with the previous call's (mla.validate.fingerprint)
  path_memo_us    mla.decode's own Python per call on a repeated call (memo hit), with the plan's run
                  replaced by a function returning its output buffer and its direct graph replay off:
                  the call path alone, no launch
  path_checked_us the same with the memo cleared before every call: the plan lookup + guard path that
                  every call took before the memo (one extra attribute store per call)
Host costs are medians over samples of 200 calls each (perf_counter), divided by 200.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's mla, not an installed copy
import mla  # noqa: E402
import mla.backends as backends  # noqa: E402
from mla.backends import call_guard, clear_plans  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.harness import parse_assignments, resolve_cases  # noqa: E402
from mla.bench.stats import StoppingRule, summarize  # noqa: E402
from mla.bench.timers import time_cpu, time_events  # noqa: E402
from mla.inputs import generate_case  # noqa: E402
from mla.validate import check_inputs, fingerprint, signature, wait_pending  # noqa: E402

BATCH = 200  # calls per host-cost sample: one guard hit is ~1 us, below a single clock read's noise


def host_us(fn, rule: StoppingRule, batch: int = BATCH) -> float:
    def many():
        for _ in range(batch):
            fn()
    return summarize(time_cpu(many, rule))["median"] / batch


def call_us(fn, rule: StoppingRule, on_gpu: bool) -> tuple[float, float]:
    """(median, min) of warm whole calls."""
    st = summarize(time_events(fn, rule, flush=None) if on_gpu else time_cpu(fn, rule))
    return st["median"], st["min"]


def path_us(data, backend: str, kvf: str, cfg: dict, rule: StoppingRule, checked: bool) -> float:
    """mla.decode's own Python per call (path_memo_us / path_checked_us above): the cached plan's run
    stubbed to return its output buffer, its direct replay off; restored afterwards."""
    plan = mla.plan(data, backend=backend, kv_format=kvf, **cfg)
    out = plan.outputs[0]
    saved = plan.run
    plan.run = lambda d: out
    has_replay = hasattr(plan, "replay_for")
    if has_replay:
        plan.replay_for = lambda d: None  # (an instance attribute over the method)
    try:
        backends._last = None
        mla.decode(data, backend=backend, kv_format=kvf, **cfg)  # the memo now holds the stubbed plan
        if checked:
            def call():
                backends._last = None
                mla.decode(data, backend=backend, kv_format=kvf, **cfg)
        else:
            def call():
                mla.decode(data, backend=backend, kv_format=kvf, **cfg)
        return host_us(call, rule)
    finally:
        plan.run = saved
        if has_replay:
            del plan.replay_for
        backends._last = None


def main(argv=None) -> int:
    on_gpu = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default="bs4-kv1024-q1-h16,bs32-kv8192-q1-h16,bs256-kv8192-q1-h16")
    p.add_argument("--backend", default="torch,triton" if on_gpu else "torch")
    p.add_argument("--kv-format", default="bf16,fp8,mxfp4")
    p.add_argument("--config", action="append", default=[], metavar="BACKEND:KEY=VALUE",
                   help="backend config, e.g. triton:graph=true (default on a GPU)")
    p.add_argument("--max-seconds", type=float, default=0.3, help="sampling cap per measurement")
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), "validation-cost.csv"))
    args = p.parse_args(argv)

    device = torch.device("cuda" if on_gpu else "cpu")
    configs = {"triton": {"graph": True}} if on_gpu else {}
    for item in args.config:
        name, _, kv = item.partition(":")
        configs.setdefault(name, {}).update(parse_assignments([kv], multi=False))
    rule = StoppingRule(min_runs=5, max_runs=50, max_seconds=args.max_seconds, rel_sem=1e-2)
    run_id = prov.new_run_id(device)
    base = {k: v for k, v in prov.provenance(device, run_id).items() if k != "command"}
    base["command"] = prov.invocation()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in resolve_cases(args.cases):
        data = generate_case(case, device=device)
        for backend in [b for b in args.backend.split(",") if b]:
            cfg = configs.get(backend, {})
            for kvf in [f for f in args.kv_format.split(",") if f]:
                clear_plans()
                plan = mla.plan(data, backend=backend, kv_format=kvf, **cfg)
                ok, msg = mla.check(data, mla.decode(data, backend=backend, kv_format=kvf, **cfg))
                if not ok:  # correctness gates timing
                    print(f"{case.name} {backend} {kvf}: check failed, not timed: {msg}", file=sys.stderr)
                    continue
                guard = call_guard(plan)
                row = dict(base, timestamp_utc=prov.utc_now(), case=case.name, backend=backend,
                           config=json.dumps(cfg, sort_keys=True), kv_format=kvf,
                           guard_hit_us=host_us(lambda: guard(data), rule),
                           sync_free_us=host_us(lambda: check_inputs(data, kvf, deep=False), rule),
                           full_check_us=host_us(lambda: check_inputs(data, kvf, deep=True), rule, batch=20))
                sig = signature(data, kvf)
                row["queued_check_us"] = host_us(lambda: guard._queue(data, sig), rule, batch=20)
                wait_pending()  # drain the queued checks (they all pass)
                row["decode_us"], row["decode_min_us"] = call_us(
                    lambda: mla.decode(data, backend=backend, kv_format=kvf, **cfg), rule, on_gpu)
                row["run_us"], row["run_min_us"] = call_us(lambda: plan.run(data), rule, on_gpu)
                row["overhead_us"] = row["decode_us"] - row["run_us"]
                row["overhead_min_us"] = row["decode_min_us"] - row["run_min_us"]
                row["guard_pct"] = 100.0 * row["guard_hit_us"] / row["decode_us"]
                fp = fingerprint(data, kvf)
                row["memo_hit_us"] = host_us(lambda: fingerprint(data, kvf) == fp, rule)
                row["path_memo_us"] = path_us(data, backend, kvf, cfg, rule, checked=False)
                row["path_checked_us"] = path_us(data, backend, kvf, cfg, rule, checked=True)
                rows.append(row)
                print(f"{case.name:22s} {backend:7s} {kvf:6s} guard {row['guard_hit_us']:6.2f} us  sync-free "
                      f"{row['sync_free_us']:6.2f} us  full {row['full_check_us']:7.2f} us  queued {row['queued_check_us']:6.2f} us"
                      f"  | decode "
                      f"{row['decode_us']:9.1f} us  run {row['run_us']:9.1f} us  ({row['guard_pct']:.2f}% guard)"
                      f"  | memo {row['memo_hit_us']:5.2f} us  path: memo {row['path_memo_us']:5.2f} us, checked "
                      f"{row['path_checked_us']:5.2f} us", flush=True)
        del data
        clear_plans()
    if not rows:
        print("error: nothing measured", file=sys.stderr)
        return 1
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {out}")
    return 0


if __name__ == "__main__":
    t0 = time.time()
    rc = main()
    print(f"total {time.time() - t0:.0f}s")
    sys.exit(rc)
