#!/usr/bin/env bash
# The sm90 ISA report (python -m mla isa --target sm90) compiled with THIS machine's triton: on the
# H200 that is triton 3.6, the version its timings ran with. Offline compiles only: no kernel runs,
# no GPU is needed, no network is used.
#
#   device run (repo root, $OUT set):  MLA_GIT_COMMIT=<sha> bash scripts/sm90_isa_on_device.sh [VARIANTS]
#   here, with another triton:          PYTHON=.venv/bin/python PYTHONPATH=<dir holding triton> OUT=/tmp/isa JOBS=1 bash scripts/sm90_isa_on_device.sh
#
# VARIANTS: comma-separated names from mla.kernels.triton.VARIANTS, or 'all' (default), or
#           'defaults' (the per-format DEFAULT_VARIANT entries).
# JOBS:     compile processes (default: every core; use 1 on the shared CPU machine).
# Writes $OUT/triton-<triton version>.csv (the columns of data/static/sm90/triton.csv, plus
# source_hash) and $OUT/isa.log. Commit the CSV as data/static/sm90/triton-<version>.csv.
# Runtime: ~1 s per compile per process (108 compiles for 'all').
set -euo pipefail
OUT=${OUT:-out/isa-sm90}
mkdir -p "$OUT"
export OUT JOBS=${JOBS:-$(nproc)} PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
"${PYTHON:-python3}" - "${1:-all}" <<'EOF' 2>&1 | tee "$OUT/isa.log"
import os, sys, time
from pathlib import Path

import triton

from mla.analysis.isa_cli import provenance, write_csv
from mla.analysis.isa_triton import triton_rows
from mla.kernels.triton import DEFAULT_VARIANT

arg = sys.argv[1]
variants = None if arg == "all" else ",".join(dict.fromkeys(DEFAULT_VARIANT.values())) if arg == "defaults" else arg
t0 = time.time()
print(f"triton {triton.__version__} ({triton.__file__}), {os.environ['JOBS']} jobs, variants: {variants or 'all'}")
rows = triton_rows("sm90", variants=variants, log=print, jobs=int(os.environ["JOBS"]))
prov = provenance()
if prov["git_commit"] == "uncommitted" and os.environ.get("MLA_GIT_COMMIT"):  # a copy without .git
    prov.update(git_commit=os.environ["MLA_GIT_COMMIT"], git_dirty="unknown")
try:  # pins the exact mla/ sources that were compiled, .git or not
    from mla.bench.provenance import source_hash
    prov["source_hash"] = source_hash()
except ImportError as e:
    print(f"(no source_hash: {e})")
path = write_csv(Path(os.environ["OUT"]) / f"triton-{triton.__version__}.csv", rows, prov)
print(f"{len(rows)} kernels in {time.time() - t0:.0f} s -> {path}")
cols = ("variant", "kv_format", "registers", "loop_sass_mma", "loop_sass_wgmma", "warp_instr_per_token",
        "smem_bytes_per_token", "smem_wgmma_bytes_per_token")
print(" ".join(f"{c:>22}" for c in cols))
for r in rows:
    print(" ".join(f"{str(r.get(c, '')):>22}" for c in cols))
EOF
