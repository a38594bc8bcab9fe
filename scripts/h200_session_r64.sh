#!/usr/bin/env bash
# Round 64 (prepared 2026-12-07 ~12:10 UTC, before any run): campaign 29 on an H200; on an H100, round 64's CLI changes.
#   bash scripts/device_tree.sh slim   (then, after the call, restore: the tree and the bundle exceed 64 MiB together)
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r64.sh r64a   (carry [".carry/fi"])
# r64a  On an H200: r56a's H200 part unchanged (campaign 29, the long-program A/Bs, its tests).
#       On an H100: the test files round 64 changed (a fresh-user review's fixes: bench's exit status when this
#       machine can run no requested row, smoke's memory cap and case names, report's per-format entries and its
#       --targets campaign check, the CLI's error messages), on a GPU for the first time: on CPU they passed.
# Predicted (written before any run): H100, every test passes; the GPU-only ones among them (test_bench's kernel mode
#   and read floor, test_cli_user's GPU requests) are the ones CPU runs skip, and no test skips on the H100 for want
#   of a GPU.
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r64a}"
export TRITON_CACHE_DIR=/tmp/tcache-r64
R64_TESTS="tests/test_cli_errors.py tests/test_cli_user.py tests/test_bench.py tests/test_targets.py tests/test_doctor.py"
case $PART in
r64a)
  if ! r56a_on_h200; then
    say "an H100, not an H200: round 64's changed test files"
    step r64-tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider -rs $R64_TESTS --junitxml "$OUT/pytest-r64a.xml"
  fi
  ;;
*) echo "unknown part $PART (r64a)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
