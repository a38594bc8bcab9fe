#!/usr/bin/env python3
"""Does a plain read of the same bytes end its programs together? The question round 51 left open.

Round 50 measured fp8's large launches ending 37 us after their mean program (bs256-kv8192, an H100), and round 51
moved tiles to the programs that end early without ending the launch sooner: the owners' ends moved later. The
reading is that the spread is how the DRAM's bandwidth divides among the SMs, not idle SMs. If so, a plain read of
the same bytes with the same grid spreads its ends alike, and finer programs (the hardware starts the next one
where a slot frees) end it no sooner than its bytes allow. If a plain read with v153's grid (256 programs, two an SM)
ends together and the decode does not, the spread is the decode's own.

The read is evict_probe.py's (each program sums a contiguous slice of int32 words with plain ``ld.global`` loads),
with each program stamping its start, the loop's start (as "Q ready" and "first tile": there is no Q), the loop's end
(an operand of the stamp is the slice's sum, so it waits for the last load) and its end (``%globaltimer``,
``%clock64``) and its SM into a row of the program timeline (mla.analysis.timeline's 16 columns). Per size and program count:

* kernel-mode time (graph replay behind the write flush, the harness's window), the sum checked after it;
* ``--repeats`` stamped launches behind the write flush, the sum checked after each.

    PYTHONPATH=. python3 scripts/probes/read_timeline_probe.py $OUT/read-timeline --programs 256,528,2112,8448

Writes ``timeline.csv`` (``python -m mla timeline`` reads it: case ``read-<size>``, variant ``read_p<programs>``,
kv_format ``int32``) and ``read-cost.csv`` (the kernel-mode times), provenance on every row.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mla.analysis.timeline import TIMELINE_COLUMNS, csv_rows  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.stats import StoppingRule  # noqa: E402
from mla.bench.timers import L2Flush, capture_graph, time_graph  # noqa: E402

BLOCK = 2048  # int32 words a program reads per trip (8 KB), as evict_probe.py
SIZES = {"152MB": 152_109_056, "1216MB": 1_216_872_448}  # bs32-kv8192 / bs256-kv8192 fp8's KV bytes


@triton.jit
def _stamp(row_ptr, NS_COL: tl.constexpr, CLK_COL: tl.constexpr, pid):
    ns = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [pid], dtype=tl.int64, is_pure=False,
                                   pack=1)
    clk = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [pid], dtype=tl.int64, is_pure=False, pack=1)
    tl.store(row_ptr + NS_COL, ns)
    tl.store(row_ptr + CLK_COL, clk)


@triton.jit
def _stream_sum_stamped(x_ptr, out_ptr, rows_ptr, words_per_prog, BLOCK: tl.constexpr, STAMP: tl.constexpr):
    pid = tl.program_id(0)
    row = rows_ptr + pid.to(tl.int64) * 16
    if STAMP:
        _stamp(row, 0, 5, pid)  # start
        sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [pid], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(row + 10, sm.to(tl.int64))
    base = x_ptr + pid.to(tl.int64) * words_per_prog
    acc = tl.zeros([BLOCK], tl.int32)
    if STAMP:  # (no Q here: "Q ready" and "first tile" are the loop's start, so the phases read as loop + end)
        _stamp(row, 1, 6, pid)
        _stamp(row, 2, 7, pid)
    for off in range(0, words_per_prog, BLOCK):
        acc += tl.load(base + off + tl.arange(0, BLOCK))
    if STAMP:
        _stamp(row, 3, 8, tl.sum(acc, axis=0))  # the loop's end: after the last load's data (the sum waits for it)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)
    if STAMP:
        tl.store(row + 11, (words_per_prog // BLOCK).to(tl.int64))  # trips: the timeline's n_tiles
        _stamp(row, 4, 9, pid)  # end (the sum's store issued)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", default="out/read-timeline")
    ap.add_argument("--programs", default="256,528,2112,8448",
                    help="program counts (256: v153's bs256 grid; 4 x SMs: evict_probe's; more: the hardware "
                         "balances by starting the next program where a slot frees)")
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=0.4, help="kernel-mode window per row")
    args = ap.parse_args(argv)
    device = torch.device("cuda")
    run_id = prov.new_run_id(device)
    base = prov.provenance(device, run_id)
    flush = L2Flush(device, "write")
    rule = StoppingRule(min_runs=20, max_runs=100000, max_seconds=args.seconds, kernel_min_seconds=args.seconds)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    out_dir = Path(args.out_dir)
    stamps, cost, failed = [], [], 0
    for label in args.sizes.split(","):
        nbytes = SIZES[label]
        for progs in (int(p) for p in args.programs.split(",")):
            words = -(-nbytes // 4 // (progs * BLOCK)) * BLOCK  # per program, whole trips
            x = torch.ones(progs * words, dtype=torch.int32, device=device)
            out = torch.empty(progs * BLOCK, dtype=torch.int32, device=device)
            rows = torch.full((progs, len(TIMELINE_COLUMNS)), -1, dtype=torch.int64, device=device)

            def run(stamp=False):
                return _stream_sum_stamped[(progs,)](x, out, rows, words, BLOCK=BLOCK, STAMP=stamp, num_warps=4,
                                                     num_stages=1)

            def ok() -> bool:  # every word is 1: the sums count the words read
                torch.cuda.synchronize()
                return int(out.sum().item()) == progs * words

            run()
            graph = capture_graph(run)
            out.fill_(-1)
            us = sorted(time_graph(graph, rule, flush))
            good = ok()
            failed += not good
            del graph
            med = us[len(us) // 2]
            case, variant = f"read-{label}", f"read_p{progs}"
            cost.append(dict(base, case=case, variant=variant, programs=progs, sm_count=sms, nbytes=progs * words * 4,
                             kernel_median_us=med, kernel_n=len(us), check_ok=good,
                             gbs=progs * words * 4 / (med * 1e-6) / 1e9, command=prov.invocation()))
            for r in range(args.repeats):
                rows.fill_(-1)
                out.fill_(-1)
                flush.flush()
                run(stamp=True)
                if not ok():
                    failed += 1
                    print(f"{case} {variant} repeat {r}: the sum is wrong", flush=True)
                    continue
                df = csv_rows(rows.cpu().numpy(), (1, 1, progs), run_id=run_id, case=case, variant=variant,
                              kv_format="int32", repeat=r)
                for k, v in base.items():
                    df[k] = v
                df["sm_count"] = sms
                stamps.append(df)
            ends = (rows[:, 4] - rows[:, 0].min()).double() / 1e3
            print(f"{case:12s} {variant:11s} kernel {med:8.2f} us  {cost[-1]['gbs']:6.0f} GB/s  last stamped launch: "
                  f"end mean {ends.mean():.1f} max {ends.max():.1f} us", flush=True)
            del x, out, rows
            # (both rewritten as it goes: a run stopped at its time limit keeps what it measured)
            prov.write_rows(out_dir / "read-cost.csv", cost)
            if stamps:
                pd.concat(stamps, ignore_index=True).to_csv(out_dir / "timeline.csv", index=False)
    print(f"wrote {sum(len(s) for s in stamps)} program rows and {len(cost)} cost rows under {out_dir}; "
          f"{failed} failed checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
