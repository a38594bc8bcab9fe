#!/usr/bin/env bash
# The H200 measurement campaign, in ONE device call (10 min limit; aim <= 8 min).
#
#   device run:  carry [".carry"], timeout_s 600, command:
#       MLA_GIT_COMMIT=<sha> bash scripts/h200_campaign.sh
#
# Steps (each under its own time limit; a failing step is reported and the rest still run):
#   1. install the FlashInfer bundle from .carry (made here by /work/shared/tools/flashinfer_carry.sh)
#   2. python -m mla info
#   3. bench the 8 leaderboard shapes: torch (bf16/fp8/mxfp4), flashinfer (bf16/fp8),
#      triton (bf16/fp8/mxfp4, when mla/backends/triton_backend.py exists); modes cold,warm,kernel
#   4. sweeps: one `python -m mla bench` argument line each, from $SWEEP_FILE and/or SWEEPS below
#   5. the summary table of everything written (printed last, so the call's output tail shows it)
# Results: $OUT/{torch,flashinfer,triton,sweeps}.csv and $OUT/campaign.log (<= 8 files come back).
# Estimated runtime (docs/notes-harness.md): ~4.5 min without sweeps; every step is capped so the
# whole run stops by $TOTAL_BUDGET s.
set -uo pipefail

OUT=${OUT:-out/campaign}
CARRY=${CARRY:-.carry}
CASES=${CASES:-leaderboard}
MODES=${MODES:-cold,warm,kernel,fresh}
BACKENDS=${BACKENDS:-torch flashinfer triton}   # the main step's backends (space-separated)
TESTS=${TESTS:-0}                     # 1: run the test suite first (pytest -n, GPU tests compiled), into $OUT
MAX_SECONDS=${MAX_SECONDS:-0.25}      # sampling cap per timing mode per row
TOTAL_BUDGET=${TOTAL_BUDGET:-480}     # seconds for the whole script (the device call allows 600)
SWEEP_FILE=${SWEEP_FILE:-}            # optional file: one bench argument line per sweep, '#' comments
# Sweeps appended here run after the main steps, e.g. (the Triton author fills these in):
SWEEPS=(
  # "--cases leaderboard --backend triton --kv-format fp8 --sweep num_splits=1,2,4,8,16"
  # "--cases bs64-kv8192-q1-h16,bs256-kv8192-q1-h16 --backend triton --kv-format mxfp4 --sweep variant=v1_n32_w4_s2,v2_n64_w4_s2,v3_n64_w8_s2"
)

mkdir -p "$OUT"
LOG=$OUT/campaign.log
export PYTHONUNBUFFERED=1
export MLA_GIT_COMMIT=${MLA_GIT_COMMIT:-$(cat "$CARRY/GIT_COMMIT" 2>/dev/null || echo unknown)}
FAILURES=()
START=$SECONDS

source "$(dirname "$0")/_device_steps.sh"   # say, step, install_flashinfer

# 1. FlashInfer from the carried bundle
install_flashinfer

# the top-level CLI imports every command module; if one is broken, the harness's own entry point still works
if python3 -m mla --help >/dev/null 2>&1; then MLA=(python3 -m mla); else
  MLA=(python3 -m mla.bench); say "note: 'python3 -m mla' does not start; using 'python3 -m mla.bench'"; fi
BENCH=("${MLA[@]}" bench --cases "$CASES" --mode "$MODES" --max-seconds "$MAX_SECONDS" --no-progress)

# 2. what we run on
step info 60 "${MLA[@]}" info
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$LOG"

# 2b. the test suite on this machine (GPU tests compiled; artifacts of tests that write them under $OUT/tests)
if (( TESTS )); then
  mkdir -p "$OUT/tests"
  step tests 240 env MLA_TEST_OUT="$OUT/tests" python3 -m pytest -q -n "${TEST_JOBS:-12}" -p no:cacheprovider \
    --junitxml="$OUT/junit.xml" -rs tests
fi

has() { [[ " $BACKENDS " == *" $1 "* ]]; }
# 3. the peers and baselines on the leaderboard shapes
has torch && step torch 150 "${BENCH[@]}" --backend torch --kv-format bf16,fp8,mxfp4 --out "$OUT/torch.csv"
has flashinfer && step flashinfer 150 "${BENCH[@]}" --backend flashinfer --kv-format bf16,fp8 --out "$OUT/flashinfer.csv"
if has triton; then  # the default call, as README shows it (DEFAULT_VARIANT, graph="auto")
  step triton 180 "${BENCH[@]}" --backend triton --kv-format bf16,fp8,mxfp4 --out "$OUT/triton.csv"
else
  say "=== [triton] skipped: not in BACKENDS"
fi

# 4. sweeps (all into one CSV: --append adds to it)
if [ -n "$SWEEP_FILE" ]; then
  while IFS= read -r line; do
    [[ -z "${line// }" || "$line" == \#* ]] || SWEEPS+=("$line")
  done < "$SWEEP_FILE"
fi
i=0
for args in "${SWEEPS[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086  # the line is a list of arguments
  step "sweep$i" 120 "${MLA[@]}" bench --mode "$MODES" --max-seconds "$MAX_SECONDS" --no-progress \
    --out "$OUT/sweeps.csv" --append $args
done

# 5. everything under $OUT/tests in one file (at most 8 files come back from a device call)
if [ -d "$OUT/tests" ]; then tar czf "$OUT/tests.tgz" -C "$OUT" tests && rm -rf "$OUT/tests"; fi

# 6. the summary of every row written, last
csvs=("$OUT"/*.csv)
if [ -e "${csvs[0]}" ]; then
  "${MLA[@]}" report "${csvs[@]}" 2>&1 | tee -a "$LOG" || FAILURES+=("report")
fi
say "campaign: $(( SECONDS - START ))s, files: $(cd "$OUT" && ls | tr '\n' ' ')"
if (( ${#FAILURES[@]} )); then say "FAILED STEPS: ${FAILURES[*]}"; exit 1; fi
say "all steps finished (rows that failed their check are marked in the CSVs and the summary)"
