#!/usr/bin/env bash
# The device calls of 2026-12-02's third session, one part per call:
#   r36a  GPU tests of the flush kind and the cold read floor; the L2 flush probe (a read of N bytes after a
#         write flush, a read flush, none); the leaderboard's default calls in kernel mode under each flush
#   r36b  GPU tests of the fresh mode's flush; campaign 15 (FlashInfer and the Triton default call; fresh under
#         eval.py's own 62.5 GiB randn flush); the Triton fresh rows again under the old 1 GiB zeroing (A/B);
#         fp8 split counts at bs4 / bs8 (kernel time)
#   r36c  GPU tests of the short-program split rule (one_per_sm_splits); that rule against the old counts on two
#         shapes the sweep did not cover; campaign 16 (FlashInfer and the Triton default call, the rule in)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r36.sh r36a|r36b|r36c      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r36a, r36b or r36c}"
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
r36b)
  step pytest 90 python3 -m pytest -q -p no:cacheprovider tests/test_bench.py -k "flush or read" \
    --junitxml="$OUT/pytest-r36b.xml"
  session_campaign 15 330 flashinfer triton
  tail -40 "$OUT/campaign15.log"
  B="python3 -m mla bench --backend triton --no-progress --max-seconds 0.25"
  step fresh-write 90 $B --cases leaderboard --kv-format bf16,fp8,mxfp4 --mode fresh --fresh-flush write \
    --out "$OUT/fresh-ab-r36b.csv"
  step splits 90 $B --cases bs4-kv8192-q1-h16,bs4-kv4096-q1-h16,bs8-kv8192-q1-h16 --kv-format fp8,mxfp4 --mode kernel \
    --sweep num_splits=auto,16,32,64 --out "$OUT/splits-r36b.csv"
  step splits1k 60 $B --cases bs32-kv1024-q1-h16,bs64-kv1024-q1-h16 --kv-format fp8,mxfp4 --mode kernel \
    --sweep num_splits=auto,2,4,8,16 --out "$OUT/splits-r36b.csv" --append
  ;;
r36c)
  step pytest 120 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_triton_gen3.py tests/test_bench.py \
    -k "short or default or flush or read" --junitxml="$OUT/pytest-r36c.xml"
  step rule 90 python3 -m mla bench --backend triton --no-progress --max-seconds 0.25 --mode kernel --kv-format fp8,mxfp4 \
    --cases bs16-kv8192-q1-h16,bs128-kv1024-q1-h16 --sweep num_splits=auto,1,2,8,16 --out "$OUT/rule-r36c.csv"
  session_campaign 16 330 flashinfer triton
  tail -12 "$OUT/campaign16.log"
  ;;
*) echo "unknown part $PART (r36a, r36b, r36c)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
