#!/usr/bin/env bash
# Round 46 on the H200 (docs/notes-triton.md, "Round 46"): a uniform batch's ranges without the indptr round trip.
#   r46a  v151 (v141 + UNIFORM_RANGES) against v141 for fp8 and v152 (v117 + it) against v117 for MXFP4 at the default
#         call's split counts on the five shapes the one-warpgroup kernel runs (kernel and fresh modes, two rounds
#         in opposite variant order, every row checked), then the generation-3 GPU tests of v151 / v152
#   r46b  campaign 23 (FlashInfer and Triton) at the code r46a's rows chose, and the default-rule GPU tests
#   r46c  the whole GPU suite (scripts/h200_suite.sh) with FlashInfer
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r46.sh r46a|r46b|r46c     (writes $OUT/*)
# Predicted before r46a (written 2026-12-04 ~19:20 UTC, before the call):
#   - Every program of the one-warpgroup kernel starts with one global round trip (qo_indptr[b], kv_indptr[b],
#     kv_indptr[b + 1]) that both of its chains wait for: Q's loads and quantization, and the first KV copies
#     (round 39 found the two about equally long on short programs). After the flush those lines are in DRAM, so
#     v151 / v152 take one DRAM latency (~0.5-0.9 us with the TLB miss) off every program's critical path.
#   - Kernel time, v151 against v141 / v152 against v117: bs4-kv1024 -0.5..-0.9 us (-4..-7%); bs4-kv8192,
#     bs32-kv1024 and bs64-kv1024 -0.4..-0.9 us (-2..-4%); bs256-kv1024 (16 tiles a program, two programs per SM)
#     within 1%. Fresh mode the same amounts (its flush leaves the lines in DRAM too).
#   - No change in rel_l2 (the same arithmetic on the same rows).
#   - If it holds, the default call takes v151 / v152 wherever it takes v141 / v117 (the rule's variants).
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r46a .. r46c}"
export TRITON_CACHE_DIR=/tmp/tcache-r46
V141=v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm
V151=v151_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur
V117=v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf
V152=v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur
# campaign 22's read / copy probe (the A/B compares times; the probe is not re-run in every process)
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh --bandwidth-gbs 4344.6,4260.3"
case $PART in
r46a)
  S=$OUT/uniform-r46a.csv
  # case:fp8 splits:MXFP4 splits (campaign 22's default plans)
  SHAPES="bs4-kv1024-q1-h16:16:16 bs4-kv8192-q1-h16:32:32 bs32-kv1024-q1-h16:4:4 bs64-kv1024-q1-h16:2:4 bs256-kv1024-q1-h16:1:1"
  ab() {  # ROUND ORDER(fwd|rev)
    local sh c f m
    for sh in $SHAPES; do
      c=${sh%%:*}; f=${sh#*:}; m=${f#*:}; f=${f%%:*}
      if [ "$2" = fwd ]; then
        step "fp8-${c%%-q1*}-$1" 45 $B --kv-format fp8 --cases "$c" --sweep variant=$V141,$V151 --sweep num_splits=$f --out $S --append
        step "mx-${c%%-q1*}-$1" 45 $B --kv-format mxfp4 --cases "$c" --sweep variant=$V117,$V152 --sweep num_splits=$m --out $S --append
      else
        step "mx-${c%%-q1*}-$1" 45 $B --kv-format mxfp4 --cases "$c" --sweep variant=$V152,$V117 --sweep num_splits=$m --out $S --append
        step "fp8-${c%%-q1*}-$1" 45 $B --kv-format fp8 --cases "$c" --sweep variant=$V151,$V141 --sweep num_splits=$f --out $S --append
      fi
    done
  }
  ab 1 fwd
  ab 2 rev
  show "$S"
  step tests 150 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v151 or v152 or uniform" -rfE \
    --junitxml="$OUT/pytest-gen3-r46a.xml"
  ;;
r46b)
  install_flashinfer
  session_campaign 23 420 flashinfer triton
  tail -14 "$OUT/campaign23.log" | tee -a "$LOG"
  step tests 100 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "default" -rfE \
    --junitxml="$OUT/pytest-defaults-r46b.xml"
  ;;
r46c)
  OUT=$OUT TOTAL_BUDGET=570 bash scripts/h200_suite.sh
  ;;
*) echo "unknown part $PART (r46a .. r46c)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
