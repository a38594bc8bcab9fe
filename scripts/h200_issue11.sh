#!/usr/bin/env bash
# Issue 11 on the H200, one call: the CUDA twin of the code-object launcher (argument packing, current
# stream, side stream, graph capture, bad-launch errors, host cost per launch), the portable Triton
# path (MLA_TRITON_PTX=0) for every KV format, and the exported leaderboard submission run in a clean
# directory. Writes under $OUT: pytest.log, junit.xml, provenance.txt, hip-launcher-twin.csv,
# triton-portable.csv, submission-check.jsonl. About 2 minutes (mostly Triton compiles).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the output directory}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
{
  echo "utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  $PY -c "import torch, triton; print('torch:', torch.__version__, 'cuda', torch.version.cuda); print('triton:', triton.__version__)"
} > "$OUT/provenance.txt" 2>&1
MLA_TEST_OUT="$OUT" $PY -m pytest -q -rs -p no:cacheprovider --junitxml="$OUT/junit.xml" \
  tests/test_hip_launcher.py tests/test_triton_portable_gpu.py tests/test_submission.py 2>&1 | tee "$OUT/pytest.log"
rc=${PIPESTATUS[0]}
$PY -m mla doctor >> "$OUT/provenance.txt" 2>&1 || true
exit "$rc"
