#!/usr/bin/env bash
# One generation-3 probe round on the H200 (docs/notes-triton.md "Generation 3"): the bench lines of
# scripts/probes/gen3-r$ROUND.txt through the one harness (checked rows, provenance), then Nsight
# Compute on one launch of each $NCU_VARIANT at bs256-kv8192 (its own KV format; stall reasons per
# issued instruction), the gen-3 GPU tests (GEN3_TESTS=1, GEN3_TESTS_K="-k expr"), then the triton
# 3.6 compile cache (cubins for the SASS counts here) as one tarball.
#   MLA_GIT_COMMIT=$(git rev-parse HEAD) ROUND=1 bash scripts/h200_gen3_round.sh   (on the device, OUT set)
set -u
ROUND=${ROUND:?ROUND=N}
OUT=${OUT:-out/gen3}
mkdir -p "$OUT"
LOG=$OUT/gen3-r$ROUND.log; TOTAL_BUDGET=${TOTAL_BUDGET:-540}; START=$SECONDS; CARRY=${CARRY:-}; FAILURES=()
source "$(dirname "$0")/_device_steps.sh"
export PYTHONPATH=$PWD:${PYTHONPATH:-} TRITON_CACHE_DIR=/tmp/tcache-gen3
say "gen3 round $ROUND $(date -u +%FT%TZ) commit ${MLA_GIT_COMMIT:-?}"
python3 - <<'PY' 2>&1 | tee -a "$LOG"
import torch, triton, inspect
print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import hopper, ampere
print("gl.barrier", hasattr(gl, "barrier"), "gl.thread_barrier", hasattr(gl, "thread_barrier"))
print("async_copy", [n for n in dir(ampere.async_copy) if not n.startswith("_")])
print("warpgroup_mma", inspect.signature(hopper.warpgroup_mma))
PY
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  eval "args=($line)"
  step "bench" 300 python3 -m mla bench "${args[@]}" --no-progress --out "$OUT/gen3-r$ROUND.csv" --append
done < "scripts/probes/gen3-r$ROUND.txt"
if [ -n "${NCU_VARIANT:-}" ]; then
  for v in ${NCU_VARIANT//,/ }; do
    step "ncu-$v" 120 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:${NCU_KERNEL:-mla_decode}" \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      python3 scripts/probes/one_launch.py bs256-kv8192-q1-h16 auto "$v" > "$OUT/r$ROUND-ncu-$v.txt" 2>&1
  done
fi
# NCU_SRC_VARIANT: PC-sampled stall reasons per SASS instruction (SourceCounters), summarised per opcode
if [ -n "${NCU_SRC_VARIANT:-}" ]; then
  for v in ${NCU_SRC_VARIANT//,/ }; do
    step "ncu-src-$v" 150 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:${NCU_KERNEL:-mla_decode}" \
      --section SourceCounters --section WarpStateStats --import-source no -f -o "/tmp/src-$v" \
      python3 scripts/probes/one_launch.py bs256-kv8192-q1-h16 auto "$v"
    step "ncu-src-page-$v" 90 bash -c "ncu -i /tmp/src-$v.ncu-rep --page source --csv --print-source sass > $OUT/r$ROUND-src-$v.csv"
    step "ncu-src-sum-$v" 60 python3 scripts/probes/ncu_source_summary.py "$OUT/r$ROUND-src-$v.csv" 30
  done
fi
# GEN3_TESTS=1: the whole gen-3 test file; GEN3_TESTS_K: only the tests matching that pytest -k expression
if [ -n "${GEN3_TESTS:-}" ]; then
  step "pytest-gen3" 240 python3 -m pytest -q tests/test_triton_gen3.py -p no:cacheprovider ${GEN3_TESTS_K:+-k "$GEN3_TESTS_K"} \
    --junitxml="$OUT/pytest-gen3-r$ROUND.xml"
fi
tar czf "$OUT/tcache-r$ROUND.tgz" -C /tmp tcache-gen3 2>/dev/null
python3 - "$OUT/gen3-r$ROUND.csv" <<'PY' 2>&1 | tee -a "$LOG"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
cols = [c for c in ("case", "kv_format", "variant", "num_splits", "status", "warm_median_us", "kernel_median_us",
                    "kernel_pct_read_bw", "rel_l2_fmt", "message") if c in d.columns]
with pd.option_context("display.width", 250, "display.max_colwidth", 120, "display.max_rows", 300):
    print(d[cols].to_string())
PY
say "failures: ${FAILURES[*]:-none}; $(( SECONDS - START ))s"
