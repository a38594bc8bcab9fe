"""The one launcher for the Triton MLA decode family: split heuristic, per-shape plan, CUDA graphs.

    plan = TritonDecodePlan(data, kv_format="mxfp4", variant="v2_n64_w4_s2", graph=True)
    out = plan.run(data)          # (total_q, H, 512) bf16, a buffer the plan owns

A plan is built once per shape (buffers, grid, kernel arguments that do not depend on the input
tensors). ``run`` launches one kernel (``num_splits == 1``, or a ``fused_reduce`` variant) or two
(split + LSE reduce). CUDA graphs (``graph=``): a graph replays the pointers it captured, so the
cache is keyed on every input ``data_ptr`` and stride, and stale inputs are never replayed.

- ``graph="auto"`` (the default): plain launches, a capture when the same address set comes on two
  consecutive calls (a fixed-input loop), replay from then on (:class:`GraphAutoPolicy`). Inputs
  made fresh every call (the leaderboard's harness) launch plainly and never pay a capture, also
  when the allocator hands earlier address sets back in turn (A B A B ...).
- ``graph=True``: capture on first sight (up to :data:`MAX_GRAPHS` address sets, then launch).
- ``graph=False``: always launch.

The lowest-overhead call is ``fn = plan.bind(data); fn()``: a zero-argument callable for these
tensors (on CUDA the captured graph's own ``replay``, else the launch with its argument tuple
built once). Valid while those tensors live at the same addresses (their contents may change).
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections import deque
from pathlib import Path

import torch
import triton

from ...problem import QK_HEAD_DIM, SM_SCALE, SUPPORTED_NUM_HEADS, V_HEAD_DIM
from .kernels import (KV_FORMAT_CODE, Q_FORMAT_CODE, gdc_wait, mla_decode_reduce_kernel,
                      mla_decode_reduce_tile_kernel, mla_decode_split_kernel)
from .gluon_sm90 import (TIMELINE_COLUMNS, gluon_unavailable_reason, mla_decode_gluon_sm90_kernel,
                         mla_decode_gluon_sm90_ws_kernel, ws_fp8_tma_descriptors, ws_tma_descriptors)
from .direct import DirectLaunch, install_tensordesc_encode_cache
from .gluon_steal import mla_decode_gluon_sm90_steal_kernel
from .steal_protocol import check_plan as check_steal_plan
from .swapab import mla_decode_swapab_kernel
from .variants import (GEN2_DEFAULT, HOPPER_TMA_DEFAULT, HOPPER_WS_DEFAULT, HOPPER_WS_MIN_TILES, HOPPER_WS_ONE_WAVE,
                       MXFP4_E4M3_EXACT, MXFP4_F16_EXACT, MXFP4_GLUON_EXACT, Variant, default_variant, get_variant,
                       gluon_constexprs, gluon_launch_options, is_hopper_default)

TMA_ENCODE_CACHED = install_tensordesc_encode_cache()  # before any launcher is built (direct.py)

MAX_SPLITS = 64
MAX_GRAPHS = 8
CTAS_PER_SM_TARGET = 2  # aim for ~2 resident programs per SM so loads of one hide the other's math
MIN_SPLIT_TOKENS = 64  # a split shorter than this pays its LSE write + reduce for little work
# with the tile reduce more splits cost ~nothing: bs4-kv1024 at 32 splits beat 16 for all three
# formats on the H200 (13.1 vs 13.4 bf16, 14.0 vs 15.7 fp8, 14.0 vs 16.9 us MXFP4; probe2 2026-11-30)
MIN_SPLIT_TOKENS_TILE_REDUCE = 32


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def uses_ptx(device) -> bool:
    """Inline PTX (the word decodes, MX_DECODE >= 2) on NVIDIA GPUs only: not in the interpreter, not on ROCm,
    not with MLA_TRITON_PTX=0 (the portable path gfx950 compiles, run on an NVIDIA GPU; read at plan time)."""
    device = torch.device(device)
    return (device.type == "cuda" and torch.version.hip is None and not interpreting()
            and os.environ.get("MLA_TRITON_PTX", "1") != "0")


# Programmatic dependent launch of the reduce (``pdl``; issue 10): the reduce is launched with the PDL
# attribute and its programs wait (griddepcontrol.wait) for the split grid's writes before any load; the split
# kernel lets its dependents launch (griddepcontrol.launch_dependents) as its programs start ("early") or after
# their KV loop ("late": the reduce's programs then do not sit on the SMs while the loop runs), so the second
# kernel's launch latency overlaps the first kernel. pdl=True is "early". (The warp-specialized MXFP4 kernel
# triggers early either way: its loop ends inside the partitions.) PDL_DEFAULT is the default call's choice
# (False, "early" or "late"); a plan's ``pdl=`` overrides it.
PDL_TRIGGERS = {"early": 1, "late": 2}
PDL_DEFAULT: bool | str = "late"  # r37c (issue10/pdl-trigger-r37c.csv): fresh -5%, kernel -1.4% geomean


def pdl_trigger(pdl) -> str | None:
    """``pdl`` (True, False, None, "early", "late") -> the trigger's name, or None for a plain launch."""
    if pdl is None or pdl is False:
        return None
    if pdl is True:
        return "early"
    if pdl in PDL_TRIGGERS:
        return pdl
    raise ValueError(f"pdl must be True, False, None, 'early' or 'late', got {pdl!r}")


def pdl_unavailable_reason(device) -> str | None:
    """Why the reduce cannot be launched with programmatic dependent launch on ``device`` (None when it can)."""
    device = torch.device(device)
    if interpreting():
        return "the interpreter has no grid dependency control"
    if device.type != "cuda" or getattr(torch.version, "hip", None) or not torch.cuda.is_available():
        return "needs an NVIDIA GPU (CUDA programmatic dependent launch)"
    if torch.cuda.get_device_capability(device)[0] < 9:
        return "needs sm90 or newer (griddepcontrol)"
    if gdc_wait is None:
        return f"this triton ({triton.__version__}) has no triton.language.extra.cuda.gdc_wait"
    return None


def device_sm_count(device) -> int:
    """SMs (CUs on ROCm) of ``device``; 132 (an H200) for CPU so the heuristic stays deterministic."""
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 132


def heads_per_program(variant: Variant, num_heads: int, q_seq_len: int, kv_format: str = "bf16") -> int:
    """Heads one program takes: the variant's choice, else as many as keep M = q_seq_len x heads
    within 32 rows (64 with 8 warps): the fp32 accumulator is M x 512 registers across the CTA.
    MXFP4 stays at 32 rows: M = 64 with the decoded tile crashes triton 3.6's
    TritonGPUOptimizeDotOperands ("Illegal shared layout"; seen on the H200 and reproduced offline)."""
    if variant.family in ("swapab", "gluon"):  # R = rows is the N of the QK MMA (2R with hi + lo Q) and the M of PV
        row_cap = variant.heads_per_prog * q_seq_len if variant.heads_per_prog else 16
        hp = 1 << max(0, (max(1, row_cap // q_seq_len)).bit_length() - 1)
        return max(1, min(num_heads, hp))
    if variant.heads_per_prog:
        hp = variant.heads_per_prog
        if num_heads % hp:
            raise ValueError(f"variant {variant.name!r} takes {hp} heads per program; {num_heads} heads do not divide")
        return hp
    row_cap = 64 if variant.num_warps >= 8 and kv_format != "mxfp4" else 32
    hp = 1 << max(0, (max(1, row_cap // q_seq_len)).bit_length() - 1)  # power of two <= row_cap / s
    return max(1, min(num_heads, hp))


def reduce_block_d(splits_p2: int) -> int:
    """d-block of the tile reduce: ~4096 partial values per program (32 fp32 registers a thread at 4 warps)."""
    return max(32, min(V_HEAD_DIM, 4096 // splits_p2))


def choose_num_splits(batch_size: int, max_kv_len: int, num_head_groups: int, num_sms: int, block_n: int,
                      min_split_tokens: int = MIN_SPLIT_TOKENS) -> int:
    """KV splits per batch element: as many programs as fit in ONE wave of CTAS_PER_SM_TARGET per SM
    (never more: a partial second wave costs a whole extra split's time), no split shorter than
    MIN_SPLIT_TOKENS (nor than one tile), and 1 (no reduce pass) when batch x head groups already
    fills the chip. H200 split sweep (data/measured/h200/campaign1-sweeps.csv): rounding the wave
    up was the costly mistake - bs32-kv8192 bf16 at 9 splits (288 CTAs > 264 slots) 122 us vs 96 us
    at 8; bs64-kv8192 at 5 splits 227 us vs 157 us at 4."""
    programs = batch_size * num_head_groups
    if programs >= num_sms:
        return 1
    want = (CTAS_PER_SM_TARGET * num_sms) // programs
    by_length = max(1, max_kv_len // max(min_split_tokens, block_n))
    return max(1, min(want, by_length, MAX_SPLITS))


# The default call's reduce (issue 10, campaign 3; the table is in docs/notes-triton.md, "Fused or
# tile reduce by default"): the one-launch fused reduce (+ balanced work list) beat the separate
# tile reduce only on generation 2's fp8 kernel with few, long splits (bs32-kv8192 8 x 1024 tokens:
# 91.0 -> 80.4 us; bs64-kv8192 4 x 2048: 157.9 -> 129.6 us). It lost wherever one program merges
# many or short partials (bs4, 16-64 splits: 1.4-3.3x; bs32-kv1024, 8 x 128 tokens: +18-26%) and
# never won for bf16 (v28) or MXFP4 (v86), at any split count. Nor on fp8's TMA-tile default v168 (round 63, an H100,
# data/measured/h100/issue10/fused-tma-r63a.csv): +2.4% at bs32-kv8192 (4 splits), +0.8% at bs64 (2), against the
# tile reduce that PDL overlaps; so the rule names the swap-AB family only.
FUSED_DEFAULT_FORMATS = ("fp8",)
FUSED_DEFAULT_MAX_SPLITS = 8
FUSED_DEFAULT_MIN_SPLIT_TOKENS = 1024


def fused_by_default(variant: Variant, kv_format: str, num_splits: int, max_kv_len: int) -> bool:
    """Whether the default call (no variant named, fused_reduce / balanced not given) turns on the
    fused reduce and the balanced work list on top of the default variant's kernel; see above."""
    return (variant.family == "swapab" and kv_format in FUSED_DEFAULT_FORMATS
            and 2 <= num_splits <= FUSED_DEFAULT_MAX_SPLITS
            and max_kv_len // num_splits >= FUSED_DEFAULT_MIN_SPLIT_TOKENS)


# Generation 3 on a ragged batch (gen3-r18.csv, docs/notes-triton.md "Round 18"): the work list + fused
# reduce against uniform splits + the tile reduce won where the schedule splits no element more than
# 7 ways (bs64-kv4077+ragged: fp8 52.8 -> 45.7 us, MXFP4 64.9 -> 48.9) and lost where one program merges
# 64 partials (bs8-kv8192+ragged: 20.4 -> 39.1 us). Uniform batches keep the tile reduce (gen3-r16.csv:
# the fused reduce never won there).
BALANCED_DEFAULT_MAX_SPLITS = 8


def balanced_by_default(variant: Variant, kv_lens, block_n: int, target_items: int) -> bool:
    """Whether the default call (no variant named, fused_reduce / balanced not given) takes the work
    list + fused reduce on top of a generation-3 kernel: a ragged batch whose balanced schedule splits
    some element in 2 .. BALANCED_DEFAULT_MAX_SPLITS; see above."""
    lens = [int(n) for n in kv_lens]
    if variant.family != "gluon" or variant.gluon_ws or len(set(lens)) < 2:
        return False
    _, items = balanced_schedule(lens, block_n, target_items)
    return 2 <= max(s for _, _, s in items) <= BALANCED_DEFAULT_MAX_SPLITS


def ws_default_variant(kv_format: str, kv_lens, num_splits: int, block_n: int) -> str | None:
    """The warp-specialized kernel the default call swaps generation 3's MXFP4 kernel for, or None: for a
    uniform batch whose programs each run at least HOPPER_WS_MIN_TILES KV tiles at the split count already
    chosen, HOPPER_WS_DEFAULT (gen3-r27 / r28 / r31 / r38a; variants.py)."""
    lens = [int(n) for n in kv_lens]
    if kv_format not in HOPPER_WS_DEFAULT or len(set(lens)) > 1:
        return None
    tiles = _tiles_a_program(lens[0], num_splits, block_n)
    return HOPPER_WS_DEFAULT[kv_format] if tiles >= HOPPER_WS_MIN_TILES else None


def _tiles_a_program(kv_len: int, num_splits: int, block_n: int) -> int:
    """KV tiles of the longest split of a ``kv_len``-token element cut in ``num_splits``."""
    return -(-(-(-kv_len // num_splits)) // block_n)


def tma_default_variant(kv_format: str, kv_lens, num_splits: int, block_n: int, num_head_groups: int,
                        num_sms: int) -> str | None:
    """The fp8 TMA-tile kernel the default call takes for a uniform batch at the split count already chosen, or None:
    the first HOPPER_TMA_DEFAULT entry whose minimum KV tiles a program this batch's programs reach (and, where the
    entry says so, whose programs outnumber the SMs); round 54, variants.py. Ragged batches keep the work list (the
    TMA kernels refuse it)."""
    lens = [int(n) for n in kv_lens]
    if kv_format not in HOPPER_TMA_DEFAULT or len(set(lens)) > 1 or num_splits < 1:
        return None
    tiles = _tiles_a_program(lens[0], num_splits, block_n)
    programs = len(lens) * num_head_groups * num_splits
    return next((name for min_tiles, over_sms, name in HOPPER_TMA_DEFAULT[kv_format]
                 if tiles >= min_tiles and (programs > num_sms or not over_sms)), None)


def ws_num_splits(batch_size: int, max_kv_len: int, num_head_groups: int, num_sms: int, block_n: int) -> int:
    """KV splits per batch element for the warp-specialized kernel: one program per SM (never a second wave
    of these 16-warp programs), each >= one tile, at most MAX_SPLITS partials (two per program). r35 split
    sweep (data/measured/h200/gen3-r35-sweeps.csv, kernel us): bs32-kv8192 v133 at 4 splits 59.2 against v117
    at choose_num_splits' 8, 66.1; bs64-kv8192 v133 at 2 splits 102.3 against 4 splits 110.9."""
    programs = batch_size * num_head_groups
    if programs >= num_sms:
        return 1
    return max(1, min(num_sms // programs, max(1, max_kv_len // block_n), MAX_SPLITS // 2))


# Generation 3's one-warpgroup defaults on short programs (r36b split sweep, data/measured/h200/issue10/
# splits-r36b.csv, kernel us): one program per SM beat choose_num_splits' two wherever two per SM left every
# split short. fp8 v141: bs4-kv8192 19.8 vs 20.5 (32 vs 64 splits), bs4-kv4096 16.2 vs 17.5, bs8-kv8192 26.8 vs
# 29.1, bs32-kv1024 18.7 vs 20.1, bs64-kv1024 26.3 vs 28.0 (two per SM held 64-256 tokens a split); at 1024+
# tokens a split two per SM win or tie (r35: bs64-kv8192 97.4 vs 105.7, bs32-kv8192 60.4 vs 60.9). MXFP4 v117
# wins only at <= 2 tiles a split (bs4-kv4096 16.8 vs 18.1, bs32-kv1024 19.7 vs 20.6, bs4-kv8192 20.9 vs 21.2) and
# loses at 4 (bs8-kv8192 29.0 vs 28.6, bs64-kv1024 28.1 vs 27.3): its in-line decode wants the second CTA.
ONE_PER_SM_BELOW_TOKENS = {"fp8": 1024, "mxfp4": 129}  # split length at choose_num_splits' count


def one_per_sm_splits(kv_format: str, num_splits: int, batch_size: int, max_kv_len: int, num_head_groups: int,
                      num_sms: int, block_n: int) -> int:
    """The default generation-3 call's split count: ``num_splits`` (choose_num_splits', two programs per SM)
    unless its splits are shorter than ONE_PER_SM_BELOW_TOKENS[kv_format]; then one program per SM, the
    count lowered to the fewest splits with the same tiles per split (128 tiles over 33 programs = 4 tiles
    each = 32 splits: no ragged last split, fewer partials)."""
    below = ONE_PER_SM_BELOW_TOKENS.get(kv_format)
    if below is None or num_splits <= 1 or max_kv_len // num_splits >= below:
        return num_splits
    want = max(1, num_sms // (batch_size * num_head_groups))
    tiles = max(1, -(-max_kv_len // block_n))
    per = -(-tiles // min(want, tiles))
    return max(1, min(num_splits, -(-tiles // per)))


def coop_num_splits(num_splits: int, batch_size: int, max_kv_len: int, num_head_groups: int, num_sms: int,
                    block_n: int, given: bool = False) -> int:
    """The split count of a coop_merge call: its splits wait for each other, so every program must be resident at
    once - at most one per SM (any kernel that launches fits one CTA per SM; the grid is launched cooperatively, so
    the driver refuses one that cannot be). ``num_splits`` if it fits; else, for a heuristic count, one program per
    SM lowered to the fewest splits with the same tiles per split (one_per_sm_splits' rule); a count the caller
    gave that does not fit is a ValueError."""
    per_split = batch_size * num_head_groups
    if num_splits * per_split <= num_sms:
        return num_splits
    if given:
        raise ValueError(f"coop_merge=True needs every program resident at once: {num_splits} splits x {per_split} "
                         f"(batch x head groups) = {num_splits * per_split} programs > {num_sms} SMs; ask for at most "
                         f"{max(1, num_sms // per_split)} splits")
    tiles = max(1, -(-max_kv_len // block_n))
    per = -(-tiles // min(max(1, num_sms // per_split), tiles))
    return max(1, -(-tiles // per))


def coop_constexprs(num_splits: int) -> tuple[dict, dict]:
    """(kernel constexprs, launch options) of a one-warpgroup generation-3 kernel with coop_merge at ``num_splits``
    (the plan and the offline compile both take them from here): the merge is compiled in only with > 1 split."""
    coop = num_splits > 1
    return (dict(COOP_MERGE=coop, SPLITS_P2=max(2, triton.next_power_of_2(num_splits))),
            dict(launch_cooperative_grid=True) if coop else {})


def ws_default_choice(kv_format: str, kv_lens, num_head_groups: int, num_sms: int, block_n: int) -> tuple:
    """(warp-specialized variant, splits) the default call takes for this batch, or (None, None): the
    splits of ws_num_splits, and the variant ws_default_variant names for programs of that length."""
    lens = [int(n) for n in kv_lens]
    splits = ws_num_splits(len(lens), max(lens), num_head_groups, num_sms, block_n)
    if kv_format in HOPPER_WS_ONE_WAVE and len(lens) * num_head_groups * splits > num_sms:
        return None, None  # a second wave of one-CTA programs (variants.HOPPER_WS_ONE_WAVE)
    name = ws_default_variant(kv_format, lens, splits, block_n)
    return (name, splits) if name else (None, None)


def default_kernel_choice(kv_format: str, kv_lens, num_splits: int, splits_by_heuristic: bool, num_head_groups: int,
                          num_sms: int, block_n: int, *, ragged: bool = False, warp_specialized: bool | None = None,
                          kv_tma: bool | None = None) -> tuple:
    """The default call's kernel swap on sm90, given the one-warpgroup default's split count ``num_splits``:
    ``(variant to swap in or None, the one-warpgroup default's split count, the swapped-in kernel's split count)``.
    With the splits by the heuristic: short programs one per SM (one_per_sm_splits), the warp-specialized kernel at
    its own count (ws_default_choice); with splits given: the warp-specialized kernel by program length
    (ws_default_variant; not for HOPPER_WS_ONE_WAVE's formats). Then, for a uniform fp8 batch, the TMA-tile kernel
    by tiles a program at the count chosen so far (tma_default_variant, round 54). ``warp_specialized=False`` /
    ``kv_tma=False`` leave out either swap (the rules' controls)."""
    name, splits = None, None
    if splits_by_heuristic:
        num_splits = one_per_sm_splits(kv_format, num_splits, len(kv_lens), max(kv_lens), num_head_groups, num_sms,
                                       block_n)
        name, splits = ws_default_choice(kv_format, kv_lens, num_head_groups, num_sms, block_n)
    elif kv_format not in HOPPER_WS_ONE_WAVE:
        name, splits = ws_default_variant(kv_format, kv_lens, num_splits, block_n), num_splits
    if warp_specialized is False:
        name = None
    if kv_tma is None and not ragged:
        at = splits if name else num_splits
        tma = tma_default_variant(kv_format, kv_lens, at, block_n, num_head_groups, num_sms)
        if tma:
            name, splits = tma, at
    return (name, num_splits, splits if name else None)


def kernel_rule_splits(variant: Variant, kv_format: str, kv_lens, two_per_sm: int, num_head_groups: int,
                       num_sms: int, *, ragged: bool = False) -> int:
    """``num_splits="kernel"``: the split count the default call's rules give ``variant`` when it is the kernel they
    pick, so that a named kernel is timed where the default call would run it (a variant sweep at ``"auto"`` runs
    every kernel at ``two_per_sm``, choose_num_splits' two programs an SM: a second wave for the one-CTA-an-SM
    warp-specialized kernels, 16-18% slower at bs32-kv8192 than at this count on an H100, rounds 70-71).
    Generation 3 on sm90 only:
    - warp-specialized (gluon_ws): ws_num_splits, one program an SM (ws_default_choice's count);
    - fp8 tiles by TMA (gluon_kv_tma): the count the default chain hands tma_default_variant (the warp-specialized
      count where that swap applies, else the one-warpgroup count below);
    - other one-warpgroup kernels: one_per_sm_splits (short splits one program an SM);
    - the work-stealing kernels and the portable generations keep ``two_per_sm``.
    The default call's own kernel at this count is the default call (tests/test_triton_gen3.py holds that)."""
    if variant.family != "gluon" or variant.gluon_steal:
        return two_per_sm
    lens = [int(n) for n in kv_lens]
    if variant.gluon_ws:
        return ws_num_splits(len(lens), max(lens), num_head_groups, num_sms, variant.block_n)
    swap, base, swap_splits = default_kernel_choice(kv_format, lens, two_per_sm, True, num_head_groups, num_sms,
                                                    variant.block_n, ragged=ragged)
    return swap_splits if variant.gluon_kv_tma and swap else base


def ws_by_default(kv_format: str, kv_lens, num_splits: int, block_n: int) -> bool:
    """Whether the default call with these splits given takes a warp-specialized kernel (ws_default_variant;
    never for HOPPER_WS_ONE_WAVE's formats, whose rule needs the split count it picks itself, ws_default_choice)."""
    if kv_format in HOPPER_WS_ONE_WAVE:
        return False
    return ws_default_variant(kv_format, kv_lens, num_splits, block_n) is not None


def ws_scales_fit(data, kv_format: str) -> bool:
    """Whether the MXFP4 scale rows suit the warp-specialized default's 4-byte scale copies (WS_HALVES):
    a 4-byte aligned base and row stride, rows of >= 20 bytes (the generator's 24 do); otherwise the
    default keeps generation 3's other kernel, which reads the scales byte by byte."""
    ws = HOPPER_WS_DEFAULT.get(kv_format)
    if kv_format != "mxfp4" or not (ws and get_variant(ws).gluon_ws_halves):
        return True
    _, aux, _, stride_sc = _kv_tensors(data, kv_format)
    return _scale_rows_copyable(aux, stride_sc)


def _scale_rows_copyable(aux, stride_sc: int) -> bool:
    """WS_HALVES' 4-byte cp.async of scale bytes 0..19: a 4-byte aligned base and row stride, rows >= 20 bytes."""
    return aux.data_ptr() % 4 == 0 and stride_sc % 4 == 0 and stride_sc >= 20


def balanced_schedule(kv_lens, block_n: int, target_items: int, min_chunk: int = MIN_SPLIT_TOKENS_TILE_REDUCE,
                      max_splits: int = MAX_SPLITS) -> tuple[int, list[tuple[int, int, int]]]:
    """The balanced work list: ``(chunk, [(batch element, split, splits of that element), ...])``.
    Every split is ``chunk`` tokens (a multiple of ``block_n``; an element's last split takes the
    rest), so a long element of a ragged batch gets proportionally more programs and each program
    about the same KV bytes. ``chunk`` is the smallest multiple of ``block_n`` (and >= min_chunk)
    that keeps the list within ``target_items`` programs per head group (one wave: see
    :func:`choose_num_splits`) and every element within ``max_splits`` splits; elements longer
    than the rest never make a second wave. For uniform lengths this is the split heuristic's choice."""
    lens = [int(n) for n in kv_lens]
    if not lens or min(lens) < 1:
        raise ValueError(f"balanced_schedule needs >= 1 batch element, each with >= 1 KV token; got {lens}")
    if block_n < 1 or target_items < 1:
        raise ValueError(f"block_n and target_items must be >= 1, got {block_n}, {target_items}")

    def round_up(x: int) -> int:
        return -(-x // block_n) * block_n

    total, longest = sum(lens), max(lens)
    chunk = round_up(max(min_chunk, block_n, -(-total // target_items), -(-longest // max_splits)))
    while chunk < round_up(longest) and sum(-(-n // chunk) for n in lens) > target_items:
        chunk += block_n
    items = []
    for b, n in enumerate(lens):
        splits = -(-n // chunk)
        items += [(b, k, splits) for k in range(splits)]
    return chunk, items


class GraphAutoPolicy:
    """When ``graph="auto"`` replays, captures or launches (pure Python, so it is tested on CPU).
    ``decide(key)`` is asked on every call of the plan (key = the input address set):

    - 'replay'  the key has a graph;
    - 'capture' the key is also the previous call's key (the same addresses on consecutive calls:
                a fixed-input loop, where the replays that follow repay the capture), fewer than
                ``max_graphs`` graphs are held, and the recent calls are not in the fresh-input regime;
    - 'launch'  otherwise.

    Why consecutive: a capture costs ~10x a launch plus torch's ``synchronize()`` and ``gc.collect()``
    on entering the capture, inside the call. With fresh inputs every call and the previous set alive
    until the next exists (eval.py), the caching allocator hands back alternating address sets
    (A B A B ...); a second-sighting rule captured each of them inside a timed call (campaign 3).
    There the replays cannot repay it: eval.py's timing hides host cost behind its L2 flush, so a
    replay saves at most the gap between two kernels (~1-2 us) while one capture costs milliseconds.
    Fresh-input regime: more than ``max_graphs`` distinct keys among the last ``window`` calls; no
    capture then even for a key that repeats. Graphs are never evicted (no evict-and-recapture)."""

    def __init__(self, max_graphs: int = MAX_GRAPHS, window: int | None = None):
        self.max_graphs = max_graphs
        self.graphs: dict = {}
        self.recent: deque = deque(maxlen=window or 2 * max_graphs)

    def fresh_regime(self) -> bool:
        return len(set(self.recent)) > self.max_graphs

    def decide(self, key) -> str:
        prev = self.recent[-1] if self.recent else None
        self.recent.append(key)
        if key in self.graphs:
            return "replay"
        if key == prev and len(self.graphs) < self.max_graphs and not self.fresh_regime():
            return "capture"
        return "launch"


def _kv_tensors(data, kv_format):
    """(kv tensor, aux tensor (fp8 scale / MXFP4 scales / a dummy), kv row stride, scale row stride)."""
    kv_data = data[1]
    if kv_format not in KV_FORMAT_CODE:
        raise ValueError(f"unknown kv_format {kv_format!r}; choose from {tuple(KV_FORMAT_CODE)}")
    if kv_format not in kv_data:
        raise ValueError(f"kv_data has no {kv_format!r} entry (has {sorted(kv_data)})")
    if kv_format == "bf16":
        kv = kv_data["bf16"]
        return kv, kv, kv.stride(0), 0
    if kv_format == "fp8":
        kv, scale = kv_data["fp8"]
        return kv, scale, kv.stride(0), 0
    packed, scales = kv_data["mxfp4"]
    if scales.shape[-1] < 18:
        raise ValueError(f"MXFP4 scales need >= 18 columns per row, got {scales.shape[-1]}")
    return packed, scales, packed.stride(0), scales.stride(0)




def _check_gluon_request(variant, kv_format, q_format, device, partial_dtype, mx_span) -> None:
    """Generation 3 is one Hopper kernel per KV format (fp8, or MXFP4 with scales its table decode
    represents exactly) for bf16 Q with fp32 partials (the tile reduce, or the fused one with or
    without the balanced work list); refuse anything else here, with the reason, instead of failing
    inside the compiler."""
    name, built_for = variant.name, variant.gluon_kv
    if kv_format != built_for or q_format != "bf16":
        hint = f" (generation 2, e.g. {GEN2_DEFAULT[kv_format]!r}, takes fp8 and MXFP4)" if kv_format in GEN2_DEFAULT else ""
        raise ValueError(f"variant {name!r} (Gluon, generation 3) takes kv_format {built_for!r} with q_format "
                         f"'bf16'; got {kv_format!r} / {q_format!r}{hint}")
    if partial_dtype == "bf16":
        raise ValueError(f"variant {name!r} (Gluon) has fp32 partials: partial_dtype='bf16' is a generation 1 / 2 "
                         "option")
    if kv_format == "mxfp4":
        check_mxfp4_scales(mx_span, name, MXFP4_GLUON_EXACT)
    reason = gluon_unavailable_reason(device) if not interpreting() else "Gluon kernels have no interpreter"
    if reason:
        raise ValueError(f"variant {name!r} (Gluon, generation 3) cannot run here: {reason}; use "
                         f"{GEN2_DEFAULT[kv_format]!r}, the portable generation 2")


def mxfp4_scale_span(scales: torch.Tensor) -> tuple[int, int]:
    """(lowest nonzero, highest) E8M0 byte of the 18 used scale columns: one pass, one host sync (the
    plan reads it once, at build; byte 0 marks an all-zero block and is left out of the low end)."""
    used = scales[:, :18]
    low = torch.where(used == 0, torch.full_like(used, 255), used).min()
    low_top = torch.stack((low, used.max())).tolist()
    return int(low_top[0]), int(low_top[1])


def check_mxfp4_scales(span: tuple[int, int], variant: str, exact=MXFP4_E4M3_EXACT) -> None:
    """Generation 2 decodes MXFP4 through fp16 and (unless qk_f16) rounds K to e4m3 with the block
    scale applied: exact for E8M0 in [119, 133] (0.5 * 2**-8 .. 6 * 2**6), fp16 alone in [104, 136];
    generation 3's table decode in MXFP4_GLUON_EXACT; byte 0 is allowed (all-zero blocks). ``span``
    is mxfp4_scale_span's; a ValueError names the exact alternative otherwise."""
    low, top = span
    lo_ok, hi_ok = exact
    if top > hi_ok or low < lo_ok:
        raise ValueError(f"variant {variant!r} decodes MXFP4 K / V with the block scale folded in, exact for "
                         f"E8M0 scales in [{lo_ok}, {hi_ok}]; these inputs span [{low}, {top}]: use an exact "
                         "generation-1 variant such as 'v1_n32_w4_s2'")


def swapab_scale_guard(variant: Variant, kv_format: str = "mxfp4") -> dict:
    """Generation 2's MX_SCALE_LO / MX_SCALE_HI: for MXFP4 the E8M0 range its kernel admits in-kernel
    (the range check_mxfp4_scales holds the build's inputs to), else every byte (no check compiled).
    Both always given: an offline compile passes every constexpr (a kernel default there is None)."""
    if kv_format != "mxfp4":
        return dict(MX_SCALE_LO=0, MX_SCALE_HI=255)
    lo, hi = MXFP4_F16_EXACT if variant.qk_f16 else MXFP4_E4M3_EXACT
    return dict(MX_SCALE_LO=lo, MX_SCALE_HI=hi)


def check_f16_decode_scales(span: tuple[int, int], variant: str) -> None:
    """Generation 1's word decodes (mx_decode >= 2) multiply by the block scale in fp16: E8M0 above 136
    overflows. ``span`` is mxfp4_scale_span's."""
    top = span[1]
    if top > MXFP4_F16_EXACT[1]:
        raise ValueError(f"variant {variant!r} decodes MXFP4 through fp16 and is exact for E8M0 scales <= "
                         f"{MXFP4_F16_EXACT[1]} (block amax < ~2**11); these inputs reach {top}: use an exact "
                         "variant such as 'v1_n32_w4_s2'")


class TritonDecodePlan:
    """A ready decode for one shape. ``run(data)`` is the lean call; ``outputs`` lists the buffers
    it writes (the harness poisons them). ``check_new_inputs(data)`` (None where the build checked
    nothing beyond mla.validate) repeats the build's checks of input values on another input set:
    mla.decode's per-call guard runs it on every input set the plan has not validated."""

    check_new_inputs = None

    def __init__(self, data, *, kv_format: str = "fp8", q_format: str = "bf16", variant: str | None = None,
                 num_splits: int | str | None = None, graph: bool | str = "auto", split_table: str | None = None,
                 fused_reduce: bool | None = None, balanced: bool | None = None,
                 partial_dtype: str | None = None, pdl: bool | str | None = None, coop_merge: bool | None = None,
                 warp_specialized: bool | None = None, kv_tma: bool | None = None, timeline: bool = False,
                 steal_helpers: float | None = None):
        q, kv_data, qo_indptr, kv_indptr, config = data
        if not isinstance(timeline, bool):
            raise ValueError(f"timeline must be True or False, got {timeline!r}")
        if warp_specialized not in (None, False):
            raise ValueError(f"warp_specialized takes None (the default call's rule) or False (never swap in the "
                             f"warp-specialized kernel: the rule's control), got {warp_specialized!r}")
        if kv_tma not in (None, False):
            raise ValueError(f"kv_tma takes None (the default call's rule) or False (never swap in the fp8 TMA-tile "
                             f"kernels: the rule's control), got {kv_tma!r}")
        # the default call chooses its reduce by the measured rule (fused_by_default); a named variant
        # or an explicit knob means exactly what it says
        reduce_by_rule = variant is None and fused_reduce is None and balanced is None and coop_merge is None
        if kv_format not in KV_FORMAT_CODE:
            raise ValueError(f"unknown kv_format {kv_format!r}; choose from {tuple(KV_FORMAT_CODE)}")
        if q_format not in Q_FORMAT_CODE:
            raise ValueError(f"unknown q_format {q_format!r}; choose from {tuple(Q_FORMAT_CODE)}")
        num_heads = int(config["num_heads"])
        if num_heads not in SUPPORTED_NUM_HEADS or q.shape[1] != num_heads:
            raise ValueError(f"num_heads must be one of {SUPPORTED_NUM_HEADS} and match q, got {num_heads} "
                             f"(q has {q.shape[1]})")
        if q.shape[-1] != QK_HEAD_DIM or q.dtype != torch.bfloat16 or q.stride(-1) != 1:
            raise ValueError(f"q must be (total_q, H, {QK_HEAD_DIM}) bf16 with unit last stride, got "
                             f"{tuple(q.shape)} {q.dtype}")
        self.kv_format, self.q_format = kv_format, q_format
        hopper_gluon = not interpreting() and gluon_unavailable_reason(q.device) is None
        # MXFP4: the scales' range decides the default and what the decodes admit (one pass, here only)
        mx_span = mxfp4_scale_span(kv_data["mxfp4"][1]) if kv_format == "mxfp4" else None
        ragged = bool(config.get("kv_lens"))  # (the default variant differs for ragged batches: HOPPER_RAGGED_DEFAULT)
        if variant is None and kv_format == "mxfp4":
            variant = default_variant(kv_format, q_format, mx_span, hopper_gluon=hopper_gluon, ragged=ragged)
        self.variant = get_variant(variant or default_variant(kv_format, q_format, hopper_gluon=hopper_gluon,
                                                              ragged=ragged))
        if kv_format == "mxfp4" and self.variant.block_n < 32:
            raise ValueError(f"variant {self.variant.name!r}: BLOCK_N {self.variant.block_n} with kv_format 'mxfp4' "
                             "computed wrong results on triton 3.6 / sm90 (H200 probe 2026-11-30); use BLOCK_N >= 32")
        if self.variant.dot_f16 and not (kv_format == "fp8" or (kv_format == "mxfp4" and self.variant.mx_decode >= 2)):
            raise ValueError(f"variant {self.variant.name!r} (fp16 dots) supports kv_format 'fp8' (and 'mxfp4' with "
                             f"mx_decode 2) only, got {kv_format!r}")
        if self.variant.family == "gluon":
            _check_gluon_request(self.variant, kv_format, q_format, q.device, partial_dtype, mx_span)
        if self.variant.family == "swapab":
            if kv_format not in ("fp8", "mxfp4") or q_format != "bf16":
                raise ValueError(f"variant {self.variant.name!r} (swap-AB, fp8 QK) takes kv_format 'fp8' or 'mxfp4' "
                                 f"with q_format 'bf16' (Q is quantized in-kernel as fp8 hi + lo); got "
                                 f"{kv_format!r} / {q_format!r}")
            if kv_format == "mxfp4":
                guard = swapab_scale_guard(self.variant)
                check_mxfp4_scales(mx_span, self.variant.name, (guard["MX_SCALE_LO"], guard["MX_SCALE_HI"]))
        elif kv_format == "mxfp4" and self.variant.mx_decode >= 2:
            # the fp16 scale multiply overflows past E8M0 136 (block amax > ~2**11): refuse (one read of
            # the scales) rather than return inf/NaN, here and on every input set the plan has not seen
            # (check_new_inputs). Below 104 only near-zero blocks lose precision (scale byte 0 stays exact).
            check_f16_decode_scales(mx_span, self.variant.name)
            self.check_new_inputs = self._check_new_scales
        # knobs: None = the variant's choice; True/False override it (sweepable from the bench CLI)
        for name, val in (("fused_reduce", fused_reduce), ("balanced", balanced), ("coop_merge", coop_merge)):
            if val is not None and not isinstance(val, bool):
                raise ValueError(f"{name} must be True, False or None, got {val!r}")
        if partial_dtype not in (None, "fp32", "bf16"):
            raise ValueError(f"partial_dtype must be 'fp32', 'bf16' or None, got {partial_dtype!r}")
        if graph not in (True, False, "auto"):
            raise ValueError(f"graph must be True, False or 'auto', got {graph!r}")
        pdl_off = pdl_unavailable_reason(q.device)
        if pdl_trigger(pdl) and pdl_off:
            raise ValueError(f"pdl={pdl!r} (the reduce by programmatic dependent launch) {pdl_off}")
        self.fused_reduce = self.variant.fused_reduce if fused_reduce is None else fused_reduce
        self.balanced = self.variant.balanced if balanced is None else balanced
        self.partial_bf16 = self.variant.partial_bf16 if partial_dtype is None else partial_dtype == "bf16"
        self.coop_merge = self.variant.coop_merge if coop_merge is None else coop_merge
        if self.coop_merge and (self.variant.family != "gluon" or self.variant.gluon_ws
                                or self.variant.gluon_warpgroups != 1 or not self.variant.gluon_epi_natural):
            raise ValueError(f"coop_merge=True (the splits merging in the split kernel) is implemented for the "
                             f"one-warpgroup generation-3 kernels (e.g. 'v147_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_cm'); "
                             f"variant {self.variant.name!r} is not one")
        if self.coop_merge and (self.fused_reduce or self.balanced):
            raise ValueError("coop_merge=True merges in every split's program; it excludes fused_reduce / balanced")
        if self.balanced and not self.fused_reduce:
            raise ValueError("balanced=True (the work-list schedule) needs fused_reduce=True: the separate reduce "
                             "kernels take one split count for every batch element")
        if self.partial_bf16 and not self.fused_reduce:
            raise ValueError("partial_dtype='bf16' is implemented for fused_reduce=True only")
        self.q_seq_len = int(config["q_seq_len"])
        self.batch_size = int(kv_indptr.numel()) - 1
        if q.shape[0] != self.batch_size * self.q_seq_len:
            raise ValueError(f"q has {q.shape[0]} rows, expected batch {self.batch_size} x q_seq_len {self.q_seq_len}")
        kv_lens = config.get("kv_lens")
        self.max_kv_len = int(max(kv_lens)) if kv_lens else int(config["kv_seq_len"])
        self.kv_lens = [int(n) for n in kv_lens] if kv_lens else [self.max_kv_len] * self.batch_size
        self.num_heads = num_heads
        self.sm_scale = float(config.get("sm_scale", SM_SCALE))
        self.device = q.device

        hp = heads_per_program(self.variant, num_heads, self.q_seq_len, kv_format)
        self.heads_per_prog = hp
        self.block_m = max(16, triton.next_power_of_2(self.q_seq_len * hp))
        self.num_head_groups = num_heads // hp
        self.num_splits = self._resolve_splits(num_splits, data, split_table)
        swap_name = None  # (the warp-specialized or TMA-tile kernel the default call swaps in)
        default_chain = reduce_by_rule and is_hopper_default(self.variant.name, kv_format)
        if num_splits == "kernel" and not default_chain:  # (the default chain below sets the same count itself)
            self.num_splits = kernel_rule_splits(self.variant, kv_format, self.kv_lens, self.num_splits,
                                                 self.num_head_groups, device_sm_count(self.device), ragged=ragged)
        if default_chain:
            swap_name, self.num_splits, swap_splits = default_kernel_choice(
                kv_format, self.kv_lens, self.num_splits, self.splits_by_heuristic, self.num_head_groups,
                device_sm_count(self.device), self.variant.block_n, ragged=ragged,
                warp_specialized=warp_specialized, kv_tma=kv_tma)
        if swap_name and ws_scales_fit(data, kv_format):
            self.variant = get_variant(swap_name)  # (the same head groups, tiles and checks)
            self.num_splits = swap_splits
        if self.coop_merge and self.num_splits > 1:
            self.num_splits = coop_num_splits(self.num_splits, self.batch_size, self.max_kv_len, self.num_head_groups,
                                              device_sm_count(self.device), self.variant.block_n,
                                              given=not self.splits_by_heuristic)
        # warp-specialized generation 3 (gluon_ws): each program's two consumers write a partial each, so
        # the partial buffers and the reduce count two splits per program (the grid keeps the programs)
        # (v170, gluon_ws_pair_merge: one, the consumers merged in shared memory)
        self.partials_per_program = 2 if self.variant.gluon_ws and not self.variant.gluon_ws_pair_merge else 1
        self.num_splits *= self.partials_per_program
        if self.variant.gluon_ws and (self.fused_reduce or self.balanced):
            raise ValueError(f"variant {self.variant.name!r} (warp-specialized) writes two partials per program for "
                             "the tile reduce: fused_reduce / balanced are not implemented for it")
        if self.variant.gluon_kv_tma and self.balanced:
            raise ValueError(f"variant {self.variant.name!r} loads tiles by TMA in token order over uniform splits: "
                             "balanced=True (the work list) is not implemented for it")
        if timeline and self.variant.family != "gluon":
            raise ValueError(f"timeline=True (the program timeline) is implemented in the generation-3 kernels "
                             f"(gluon_sm90.py); variant {self.variant.name!r} is family {self.variant.family!r}")
        if num_splits in (None, "auto", "kernel"):  # the work list's size: one wave (choose_num_splits' rule)
            target = max(1, (CTAS_PER_SM_TARGET * device_sm_count(self.device)) // self.num_head_groups)
        else:  # an explicit num_splits = the mean splits per element
            target = self.num_splits * self.batch_size
        if reduce_by_rule and (fused_by_default(self.variant, kv_format, self.num_splits, self.max_kv_len)
                               or balanced_by_default(self.variant, self.kv_lens, self.variant.block_n, target)):
            self.fused_reduce = self.balanced = True
        self.chunk_tokens = 0
        # UNIFORM_RANGES (v151 / v152): a uniform batch's ranges from this argument (the validated indptrs are
        # b x q_seq_len and b x kv_len: mla.validate); 0 (ragged, or the work list) loads the indptrs
        self.uniform_kv_len = (self.max_kv_len if self.variant.gluon_uniform_ranges and not kv_lens
                               and not self.balanced else 0)
        self.work = None
        if self.balanced:  # the schedule spreads the programs over the elements by length
            self.chunk_tokens, items = balanced_schedule(self.kv_lens, self.variant.block_n, target)
            self.num_splits = max(s for _, _, s in items)  # the partial buffer's split stride
            self.work_items = len(items)
            self.work = torch.tensor(items, dtype=torch.int32, device=self.device)

        total_q = q.shape[0]
        self.out = torch.empty((total_q, num_heads, V_HEAD_DIM), dtype=torch.bfloat16, device=self.device)
        if self.num_splits > 1:
            self.part_o = torch.empty((total_q, num_heads, self.num_splits, V_HEAD_DIM),
                                      dtype=torch.bfloat16 if self.partial_bf16 else torch.float32, device=self.device)
            self.part_lse = torch.empty((total_q, num_heads, self.num_splits), dtype=torch.float32, device=self.device)
        else:  # single pass: the kernel writes self.out; these pointers are never touched
            self.part_o = self.part_lse = self.out
        # fused reduce: one int32 per (batch element, head group), zero between calls (the merging
        # program resets its own)
        self.counters = torch.zeros(self.batch_size * self.num_head_groups, dtype=torch.int32, device=self.device)
        if self.work is None:
            self.work = self.counters  # never read without WORK_LIST
        self.grid = ((self.num_head_groups, self.work_items, 1) if self.balanced
                     else (self.num_head_groups, self.num_splits // self.partials_per_program, self.batch_size))
        self.reduce_hp = num_heads if num_heads <= 16 else 16
        self.reduce_grid = (total_q, num_heads // self.reduce_hp)
        if self.variant.tile_reduce:  # one (query, head, d-block) per program, all splits in one tile
            self.reduce_splits_p2 = max(2, triton.next_power_of_2(self.num_splits))
            self.reduce_block_d = reduce_block_d(self.reduce_splits_p2)
            self.reduce_grid = (total_q, num_heads, V_HEAD_DIM // self.reduce_block_d)
        common = dict(NUM_HEADS=num_heads, Q_SEQ_LEN=self.q_seq_len, HEADS_PER_PROG=hp, BLOCK_M=self.block_m,
                      BLOCK_N=self.variant.block_n, SINGLE_PASS=self.num_splits == 1,
                      KV_FORMAT=KV_FORMAT_CODE[kv_format], DOT_FP32=interpreting(), USE_PTX=uses_ptx(self.device),
                      WORK_LIST=self.balanced and self.num_splits > 1,
                      FUSED_REDUCE=self.fused_reduce and self.num_splits > 1, PARTIAL_BF16=self.partial_bf16,
                      num_warps=self.variant.num_warps, num_stages=self.variant.num_stages)
        if self.variant.family == "gluon":  # generation 3 (gluon_sm90.py): same arguments, same partials
            self.kernel = (mla_decode_gluon_sm90_steal_kernel if self.variant.gluon_steal
                           else mla_decode_gluon_sm90_ws_kernel if self.variant.gluon_ws
                           else mla_decode_gluon_sm90_kernel)
            self.constexprs = {k: common[k] for k in ("NUM_HEADS", "Q_SEQ_LEN", "HEADS_PER_PROG", "BLOCK_M", "BLOCK_N",
                                                      "SINGLE_PASS", "KV_FORMAT", "FUSED_REDUCE", "WORK_LIST",
                                                      "num_warps")}
            self.constexprs.update(gluon_constexprs(self.variant), **gluon_launch_options(self.variant))
            if timeline:
                self.constexprs["TIMELINE"] = True
            if self.coop_merge:
                coop, launch = coop_constexprs(self.num_splits)
                self.constexprs.update(coop, **launch)
        elif self.variant.family == "swapab":  # generation 2 (swapab.py): same arguments, same partials
            self.kernel = mla_decode_swapab_kernel
            self.constexprs = dict(common, Q_TERMS=self.variant.q_terms, PV_SWAP=self.variant.pv_swap,
                                   PV_F16=self.variant.pv_f16, V_PATH=self.variant.v_path,
                                   LAT_CHUNKS=self.variant.lat_chunks, QK_F16=self.variant.qk_f16,
                                   MX_PAIRS=self.variant.mx_decode == 3,
                                   # later calls' MXFP4 blocks outside the build's checked range decode to NaN
                                   **swapab_scale_guard(self.variant, kv_format))
        else:
            self.kernel = mla_decode_split_kernel
            self.constexprs = dict(common, Q_FORMAT=Q_FORMAT_CODE[q_format], DOT_F16=self.variant.dot_f16,
                                   MX_DECODE=self.variant.mx_decode, PREFETCH=self.variant.prefetch)
        if self.balanced and self.num_splits == 1:  # every element in one split: the plain single pass
            self.grid = (self.num_head_groups, 1, self.batch_size)
        self.steal_helper_programs = 0  # (the grid's helper programs; steal_helpers= is per owner)
        self.steal_words = self.steal_part = None
        if steal_helpers is not None and not self.variant.gluon_steal:
            raise ValueError(f"steal_helpers applies to the work-stealing variants (gluon_steal, e.g. "
                             f"'v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_st'); {self.variant.name!r} is not one")
        if self.variant.gluon_steal:  # v154 (gluon_steal.py): owners, then helper rows past the batch
            self._plan_steal(bool(kv_lens), self.variant.gluon_steal_helpers if steal_helpers is None
                             else steal_helpers)
        # the program timeline (an instrument): a row of TIMELINE_COLUMNS int64 per program, -1 where the
        # kernel wrote nothing (mla.analysis.timeline reads it); None when off, and the kernels then get one
        # unused row (a real, non-null pointer: the launcher checks every pointer it is given)
        programs = self.grid[0] * self.grid[1] * self.grid[2] if timeline else 1
        rows = torch.full((programs, TIMELINE_COLUMNS), -1, dtype=torch.int64, device=self.device)
        self.timeline = rows if timeline else None
        self._timeline_rows = rows
        can_graph = self.device.type == "cuda" and not interpreting()
        self.graph_mode = (graph if graph in (True, "auto") else None) if can_graph else None
        self.graph = self.graph_mode is not None
        self._graphs: dict[tuple, torch.cuda.CUDAGraph] = {}
        self._auto = GraphAutoPolicy()
        self._auto.graphs = self._graphs
        self.call_paths = {"launch": 0, "capture": 0, "replay": 0}  # what run() did (the device script reports it)
        self.outputs = [self.out]
        self.launches = 1 + (self.num_splits > 1 and not self.fused_reduce and not self.coop_merge)
        # PDL only where a reduce follows the split kernel (None: the default where the device has it)
        trigger = pdl_trigger(pdl) if pdl is not None else None if pdl_off else pdl_trigger(PDL_DEFAULT)
        self.pdl = (trigger if self.launches > 1 else None) or False  # what the config records
        if self.pdl:
            self.constexprs["LAUNCH_DEPENDENTS"] = PDL_TRIGGERS[self.pdl]
        reduce_pdl = dict(PDL_WAIT=True, launch_pdl=True) if self.pdl else {}
        # plain launches skip the JIT's per-call dispatch (direct.py): the fresh-input path of the default call
        self.direct = DirectLaunch(self.kernel, self.grid, self.constexprs)
        if self.variant.tile_reduce:
            self.direct_reduce = DirectLaunch(mla_decode_reduce_tile_kernel, self.reduce_grid, dict(
                NUM_HEADS=self.num_heads, SPLITS_P2=self.reduce_splits_p2, BLOCK_D=self.reduce_block_d,
                EXACT_RNE=interpreting(), num_warps=4, **reduce_pdl))
        else:
            self.direct_reduce = DirectLaunch(mla_decode_reduce_kernel, self.reduce_grid, dict(
                NUM_HEADS=self.num_heads, SPLITS_P2=MAX_SPLITS, HEADS_PER_PROG=self.reduce_hp,
                EXACT_RNE=interpreting(), num_warps=4, **reduce_pdl))
        self.config = dict(variant=self.variant.name, num_splits=self.num_splits, heads_per_prog=hp,
                           block_n=self.variant.block_n, num_warps=self.variant.num_warps,
                           num_stages=self.variant.num_stages, graph=self.graph_mode or False,
                           launches=self.launches, fused_reduce=self.fused_reduce, balanced=self.balanced,
                           coop_merge=self.coop_merge and self.num_splits > 1,
                           partial_dtype="bf16" if self.partial_bf16 else "fp32", pdl=self.pdl,
                           work_items=self.grid[1] * self.grid[2], chunk_tokens=self.chunk_tokens)
        if self.steal_helper_programs:
            self.config["steal_helper_programs"] = self.steal_helper_programs

    def _plan_steal(self, ragged: bool, helpers: float) -> None:
        """The work-stealing kernel's grid, words and partial slots (steal_protocol.py has the word)."""
        v = self.variant
        if ragged:
            raise ValueError(f"variant {v.name!r} (work stealing) takes uniform batches only: its helpers derive "
                             "every range's tiles from the one KV length; use v153 for a ragged batch")
        if self.fused_reduce or self.balanced or self.coop_merge:
            raise ValueError(f"variant {v.name!r} (work stealing) merges stolen ranges itself and leaves the splits "
                             "to the tile reduce: fused_reduce / balanced / coop_merge do not apply")
        if isinstance(helpers, bool) or not (isinstance(helpers, (int, float)) and helpers > 0):
            raise ValueError(f"steal_helpers must be a number > 0 (helper programs per owner; a helper row at the "
                             f"least), got {helpers!r}")
        hg, splits = self.num_head_groups, self.num_splits
        ranges = hg * splits * self.batch_size
        tiles = triton.cdiv(triton.cdiv(self.max_kv_len, splits), v.block_n)  # (a range's, the kernel's chunk)
        check_steal_plan(ranges, tiles, v.gluon_steal_chunk, v.gluon_steal_slots, v.gluon_steal_max)
        rows = max(1, math.ceil(ranges * helpers / (hg * splits)))
        self.grid = (hg, splits, self.batch_size + rows)
        self.steal_helper_programs = rows * hg * splits
        # a word per range, a done counter per range, the exit counter, the helpers' start flag (STEAL_WAIT): zero
        # between calls (the last program of every launch zeroes them)
        self.steal_words = torch.zeros(2 * ranges + 2, dtype=torch.int32, device=self.device)
        slots = ranges * (1 + v.gluon_steal_slots) * self.block_m
        self.steal_part = torch.empty(slots * (V_HEAD_DIM + 1), dtype=torch.float32, device=self.device)
        self.constexprs["STEAL_RANGES_P2"] = max(128, triton.next_power_of_2(ranges))

    # -- split choice ---------------------------------------------------------------------------
    def _resolve_splits(self, num_splits, data, split_table) -> int:
        """The split count; sets ``splits_by_heuristic`` (neither given nor from the split table)."""
        self.splits_by_heuristic = False
        if num_splits is None or num_splits in ("auto", "kernel"):
            if split_table and num_splits != "kernel":  # ("kernel" is a rule: no saved race decides it)
                hit = lookup_split_decision(split_table, self._decision_key())
                if hit is not None:
                    return hit
            self.splits_by_heuristic = True
            return choose_num_splits(self.batch_size, self.max_kv_len, self.num_head_groups,
                                     device_sm_count(self.device), self.variant.block_n,
                                     MIN_SPLIT_TOKENS_TILE_REDUCE if self.variant.tile_reduce or self.fused_reduce
                                     else MIN_SPLIT_TOKENS)
        if num_splits == "race":
            return race_num_splits(data, kv_format=self.kv_format, q_format=self.q_format,
                                   variant=self.variant.name, save_to=split_table)[0]
        if isinstance(num_splits, bool) or not isinstance(num_splits, int) or not 1 <= num_splits <= MAX_SPLITS:
            raise ValueError(f"num_splits must be an int in [1, {MAX_SPLITS}], 'auto', 'kernel' or 'race'; got "
                             f"{num_splits!r}")
        return num_splits

    def _check_new_scales(self, data) -> None:
        """The build's MXFP4 scale limit on another input set (one host read of the scales)."""
        check_f16_decode_scales(mxfp4_scale_span(data[1]["mxfp4"][1]), self.variant.name)

    def _decision_key(self) -> dict:
        return dict(device=_device_name(self.device), kv_format=self.kv_format, q_format=self.q_format,
                    variant=self.variant.name, batch_size=self.batch_size, kv_seq_len=self.max_kv_len,
                    q_seq_len=self.q_seq_len, num_heads=self.num_heads)

    # -- the call -----------------------------------------------------------------------------
    def launch(self, data) -> torch.Tensor:
        """Launch the kernel(s) on ``data`` directly (no graph)."""
        return self._launch_args(self._args(data))

    def _args(self, data) -> tuple:
        """The split kernel's positional arguments for ``data`` (validated)."""
        q, _, qo_indptr, kv_indptr, _ = data
        kv, aux, stride_kv, stride_sc = _kv_tensors(data, self.kv_format)
        words = self.variant.mx_decode >= 2 or (self.variant.family == "swapab" and (self.kv_format == "mxfp4" or self.variant.v_path))
        if words and (kv.data_ptr() % 4 or stride_kv % 4 or (
                self.kv_format == "mxfp4" and (aux.data_ptr() % 4 or stride_sc % 4 or stride_sc < 20))):
            # word-decode variants read the KV rows (and the MXFP4 scale rows, bytes 0..19) as int32
            raise ValueError(f"variant {self.variant.name!r} reads KV / scale rows as int32 words; needs 4-byte "
                             f"aligned bases and row strides (scale rows >= 20 bytes); got KV ptr % 4 = "
                             f"{kv.data_ptr() % 4}, stride {stride_kv}; scales ptr % 4 = {aux.data_ptr() % 4}, "
                             f"stride {stride_sc}")
        if self.variant.gluon_ws_halves and not _scale_rows_copyable(aux, stride_sc):
            # WS_HALVES copies each token's scale bytes 8 P .. 8 P + 7 and 16..19 by 4-byte cp.async
            raise ValueError(f"variant {self.variant.name!r} copies MXFP4 scale rows in 4-byte pieces (bytes 0..19); "
                             f"needs a 4-byte aligned scale base and row stride >= 20; got ptr % 4 = "
                             f"{aux.data_ptr() % 4}, stride {stride_sc}")
        if self.variant.family == "gluon" and (kv.data_ptr() % 16 or stride_kv % 16):
            # generation 3 copies the cache by 16-byte cp.async into swizzled shared memory
            raise ValueError(f"variant {self.variant.name!r} copies KV rows in 16-byte pieces; needs a 16-byte aligned "
                             f"base and row stride; got ptr % 16 = {kv.data_ptr() % 16}, stride {stride_kv}")
        out = self.out
        args = (q, kv, aux, qo_indptr, kv_indptr, self.part_o, self.part_lse, out,
                q.stride(0), q.stride(1), stride_kv, stride_sc, out.stride(0), out.stride(1), self.sm_scale,
                # (the warp-specialized kernel counts two partials a program: its ranges split over num_splits / 2)
                self.num_splits * 2 // self.partials_per_program if self.variant.gluon_ws else self.num_splits)
        args += (self.work, self.counters, self.chunk_tokens)  # the work list / fused reduce arguments
        if self.variant.family == "gluon" and not self.variant.gluon_ws:  # + a uniform batch's KV length (or 0)
            args += (self.uniform_kv_len,)
        if self.variant.family == "gluon" and not self.variant.gluon_ws and not self.variant.gluon_steal:
            # + the fp8 cache's TMA descriptor (KV_TMA, v168+) or None
            args += (self._tma_descriptors(kv, stride_kv)[0] if self.variant.gluon_kv_tma else None,)
        if self.variant.gluon_steal:  # + the words and partial slots of work stealing, the batch (owners' rows)
            args += (self.steal_words, self.steal_part, self.batch_size)
        if self.variant.gluon_ws:  # + the cache's TMA descriptors (WS_TMA) or None
            args += self._tma_descriptors(kv, stride_kv) if self.variant.gluon_ws_tma else (None, None)
        if self.variant.family == "gluon":  # + the program timeline's rows (unused without TIMELINE)
            args += (self._timeline_rows,)
        return args

    def _tma_descriptors(self, kv, stride_kv) -> tuple:
        """WS_TMA's descriptors - the packed MXFP4 cache's two, or the fp8 cache's one and None (v149, and KV_TMA's
        v168+) - rebuilt only when the cache's address or shape changes."""
        key = (kv.data_ptr(), kv.shape[0], stride_kv)
        if getattr(self, "_tma_key", None) != key:
            build = ws_fp8_tma_descriptors if self.kv_format == "fp8" else ws_tma_descriptors
            self._tma_key, self._tma = key, build(kv, stride_kv)
        return self._tma

    def _launch_args(self, args: tuple) -> torch.Tensor:
        out = self.out
        self.direct(*args)
        if self.launches > 1:
            self.direct_reduce(self.part_o, self.part_lse, out, out.stride(0), out.stride(1), self.num_splits)
        return out

    def _ptr_key(self, data) -> tuple:
        """Everything a captured graph bakes in from the inputs: addresses and strides."""
        q, kv_data, qo_indptr, kv_indptr, _ = data
        kv, aux, stride_kv, stride_sc = _kv_tensors(data, self.kv_format)
        return (q.data_ptr(), kv.data_ptr(), aux.data_ptr(), qo_indptr.data_ptr(), kv_indptr.data_ptr(),
                q.stride(0), q.stride(1), stride_kv, stride_sc)

    def _capture(self, data, key, warm: bool = True):
        if warm:
            stream = torch.cuda.Stream(self.device)
            stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(stream):
                self.launch(data)  # compile + warm up outside the capture
            torch.cuda.current_stream(self.device).wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.launch(data)
        self._graphs[key] = g
        return g

    def run(self, data) -> torch.Tensor:
        if self.graph_mode is None or torch.cuda.is_current_stream_capturing():
            # inside someone else's capture (the harness's kernel timer) launch plainly: the outer
            # graph then holds the kernels themselves
            self.call_paths["launch"] += 1
            return self.launch(data)
        key = self._ptr_key(data)
        if self.graph_mode == "auto":
            action = self._auto.decide(key)
        else:  # graph=True: capture on first sight while graphs pay (at most MAX_GRAPHS address sets)
            action = "replay" if key in self._graphs else "capture" if len(self._graphs) < MAX_GRAPHS else "launch"
        self.call_paths[action] += 1
        if action == "launch":
            return self.launch(data)
        # graph="auto" captures a key the previous call launched (compiled) already: no warm-up launch
        g = self._graphs[key] if action == "replay" else self._capture(data, key, warm=self.graph_mode is True)
        g.replay()
        return self.out

    def replay_for(self, data):
        """The direct replay of ``data``'s CUDA graph, if this plan holds one (else None): a zero-argument
        call that books itself as ``run`` does (call_paths, the graph policy's recent keys) and returns
        ``self.out``, or returns None inside a stream capture (the caller then calls ``run``, which
        launches plainly there). mla.decode's memo of its previous call uses it."""
        if self.graph_mode is None:
            return None
        key = self._ptr_key(data)
        g = self._graphs.get(key)
        if g is None:
            return None
        out, paths, capturing = self.out, self.call_paths, torch.cuda.is_current_stream_capturing
        recent = self._auto.recent if self.graph_mode == "auto" else None

        def replay():
            if capturing():
                return None
            paths["replay"] += 1
            if recent is not None:
                recent.append(key)
            g.replay()
            return out

        return replay

    def bind(self, data):
        """The lowest-overhead call for these tensors: a zero-argument callable that recomputes
        ``self.out`` from their current contents. On CUDA (graphs allowed) it is the captured graph's
        own ``replay`` (no Python of ours at all); else the launch with its argument tuple built
        now. Valid while the tensors stay at these addresses."""
        if self.graph_mode is not None and not torch.cuda.is_current_stream_capturing():
            key = self._ptr_key(data)
            g = self._graphs.get(key) or self._capture(data, key)
            return g.replay
        args = self._args(data)
        return lambda: self._launch_args(args)

    __call__ = run


# -- measured split race -------------------------------------------------------------------------
SPLIT_TABLE_FIELDS = ("device", "kv_format", "q_format", "variant", "batch_size", "kv_seq_len", "q_seq_len",
                      "num_heads", "num_splits", "us", "candidates_us", "utc")


def _device_name(device) -> str:
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(device)
    return "cpu"


def race_num_splits(data, *, kv_format: str, q_format: str = "bf16", variant: str | None = None,
                    candidates=(1, 2, 4, 8, 16, 32), reps: int = 20, save_to: str | None = None):
    """Time each candidate num_splits on ``data`` (CUDA events, median of ``reps`` warm graph-free
    calls) and return ``(best, {splits: us})``; with ``save_to`` append the decision to that CSV
    (e.g. ``data/measured/h200/probe/triton-split-decisions.csv``) for ``split_table=`` lookups."""
    if data[0].device.type != "cuda":
        raise ValueError("race_num_splits needs CUDA inputs (it times the kernels)")
    max_len = int(max(data[4]["kv_lens"])) if data[4].get("kv_lens") else int(data[4]["kv_seq_len"])
    times = {}
    for s in candidates:
        if s > max(1, max_len // 16):
            continue
        p = TritonDecodePlan(data, kv_format=kv_format, q_format=q_format, variant=variant, num_splits=s)
        p.launch(data)
        torch.cuda.synchronize()
        samples = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            p.launch(data)
            b.record()
            b.synchronize()
            samples.append(a.elapsed_time(b) * 1e3)
        times[s] = sorted(samples)[len(samples) // 2]
    best = min(times, key=times.get)
    if save_to:
        probe = TritonDecodePlan(data, kv_format=kv_format, q_format=q_format, variant=variant, num_splits=best)
        row = dict(probe._decision_key(), num_splits=best, us=round(times[best], 2),
                   candidates_us=";".join(f"{k}:{v:.1f}" for k, v in times.items()),
                   utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        path = Path(save_to)
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        with path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=SPLIT_TABLE_FIELDS)
            if new:
                w.writeheader()
            w.writerow(row)
    return best, times


def lookup_split_decision(path: str, key: dict) -> int | None:
    """The last saved race decision matching ``key`` in the CSV at ``path`` (None if absent)."""
    p = Path(path)
    if not p.exists():
        return None
    hit = None
    with p.open() as f:
        for row in csv.DictReader(f):
            if all(str(row.get(k)) == str(v) for k, v in key.items()):
                hit = int(row["num_splits"])
    return hit
