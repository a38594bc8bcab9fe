"""Stress a generation-3 variant at one shape: N calls, each behind a 1 GiB zeroing (as the kernel mode's flush),
in plain launches and in replays of a captured graph, the output checked at the end (mla.check). One process per
call, under the caller's timeout: a fault ("unspecified launch failure") ends the process with its count so far.

    timeout 120 python3 scripts/probes/ws_stress.py VARIANT CASE SPLITS N
"""
from __future__ import annotations

import sys
import time

import torch

import mla
from mla.kernels.triton import TritonDecodePlan
from mla.kernels.triton.variants import VARIANTS

variant, case, splits, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = mla.problem.case_from_name(case, seed=41)
data = mla.generate_input(c.batch_size, c.q_seq_len, c.kv_seq_len, seed=41, device="cuda", num_heads=c.num_heads)
fmt = VARIANTS[variant].gluon_kv
flush = torch.empty(1 << 28, dtype=torch.int32, device="cuda")
t0 = time.time()
for graph in (False, True):
    plan = TritonDecodePlan(data, kv_format=fmt, variant=variant, num_splits=splits, graph=graph)
    done = 0
    try:
        for i in range(n):
            flush.zero_()
            out = plan.run(data)
            done += 1
            if i % 100 == 99:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    except Exception as exc:  # the fault surfaces at a sync
        print(f"{variant} {case} graph={graph}: FAULT after <= {done} calls: {exc!s:.200}", flush=True)
        sys.exit(1)
    ok, msg = mla.check(data, out, reference_output=mla.reference(data, kv_format=fmt))
    print(f"{variant} {case} splits={splits} graph={graph}: {done} calls, no fault; last output {msg} "
          f"({time.time() - t0:.0f} s)", flush=True)
    if not ok:
        sys.exit(1)
