#!/usr/bin/env bash
# Round 63 (r63a committed 2026-12-07 09:42 UTC, after r56a's H100 part ran at 09:38; times are the commits'): the fp8 TMA-tile kernel's reduce.
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r63.sh r63a   (no carry)
# r63a  On any card: v168 (the fp8 default at bs32 / bs64-kv8192, round 54) with its splits merged by the separate
#       tile reduce (the default: a second kernel, launched by PDL "late") against the one-launch fused reduce (the
#       last program of an element merges, FUSED_REDUCE; issue 10's deliverable 2), at the default call's split
#       counts (4 at bs32, 2 at bs64), kernel and fresh modes, two rounds in opposite order, every row checked.
#       Why: on the H100 fp8 reads 71% of the read probe at bs32-kv8192 (campaign 30; issue 10 asks >= 75%), and
#       round 54's timeline put 5.2 us of v168's 69.3 outside the split kernel (the reduce and the gap before it),
#       against a plain read of ~49 us. The fused reduce was kept off the TMA kernels' default only because
#       fused_by_default predates them (it names the swap-AB family); no run has timed it on v168.
# Predicted (written before any run): fused -2..-4% kernel at bs32-kv8192 (69.3 -> 66.5-68 us: the last program of
#   each element reads 4 partials of 16 x 512 fp32 from L2, ~1-2 us, in place of ~5 us outside), fresh the same
#   within 1%; at bs64-kv8192 (2 splits, 64 tiles a program) -1..-3%. If it is >= 2% under in both rounds at both
#   shapes, fused_by_default takes the TMA kernels too (the rule's tests run offline). On the H100 that would bring
#   bs32-kv8192 fp8 from 71% to 72-74% of the probe: still under 75.
# r63b  (committed 09:45 UTC, after r63a ran at 09:43) On an H200: r56a's H200 part unchanged (campaign 29, the long-program A/Bs;
#       carry [".carry/fi"], the tree slimmed: scripts/device_tree.sh). On an H100: why r63a's fused reduce lost, by
#       the program timeline of v168 at bs32-kv8192 / 4 splits, tile reduce and fused, 4 stamped launches each.
# Measured in r63a (H100): fused +2.4% kernel at bs32-kv8192 (67.86 -> 69.50 us), +0.8% at bs64 (116.3 -> 117.2),
#   both rounds alike: the prediction's sign was wrong.
# Predicted for r63b's H100 part (written before it ran): the fused merge sits at the tail, one program an element
#   reading the element's 4 partials (16 x 512 fp32 each, 128 KB) after its own loop, where the tile reduce spreads
#   the same merge over the whole chip and PDL hides its launch: the fused plan's makespan +2.5..+4 us (the last
#   programs' epilogue longer by that), its time outside the split kernel -1..-2.5 us (no second kernel).
# r63c  (committed 09:51 UTC, after r63b ran at 09:47) On an H200: r56a's H200 part, as r63b. On an H100: how much issue 10's read
#       share moves with the read probe alone: the default fp8 call at bs32 / bs64-kv8192 in 4 bench processes on one
#       card, each with its own probe (r63a's two bs32 processes read 3130 and 3006 GB/s 28 s apart, so the same
#       67.9-us kernel was 71.6% and 74.6% of its probe).
# Predicted for r63c's H100 part (written before it ran): the probe spans 3000-3140 GB/s (+-2.5%) across the 4
#   processes while the kernel times stay within +-0.5%, so fp8 at bs32-kv8192 reads 71-75% of its probe and at bs64
#   82-85%: a same-card spread of ~4 points, as wide as the gap to the 75% target at bs32.
# r63d  (committed 09:55 UTC, after r63c ran at 09:52) On an H200: r56a's H200 part, as r63b / r63c. On an H100: nothing (r63a-c ran there);
#       it prints the card and stops, so that a call which gets an H100 costs only its start.
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r63a-d}"
export TRITON_CACHE_DIR=/tmp/tcache-r63
V168=v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh --kv-format fp8 --config variant=$V168"
case $PART in
r63a)
  S=$OUT/fused-tma-r63a.csv
  for r in 1 2; do
    o=False,True; [ $r = 2 ] && o=True,False
    step "bs32-$r" 60 $B --cases bs32-kv8192-q1-h16 --config num_splits=4 --sweep fused_reduce=$o --out $S --append
    step "bs64-$r" 60 $B --cases bs64-kv8192-q1-h16 --config num_splits=2 --sweep fused_reduce=$o --out $S --append
  done
  show "$S"
  ;;
r63b)
  if ! r56a_on_h200; then
    for r in tile fused; do
      step "timeline-$r" 60 python3 scripts/probes/timeline_probe.py "$OUT/tl/$r" --formats fp8 \
        --cases bs32-kv8192-q1-h16 --variant $V168 --num-splits 4 $([ $r = fused ] && echo --fused-reduce) \
        --repeats 4 --seconds 0.4
      timeline_collect "r63b-$r"  # (one run a file: the summary refuses two runs of one variant and case)
    done
  fi
  ;;
r63c)
  if ! r56a_on_h200; then
    S=$OUT/probe-spread-r63c.csv
    for r in 1 2 3 4; do
      step "default-$r" 60 python3 -m mla bench --backend triton --no-progress --mode kernel,fresh --kv-format fp8 \
        --cases bs32-kv8192-q1-h16,bs64-kv8192-q1-h16 --out $S --append
    done
    show "$S"
  fi
  ;;
r63d)
  if ! r56a_on_h200; then
    say "an H100, not an H200: nothing queued for it (r63a-c ran on H100s)"
  fi
  ;;
*) echo "unknown part $PART (r63a-d)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
