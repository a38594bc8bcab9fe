# Shared by the device drivers (h200_campaign.sh, h200_small_shapes.sh, h200_suite.sh, h200_session_r*.sh): sourced, not run.
# Needs LOG, TOTAL_BUDGET, START (=$SECONDS at the start), CARRY and an array FAILURES (session_begin sets them).

say() { echo "$*" | tee -a "$LOG"; }

# session_begin PART: the preamble of one part of a session driver (h200_session_r*.sh): $OUT, its log,
# the budget and the commit line. Needs MLA_GIT_COMMIT.
session_begin() {
  PART=$1; OUT=${OUT:-out/$PART}; mkdir -p "$OUT"
  LOG=$OUT/$PART.log; TOTAL_BUDGET=${TOTAL_BUDGET:-560}; START=$SECONDS; CARRY=${CARRY:-.carry/fi}; FAILURES=()
  say "commit $MLA_GIT_COMMIT $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,uuid,serial,pci.bus_id --format=csv,noheader)"
}

# step NAME LIMIT_S CMD...: run with a time limit (capped by what is left of the budget, keeping
# STEP_MARGIN seconds for the summary), log it, record a failure without stopping the run.
step() {
  local name=$1 limit=$2; shift 2
  local left=$(( TOTAL_BUDGET - (SECONDS - START) - ${STEP_MARGIN:-15} ))
  if (( left < 15 )); then say "=== [$name] SKIPPED: budget spent"; FAILURES+=("$name (skipped: budget)"); return; fi
  (( limit > left )) && limit=$left
  say "=== [$name] start $(date -u +%T), limit ${limit}s: $*"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  say "=== [$name] rc=$rc after $(( SECONDS - t0 ))s"
  (( rc == 0 )) || FAILURES+=("$name (rc=$rc$( (( rc == 124 || rc == 137 )) && echo ', timed out'))")
}

# FlashInfer from the carried bundle (no internet on the device machine; made here by
# ../shared/tools/flashinfer_carry.sh): sets HAVE_FI=1 and PYTHONPATH when it installs.
install_flashinfer() {
  HAVE_FI=0
  if compgen -G "$CARRY/apache_tvm_ffi-*.whl" >/dev/null && [ -f "$CARRY/flashinfer_slim.tar.xz" ]; then
    if python3 -m pip install -q --no-index --no-deps --target /tmp/site "$CARRY"/apache_tvm_ffi-*.whl \
        && tar xJf "$CARRY/flashinfer_slim.tar.xz" -C /tmp/site; then
      export PYTHONPATH=/tmp/site:${PYTHONPATH:-} FLASHINFER_WORKSPACE_BASE=/tmp/fiws
      HAVE_FI=1; say "flashinfer bundle installed under /tmp/site"
    else
      say "flashinfer bundle install FAILED"; FAILURES+=("flashinfer install")
    fi
  else
    say "no flashinfer bundle in $CARRY (run flashinfer_carry.sh here and carry it): no FlashInfer rows"
  fi
}

# On an H200, r56a's H200 part (campaign 29, the A/Bs) with the budget left; false on any other card (rounds 63-65)
r56a_on_h200() {
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || return 1
  OUT=$OUT TOTAL_BUDGET=$(( TOTAL_BUDGET - (SECONDS - START) )) bash scripts/h200_session_r56.sh r56a \
    || FAILURES+=("r56a")
}

# session_campaign N BUDGET_S BACKEND...: h200_campaign.sh (the leaderboard shapes, these backends) into $OUT/cN,
# its files renamed $OUT/campaignN-<backend>.csv and $OUT/campaignN.log (a session driver's campaign part).
session_campaign() {
  local n=$1 budget=$2; shift 2
  OUT="$OUT/c$n" CARRY=$CARRY BACKENDS="$*" TOTAL_BUDGET=$budget bash scripts/h200_campaign.sh > /dev/null 2>&1
  local f; for f in "$@"; do mv "$OUT/c$n/$f.csv" "$OUT/campaign$n-$f.csv" 2>/dev/null; done
  mv "$OUT/c$n/campaign.log" "$OUT/campaign$n.log" 2>/dev/null; rm -rf "$OUT/c$n"
}

# show CSV...: the rows of bench CSVs a session step wrote (case, format, variant, split count, times, own-format
# error), into the log
show() {
  python3 - "$@" <<'PY' 2>&1 | tee -a "$LOG"
import sys, pandas as pd
for f in sys.argv[1:]:
    try:
        d = pd.read_csv(f)
    except Exception as exc:
        print(f, exc); continue
    d["splits"] = d["plan_config"].str.extract(r'"num_splits": (\d+)')
    d["fused"] = d["plan_config"].str.extract(r'"fused_reduce": (\w+)')
    cols = [c for c in ("case", "kv_format", "variant", "splits", "fused", "status", "kernel_median_us", "fresh_median_us",
                        "kernel_pct_read_bw", "rel_l2_fmt") if c in d.columns]
    with pd.option_context("display.width", 250, "display.max_colwidth", 45, "display.max_rows", 300):
        print(d[cols].to_string())
PY
}

# timeline_collect TAG: every program-timeline probe run under $OUT/tl/<name>/ (scripts/probes/timeline_probe.py) into
# $OUT/timeline-TAG.csv.gz and $OUT/timeline-cost-TAG.csv (one header each), their summary into the log; $OUT/tl goes
timeline_collect() {
  local tag=$1
  if ls "$OUT"/tl/*/timeline.csv >/dev/null 2>&1; then
    cat "$OUT"/tl/*/timeline.csv | awk 'NR==1 || !/^run_id/' | gzip -c > "$OUT/timeline-$tag.csv.gz"
    cat "$OUT"/tl/*/timeline-cost.csv | awk 'NR==1 || !/^run_id/' > "$OUT/timeline-cost-$tag.csv"
    STEP_MARGIN=0 step summary 30 python3 -m mla timeline "$OUT/timeline-$tag.csv.gz" --cost "$OUT/timeline-cost-$tag.csv"
  fi
  rm -rf "$OUT/tl"
}
