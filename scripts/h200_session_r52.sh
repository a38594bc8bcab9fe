#!/usr/bin/env bash
# Round 52 (docs/notes-triton.md, "Round 52"): Q first. Round 50's timeline (H100) put fp8's Q prologue at 3.4 us at
# bs4-kv1024 against MXFP4's 2.3 (4.97 / 2.50 at bs32-kv1024, 4.97 / 3.26 at bs4-kv8192): on triton 3.6 v153 issues
# its first tile's copies (37 KB) and Q's loads (18 KB) behind them; v152 loads Q and quantizes it before its tile's
# copies. v158 / v159 (v153 / v152 + gluon_q_first) issue Q's loads, then the tile's copies, then quantize Q
# (test_offline_sm90_sass_of_q_first_asks_for_q_then_the_tile_then_quantizes).
#   r52a  GPU tests of v158 / v159 (the generation-3 gates, uniform ranges with garbage indptrs); kernel + fresh mode
#         at the short shapes and bs256-kv1024, v153 / v158 (fp8) and v152 / v159 (MXFP4) at the bench's split count
#         for a named kernel (two programs an SM; the default call lowers it to one an SM at bs4-kv8192, bs32-kv1024
#         and fp8's bs64-kv1024 - noticed after the run), two rounds in opposite order; the timeline of all four at
#         bs4-kv1024 and bs32-kv1024 (the same counts)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r52.sh r52a (writes $OUT/*)
# Predicted before r52a (2026-12-06 ~08:30 UTC, offline; nothing of v158 / v159 has run on a GPU), on an H100
# (kernel mode, against v153 / v152 in the same run):
#   - fp8 v158: Q ready 0.6-1.2 us sooner at bs4-kv1024 (3.4 -> 2.2-2.8) and bs32-kv1024 / bs4-kv8192; the first
#     tile ready at most 0.3 us later than Q; kernel -0.3..-1.0 us at bs4-kv1024, bs4-kv8192, bs32-kv1024,
#     bs64-kv1024 (-3..-8% at bs4-kv1024); bs256-kv1024 within +-1%
#   - MXFP4 v159 (its tile now streams while Q is quantized, not after): -0.2..-0.6 us at the same four shapes
#   - rel_l2 identical to v153 / v152 (the same arithmetic: Q + 0 from shared memory)
#   On an H200 the same signs (its DRAM latency is similar; its bandwidth higher, so the fp8 tile ahead of Q costs
#   less): fp8 -0.2..-0.8 us
# Measured (r52a 07:50-07:57 UTC device clock, an H100; docs/notes-triton.md "Round 52"): fp8 -10.4 / +0.5 / -2.8 /
#   -5.2 / -2.0% at bs4-kv1024 / bs4-kv8192 / bs32-kv1024 / bs64-kv1024 / bs256-kv1024, MXFP4 +0.6 / -9.2 / -9.8 /
#   -7.0 / -1.4%; fp8 Q ready 3.36 -> 2.07 us at bs4-kv1024; the same rel_l2 (met or beaten except fp8 bs4-kv8192,
#   MXFP4 bs4-kv1024 and fp8 bs256-kv1024, which gained more than the +-1% predicted)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r52a | r52b | r52c | r52d}"
export TRITON_CACHE_DIR=/tmp/tcache-r52
V153=v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf
V158=v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf
V152=v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur
V159=v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf
SHORT=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16,bs256-kv1024-q1-h16
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh"
case $PART in
r52a)
  step tests 150 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "(v158 or v159) and not offline" \
    -rfE --junitxml="$OUT/pytest-r52a.xml"
  S=$OUT/qfirst-r52a.csv
  for r in 1 2; do
    o8=$V153,$V158; o4=$V152,$V159; [ $r = 2 ] && o8=$V158,$V153 && o4=$V159,$V152
    step "fp8-$r" 90 $B --kv-format fp8 --cases $SHORT --sweep variant=$o8 --out $S --append
    step "mxfp4-$r" 90 $B --kv-format mxfp4 --cases $SHORT --sweep variant=$o4 --out $S --append
  done
  show "$S"
  for fv in fp8:$V153 fp8:$V158 mxfp4:$V152 mxfp4:$V159; do
    f=${fv%%:*}; v=${fv#*:}
    step "timeline-${v%%_*}" 60 python3 scripts/probes/timeline_probe.py "$OUT/timeline-r52a/${v%%_*}" --formats $f \
      --cases bs4-kv1024-q1-h16,bs32-kv1024-q1-h16 --variant $v --repeats 4 --seconds 0.4
  done
  cat "$OUT"/timeline-r52a/*/timeline.csv | awk 'NR==1 || !/^run_id/' > "$OUT/timeline-r52a/timeline.csv"
  cat "$OUT"/timeline-r52a/*/timeline-cost.csv | awk 'NR==1 || !/^run_id/' > "$OUT/timeline-r52a/timeline-cost.csv"
  STEP_MARGIN=0 step summary 30 python3 -m mla timeline "$OUT/timeline-r52a/timeline.csv" \
    --cost "$OUT/timeline-r52a/timeline-cost.csv"
  tar czf "$OUT/timeline-r52a.tgz" -C "$OUT" timeline-r52a && rm -rf "$OUT/timeline-r52a"
  ;;
r52b)
  # the default call with v158 / v159 (HOPPER_DEFAULT since round 52): campaign 24 (FlashInfer beside it, the same
  # run), then v153 / v158 and v152 / v159 again at the six shapes where the one-warpgroup kernel is the default
  # (bs32 / bs64-kv8192 take the warp-specialized kernels, unchanged), one round, kernel + fresh.
  # Predicted (after r52a, 08:05 UTC): on an H100 the same signs as r52a within 1 us per shape; on an H200 fp8
  # -0.3..-1.0 us at bs4-kv1024 / bs64-kv1024, MXFP4 -1..-2 us at bs4-kv8192 / bs32-kv1024 / bs64-kv1024, and the
  # best-format geomean (kernel) 42.8 -> 41.5-42.3 us against campaign 23 (the bs4 / bs32-kv1024 / bs64-kv1024 rows
  # drop 3-8%, the rest unchanged)
  # NO_FI=1: Triton only (at 2012b8f the tracked tree, 52 MB, and the FlashInfer bundle, 16 MB, did not fit one call's
  # 64 MiB; the ncu pages gzipped after it bring the two to 59.8 MiB)
  if [ "${NO_FI:-0}" = 1 ]; then session_campaign 24 250 triton; else install_flashinfer; session_campaign 24 250 flashinfer triton; fi
  tail -14 "$OUT/campaign24.log"
  S=$OUT/qfirst-r52b.csv
  step ab-fp8 80 $B --kv-format fp8 --cases $SHORT,bs256-kv8192-q1-h16 --sweep variant=$V153,$V158 --out $S
  step ab-mxfp4 80 $B --kv-format mxfp4 --cases $SHORT,bs256-kv8192-q1-h16 --sweep variant=$V152,$V159 --out $S --append
  show "$S"
  ;;
r52c)
  # v160 = v158 with each fp8 tile's cp.async as two copies: on triton 3.6 v158's loop has 13 bar.sync and 37 LDS
  # (24 of them dummy), v160's 6 and 16 (test_offline_sm90_sass_of_cp_one_...). Predicted (08:15 UTC, H100, against v158
  # in the same run): -0.1..-0.4 us at the short shapes (the first tile's issue), -0..-1.5% at bs256-kv1024 and
  # bs256-kv8192 (a barrier costs the warpgroup ~20-40 cycles, 7 of them ~0.1 us a tile of ~3.2 us, partly hidden
  # by the second CTA); same rel_l2
  V160=v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1
  step tests 120 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v160 and not offline" -rfE \
    --junitxml="$OUT/pytest-r52c.xml"
  S=$OUT/cpone-r52c.csv
  step ab-1 90 $B --kv-format fp8 --cases $SHORT,bs256-kv8192-q1-h16 --sweep variant=$V158,$V160 --out $S
  step ab-2 90 $B --kv-format fp8 --cases $SHORT,bs256-kv8192-q1-h16 --sweep variant=$V160,$V158 --out $S --append
  show "$S"
  ;;
r52d)
  # campaign 25 (Triton only): the default call with round 52's defaults (fp8 v160, MXFP4 v159) on the 8 shapes
  # Predicted (08:20 UTC; on an H100, against campaign 24 of r52b, v158): fp8 rows within -1.5..+0.5%, bs256-kv8192
  # -3..-7 us; MXFP4 and bf16 rows within +-1%
  session_campaign 25 200 triton
  tail -14 "$OUT/campaign25.log"
  ;;
*) echo "unknown part $PART (r52a | r52b | r52c | r52d)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
