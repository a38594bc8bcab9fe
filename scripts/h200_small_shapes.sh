#!/usr/bin/env bash
# Issue 10 on the H200, in ONE device call of <= 4 min: the default call (graph="auto") next to
# FlashInfer, the old defaults, the fused / balanced one-launch variants and a small split sweep,
# in the fixed-input (cold, warm, kernel) and fresh-input (eval.py leaderboard) modes.
#
#   device run:  carry [".carry"] (optional: FlashInfer bundle + GIT_COMMIT), timeout_s 300, command:
#       bash scripts/h200_small_shapes.sh
#
# Every step is `python -m mla bench` (the one harness); each has its own time limit, capped by what
# is left of TOTAL_BUDGET, ordered by importance so a slow machine loses the least useful rows.
# Results ($OUT, 6 files): default.csv, flashinfer.csv, fused.csv, old.csv, sweeps.csv, small_shapes.log.
# The sweeps.csv rows name the default variant (v28 / v35 / v30) with the knobs in `config`
# (fused_reduce + balanced = v53 / v54 / v55; + partial_dtype=bf16 = v56 / v57 / v58).
# Step order = priority: default call, fused variants, FlashInfer, old call path, split sweep.
# Every row carries host_floor_us and graph_floor_us of its own process (same machine, same minute).
set -uo pipefail

OUT=${OUT:-out/small_shapes}
CARRY=${CARRY:-.carry}
MAX_SECONDS=${MAX_SECONDS:-0.25}     # sampling cap per timing mode per row
TOTAL_BUDGET=${TOTAL_BUDGET:-230}   # seconds for the whole script
mkdir -p "$OUT"
LOG=$OUT/small_shapes.log
export PYTHONUNBUFFERED=1
export MLA_GIT_COMMIT=${MLA_GIT_COMMIT:-$(cat "$CARRY/GIT_COMMIT" 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
FAILURES=()
START=$SECONDS
STEP_MARGIN=10
source "$(dirname "$0")/_device_steps.sh"   # say, step, install_flashinfer
install_flashinfer
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"

B=(python3 -m mla bench --max-seconds "$MAX_SECONDS" --no-progress)
B5=("${B[@]}" --min-runs 5)          # the later steps: 5 samples at least (eval.py takes >= 3)
LB=leaderboard
SMALL=bs4-kv1024-q1-h16,bs4-kv8192-q1-h16,bs32-kv1024-q1-h16,bs64-kv1024-q1-h16

# 1. the default call, as the README shows it (DEFAULT_VARIANT, graph="auto"): 24 rows
step default 60 "${B[@]}" --cases $LB --backend triton --kv-format bf16,fp8,mxfp4 --mode cold,warm,kernel,fresh \
  --out "$OUT/default.csv"
# 2. one launch per call on all 8 shapes: fused reduce (v50 / v51 / v52 = the defaults' split kernels
#    + it) and + the balanced work list (v53 / v54 / v55): 48 rows, kernel time and eval.py's timing
step fused-bf16 30 "${B5[@]}" --cases $LB --backend triton --kv-format bf16 --mode kernel,fresh \
  --sweep variant=v50_n32_w4_s3_fr,v53_n32_w4_s3_frb --out "$OUT/fused.csv" --append
step fused-fp8 30 "${B5[@]}" --cases $LB --backend triton --kv-format fp8 --mode kernel,fresh \
  --sweep variant=v51_n32_w4_s2_f16wp_fr,v54_n32_w4_s2_f16wp_frb --out "$OUT/fused.csv" --append
step fused-mxfp4 30 "${B5[@]}" --cases $LB --backend triton --kv-format mxfp4 --mode kernel,fresh \
  --sweep variant=v52_n32_w4_s2_mxw_fr,v55_n32_w4_s2_mxw_frb --out "$OUT/fused.csv" --append
# 3. FlashInfer, same modes as the default call, same run (its JIT build is most of this step)
if (( HAVE_FI )); then
  step flashinfer 80 "${B[@]}" --cases $LB --backend flashinfer --kv-format bf16,fp8 \
    --mode cold,warm,kernel,fresh --out "$OUT/flashinfer.csv"
fi
# 4. the old call path of the defaults: plain launches (the README call before graph="auto"): 24 rows
step old 30 "${B5[@]}" --cases $LB --backend triton --kv-format bf16,fp8,mxfp4 --mode cold,fresh \
  --config graph=false --out "$OUT/old.csv"
# 5. small shapes, kernel time: the balanced schedule's split count (mean splits per element) x
#    fp32 / bf16 partial O (bf16 = v56 / v57 / v58), on the default variants' kernels: 72 rows
step splits 40 "${B5[@]}" --cases $SMALL --backend triton --kv-format bf16,fp8,mxfp4 --mode kernel \
  --config fused_reduce=true --config balanced=true --sweep num_splits=auto,16,64 \
  --sweep partial_dtype=fp32,bf16 --out "$OUT/sweeps.csv"

# the summary: per (file, variant, config) geomeans over the shapes, and the floors
python3 - "$OUT" <<'EOF' 2>&1 | tee -a "$LOG"
import glob, sys, math
from mla.bench import load_results
for f in sorted(glob.glob(sys.argv[1] + "/*.csv")):
    df = load_results(f)
    bad = df[df.status != "ok"]
    print(f"\n{f}: {len(df)} rows, {len(bad)} not ok" + (f" (first: {bad.iloc[0].message[:200]})" if len(bad) else ""))
    print(f"  host_floor_us {df.host_floor_us.median():.1f}  graph_floor_us {df.graph_floor_us.median():.1f}")
    ok = df[df.status == "ok"]
    for (v, kvf, cfg), g in ok.groupby(["variant", "kv_format", "config"]):
        gm = {m: math.exp(g[f"{m}_median_us"].map(math.log).mean()) for m in ("cold", "kernel", "fresh")
              if g[f"{m}_median_us"].notna().all() and len(g)}
        print(f"  {v:28s} {kvf:6s} {cfg:60s} n={len(g)} " + " ".join(f"{m} {t:7.1f}" for m, t in gm.items()))
    # the issue's targets: best format per shape, geomean over the shapes; bs4-kv1024 over the graph floor
    for m in ("cold", "fresh", "kernel"):
        col = f"{m}_median_us"
        if col in ok and ok[col].notna().any():
            best = ok.groupby("case")[col].min().dropna()
            print(f"  best-format-per-shape geomean, {m}: {math.exp(best.map(math.log).mean()):.1f} us over {len(best)} shapes")
    small = ok[ok.case == "bs4-kv1024-q1-h16"]
    for _, r in small.iterrows():
        print(f"  bs4-kv1024 {r.backend} {r.kv_format} {r.variant}: cold / graph_floor = "
              f"{r.cold_median_us / r.graph_floor_us:.2f}, fresh / graph_floor = {r.fresh_median_us / r.graph_floor_us:.2f}")
EOF
python3 -m mla report "$OUT"/*.csv 2>&1 | tail -n 80 | tee -a "$LOG"
say "small_shapes: $(( SECONDS - START ))s, files: $(cd "$OUT" && ls | tr '\n' ' ')"
if (( ${#FAILURES[@]} )); then say "FAILED STEPS: ${FAILURES[*]}"; exit 1; fi
say "all steps finished"
