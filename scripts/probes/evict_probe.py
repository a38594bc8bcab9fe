#!/usr/bin/env python3
"""Does an L2 evict_first hint on a streamed read keep the flush's dirty lines from being written back during it?

A write flush (ours: 1 GiB zeroed; eval.py's: a 62.5 GiB randn) leaves the L2 full of dirty lines; the first tens of
MB a memory-bound kernel reads evict them, and their write-back shares the DRAM with the reads (~8-9 us from 128 MiB
on, docs/notes-harness.md "The flush"). With the reads marked evict_first the L2 should replace the stream's own
lines first and leave most dirty ones in place. One read kernel (each program sums a contiguous slice, int32
words, plain ``ld.global`` loads, whose hint every triton lowers; num_stages 3 would not pipeline this loop into
cp.async either), with and without ``eviction_policy="evict_first"``, timed as the harness's kernel mode times a decode (captured in a CUDA graph, replayed behind the flush) after the write flush
and after a read flush (clean lines: the control).

    H200:  PYTHONPATH=. python3 scripts/probes/evict_probe.py $OUT      # -> $OUT/evict-probe.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

from mla.bench import provenance as prov
from mla.bench.bandwidth import measure_bandwidth
from mla.bench.stats import StoppingRule
from mla.bench.timers import L2Flush, capture_graph, time_graph

BLOCK = 2048  # int32 words a program reads per trip (8 KB)


@triton.jit
def _stream_sum(x_ptr, out_ptr, words_per_prog, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    base = x_ptr + pid.to(tl.int64) * words_per_prog
    acc = tl.zeros([BLOCK], tl.int32)
    for off in range(0, words_per_prog, BLOCK):
        acc += tl.load(base + off + tl.arange(0, BLOCK), eviction_policy=EVICT)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default="out")
    ap.add_argument("--seconds", type=float, default=0.4, help="kernel-mode window per row")
    args = ap.parse_args(argv)
    device = torch.device("cuda")
    base = prov.provenance(device, prov.new_run_id(device))
    bw = measure_bandwidth(device)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    progs = 4 * sms
    rule = StoppingRule(min_runs=20, max_runs=100000, max_seconds=args.seconds, kernel_min_seconds=args.seconds)
    sizes = {"16MiB": 16 << 20, "40MB": 40_000_000, "152MB": 152_109_056, "304MB": 304_218_112, "1216MB": 1_216_872_448}
    rows = []
    flushes = (L2Flush(device, "write"), L2Flush(device, "read"))
    for label, nbytes in sizes.items():
        words = -(-nbytes // 4 // (progs * BLOCK)) * BLOCK  # per program, whole trips
        x = torch.ones(progs * words, dtype=torch.int32, device=device)
        out = torch.empty(progs * BLOCK, dtype=torch.int32, device=device)
        for evict in ("", "evict_first"):
            def run(evict=evict):
                return _stream_sum[(progs,)](x, out, words, BLOCK=BLOCK, EVICT=evict, num_warps=4,
                                             num_stages=1)
            out.fill_(-1)
            ptx = run().asm["ptx"]
            torch.cuda.synchronize()
            if int(out.sum().item()) != progs * words:  # every word is 1: the sum counts the words read
                raise RuntimeError(f"the read kernel summed {int(out.sum().item())} words, not {progs * words}")
            graph = capture_graph(run)
            for flush in flushes:
                us = sorted(time_graph(graph, rule, flush))
                med = us[len(us) // 2]
                read = progs * words * 4
                rows.append(dict(base, size=label, nbytes=read, loads="ld.global",
                                 evict=evict or "normal", flush=flush.kind, median_us=med, n=len(us),
                                 gbs=read / (med * 1e-6) / 1e9, read_gbs=bw["read_gbs"],
                                 hinted_ptx="L2::cache_hint" in ptx, command=prov.invocation()))
                print(f"{label:7s} {rows[-1]['loads']:9s} {rows[-1]['evict']:11s} {flush.kind:5s} {med:9.2f} us "
                      f"{rows[-1]['gbs']:7.0f} GB/s  n={len(us)}", flush=True)
            del graph
        del x, out
    path = prov.write_rows(Path(args.out_dir) / "evict-probe.csv", rows)
    print(f"wrote {len(rows)} rows to {path}; read probe {bw['read_gbs']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
