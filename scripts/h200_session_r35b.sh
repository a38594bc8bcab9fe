#!/usr/bin/env bash
# Second device call of 2026-12-02's second session: GPU tests of the warp-specialized split rule
# (ws_default_choice) and the one-kernel check; the rule's shapes swept against explicit split counts
# (kernel time); campaign 13 (the leaderboard, torch / FlashInfer / Triton default calls, all modes).
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r35b.sh      (writes $OUT/*)
set -u
OUT=${OUT:-out/r35b}; mkdir -p "$OUT"
LOG=$OUT/r35b.log; TOTAL_BUDGET=${TOTAL_BUDGET:-570}; START=$SECONDS; CARRY=.carry/fi; FAILURES=()
source scripts/_device_steps.sh
say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"
step pytest 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_contents_check.py tests/test_direct_launch.py \
  tests/test_triton_gen3.py -k "contents or direct or ws or default" --junitxml="$OUT/pytest-r35b.xml"
step wsrule 150 python3 -m mla bench --backend triton --no-progress --max-seconds 0.3 --kv-format mxfp4 --mode kernel \
  --cases bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16,bs64-kv4096-q1-h16,bs128-kv4096-q1-h16,bs16-kv16384-q1-h16 \
  --sweep num_splits=auto,1,2,4,8 --out "$OUT/wsrule-r35b.csv"
OUT="$OUT/c13" CARRY=$CARRY BACKENDS="torch flashinfer triton" TOTAL_BUDGET=$(( TOTAL_BUDGET - (SECONDS - START) - 10 )) \
  bash scripts/h200_campaign.sh > /dev/null 2>&1
for f in triton flashinfer torch; do mv "$OUT/c13/$f.csv" "$OUT/campaign13-$f.csv" 2>/dev/null; done
mv "$OUT/c13/campaign.log" "$OUT/campaign13.log" 2>/dev/null; rm -rf "$OUT/c13"
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
