#!/usr/bin/env bash
# The device calls of 2026-12-02's third session, one part per call:
#   r36a  GPU tests of the flush kind and the cold read floor; the L2 flush probe (a read of N bytes after a
#         write flush, a read flush, none); the leaderboard's default calls in kernel mode under each flush
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r36.sh r36a      (writes $OUT/*)
set -u
PART=${1:?which part: r36a}
OUT=${OUT:-out/$PART}; mkdir -p "$OUT"
LOG=$OUT/$PART.log; TOTAL_BUDGET=${TOTAL_BUDGET:-560}; START=$SECONDS; CARRY=.carry/fi; FAILURES=()
source scripts/_device_steps.sh
say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"
case $PART in
r36a)
  step pytest 90 python3 -m pytest -q -p no:cacheprovider tests/test_bench.py -k "flush or floor" \
    --junitxml="$OUT/pytest-r36a.xml"
  step l2probe 120 python3 scripts/probes/l2_flush_probe.py "$OUT"
  for kind in write read; do
    step "lb-$kind" 150 python3 -m mla bench --backend triton --no-progress --max-seconds 0.3 --cases leaderboard \
      --kv-format bf16,fp8,mxfp4 --mode kernel --l2-flush $kind --out "$OUT/flush-$kind-r36a.csv"
  done
  ;;
*) echo "unknown part $PART (r36a)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
