#!/usr/bin/env bash
# Round 45 on the H200 (docs/notes-harness.md, "Pacing the kernel mode"): the kernel mode's duty cycle, then the
# campaign at the session's last code.
#   r45a  scripts/probes/duty_probe.py: the harness's kernel mode at StoppingRule.kernel_idle_ratio R = 0, 0.5, 1, 2
#         (duty cycle 1 / (1 + R)) on bs256-kv8192 bf16 / fp8 / MXFP4, bs64-kv8192 bf16 / fp8, bs4-kv1024 bf16 / fp8,
#         two rounds in opposite order, beside nvidia-smi every 200 ms
#   r45b  campaign 22 (FlashInfer and Triton, the leaderboard shapes) with the default the r45a rows chose, and the
#         harness's GPU tests (tests/test_bench.py)
#   r45c  the whole GPU suite (scripts/h200_suite.sh) with FlashInfer
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r45.sh r45a|r45b|r45c     (writes $OUT/*)
# Predicted before r45a (written 2026-12-04 ~17:05 UTC, before the call):
#   - bf16 bs256-kv8192: R = 0 reads as round 44d's back-to-back series, median 544-582 us with an IQR of 15-45 (the
#     clock dips under the software power cap, clock-event reason 0x4 in the telemetry); R >= 0.5 reads 538-545 with an
#     IQR under 5, R = 1 and 2 within 0.5% of each other (the cap no longer reached: the 1 s mean power well under the
#     limit, no 0x4 while R >= 1 runs).
#   - fp8 and MXFP4 bs256-kv8192: every R within 1% of R = 0 (306-314 / 345-350 us: their clocks held in r44d).
#   - bs64-kv8192 bf16: R = 0 at most 2% over R >= 1 (an eighth of the bytes a sample, the same power a byte);
#     fp8 within 1%.
#   - bs4-kv1024: every R within 2% (a ~12 us kernel behind a ~0.3 ms flush: the duty cycle is the flush's).
#   - The read references (kernel_read_us, the same rule): at bs256-kv8192's bf16 bytes R = 0 over R >= 1 as bf16's
#     rows are, others flat.
#   - Both rounds agree within 1% at each R (no first-row effect left with the 1 s window).
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r45a .. r45c}"
export TRITON_CACHE_DIR=/tmp/tcache-r45
case $PART in
r45a)
  step duty 450 python3 scripts/probes/duty_probe.py "$OUT"
  ;;
r45b)
  install_flashinfer
  session_campaign 22 420 flashinfer triton
  tail -14 "$OUT/campaign22.log" | tee -a "$LOG"
  step test-bench 120 python3 -m pytest -q -p no:cacheprovider tests/test_bench.py -rfE --junitxml="$OUT/pytest-bench-r45b.xml"
  ;;
r45c)
  OUT=$OUT TOTAL_BUDGET=570 bash scripts/h200_suite.sh
  ;;
*) echo "unknown part $PART (r45a .. r45c)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
