#!/usr/bin/env bash
# The device calls of 2026-12-03's session, one part per call:
#   r37a  GPU tests of the PDL reduce (tests/test_pdl.py) and of the default call's plan branches; the 8
#         leaderboard shapes x 3 formats with the reduce launched plainly and by PDL, kernel and fresh modes,
#         in two rounds of opposite order (A/B/B/A against drift)
#   r37c  GPU tests of the two triggers; the six split shapes x 3 formats with pdl=false / early / late, kernel and
#         fresh modes, two rounds of opposite order
#   r37d  the same six shapes x 3 formats, pdl=false / late, in the cold and warm modes (the whole call with the
#         plan's own graph), two rounds of opposite order
#   r37b  campaign 17 (FlashInfer and the Triton default call) at the committed PDL default
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r37.sh r37a|r37b      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r37a, r37c, r37d or r37b}"
B="python3 -m mla bench --backend triton --no-progress --max-seconds 0.25"
case $PART in
r37a)
  python3 -c "import triton; from triton.language.extra.cuda import gdc_wait; print('triton', triton.__version__, 'gdc ok')" 2>&1 | tee -a "$LOG"
  step pytest 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_pdl.py tests/test_triton_gen3.py \
    -k "pdl or short or default" --junitxml="$OUT/pytest-r37a.xml"
  step ab1 170 $B --cases leaderboard --kv-format bf16,fp8,mxfp4 --mode kernel,fresh --sweep pdl=false,true \
    --out "$OUT/pdl-ab-r37a.csv"
  step ab2 170 $B --cases leaderboard --kv-format bf16,fp8,mxfp4 --mode kernel,fresh --sweep pdl=true,false \
    --out "$OUT/pdl-ab-r37a.csv" --append
  ;;
r37c)
  step pytest 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_pdl.py --junitxml="$OUT/pytest-r37c.xml"
  C=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs32-kv8192-q1-h16,bs64-kv1024-q1-h16,bs64-kv8192-q1-h16
  step ab1 170 $B --cases $C --kv-format bf16,fp8,mxfp4 --mode kernel,fresh --sweep pdl=false,early,late \
    --out "$OUT/pdl-trigger-r37c.csv"
  step ab2 170 $B --cases $C --kv-format bf16,fp8,mxfp4 --mode kernel,fresh --sweep pdl=late,early,false \
    --out "$OUT/pdl-trigger-r37c.csv" --append
  ;;
r37d)
  C=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs32-kv8192-q1-h16,bs64-kv1024-q1-h16,bs64-kv8192-q1-h16
  step ab1 120 $B --cases $C --kv-format bf16,fp8,mxfp4 --mode cold,warm --sweep pdl=false,late \
    --out "$OUT/pdl-cold-r37d.csv"
  step ab2 120 $B --cases $C --kv-format bf16,fp8,mxfp4 --mode cold,warm --sweep pdl=late,false \
    --out "$OUT/pdl-cold-r37d.csv" --append
  ;;
r37b)
  session_campaign 17 330 flashinfer triton
  tail -12 "$OUT/campaign17.log"
  ;;
*) echo "unknown part $PART (r37a, r37c, r37d, r37b)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
