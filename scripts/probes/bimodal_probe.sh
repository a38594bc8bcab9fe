#!/usr/bin/env bash
# Is bs256-kv8192's bimodal fp8 kernel time (317-359 us for the same v116 code, tight within a run)
# a per-process effect? N bench processes in a row, each with fresh inputs (new allocations), each
# after a line of nvidia-smi state (clocks, temperature, power, P-state), rows appended to one CSV.
#   OUT=... MLA_GIT_COMMIT=... N=5 bash scripts/probes/bimodal_probe.sh   (on the device)
set -u
N=${N:-5}; OUT=${OUT:-out/bimodal}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
for i in $(seq 1 "$N"); do
  echo "=== process $i $(date -u +%T): $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate --format=csv,noheader)" | tee -a "$OUT/bimodal.log"
  python3 -m mla bench --cases bs256-kv8192-q1-h16 --backend triton --kv-format fp8 --mode kernel \
    --config graph=true --config variant=v116_n64_w4_s2_gl_en_ls_p8_qc_pp_cf --max-seconds 0.3 --no-progress \
    --out "$OUT/bimodal.csv" --append 2>&1 | grep -E "v116|error" | head -2 | tee -a "$OUT/bimodal.log"
done
