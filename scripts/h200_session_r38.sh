#!/usr/bin/env bash
# The device calls of 2026-12-03's second session, one part per call:
#   r38a  first contact of v143 (v140 + the partials stored from the accumulators) and v144 (v143 + the first
#         tile's TMA before the Q prologue): ws_smoke under a timeout, their generation-3 GPU tests; then MXFP4
#         v133 / v140 / v143 / v144 at 16, 32, 64 and 128 KV tiles a program (explicit split counts), two
#         rounds in opposite order, with the fp8 default at the same shapes; Nsight Compute's pipe and
#         scheduler sections on one v143 launch at bs256-kv8192
#   r38b  campaign 18 (FlashInfer and the Triton default call) at the committed defaults
#   r38c  MXFP4 against fp8 through the default call on the three short kv8192 shapes, kernel and fresh modes,
#         three rounds in alternating format order; MXFP4 v117 / v139 / v142 at the default split count on the
#         shapes v117 takes (the kv1024 shapes, bs4-kv8192)
#   r38d  PC-sampled stalls per partition loop of v143 at bs256-kv8192 (Nsight Compute SourceCounters)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r38.sh r38a|r38b|r38c|r38d      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r38a, r38b, r38c or r38d}"
export TRITON_CACHE_DIR=/tmp/tcache-r38
B="python3 -m mla bench --backend triton --no-progress --kv-format mxfp4 --mode kernel --config graph=true --max-seconds 0.15"
V133=v133_n64_w4_s2_gl_mx_ws4_tma; V140=v140_n64_w4_s2_gl_mx_ws4_tma_ldsm
V143=v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed; V144=v144_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_et
case $PART in
r38a)
  step smoke143 120 python3 scripts/probes/ws_smoke.py $V143
  step smoke144 120 python3 scripts/probes/ws_smoke.py $V144
  step pytest 200 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v143 or v144" \
    --junitxml="$OUT/pytest-r38a.xml"
  S=$OUT/tiles-r38a.csv
  for order in "$V133,$V140,$V143,$V144" "$V144,$V143,$V140,$V133"; do
    step tiles16-32 60 $B --cases bs32-kv8192-q1-h16 --sweep variant=$order --sweep num_splits=8,4 --out $S \
      $( [ -f $S ] && echo --append )
    step tiles64 45 $B --cases bs64-kv8192-q1-h16 --sweep variant=$order --config num_splits=2 --out $S --append
    step tiles128 60 $B --cases bs128-kv8192-q1-h16,bs256-kv8192-q1-h16 --sweep variant=$order --config num_splits=1 \
      --out $S --append
  done
  step fp8 40 python3 -m mla bench --backend triton --no-progress --kv-format fp8 --mode kernel --max-seconds 0.15 \
    --cases bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16,bs256-kv8192-q1-h16 --out $S --append
  step ncu 100 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:mla_decode_gluon" \
    --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --section WarpStateStats \
    --section SpeedOfLight python3 scripts/probes/one_launch.py bs256-kv8192-q1-h16 auto $V143 > "$OUT/r38a-ncu-v143.txt" 2>&1
  python3 - "$S" <<'PY' 2>&1 | tee -a "$LOG"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
cols = [c for c in ("case", "kv_format", "variant", "num_splits", "status", "kernel_median_us", "rel_l2_fmt") if c in d.columns]
with pd.option_context("display.width", 250, "display.max_colwidth", 60, "display.max_rows", 300):
    print(d[cols].to_string())
PY
  ;;
r38c)
  A=$OUT/mx-vs-fp8-r38c.csv
  for fmts in fp8,mxfp4 mxfp4,fp8 fp8,mxfp4; do
    step ab 80 python3 -m mla bench --backend triton --no-progress --kv-format $fmts --mode kernel,fresh --max-seconds 0.2 \
      --cases bs4-kv8192-q1-h16,bs32-kv8192-q1-h16,bs64-kv8192-q1-h16 --out $A $( [ -f $A ] && echo --append )
  done
  step short 150 $B --cases bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16,bs256-kv1024-q1-h16 \
    --sweep variant=v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf,v139_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_lut,v142_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ldsm \
    --out $OUT/short-r38c.csv
  ;;
r38d)
  step ncu-src 150 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:mla_decode_gluon" \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/src-v143 \
    python3 scripts/probes/one_launch.py bs256-kv8192-q1-h16 auto $V143
  step ncu-page 90 bash -c "ncu -i /tmp/src-v143.ncu-rep --page source --csv --print-source sass > $OUT/r38d-src-v143.csv"
  step summary 60 python3 scripts/probes/ncu_partition_summary.py $OUT/r38d-src-v143.csv
  ;;
r38b)
  session_campaign 18 330 flashinfer triton
  tail -12 "$OUT/campaign18.log"
  ;;
*) echo "unknown part $PART (r38a, r38b, r38c, r38d)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
