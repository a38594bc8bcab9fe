#!/usr/bin/env bash
# The device calls of 2026-12-03's fifth session, one part per call:
#   r41a  first contact of the warp-specialized fp8 kernel (v149 / v150: v143's two consumers fed by a one-warp TMA
#         loader, 4 / 5 ring slots, no decoders), each under a timeout (a wrong mbarrier phase hangs); their
#         generation-3 GPU tests with the coop merge's (8e89cb7's refactor, not yet run on a GPU); then v141 (the
#         fp8 default, its own split count) against v149 / v150 at one program per SM on the long shapes, kernel
#         mode, two rounds in opposite order; the triton 3.6 static rows of v149 / v150
#   r41b  the same comparison's second round, in the opposite order
#   (v150 was removed from the registry after r41c: scripts/probes/ws_stress.py showed it faulting; docs/notes-triton.md)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r41.sh r41a|r41b      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r41a or r41b}"
export TRITON_CACHE_DIR=/tmp/tcache-r41
V141=v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm
V149=v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed; V150=v150_n64_w4_s2_gl_en_ws5_tma_ldsm_ed
# bench_ws CSV VARIANT CASE:SPLITS...: the warp-specialized variant at a given number of programs per element
bench_ws() {
  local csv=$1 v=$2; shift 2
  local cs
  for cs in "$@"; do
    step "${v%%_*}-${cs%%-q1*}" 60 python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.15 \
      --kv-format fp8 --cases "${cs%%:*}" --sweep variant=$v --sweep num_splits="${cs##*:}" --out "$csv" \
      $( [ -f "$csv" ] && echo --append )
  done
}
CASES=bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16,bs256-kv8192-q1-h16,bs256-kv4096-q1-h16
LONG="bs32-kv8192-q1-h16:4 bs64-kv8192-q1-h16:2 bs128-kv8192-q1-h16:1 bs256-kv8192-q1-h16:1 bs256-kv4096-q1-h16:1"
case $PART in
r41a)
  for v in $V149 $V150; do
    step "smoke-${v%%_*}" 150 python3 scripts/probes/ws_smoke.py $v
  done
  step pytest 240 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py \
    -k "v149 or v150 or coop or one_launch or rows_past" --junitxml="$OUT/pytest-r41a.xml"
  S=$OUT/ws-fp8-r41a.csv
  D="python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.15 --kv-format fp8"
  step default-1 90 $D --cases $CASES --out $S
  bench_ws $S $V149 $LONG
  bench_ws $S $V150 $LONG
  show "$S"
  step isa 120 bash scripts/sm90_isa_on_device.sh $V149,$V150
  ;;
r41b)
  # r41a's one fault: v150 at bs256-kv8192 ("unspecified launch failure" in the timed graph replays, after its check
  # passed): is it repeatable, and is v149 clean there? Three runs each, alternated; then round 2 of r41a's
  # comparison in the opposite order
  R=$OUT/ws-fp8-repeat-r41b.csv
  for i in 1 2 3; do
    bench_ws $R $V150 bs256-kv8192-q1-h16:1
    bench_ws $R $V149 bs256-kv8192-q1-h16:1
  done
  show "$R"
  S=$OUT/ws-fp8-r41b.csv
  D="python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.15 --kv-format fp8"
  bench_ws $S $V150 ${LONG/bs256-kv8192-q1-h16:1/}
  bench_ws $S $V149 $LONG
  step default-2 90 $D --cases $CASES --out $S --append
  show "$S"
  ;;
*) echo "unknown part $PART (r41a, r41b)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
