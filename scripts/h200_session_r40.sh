#!/usr/bin/env bash
# The device calls of 2026-12-03's fourth session, one part per call:
#   r40a  first contact of the coop merge (v147 = v141 + COOP_MERGE, v148 = v117 + it: the splits of each element
#         merge the output together inside the split kernel, a cooperative grid of one program per SM, no reduce
#         kernel): their generation-3 GPU tests; then the default call against v147 (fp8) and v148 (MXFP4) on the
#         split shapes, kernel and fresh modes, two rounds in opposite order; each kernel's own time (Nsight
#         Compute, caches flushed) of v147 at bs4-kv1024 / bs4-kv8192 beside round 39b's table
#   r40b  the coop merge's PTX test on triton 3.6 and FlashInfer's query= / kv_cache= call (GPU tests); v141 / v147 at
#         bs4-kv8192 with 8 / 16 / 32 splits (does the coop merge's cost grow with the splits?); then campaign 20
#         (CAMPAIGN=0 skips it)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r40.sh r40a|r40b      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r40a or r40b}"
export TRITON_CACHE_DIR=/tmp/tcache-r40
V147=v147_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_cm; V148=v148_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_cm
SPLIT=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16,bs32-kv8192-q1-h16,bs64-kv8192-q1-h16
case $PART in
r40a)
  step pytest 200 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v147 or v148 or coop" \
    --junitxml="$OUT/pytest-r40a.xml"
  S=$OUT/coop-r40a.csv
  B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh --max-seconds 0.12 --cases $SPLIT"
  for round in 1 2; do
    for fmt in fp8 mxfp4; do
      v=$V147; [ $fmt = mxfp4 ] && v=$V148
      if [ $round = 1 ]; then
        step "default-$fmt-$round" 60 $B --kv-format $fmt --out $S $( [ -f $S ] && echo --append )
        step "coop-$fmt-$round" 60 $B --kv-format $fmt --sweep variant=$v --out $S --append
      else
        step "coop-$fmt-$round" 60 $B --kv-format $fmt --sweep variant=$v --out $S --append
        step "default-$fmt-$round" 60 $B --kv-format $fmt --out $S --append
      fi
    done
  done
  show "$S"
  for c in bs4-kv1024-q1-h16 bs4-kv8192-q1-h16; do
    step "ncu-${c%%-q1*}" 40 bash -c "ncu --cache-control all --clock-control none --metrics gpu__time_duration.sum \
      -k regex:mla_decode --csv python3 scripts/probes/one_launch.py $c fp8 $V147 > /tmp/ncu.csv 2>&1; \
      grep -E '^\"[0-9]' /tmp/ncu.csv | sed 's/^/$c:fp8:$V147 /' >> $OUT/durations-r40a.txt; tail -4 /tmp/ncu.csv"
  done
  cat $OUT/durations-r40a.txt 2>/dev/null | tee -a "$LOG"
  ;;
r40b)
  install_flashinfer
  step pytest 200 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py tests/test_backends.py \
    -k "coop or default_rule or flashinfer" --junitxml="$OUT/pytest-r40b.xml"
  V141=v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm
  step coop-splits 90 python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.12 \
    --cases bs4-kv8192-q1-h16 --kv-format fp8 --sweep variant=$V141,$V147 --sweep num_splits=8,16,32 \
    --out $OUT/coop-splits-r40b.csv
  show $OUT/coop-splits-r40b.csv
  if [ "${CAMPAIGN:-1}" = 1 ]; then
    session_campaign 20 330 flashinfer triton
    tail -12 "$OUT/campaign20.log"
  fi
  ;;
*) echo "unknown part $PART (r40a, r40b)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
