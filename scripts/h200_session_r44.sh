#!/usr/bin/env bash
# Round 44 on the H200 (docs/notes-triton.md, "Round 44"): the warp-specialized kernels on short programs.
#   r44a  fp8 v149 / MXFP4 v143 (a loader or two decoders filling a 4-slot ring for two consumers) against the default
#         one-warpgroup kernels (v141 / v117) on the five shapes whose programs are 1-16 KV tiles, at the default's split
#         count and at half of it, kernel and fresh modes, two rounds in opposite order; then issue 10's gap probe at
#         bs4-kv1024 (the default call's cold host cost per format, in one process)
#   r44b  the whole GPU suite (scripts/h200_suite.sh) with FlashInfer
#   r44c  campaign 22 (FlashInfer and Triton, the leaderboard shapes) at the session's last code
#   r44d  bf16 bs256-kv8192 in a sustained window beside telemetry (the 1 s window's IQR of ~42 us for bf16 there)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r44.sh r44a|r44b|r44c|r44d     (writes $OUT/*)
# Predicted before r44a (written 2026-12-04 ~10:45 UTC, before the call):
#   - fp8 v149 at the default's split count: at 4-8 tiles a program (bs4-kv8192, bs32-kv1024, bs64-kv1024) the loader
#     has every tile of the program in flight from the start (4 slots) where v141's 2-stage ring exposes a tile's
#     latency per tile, and the two consumers halve the serial QK -> softmax -> PV chain; against that, the partitions'
#     start-up and the in-CTA merge of two partials: -0.5..-1.5 us (3-7%). At 1 tile (bs4-kv1024) one consumer idles:
#     +0.5..+1 us. bs256-kv1024 (256 programs, two waves of one CTA an SM): +5..+10%, as round 41's bs256-kv4096.
#   - MXFP4 v143 against v117: the decode leaves the MMA warps' stream (the reason v143 wins from 32 tiles) but costs
#     the same partition start-up; at 4-8 tiles -1..-2 us, at 1 tile a tie or worse, bs256-kv1024 +0..+5%.
#   - Half the splits (twice the tiles a program, half the programs): slower for both kernels everywhere (round 36).
#   - r44d (written before it): bf16's back-to-back samples start near campaign 19's 539 us and rise within a few
#     hundred ms as the board nears its power limit (clock-event reasons show a power cap, SM or memory clock lower);
#     the paced series stays near 539; fp8 (1.2 GB a call) and the read of the 2.4 GB cache: the read drifts as bf16,
#     fp8 less. If the telemetry shows no power or clock change, the drift is in the memory system and unexplained.
#   - Gap probe: the default call's cold time (memo hit) is within 3 us of the plan's raw replay for every format; the
#     fp8 call is not ~10 us slower than bf16 / MXFP4 in one process (campaign 21's 31.9 against 21.1 / 20.7 was the host).
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r44a .. r44c}"
export TRITON_CACHE_DIR=/tmp/tcache-r44
V149=v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed
V143=v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh"
case $PART in
r44a)
  S=$OUT/ws-short-r44a.csv
  # case:default splits:half of them (programs = bs x splits, one head group of 16 heads)
  SHAPES="bs4-kv1024-q1-h16:16:8 bs4-kv8192-q1-h16:32:16 bs32-kv1024-q1-h16:4:2 bs64-kv1024-q1-h16:2:1 bs256-kv1024-q1-h16:1:1"
  ALL=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16,bs256-kv1024-q1-h16
  ws_rows() {  # FORMAT VARIANT ROUND
    local sh c n h
    for sh in $SHAPES; do
      c=${sh%%:*}; n=${sh#*:}; h=${n#*:}; n=${n%%:*}
      step "$2-${c%%-q1*}-$3" 40 $B --kv-format "$1" --cases "$c" --sweep variant="$2" \
        --sweep num_splits="$( [ "$n" = "$h" ] && echo "$n" || echo "$n,$h")" --out $S --append
    done
  }
  step default-fp8-1 60 $B --kv-format fp8,mxfp4 --cases $ALL --out $S
  ws_rows fp8 $V149 1; ws_rows mxfp4 $V143 1
  ws_rows mxfp4 $V143 2; ws_rows fp8 $V149 2
  step default-fp8-2 60 $B --kv-format mxfp4,fp8 --cases $ALL --out $S --append
  show "$S"
  step gap 90 python3 scripts/probes/issue10_gap.py "$OUT/gap" --rounds 2 --max-seconds 0.15 --budget 80
  ;;
r44b)
  OUT=$OUT TOTAL_BUDGET=570 bash scripts/h200_suite.sh
  ;;
r44c)
  install_flashinfer
  session_campaign 22 230 flashinfer triton
  tail -12 "$OUT/campaign22.log"
  ;;
r44d)  # bf16 bs256-kv8192 in a sustained window: drift with the load? (scripts/probes/sustained_probe.py)
  step sustained 90 python3 scripts/probes/sustained_probe.py "$OUT"
  python3 - "$OUT/sustained-series.csv" <<'PY' 2>&1 | tee -a "$LOG"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
d["tenth"] = (d.t_segment_s * 10).astype(int)
print(d.groupby(["segment", "tenth"]).us.median().unstack(0).round(1).to_string())
print(d.groupby("segment").us.describe().round(1).to_string())
PY
  ;;
*) echo "unknown part $PART (r44a .. r44d)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
