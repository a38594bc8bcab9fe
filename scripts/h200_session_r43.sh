#!/usr/bin/env bash
# Prepared 2026-12-04 for the next device session (not yet run): the first row's transient (round 42) and the
# warp-specialized fp8 kernel measured outside it.
#   r43a  placement_probe.py --bench-order (one second of single replays after the references, each timed: when
#         does the slow mode end?); then bs256-kv8192 fp8 as the first row of a bench process without and with
#         `--settle-seconds 0.5` and 2, alternated, two each; then v141 (the default) against v149 at one program per SM
#         on the long shapes, every row settled, v141 and v149 alternated in the same processes' order as round 41
#   r43b  (after r43a's series showed a slow episode about once a second) periodic_probe.py twice, in two processes
#         (period, duty cycle, amplitude; after idle; a torch read; bs32; nvidia-smi at 20 ms beside it); then the
#         first bs256-kv8192 fp8 row with a 1.2 s minimum window (`--kernel-min-seconds 1.2`), twice; then the leaderboard
#         shapes' fp8 default rows with that window
#   r43c  the periodic probe alone, twice (r43b's run of it failed at its read segment)
#   r43d  the GPU's identity (uuid, serial, PCI bus in the log's first line); the first row without and with the window;
#         the bench-order series and the periodic probe again
#   r43e  the new default window (`--kernel-min-seconds`, 1 s; r43b / r43d ran it as `--min-seconds 1.2`, renamed
#         since) with no timing flags: the first bs256-kv8192 fp8 row twice, every format's leaderboard rows, the
#         bench tests on the GPU
#   r43f  the fp8 default on v149 where its programs fit one wave: campaign 21 (FlashInfer and Triton), the default
#         against its control (warp_specialized=false) at bs32 / bs64 / bs128-kv8192, the GPU tests of the rule
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r43.sh r43a .. r43f     (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r43a .. r43f}"
export TRITON_CACHE_DIR=/tmp/tcache-r43
V149=v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed
D="python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.15 --kv-format fp8"
case $PART in
r43a)
  step bench-order 60 python3 scripts/probes/placement_probe.py --bench-order "$OUT"
  S=$OUT/settle-r43a.csv
  for i in 1 2; do
    step "first-row-$i" 40 $D --cases bs256-kv8192-q1-h16 --out $S $( [ -f $S ] && echo --append )
    step "first-row-settled-$i" 40 $D --cases bs256-kv8192-q1-h16 --settle-seconds 0.5 --out $S --append
    step "first-row-settled-long-$i" 40 $D --cases bs256-kv8192-q1-h16 --settle-seconds 2 --out $S --append
  done
  show "$S"
  W=$OUT/ws-fp8-settled-r43a.csv
  for i in 1 2; do
    LONG=bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16,bs256-kv8192-q1-h16
    step "default-$i" 90 $D --settle-seconds 0.5 --cases $LONG --out $W $( [ -f $W ] && echo --append )
    for cs in bs32-kv8192-q1-h16:4 bs64-kv8192-q1-h16:2 bs128-kv8192-q1-h16:1 bs256-kv8192-q1-h16:1; do
      step "v149-${cs%%-q1*}-$i" 60 $D --settle-seconds 0.5 --cases "${cs%%:*}" --sweep variant=$V149 \
        --sweep num_splits="${cs##*:}" --out $W --append
    done
  done
  show "$W"
  ;;
r43b)
  for i in 1 2; do
    mkdir -p "$OUT/p$i"
    step "periodic-$i" 80 python3 scripts/probes/periodic_probe.py "$OUT/p$i"
  done
  S=$OUT/window-r43b.csv
  for i in 1 2; do
    step "first-row-window-$i" 40 $D --cases bs256-kv8192-q1-h16 --kernel-min-seconds 1.2 --max-seconds 1.5 --out $S \
      $( [ -f $S ] && echo --append )
  done
  step "leaderboard-window" 120 $D --cases leaderboard --kernel-min-seconds 1.2 --max-seconds 1.5 --out $S --append
  show "$S"
  ;;
r43c)  # r43b's probe again (its read segment's call was wrong there, and the probe wrote nothing before the end)
  for i in 1 2; do
    mkdir -p "$OUT/p$i"
    step "periodic-$i" 80 python3 scripts/probes/periodic_probe.py "$OUT/p$i"
    for f in series telemetry; do mv "$OUT/p$i/periodic-$f.csv" "$OUT/periodic-$f-$i.csv" 2>/dev/null; done
    rmdir "$OUT/p$i" 2>/dev/null
  done
  ;;
r43d)  # r43a's machine showed 1 Hz episodes and a 313 us base, r43b / r43c's a 306 base and none: which is this one?
  S=$OUT/first-row-r43d.csv
  for i in 1 2; do
    step "first-row-$i" 40 $D --cases bs256-kv8192-q1-h16 --out $S $( [ -f $S ] && echo --append )
  done
  step "first-row-window" 40 $D --cases bs256-kv8192-q1-h16 --kernel-min-seconds 1.2 --max-seconds 1.5 --out $S --append
  show "$S"
  step bench-order 60 python3 scripts/probes/placement_probe.py --bench-order "$OUT"
  mkdir -p "$OUT/p1"
  step periodic 60 python3 scripts/probes/periodic_probe.py "$OUT/p1"
  mv "$OUT/p1/periodic-series.csv" "$OUT/periodic-series.csv" 2>/dev/null && gzip -9 "$OUT/periodic-series.csv"; rmdir "$OUT/p1" 2>/dev/null
  ;;
r43e)  # the new default (a 1 s kernel-mode window), no timing flags: the first row, then every format's kernel rows
  S=$OUT/default-window-r43e.csv
  K="python3 -m mla bench --backend triton --no-progress --mode kernel"
  for i in 1 2; do
    step "first-row-default-$i" 40 $K --kv-format fp8 --cases bs256-kv8192-q1-h16 --out $S $( [ -f $S ] && echo --append )
  done
  step "leaderboard-default" 150 $K --kv-format bf16,fp8,mxfp4 --cases leaderboard --out $S --append
  show "$S"
  step bench-tests 120 python3 -m pytest -q -p no:cacheprovider tests/test_bench.py -rfE
  ;;
r43f)  # the fp8 default on v149 in one wave (variants.HOPPER_WS_ONE_WAVE): campaign 21, its control, GPU tests
  install_flashinfer
  session_campaign 21 230 flashinfer triton
  tail -12 "$OUT/campaign21.log"
  C=$OUT/ws-control-r43f.csv
  L=bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs128-kv8192-q1-h16
  step ws-default 45 python3 -m mla bench --backend triton --no-progress --mode cold,kernel,fresh --max-seconds 0.25 \
    --kv-format fp8 --cases $L --out $C
  step ws-control 45 python3 -m mla bench --backend triton --no-progress --mode cold,kernel,fresh --max-seconds 0.25 \
    --kv-format fp8 --cases $L --config warp_specialized=false --out $C --append
  show "$C"
  step pytest 120 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_triton_gen3.py tests/test_manifest.py \
    -k "ws or default or v149 or manifest or split_table" --junitxml="$OUT/pytest-r43f.xml"
  ;;
*) echo "unknown part $PART (r43a .. r43f)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
