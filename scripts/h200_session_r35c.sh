#!/usr/bin/env bash
# Third device call of 2026-12-02's second session: GPU tests of the memoized TMA encode (direct.py); fresh
# rows of the warp-specialized MXFP4 shapes with MLA_TMA_ENCODE_CACHE=0 / 1 alternated (A B A B); gap probe 6
# at bs64-kv8192; campaign 14 (FlashInfer and the Triton default call, the leaderboard, all modes).
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r35c.sh      (writes $OUT/*)
set -u
OUT=${OUT:-out/r35c}; mkdir -p "$OUT"
LOG=$OUT/r35c.log; TOTAL_BUDGET=${TOTAL_BUDGET:-560}; START=$SECONDS; CARRY=.carry/fi; FAILURES=()
source scripts/_device_steps.sh
say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"
step pytest 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_direct_launch.py tests/test_contents_check.py \
  tests/test_triton_gen3.py -k "direct or contents or ws_default or ws_call or default_mxfp4" --junitxml="$OUT/pytest-r35c.xml"
CASES=bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs256-kv8192-q1-h16
for k in 1 2; do for memo in 0 1; do
  step "ab$k-memo$memo" 60 env MLA_TMA_ENCODE_CACHE=$memo python3 -m mla bench --backend triton --no-progress \
    --max-seconds 0.3 --kv-format mxfp4 --mode cold,kernel,fresh --cases $CASES \
    --out "$OUT/tma-encode-ab-r35c.csv" $( [ -f "$OUT/tma-encode-ab-r35c.csv" ] && echo --append )
done; done
step gap64 60 python3 scripts/probes/issue10_gap.py "$OUT/gap64" --case bs64-kv8192-q1-h16 --kv-format mxfp4 \
  --rounds 1 --no-harness --budget 40 --max-seconds 0.1 --queue-steps 10
mv "$OUT/gap64/issue10-gap.csv" "$OUT/gap6-bs64-kv8192.csv" 2>/dev/null; rm -rf "$OUT/gap64"
OUT="$OUT/c14" CARRY=$CARRY BACKENDS="flashinfer triton" TOTAL_BUDGET=$(( TOTAL_BUDGET - (SECONDS - START) - 10 )) \
  bash scripts/h200_campaign.sh > /dev/null 2>&1
for f in triton flashinfer; do mv "$OUT/c14/$f.csv" "$OUT/campaign14-$f.csv" 2>/dev/null; done
mv "$OUT/c14/campaign.log" "$OUT/campaign14.log" 2>/dev/null; rm -rf "$OUT/c14"
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
