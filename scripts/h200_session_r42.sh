#!/usr/bin/env bash
# The device call of 2026-12-04's session (one part): what selects bs256-kv8192's two fp8 modes.
#   r42a  nvidia-smi telemetry in the background; scripts/probes/placement_probe.py (v141 and v149 with the KV at
#         eleven offsets of one pool, two passes, then fresh allocations); then the order seen before every slow
#         v141 row of rounds 38 / 41 (bs128-kv8192 in the same bench process first) against bs256-kv8192 alone,
#         each in its own process, twice, alternated
#   r42b  after r42a (the probe's rows all in the fast mode, every bench process's in the slow one): the bench's own
#         order inside the probe (placement_probe.py --bench-order: a check set, its references, then the timing
#         set timed; three times); the bench with three configs of one kernel in one process (r37a's first row was
#         slow, its second fast); the bench with the read flush
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r42.sh r42a      (writes $OUT/*)
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r42a or r42b}"
export TRITON_CACHE_DIR=/tmp/tcache-r42
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 250 > "$OUT/telemetry-$PART.csv" 2>&1 &
TELEMETRY=$!
D="python3 -m mla bench --backend triton --no-progress --mode kernel --max-seconds 0.15 --kv-format fp8"
case $PART in
r42a)
  step placement 150 python3 scripts/probes/placement_probe.py "$OUT"
  S=$OUT/order-r42a.csv
  for i in 1 2; do
    step "after-bs128-$i" 45 $D --cases bs128-kv8192-q1-h16,bs256-kv8192-q1-h16 --out $S $( [ -f $S ] && echo --append )
    step "alone-$i" 45 $D --cases bs256-kv8192-q1-h16 --out $S --append
  done
  show "$S"
  ;;
r42b)
  step bench-order 60 python3 scripts/probes/placement_probe.py --bench-order "$OUT"
  S=$OUT/rows-r42b.csv
  step three-rows 40 $D --cases bs256-kv8192-q1-h16 --sweep pdl=false,true,false --out $S
  step read-flush 30 $D --cases bs256-kv8192-q1-h16 --l2-flush read --out $S --append
  show "$S"
  ;;
*) echo "unknown part $PART (r42a, r42b)" >&2; exit 2 ;;
esac
kill $TELEMETRY 2>/dev/null
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
