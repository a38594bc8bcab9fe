#!/usr/bin/env bash
# The whole test suite on the H200 (GPU tests compiled, FlashInfer from the carried bundle), notebooks excepted.
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_suite.sh      (writes $OUT/pytest-suite.xml, $OUT/suite.log)
set -u
OUT=${OUT:-out/suite}; mkdir -p "$OUT"
LOG=$OUT/suite.log; TOTAL_BUDGET=${TOTAL_BUDGET:-560}; START=$SECONDS; CARRY=${CARRY:-.carry/fi}; FAILURES=()
source scripts/_device_steps.sh
install_flashinfer
say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
# the offline compiles (-k offline) run in CI on every push, the 3.6 lane included; on the device they only cost time
# (1589 other tests at 6d75665: round 56's two steps of 300 / 83 s at 10 workers ran 827). SUITE_K="" runs them all
SUITE_K=${SUITE_K-not offline}
# each test's verdict goes to suite-verbose.log as it ends, so a run cut by its time limit still names its failures
# (round 57: the summary and the XML of a cut run are lost, and its 7 failures with them). Workers: 12 on the
# H200's 141 GB, 10 on an 80 GB H100 (799dab6's 12 workers there ran 2 tests out of memory; round 56's 10 ran 827
# without a failure; round 57's 12 left 7 failures unnamed). SUITE_WORKERS overrides
MEM_MB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
WORKERS=${SUITE_WORKERS:-$(( ${MEM_MB:-0} > 100000 ? 12 : 10 ))}
VERBOSE=$OUT/suite-verbose.log
step suite 540 bash -c "python3 -m pytest -v -n $WORKERS -p no:cacheprovider tests \
  --ignore=tests/test_notebooks.py -rfE ${SUITE_K:+-k '$SUITE_K'} --junitxml=$OUT/pytest-suite.xml > $VERBOSE 2>&1"
# the per-test lines ("[gw3] [ 41%] FAILED tests/...") exist whether or not the run was cut; the messages are in $VERBOSE
say "tests ended: $(grep -cE '^\[gw[0-9]+\] .* (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) ' "$VERBOSE"); failed or errored:"
grep -E '^\[gw[0-9]+\] .* (FAILED|ERROR) tests/' "$VERBOSE" | sed -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //' | sort -u | tee -a "$LOG"
tail -n 1 "$VERBOSE" | grep -E '^=+ .*(passed|failed)' | tee -a "$LOG"
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
