"""First contact with a warp-specialized generation-3 variant on the H200: a few small shapes, NaN-poisoned
outputs, each checked against the fp32 reference (mla.check) and the own-format rel_l2, one process per
call so that a hang costs only the caller's timeout (a wrong mbarrier phase never returns).

    timeout 150 python3 scripts/probes/ws_smoke.py v127_n64_w4_s2_gl_mx_ws3
"""
from __future__ import annotations

import sys
import time

import torch

import mla
from mla.kernels.triton import TritonDecodePlan
from mla.kernels.triton.variants import VARIANTS

variant = sys.argv[1]
fmt = VARIANTS[variant].gluon_kv
ok_all = True
for bs, q, kv, lens in ((1, 1, 64, None), (2, 1, 200, None), (4, 1, 1024, None), (3, 1, 333, (1, 130, 333)),
                        (32, 1, 8192, None)):
    data = mla.generate_input(bs, q, kv, seed=3, device="cuda", kv_lens=lens) if lens else \
        mla.generate_input(bs, q, kv, seed=3, device="cuda")
    t0 = time.time()
    plan = TritonDecodePlan(data, kv_format=fmt, variant=variant, graph=False)
    for t in plan.outputs:
        t.fill_(float("nan"))
    out = plan.run(data)
    torch.cuda.synchronize()
    ok, msg = mla.check(data, out, reference_output=mla.reference(data, kv_format=fmt))
    finite = bool(torch.isfinite(out).all())
    ok_all &= ok and finite
    print(f"bs{bs} q{q} kv{kv} lens={lens} splits={plan.num_splits}: finite={finite} {msg} ({time.time() - t0:.1f} s)",
          flush=True)
sys.exit(0 if ok_all else 1)
