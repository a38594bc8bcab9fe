#!/usr/bin/env bash
# Round 65 (prepared 2026-12-07 ~13:55 UTC, before any run): campaign 29 on an H200; on an H100, `make reproduce` on a GPU.
#   bash scripts/device_tree.sh slim   (then, after the call, restore: the tree and the bundle exceed 64 MiB; reproduce
#   rewrites the figures and reads neither them nor the 2026-12-01 notebook snapshots)
#   MLA_GIT_COMMIT=<sha> TOTAL_BUDGET=<s> PYTHONPATH=. bash scripts/h200_session_r65.sh r65a
#   (carry [".carry/fi", ".whl"]: .whl from scripts/device_wheels.sh, the Jupyter wheels the device image lacks)
# r65a  On an H200: r56a's H200 part unchanged (campaign 29, the long-program A/Bs, its tests).
#       On an H100: the README's main command on a GPU machine, `make reproduce` (there MODE=live: the notebooks run
#       their campaign commands, then plot those rows), by scripts/h200_live_reproduce.sh with FlashInfer installed
#       from the bundle. It last ran end to end on 2026-12-01 (bf1f9ad, an H200); every notebook has changed since and
#       no GPU has run live mode on a device slug other than h200.
# Predicted (written before any run), H100: all six notebooks execute (rc 0) within ~6-9 min (12-01: 5.5 min on an
#   H200 with a warm image cache; a fresh Triton cache here), the live CSVs land under data/measured/h100/ with
#   FlashInfer rows beside Triton's and every row's check passing; if a notebook fails, it is in a section written
#   for the replayed H200 / H100 campaigns that assumes their files (02's sections 9-17, 05's FlashInfer columns).
#   Added 14:25 UTC, before any run, after d39b6ec (live mode names the measuring device): the live figures are
#   02_roofline_h100 / 02_pct_read_bw_h100 / 04_h100_variants with the H100's datasheet (3.35 TB/s) and this run's own
#   read probe (3000-3150 GB/s), no H200 anchor points, and no new *_h200 figure is written.
# Round 66 (2026-12-07 15:10 UTC, before the run): 335 s of device time left, TOTAL_BUDGET=250, ONLY=02. On an H200,
#   r56a's short branch (TOTAL_BUDGET < 420): campaign 29's Triton part only, 200 s; predicted as above (best-format
#   geomean 39.5-41.5 us kernel, fresh within 1 us). On an H100: notebook 02 alone in live mode (ONLY=02, ~200 s):
#   its leaderboard campaign may not finish in that time; whatever rows land carry device h100, and if it finishes,
#   figures 02_roofline_h100 / 02_pct_read_bw_h100 with the 3.35 TB/s datasheet line.
# Round 67 (2026-12-07 16:25 UTC, before any run): r65b, for a second call on a machine r65a left warm (an H200):
#   `make reproduce` in live mode there, as r65a's H100 branch does. Predicted: the six notebooks execute (rc 0) in
#   6-9 min, the live CSVs land under data/measured/h200/ and carry this run's commit, every check passes.
# Outcome (round 67, 16:24-16:45 UTC, H100s; notes-triton "Round 67"): r65a's H100 branch ran 00-02 in its 510 s and
#   was cut in 03; 03 (282 s) and 05 (21 s) ran in later calls, 04 only in part. All six in 6-9 min: missed (~15 min
#   on an H100). Every row ok, H100-named figures, probe 3028-3135 GB/s: met. data/measured/h100/live-2026-12-07/.
# Round 68 (2026-12-07 17:50 UTC, before any run): r65a unchanged. On an H200: campaign 29 as predicted above (Triton
#   best-format geomean 39.5-41.5 us kernel, fresh within 1 us of kernel). On an H100 with ONLY=04: notebook 04 alone
#   executes to the end (rc 0) within ~300 s (round 67 ran two of its three sweeps in ~400 s including 03), every row's
#   check passes, its CSVs carry device h100 and the figure is 04_h100_variants; no *_h200 figure is written.
# Outcome (round 68, 19:00-19:04 UTC, an H100 after eleven calls without a machine): 04 executed live in 206 s, 62 rows
#   all ok, 04_h100_variants, no *_h200 figure: met. Every notebook has now run live on an H100. Campaign 29: not run.
# Round 69 (2026-12-07 20:10 UTC, before any run): r65a with ONLY=04. On an H200: campaign 29 as predicted above. On an
#   H100: notebook 04 live with the sweep file's two new variant lines (the swap-AB and Gluon kernels, v75-v170): ~84
#   rows in ~300 s, every row ok; at bs256-kv8192 the fastest fp8 variant is v168 / v169 at 415-440 us (r54a: 420.8 /
#   427.1) and the fastest MXFP4 is v170 at 330-360 us (round 67's default call: 339.5), so the live figure's best lies
#   within ~10% of the default call instead of 891 / 1221 us.
# Outcome (round 69, 21:34-21:38 UTC, an H100, TOTAL_BUDGET=250): 04 cut by its 200-s limit in the last line, 75 rows
#   all ok; fp8 at bs256-kv8192 v169 405.6 / v168 409.5 us: missed low (within 0.5% of the default call's 403.8);
#   MXFP4's new line cut after v86 at bs32 (v170 not measured); ~84 rows in ~300 s: not tested.
# Round 70 (2026-12-07 22:30 UTC, before any run): r65a with ONLY=04, TOTAL_BUDGET=560. On an H200: campaign 29 as
#   predicted above. On an H100: notebook 04 live to the end (rc 0) in 300-420 s of its ~480-s limit, ~86 rows all ok,
#   figure 04_h100_variants written; fp8 best at bs256-kv8192 400-415 us (round 69: v169 405.6); MXFP4 v170 there at
#   335-375 us (round 67's default call: 339.5), the fastest MXFP4 row of the figure.
# Outcome (round 70, 22:51-22:57 UTC, an H100 named `nvidia-h200`, a67bcd9): 04 live to the end (rc 0) in 336 s, 84 rows
#   all ok, 04_h100_variants written; fp8 v169 403.7 us, MXFP4 v170 339.8 us (fastest MXFP4 row): all met.
# Round 70, second call (before it): r65a with ONLY=none. On an H200: campaign 29 as predicted above. On an H100:
#   the card line only.
# Outcome (round 70, 22:58-23:18 UTC): held back twice (15 s), refused twice (180 s); no machine.
# Round 70, last call (23:28 UTC, before it): r65a with ONLY=none, TOTAL_BUDGET=400 (r56a's short branch on an H200:
#   campaign 29's Triton part, best-format geomean 39.5-41.5 us kernel, fresh within 1 us). On an H100: the card line.
#   Refused (23:28, 180 s). Tried once more at ~23:40 with TOTAL_BUDGET=240 (the same short branch, ~200 s), same prediction.
#   Outcome: refused (23:40, too little device time left; 180 s). Campaign 29: not run.
# Round 71 (2026-12-08 00:30 UTC, before any run): r65a with ONLY=none, TOTAL_BUDGET=560. On an H200: campaign 29 as
#   predicted above (Triton best-format geomean 39.5-41.5 us kernel, fresh within 1 us of kernel, every row ok). On an
#   H100: the card line only.
# Outcome (round 71, 00:25 UTC): an H100 (GPU-7618cd62), the card line only (96 s held). Campaign 29: not run.
# Round 71, second call (00:55 UTC, before it): r65a with ONLY=04, TOTAL_BUDGET=560, then on an H100 the new GPU tests
#   of num_splits="kernel" (launch.kernel_rule_splits; campaign_sweeps.txt's swap-AB / Gluon lines now pass it). On an
#   H200: campaign 29 as predicted above. On an H100: notebook 04 live to the end in 300-420 s, every row ok; at
#   bs256-kv8192 every kernel keeps 1 split, so those rows repeat round 70 within 2%; at bs32-kv8192 the one-CTA-an-SM
#   kernels move to 4 splits: MXFP4 v170 56-61 us (round 70 at 8: 68.4; the default call 58.1) and the fastest MXFP4
#   row, v143 58-66; fp8 v168 66-71 (round 70: 71.5 at 8; the default call 68.0), v169 66-73, v149 73-80; v159 / v117 /
#   v160 / v141 / v75 / v86 unchanged within 3% (their count stays 8). The 5 GPU tests pass.
# Outcome: refused twice (00:33, 00:48). The H100 part ran instead as scripts/h200_session_r71.sh r71a (00:58, its
#   header: every prediction met). Round 71, later tries (before them): r65a with ONLY=none, TOTAL_BUDGET=560; predicted
#   as the round's first line (H200: campaign 29, 39.5-41.5 us kernel geomean; H100: the card line).
#   Outcome: refused at 01:14, 01:27 and 01:39 (180 s each). Last try (~01:53, before it): TOTAL_BUDGET=380, r56a's
#   short branch on an H200 (campaign 29's Triton part, ~200 s; same prediction); an H100: the card line.
#   Outcome: refused (01:53, 180 s). A final try (~02:05, before it): TOTAL_BUDGET=240, the same short branch and
#   prediction.
#   Outcome: not made: at 02:03 the tool paused all lending for the session (410 s left). Campaign 29: not run.
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r65a or r65b}"
export TRITON_CACHE_DIR=/tmp/tcache-r65
# the README's main command on this GPU, with FlashInfer from the bundle, within what is left of the budget
live_reproduce() {
  install_flashinfer
  local left=$(( TOTAL_BUDGET - (SECONDS - START) - 25 ))
  OUT=$OUT/live LIVE_TIMEOUT=$left bash scripts/h200_live_reproduce.sh 2>&1 | tail -40 | tee -a "$LOG"
  (( PIPESTATUS[0] == 0 )) || FAILURES+=("live reproduce")
}
case $PART in
r65a)
  # ONLY=none: a try for an H200 alone; an H100 logs its card line and returns (the start is the only cost)
  r56a_on_h200 || if [ "${ONLY:-}" = none ]; then say "an H100, not an H200: nothing queued for it (ONLY=none)"
  else say "an H100, not an H200: make reproduce (MODE=live) end to end"; live_reproduce; fi
  ;;
r65b) live_reproduce ;;
*) echo "unknown part $PART (r65a or r65b)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
