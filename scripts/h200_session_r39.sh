#!/usr/bin/env bash
# The device calls of 2026-12-03's third session, one part per call:
#   r39a  first contact of v145 (v141 + KV_FIRST: the KV range and the first tile's copies before Q) and v146
#         (v117 + KV_FIRST): their generation-3 GPU tests and FlashInfer's fp8 scale on fresh inputs (the
#         device fold, tests/test_backends.py); then v141 / v145 (fp8) and v117 / v146 (MXFP4) on the shapes those
#         kernels take, at the heuristic split count, kernel and fresh modes, two rounds in opposite order; and
#         FlashInfer fp8 kernel / fresh at bs4-kv1024 and bs256-kv8192
#   r39b  the fixed tests (FlashInfer's fold kernel and fresh path, KV_FIRST's SASS on 3.6); each kernel's own device
#         time (Nsight Compute, caches flushed before each) of the default call at the five short shapes (fp8) and
#         at bs32 / bs64-kv8192 (MXFP4): where the small shapes' time goes
#   r39c  campaign 19 (FlashInfer, whose fp8 fresh path no longer reads the scale on the host, and the Triton
#         default call) at the committed defaults
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r39.sh r39a|r39b|r39c      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r39a, r39b or r39c}"
export TRITON_CACHE_DIR=/tmp/tcache-r39
V141=v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm; V145=v145_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_kf
V117=v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf; V146=v146_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_kf
SHORT=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16,bs256-kv1024-q1-h16
case $PART in
r39a)
  install_flashinfer
  step pytest 240 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py tests/test_backends.py \
    tests/test_validation.py -k "v145 or v146 or flashinfer or refused_fp8" --junitxml="$OUT/pytest-r39a.xml"
  S=$OUT/kvfirst-r39a.csv
  B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh --max-seconds 0.12"
  for order in "$V141,$V145" "$V145,$V141"; do
    step fp8 100 $B --kv-format fp8 --cases $SHORT,bs32-kv8192-q1-h16,bs64-kv8192-q1-h16 --sweep variant=$order \
      --out $S $( [ -f $S ] && echo --append )
  done
  for order in "$V117,$V146" "$V146,$V117"; do
    step mxfp4 80 $B --kv-format mxfp4 --cases $SHORT --sweep variant=$order --out $S --append
  done
  step fi-fp8 90 python3 -m mla bench --backend flashinfer --kv-format fp8 --no-progress --mode kernel,fresh \
    --max-seconds 0.15 --cases bs4-kv1024-q1-h16,bs256-kv8192-q1-h16 --out $OUT/fi-fp8-r39a.csv
  python3 - "$S" "$OUT/fi-fp8-r39a.csv" <<'PY' 2>&1 | tee -a "$LOG"
import sys, pandas as pd
for f in sys.argv[1:]:
    try:
        d = pd.read_csv(f)
    except Exception as exc:
        print(f, exc); continue
    cols = [c for c in ("case", "kv_format", "variant", "status", "kernel_median_us", "fresh_median_us", "rel_l2_fmt")
            if c in d.columns]
    with pd.option_context("display.width", 250, "display.max_colwidth", 50, "display.max_rows", 300):
        print(d[cols].to_string())
PY
  ;;
r39b)
  install_flashinfer
  step pytest 150 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py tests/test_backends.py \
    tests/test_validation.py -k "kv_first or flashinfer or fold or refused_fp8" --junitxml="$OUT/pytest-r39b.xml"
  for cf in bs4-kv1024-q1-h16:fp8 bs4-kv8192-q1-h16:fp8 bs32-kv1024-q1-h16:fp8 bs64-kv1024-q1-h16:fp8 \
            bs256-kv1024-q1-h16:fp8 bs32-kv8192-q1-h16:mxfp4 bs64-kv8192-q1-h16:mxfp4; do
    step "ncu-${cf%%-q1*}-${cf##*:}" 40 bash -c "ncu --cache-control all --clock-control none --metrics gpu__time_duration.sum \
      -k regex:mla_decode --csv python3 scripts/probes/one_launch.py ${cf%%:*} ${cf##*:} default > /tmp/ncu.csv 2>&1; \
      grep -E '^\"[0-9]' /tmp/ncu.csv | sed 's/^/${cf} /' >> $OUT/durations-r39b.txt; tail -4 /tmp/ncu.csv"
  done
  cat $OUT/durations-r39b.txt
  ;;
r39c)
  session_campaign 19 330 flashinfer triton
  tail -12 "$OUT/campaign19.log"
  ;;
*) echo "unknown part $PART (r39a, r39b, r39c)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
