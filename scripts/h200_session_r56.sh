#!/usr/bin/env bash
# Round 56 (prepared 2026-12-06 ~15:50 UTC, offline; not run): what rounds 52-55 left for the card that comes.
#   MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r56.sh r56a   (carry [".carry/fi"]; since round 63
#   `bash scripts/device_tree.sh slim` before the call and `restore` after: the tree and the bundle exceed 64 MiB)
# r56a  On an H200: campaign 29 (the default call of rounds 52-55 - fp8 v160 / v168 / v169, MXFP4 v159 / v170 - with
#       FlashInfer beside it), the first H200 run of those defaults and the leaderboard candidate; then the two
#       long-program A/Bs that made them, on this card: the fp8 default call with / without the TMA rule (kv_tma=None
#       / False) and MXFP4 v143 / v170, at bs32 / bs64 / bs256-kv8192, two rounds in opposite order.
#       On an H100 (campaigns 24-28 ran there): the program timeline of the default call at bs256-kv1024 (one program
#       an element, 16 tiles, two programs an SM) for fp8 and MXFP4, where both sit furthest over a plain read of
#       their bytes among the shapes without a reduce (campaign 28: fp8 71.5 us, MXFP4 63.2, against ~48 / ~26 us of
#       read at 3.1 TB/s).
# Predicted (written before any run):
#   H200: campaign 29's best-format geomean 39.5-41.5 us kernel (campaign 23: 42.8), from the H100 ratios carried over
#     (fp8 -6..-8% at the four short shapes, -3% at bs256-kv1024, -6% / -5% at bs64 / bs256-kv8192, -10% at
#     bs32-kv8192, where fp8 becomes the best format); fresh within 1 us of kernel; FlashInfer's geomean as in
#     campaign 23 within 3%. The A/Bs: kv_tma -5..-10% at the three shapes; v170 -2..-4%. Issue 10's read target:
#     fp8 at bs64-kv8192 from 73% to 76-79% of the read probe (met), at bs32-kv8192 from 58% to 62-66% (still missed);
#     MXFP4 stays at 32-40%.
#   H100: the ends are a small part at bs256-kv1024 (prologue + first-tile wait + epilogue ~8 us of a ~65-70 us
#     makespan); the time a tile is 1.6-2x the one-program-an-SM rate of the kv8192 timelines (two programs share
#     the SM), so the gap over the read sits in the loop's rate; outside the kernel 1.5-3 us (no reduce).
set -u
source scripts/_device_steps.sh
session_begin "${1:?which part: r56a}"
export TRITON_CACHE_DIR=/tmp/tcache-r56
V143=v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed
V170=v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm
B="python3 -m mla bench --backend triton --no-progress --mode kernel,fresh"
LONG=bs32-kv8192-q1-h16,bs64-kv8192-q1-h16,bs256-kv8192-q1-h16
# the head's v170 (its one-slot hand-over barrier, changed after r55 ran) and the default rules, on this card
head_tests() { step tests 90 python3 -m pytest -q -p no:cacheprovider tests/test_triton_gen3.py -k "v170 or default" \
  --junitxml "$OUT/pytest-r56a.xml"; }
# round 59 changed input validation (a per-call scale check on cached word-decode plans, skipped inside a CUDA-graph
# capture), the fp8 KV's quantization (the contract's bf16 math) and the CLI's config checks; no CPU test reaches the
# capture path: these files on a GPU (~800 s of test time at 799dab6's rates over 12 workers); round 60 adds the
# swap-AB MXFP4 kernel's in-kernel scale guard (NaN blocks), whose sm90 PTX path (an f16x2 NaN scale) no CPU test runs
# (ran at 2fee4a0 on an H100, round 62: 320 passed; round 62 then added test_validation.py's GPU test of the
# word-decode scale check inside a CUDA-graph capture, not run yet: these files run it)
R59_TESTS="tests/test_validation.py tests/test_inputs.py tests/test_reference.py tests/test_accuracy.py
  tests/test_triton_kernels.py tests/test_decode_memo.py tests/test_direct_launch.py tests/test_backends.py
  tests/test_cli_user.py tests/test_quant.py tests/test_issue10_fresh.py
  tests/test_triton_gen2.py::test_a_built_plan_gives_nan_rows_for_later_scales_outside_the_exact_range
  tests/test_triton_gen2.py::test_the_checked_fp16_scale_matches_the_plain_one_in_range_and_is_nan_outside"
r59_tests() { step r59-tests 240 python3 -m pytest -q -n 12 -p no:cacheprovider $R59_TESTS \
  --junitxml "$OUT/pytest-r59.xml"; }
case $PART in
r56a)
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    # FlashInfer beside it when the budget holds both (~300 s); a late H200 with less still runs the Triton campaign
    if [ "${NO_FI:-0}" = 1 ] || (( TOTAL_BUDGET < 420 )); then session_campaign 29 200 triton
    else install_flashinfer; session_campaign 29 300 flashinfer triton; fi
    [ -f "$OUT/campaign29.log" ] && tail -16 "$OUT/campaign29.log"
    S=$OUT/long-ab-r56a.csv
    for r in 1 2; do
      o=None,False; vs=$V143,$V170; [ $r = 2 ] && o=False,None && vs=$V170,$V143
      step "fp8-default-$r" 60 $B --kv-format fp8 --cases $LONG --sweep kv_tma=$o --out $S --append
      for cs in bs32-kv8192-q1-h16:4 bs64-kv8192-q1-h16:2 bs256-kv8192-q1-h16:1; do
        step "mx-${cs%%-q1*}-$r" 40 $B --kv-format mxfp4 --cases ${cs%%:*} --sweep variant=$vs \
          --sweep num_splits=${cs#*:} --out $S --append
      done
    done
    show "$S"
    head_tests
    r59_tests
  elif [ "${H100_TIMELINE:-0}" = 1 ]; then
    # ran at 16:50 UTC on an H100 (7827153, with the tests above: data/measured/h100/issue10/*r56a*)
    step timeline 90 python3 scripts/probes/timeline_probe.py "$OUT/tl/default" --formats fp8,mxfp4 \
      --cases bs256-kv1024-q1-h16 --repeats 4 --seconds 0.4
    timeline_collect r56a
    head_tests
  elif [ "${H100_SUITE:-0}" != 1 ]; then
    # round 58 ran the whole suite at 1a46deb on an H100 (data/measured/h100/suite/*1a46deb*); no kernel change since,
    # but round 59's validation / input / CLI changes have not run on a GPU: their files only, then give it back
    say "an H100, not an H200: round 59's changed test files (H100_SUITE=1 runs the GPU suite, H100_TIMELINE=1 round 56's timeline)"
    r59_tests
  else
    # r56a's H100 part ran at 16:50 UTC (H100_TIMELINE=1 runs it again). On another H100: the whole GPU suite at this
    # commit (the last whole run was 799dab6, before rounds 52-55; round 56's two steps ran 827 of 1589, round 57's
    # one step was cut at ~98%), less the offline compiles CI runs on every push, in two halves: this call runs
    # SUITE_SHARD (1/2 unless set), the next call on the same warm machine SUITE_SHARD=2/2
    OUT=$OUT/suite SUITE_SHARD=${SUITE_SHARD:-1/2} TOTAL_BUDGET=$(( TOTAL_BUDGET - (SECONDS - START) )) \
      bash scripts/h200_suite.sh || FAILURES+=("suite${SUITE_SHARD:+ $SUITE_SHARD}")
  fi
  ;;
*) echo "unknown part $PART (r56a)" >&2; exit 2 ;;
esac
say "failures: ${FAILURES[*]:-none}; total $(( SECONDS - START )) s"
