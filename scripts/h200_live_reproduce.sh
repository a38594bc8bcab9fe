#!/usr/bin/env bash
# `make reproduce MODE=live` end to end on the H200 image (no network, no Jupyter kernel installed):
# run in the repo root with `.whl` (the Jupyter wheels, see README "Live mode") and, for the FlashInfer
# rows, `.carry` (bash ../shared/tools/flashinfer_carry.sh .carry) carried along; $OUT set.
# Live mode re-measures what the notebooks plot (each campaign command once: MLA_LIVE_SESSION), then
# executes every notebook on those rows. Brings back 4 files under $OUT:
#   reproduce-live.log, live-csv.tar.gz (data/measured/h200/*-live.csv and notebook 01's
#   data/accuracy/quant_accuracy.csv, recomputed on the GPU), notebooks-executed.tar.gz,
#   figures.tar.gz.  ONLY=05 (or ONLY=03,05) bash scripts/h200_live_reproduce.sh runs only the matching notebook(s);
#   LIVE_TIMEOUT=S stops the run after S seconds and still packs what it wrote (0 = no limit). MLA_LIVE_SESSION=ID
#   with data/measured/.live-ID.json (command -> CSV) reuses an earlier call's runs of those commands.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/mla-out}
mkdir -p "$OUT"
if [ -f .carry/flashinfer_slim.tar.xz ]; then  # FlashInfer, offline (same prefix as the carry script prints)
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/apache_tvm_ffi-*.whl \
    && tar xJf .carry/flashinfer_slim.tar.xz -C /tmp/site \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-} FLASHINFER_WORKSPACE_BASE=/tmp/fiws
fi
stamp=$(mktemp)
# ONLY=05 (notebook-name parts, comma-separated) runs a part: the python path below with --only
if [ -z "${ONLY:-}" ] && command -v make >/dev/null; then
  timeout "${LIVE_TIMEOUT:-0}" make reproduce MODE=live 2>&1 | tee "$OUT/reproduce-live.log"; rc=${PIPESTATUS[0]}
else  # the same as the Makefile's offline branch
  { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/mla-site .whl/*.whl \
    && PYTHONPATH="$PWD:/tmp/mla-site${PYTHONPATH:+:$PYTHONPATH}" timeout "${LIVE_TIMEOUT:-0}" \
       python3 -m mla reproduce --mode live ${ONLY:+--only "$ONLY"}; } 2>&1 \
    | tee "$OUT/reproduce-live.log"; rc=${PIPESTATUS[0]}
fi
find data/measured data/accuracy -name '*.csv' -newer "$stamp" -print0 | tar czf "$OUT/live-csv.tar.gz" --null -T -
tar czf "$OUT/notebooks-executed.tar.gz" notebooks/*.ipynb
tar czf "$OUT/figures.tar.gz" figures
echo "[h200_live_reproduce] rc=$rc; $(tar tzf "$OUT/live-csv.tar.gz" | wc -l) live CSVs"
exit "$rc"
