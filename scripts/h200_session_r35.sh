#!/usr/bin/env bash
# Device call of 2026-12-02 (second session): GPU tests of the direct launch's device key (894d15e), the
# one-kernel queued check and the re-based TMA descriptors (3d71c6c); gap probe 5 (the fresh call's host
# steps before / after); split sweeps of generation 3 at the kv8192 shapes and bs4-kv1024 (kernel time);
# fresh rows of the warp-specialized MXFP4 shapes.
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r35.sh      (writes $OUT/*)
set -u
OUT=${OUT:-out/r35}; mkdir -p "$OUT"
LOG=$OUT/r35.log; TOTAL_BUDGET=${TOTAL_BUDGET:-560}; START=$SECONDS; CARRY=.carry/fi; FAILURES=()
source scripts/_device_steps.sh
say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"
step pytest 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_direct_launch.py tests/test_contents_check.py \
  tests/test_decode_memo.py tests/test_validation.py tests/test_triton_gen3.py \
  -k "direct or memo or default or fused or balanced or contents or queued or pending or fresh or guard or ws" \
  --junitxml="$OUT/pytest-r35.xml"
step gap64 90 python3 scripts/probes/issue10_gap.py "$OUT/gap64" --case bs64-kv8192-q1-h16 --kv-format mxfp4 \
  --rounds 1 --no-harness --budget 60 --max-seconds 0.1 --queue-steps 15
step gap4 80 python3 scripts/probes/issue10_gap.py "$OUT/gap4" --case bs4-kv1024-q1-h16 --rounds 1 --no-harness \
  --budget 50 --max-seconds 0.08 --queue-steps 15
B="python3 -m mla bench --backend triton --no-progress --max-seconds 0.4"
step sweep8192 150 $B --cases bs4-kv8192-q1-h16 --kv-format fp8,mxfp4 --mode kernel --sweep num_splits=16,32,64 \
  --out "$OUT/sweeps-r35.csv"
step sweep8192b 120 $B --cases bs32-kv8192-q1-h16,bs64-kv8192-q1-h16 --kv-format fp8,mxfp4 --mode kernel \
  --sweep num_splits=2,4,8,16 --out "$OUT/sweeps-r35.csv" --append
step sweep1024 80 $B --cases bs4-kv1024-q1-h16 --kv-format bf16,fp8,mxfp4 --mode kernel,cold \
  --sweep num_splits=4,8,16,32 --out "$OUT/sweeps-r35.csv" --append
step fresh 120 $B --cases bs64-kv8192-q1-h16,bs256-kv8192-q1-h16,bs32-kv8192-q1-h16 --kv-format fp8,mxfp4 \
  --mode kernel,fresh --out "$OUT/fresh-r35.csv"
mv "$OUT/gap64/issue10-gap.csv" "$OUT/gap5-bs64-kv8192.csv" 2>/dev/null; mv "$OUT/gap4/issue10-gap.csv" "$OUT/gap5-bs4-kv1024.csv" 2>/dev/null
rmdir "$OUT/gap64" "$OUT/gap4" 2>/dev/null
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
