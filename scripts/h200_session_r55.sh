#!/usr/bin/env bash
# Round 55 (prepared 2026-12-06 ~14:20 UTC, offline; not run): MXFP4's warp-specialized kernel with one partial a
# program (v170), on whatever card the device tool gives. Run after r54f (scripts/h200_session_r54.sh), on the same
# warm machine where it can.
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r55.sh r55a
# r55a  v170 against v143 (the MXFP4 default from 32 tiles
#       a program) at the default call's program counts - bs32-kv8192 4 programs an element, bs64-kv8192 2,
#       bs256-kv8192 1 - two rounds in opposite order, kernel + fresh; then v170's GPU tests (ragged lengths, 2-4 query
#       tokens, 32 heads, 64 splits, one program an element - its output straight from the kernel -, MXFP4 scales
#       out of range); then both kernels' program timelines at bs32-kv8192.
# Predicted (written before any run): v170 -2..-4% against v143 at bs32 / bs64-kv8192 (the reduce merges half the
#   partials, 4 MB / 4 MB fewer fp32 partial bytes written and read back), -2..-4% at bs256-kv8192 (no partials at all:
#   16 MB written and read back and the reduce launch gone); fresh the same within 1 point. Timeline: v170's consumer
#   0 ends 0.5-1.5 us after v143's (the 32 KB shared hand-over and the merge), the kernel's end by as much, and the
#   time outside the split kernel 1-3 us shorter. Adopt v170 as the MXFP4 default from 32 tiles (HOPPER_WS_DEFAULT)
#   if it is >= 2% under v143 in both rounds at all three shapes.
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r55a}"
export TRITON_CACHE_DIR=/tmp/tcache-r55
V143=v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed
V170=v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh"
case $PART in
r55a)
  # (the A/B first: every bench row carries its own check, and a session short of device time keeps the rows)
  S=$OUT/pair-merge-r55a.csv
  for r in 1 2; do
    vs=$V143,$V170; [ $r = 2 ] && vs=$V170,$V143
    for cs in bs32-kv8192-q1-h16:4 bs64-kv8192-q1-h16:2 bs256-kv8192-q1-h16:1; do
      step "mx-${cs%%-q1*}-$r" 60 $B --kv-format mxfp4 --cases ${cs%%:*} --sweep variant=$vs \
        --sweep num_splits=${cs#*:} --out $S --append
    done
  done
  show "$S"
  step tests 150 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v170" \
    --junitxml "$OUT/pytest-r55a.xml"
  for v in $V143 $V170; do
    step "timeline-${v%%_*}" 45 python3 scripts/probes/timeline_probe.py "$OUT/tl/${v%%_*}" --formats mxfp4 \
      --cases bs32-kv8192-q1-h16 --variant $v --num-splits 4 --repeats 4 --seconds 0.4
  done
  timeline_collect r55a
  ;;
*) echo "unknown part $PART (r55a)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
