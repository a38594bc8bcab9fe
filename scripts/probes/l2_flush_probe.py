#!/usr/bin/env python3
"""What a read of N bytes costs right after each way of evicting the L2, timed as the harness's 'kernel'
mode times a decode (one read pass captured in a CUDA graph, replayed after the flush; the flush not
awaited): the question is whether eval.py's flush (a write pass, leaving the L2 full of dirty lines)
adds a fixed write-back to every cold kernel, and how much.

    H200:  PYTHONPATH=. python3 scripts/probes/l2_flush_probe.py $OUT      # -> $OUT/l2-flush.csv

Flushes: 'write' (timers.L2Flush's default: zero 1 GiB), 'read' (sum the same 1 GiB: clean lines), 'none'
(no flush: for sizes under the L2 the buffer is then partly resident). Sizes: powers of two from 1 MiB to
2 GiB and the io_bytes of the leaderboard shapes in each KV format.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from mla import problem as P
from mla.bench import provenance as prov
from mla.bench.bandwidth import measure_bandwidth, measure_kernel_read
from mla.bench.stats import StoppingRule
from mla.bench.timers import L2Flush


class _NoFlush:
    kind = "none"

    def flush(self) -> None:
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default="out")
    ap.add_argument("--max-seconds", type=float, default=0.3)
    args = ap.parse_args(argv)
    device = torch.device("cuda")
    base = prov.provenance(device, prov.new_run_id(device))
    bw = measure_bandwidth(device)
    rule = StoppingRule(min_runs=10, max_runs=200, max_seconds=args.max_seconds)
    sizes = {f"{1 << k >> 20}MiB": 1 << k for k in range(20, 32)}
    for case in P.get_cases("leaderboard"):
        for fmt in P.KV_FORMATS:
            sizes[f"{case.name}/{fmt}"] = P.io_bytes(case, fmt)
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    rows = []
    for flush in (L2Flush(device, "write"), L2Flush(device, "read"), _NoFlush()):
        for label, nbytes in sizes.items():
            us = measure_kernel_read(device, nbytes, flush, rule)
            rows.append(dict(base, flush=flush.kind, size=label, nbytes=nbytes, median_us=us,
                             gbs=nbytes / (us * 1e-6) / 1e9, read_gbs=bw["read_gbs"], l2_bytes=l2,
                             graph_floor_us=bw["graph_floor_us"], command=prov.invocation()))
            print(f"{flush.kind:5s} {label:28s} {nbytes / 2**20:9.1f} MiB {us:9.2f} us {rows[-1]['gbs']:7.0f} GB/s",
                  flush=True)
    out = prov.write_rows(Path(args.out_dir) / "l2-flush.csv", rows)
    print(f"wrote {len(rows)} rows to {out}; read probe {bw['read_gbs']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
