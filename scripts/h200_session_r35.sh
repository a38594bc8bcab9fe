#!/usr/bin/env bash
# The device calls of 2026-12-02's second session (round 35, gap probes 5-6, campaigns 13-14), one part per call:
#   r35   GPU tests of the direct launch's device key (894d15e), the one-kernel queued check and the re-based TMA
#         descriptors; gap probe 5; split sweeps of generation 3 (kernel time); fresh rows of the ws MXFP4 shapes
#   r35b  GPU tests of the warp-specialized split rule (ws_default_choice); that rule against explicit split
#         counts; campaign 13 (torch, FlashInfer, the Triton default call)
#   r35c  GPU tests of the memoized TMA encode; fresh rows with MLA_TMA_ENCODE_CACHE=0 / 1 alternated (A B A B);
#         gap probe 6; campaign 14 (FlashInfer and the Triton default call)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r35.sh r35|r35b|r35c      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r35, r35b or r35c}"
case $PART in
r35)
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
  ;;
r35b)
  step pytest 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_contents_check.py tests/test_direct_launch.py \
    tests/test_triton_gen3.py -k "contents or direct or ws or default" --junitxml="$OUT/pytest-r35b.xml"
  step wsrule 150 python3 -m mla bench --backend triton --no-progress --max-seconds 0.3 --kv-format mxfp4 --mode kernel \
    --cases bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16,bs64-kv4096-q1-h16,bs128-kv4096-q1-h16,bs16-kv16384-q1-h16 \
    --sweep num_splits=auto,1,2,4,8 --out "$OUT/wsrule-r35b.csv"
  session_campaign 13 $(( TOTAL_BUDGET - (SECONDS - START) - 10 )) torch flashinfer triton
  ;;
r35c)
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
  session_campaign 14 $(( TOTAL_BUDGET - (SECONDS - START) - 10 )) flashinfer triton
  ;;
*) echo "unknown part $PART (r35, r35b, r35c)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
