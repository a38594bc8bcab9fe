#!/usr/bin/env python3
"""The Triton probe on an H200, as ``python -m mla bench`` runs: a thin driver, no timing of its own.

    MLA_GIT_COMMIT=$(git rev-parse HEAD) OUT=out/probe python scripts/h200_triton_probe.py
    PROBE_PHASES=variants PROBE_VARIANTS=words python scripts/h200_triton_probe.py

Every phase is a list of bench argument lines (below); each runs in this process through the one
harness (mla.bench: poisoned outputs, a check on fresh inputs before timing and on the timing set
after it, the schema's provenance on every row) and appends to ``$OUT/triton-probe-<phase>.csv``.
Phases (``PROBE_PHASES``, comma list; default correctness,leaderboard,sweep):
  correctness  every KV x Q format on bs4-kv1024, ragged, q_seq_len 4 and 32-head cases; plain and
               CUDA-graph calls (a graph is captured again for the check set's fresh addresses),
               heuristic and a non-dividing split count; timed briefly (warm) so each row is checked twice
  leaderboard  the 8 shapes x 3 KV formats, default variants, heuristic splits: cold whole call with
               plain launches (graph=false) and graph replay (graph=true), and kernel time
  sweep        variants x num_splits on bs256-kv8192, bs32-kv8192, bs4-kv1024 (kernel time), plus the
               measured split race on bs32-kv8192 (decisions -> $OUT/triton-split-decisions.csv)
  variants     the word-decode variants (PROBE_VARIANTS, default "words") against the default variant
The inline-PTX decode unit check that used to be phase "decode" is tests/test_triton_word_decode_gpu.py.
The run stops starting new lines after PROBE_BUDGET_S seconds (default 330).
"""

from __future__ import annotations

import os
import shlex
import sys
import time

from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's mla, not an installed copy
from mla.cli import main as mla_main  # noqa: E402

OUT = os.environ.get("OUT", "out/probe")
BUDGET_S = float(os.environ.get("PROBE_BUDGET_S", 330))
SPLIT_TABLE = os.path.join(OUT, "triton-split-decisions.csv")
BRIEF = "--backend triton --no-progress --max-seconds 0.2 --min-runs 5"

_SMALL = "bs4-kv1024-q1-h16,bs8-kv2048-q1-h32,bs4-kv512-q4-h32"
PHASES = {
    "correctness": [
        f"--cases {_SMALL},extended --kv-format bf16,fp8,mxfp4 --mode warm --sweep graph=false,true "
        "--sweep num_splits=auto,3",
        "--cases bs4-kv1024-q1-h16,bs4-kv512-q4-h32 --kv-format bf16,fp8,mxfp4 --q-format fp8,mxfp4 --mode warm "
        "--sweep graph=false,true",
    ],
    "leaderboard": [
        "--cases leaderboard --kv-format bf16,fp8,mxfp4 --mode cold,kernel --sweep graph=false,true",
    ],
    "sweep": [
        "--cases bs256-kv8192-q1-h16,bs32-kv8192-q1-h16,bs4-kv1024-q1-h16 --kv-format mxfp4 --mode kernel "
        "--config graph=true --sweep variant=v1_n32_w4_s2,v14_n32_w4_s2_pf,v16_n64_w8_s2_pf,v3_n64_w8_s2,"
        "v10_n32_w4_s2_intmx --sweep num_splits=1,2,4,8,16,32",
        "--cases bs256-kv8192-q1-h16,bs32-kv8192-q1-h16,bs4-kv1024-q1-h16 --kv-format fp8 --mode kernel "
        "--config graph=true --sweep variant=v13_n64_w8_s2_f16,v15_n64_w8_s2_f16_pf,v1_n32_w4_s2,v12_n32_w8_s2_f16,"
        "v3_n64_w8_s2 --sweep num_splits=1,2,4,8,16,32",
        "--cases bs256-kv8192-q1-h16,bs32-kv8192-q1-h16,bs4-kv1024-q1-h16 --kv-format bf16 --mode kernel "
        "--config graph=true --sweep variant=v4_n32_w4_s3,v2_n64_w4_s2,v1_n32_w4_s2,v16_n64_w8_s2_pf,v3_n64_w8_s2 "
        "--sweep num_splits=1,2,4,8,16,32",
        f"--cases bs32-kv8192-q1-h16 --kv-format bf16,fp8,mxfp4 --mode kernel --config num_splits=race "
        f"--config split_table={SPLIT_TABLE}",
    ],
}
VARIANT_SETS = {  # PROBE_VARIANTS=name picks one; the first of each list is the default at the time
    "words": {
        "mxfp4": "v1_n32_w4_s2,v17_n32_w4_s2_mxw,v30_n32_w4_s2_mxw_tr,v31_n64_w4_s2_mxw,v27_n32_w4_s3_mxw,"
                 "v19_n32_w4_s2_mxw_pf,v20_n32_w4_s2_mxp",
        "fp8": "v13_n64_w8_s2_f16,v32_n32_w4_s2_f16wp,v35_n32_w4_s2_f16wp_tr,v33_n64_w4_s2_f16wp,"
               "v34_n32_w4_s3_f16wp,v23_n32_w4_s2_f16w,v25_n64_w4_s2_f16w",
        "bf16": "v4_n32_w4_s3,v28_n32_w4_s3_tr",
    },
}


def variant_lines(name: str) -> list[str]:
    lines = []
    for kvf, variants in VARIANT_SETS[name].items():
        lines.append(f"--cases {_SMALL},bs8-kv8192-q1-h16 --kv-format {kvf} --mode warm --sweep variant={variants} "
                     "--sweep num_splits=auto,3")
        lines.append(f"--cases bs256-kv8192-q1-h16,bs32-kv8192-q1-h16,bs4-kv1024-q1-h16 --kv-format {kvf} "
                     f"--mode kernel --config graph=true --sweep variant={variants} --sweep num_splits=auto,1,8,16")
    return lines


def main() -> int:
    if not torch.cuda.is_available():
        print("error: the probe times on a GPU; this machine has none (python -m mla info)", file=sys.stderr)
        return 2
    from mla.bench.bandwidth import measure_bandwidth

    os.makedirs(OUT, exist_ok=True)
    t0 = time.time()
    bw = measure_bandwidth("cuda")  # once; every line reuses it
    bw_arg = f"--bandwidth-gbs {bw['read_gbs']:.1f},{bw['copy_gbs']:.1f}"
    phases = os.environ.get("PROBE_PHASES", "correctness,leaderboard,sweep").split(",")
    failed = []
    for phase in phases:
        lines = variant_lines(os.environ.get("PROBE_VARIANTS", "words")) if phase == "variants" else PHASES[phase]
        out = os.path.join(OUT, f"triton-probe-{phase}.csv")
        for line in lines:
            if time.time() - t0 > BUDGET_S:
                print(f"[probe] budget of {BUDGET_S:.0f}s spent: not starting {phase}: {line}", flush=True)
                failed.append(f"{phase} (budget)")
                break
            argv = ["bench", *shlex.split(line), *shlex.split(BRIEF), *shlex.split(bw_arg), "--out", out, "--append"]
            print(f"[probe {time.time() - t0:5.0f}s] python -m mla {shlex.join(argv)}", flush=True)
            rc = mla_main(argv)
            if rc:
                failed.append(f"{phase}: rc={rc}")
    print(f"[probe] done in {time.time() - t0:.0f}s; CSVs in {OUT}" + (f"; failures: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
