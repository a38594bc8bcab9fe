#!/usr/bin/env bash
# Round 71 (prepared 2026-12-08 ~00:55 UTC, before any run): campaign 29 on an H200; on an H100, notebook 04's two
# later-generation variant lines with num_splits=kernel and the GPU tests of that option.
#   bash scripts/device_tree.sh slim   (then, after the call, restore)
#   MLA_GIT_COMMIT=<sha> TOTAL_BUDGET=<s> PYTHONPATH=. bash scripts/h200_session_r71.sh r71a   (carry [".carry/fi", ".whl"])
# r71a  On an H200: r56a's H200 part (campaign 29), as h200_session_r65.sh r65a runs it.
#       On an H100: the lines of scripts/campaign_sweeps.txt that pass num_splits=kernel (fp8 v75-v169, MXFP4 v86-v170 at
#       bs32 / bs256-kv8192), each as the campaign runs it but written to $OUT, then the GPU tests of num_splits="kernel"
#       (tests/test_triton_gen3.py -k num_splits_kernel).
# Predicted (before any run), H200: campaign 29 as h200_session_r65.sh's header says (Triton best-format geomean
#   39.5-41.5 us kernel, fresh within 1 us of kernel, every row ok). H100: ~22 rows in 100-200 s, every row ok; at
#   bs256-kv8192 every kernel keeps 1 split, so those rows repeat round 70 (data/measured/h100/live-2026-12-07/*-7432,
#   *-d2cc) within 2%; at bs32-kv8192 the one-CTA-an-SM kernels move from 8 splits to 4: MXFP4 v170 56-61 us (round 70:
#   68.4; the default call 58.1) and the fastest MXFP4 row, v143 58-66; fp8 v168 66-71 (round 70: 71.5; the default
#   call 68.0), v169 66-73, v149 73-80; v159 / v117 / v160 / v141 / v75 / v86 keep 8 splits and round 70's times within
#   3%. The 5 GPU tests pass.
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r71a}"
export TRITON_CACHE_DIR=/tmp/tcache-r71
# the campaign's num_splits=kernel sweep lines, written to $OUT/r71a-variants-N.csv instead of the campaign's sweeps.csv
kernel_lines() {
  python3 - "$OUT" <<'PY'
import shlex, sys
from mla.analysis import measured
for i, cmd in enumerate((c for c in measured.campaign("variants") if "num_splits=kernel" in c), 1):
    w = shlex.split(cmd)
    j = w.index("--out")
    w[j + 1] = f"{sys.argv[1]}/r71a-variants-{i}.csv"
    w.remove("--append")
    print(shlex.join(["python3" if x == "python" else x for x in w]))
PY
}
case $PART in
r71a)
  if ! r56a_on_h200; then
    say "an H100, not an H200: the variant lines that pass num_splits=kernel, then their GPU tests"
    mapfile -t LINES < <(kernel_lines)
    (( ${#LINES[@]} == 2 )) || { say "expected 2 num_splits=kernel lines, got ${#LINES[@]}"; FAILURES+=("lines"); }
    n=0
    for cmd in "${LINES[@]}"; do
      n=$((n + 1))
      step "variants-$n" 200 bash -c "$cmd"
      show "$OUT/r71a-variants-$n.csv"
    done
    step pytest 200 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k num_splits_kernel \
      --junitxml "$OUT/pytest-r71a.xml"
  fi
  ;;
*) echo "unknown part $PART (r71a)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
