"""Small, exact illustrations for the primer notebook (CPU, fp32/fp64 torch, no kernels).

:func:`split_k_demo` is split-K ("flash-decoding") done by hand: cut each batch element's KV into
``num_splits`` contiguous chunks, attend to each chunk separately (a partial output normalised
within its chunk, plus the chunk's log-sum-exp), then merge the partials with their LSE weights.
The merged result equals attention over the whole KV: the merge is exact algebra, not an
approximation; only floating-point rounding differs.
"""

from __future__ import annotations

import math

import torch

from .. import problem as P
from ..inputs import validate_data
from ..reference import dequantize_kv, reference


def attend_chunk(q: torch.Tensor, kv: torch.Tensor, sm_scale: float = P.SM_SCALE):
    """q (H, 576), kv (n, 576) -> (o (H, 512) normalised within the chunk, lse (H,))."""
    s = (q @ kv.T) * sm_scale  # (H, n)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[:, None])
    return p @ kv[:, : P.V_HEAD_DIM], lse


def merge_partials(outs: torch.Tensor, lses: torch.Tensor):
    """outs (S, H, 512), lses (S, H) -> (o (H, 512), lse (H,)): o = sum_i exp(lse_i - lse) o_i."""
    lse = torch.logsumexp(lses, dim=0)
    w = torch.exp(lses - lse[None])  # (S, H), sums to 1 over S
    return (w[..., None] * outs).sum(0), lse


def split_bounds(kv_len: int, num_splits: int) -> list[tuple[int, int]]:
    """Contiguous, nearly equal chunks covering [0, kv_len); empty chunks are dropped."""
    chunk = math.ceil(kv_len / num_splits)
    return [(a, min(a + chunk, kv_len)) for a in range(0, kv_len, chunk)]


def split_k_demo(data, num_splits: int, *, kv_format: str = "bf16", dtype=torch.float64) -> dict:
    """Split-K by hand on q_seq_len == 1 inputs; compares with :func:`mla.reference`.

    Returns ``bounds`` (per batch element), ``partial_out`` / ``partial_lse`` of batch element 0
    (``(S, H, 512)`` / ``(S, H)``), ``merged`` and ``reference`` (``(total_q, H, 512)``), ``weights``
    (batch element 0's merge weights ``(S, H)``) and ``max_abs_diff`` (merged vs reference)."""
    kv_lens = validate_data(data, kv_format)
    q, kv_data, _, _, config = data
    if int(config["q_seq_len"]) != 1:
        raise ValueError("split_k_demo shows q_seq_len == 1 decode; use a case with one query token")
    sm_scale = float(config.get("sm_scale", P.SM_SCALE))
    kv = dequantize_kv(kv_data, kv_format, dtype)
    qf = q.to(dtype)
    merged = torch.empty((len(kv_lens), q.shape[1], P.V_HEAD_DIM), dtype=dtype)
    start, first = 0, None
    all_bounds = []
    for b, n in enumerate(kv_lens):
        bounds = split_bounds(n, num_splits)
        all_bounds.append(bounds)
        parts = [attend_chunk(qf[b], kv[start + a:start + e], sm_scale) for a, e in bounds]
        outs = torch.stack([o for o, _ in parts])
        lses = torch.stack([l for _, l in parts])
        merged[b], _ = merge_partials(outs, lses)
        if b == 0:
            lse_all = torch.logsumexp(lses, 0)
            first = dict(partial_out=outs, partial_lse=lses, weights=torch.exp(lses - lse_all[None]))
        start += n
    ref = reference(data, kv_format=kv_format, dtype=dtype)
    return dict(bounds=all_bounds, merged=merged, reference=ref,
                max_abs_diff=float((merged - ref).abs().max()), **first)


def shape_walkthrough(data) -> list[tuple[str, tuple, str]]:
    """(name, shape, what it is) for each tensor of one absorbed-MLA decode, in order."""
    q, kv_data, qo, kvp, config = data
    bs, h, n = config["batch_size"], config["num_heads"], config["kv_seq_len"]
    s = config["q_seq_len"]
    return [
        ("q", tuple(q.shape), "total_q = batch x q_seq_len queries, H heads, 576 = 512 latent + 64 rope"),
        ("kv (bf16)", tuple(kv_data["bf16"].shape), "total_kv tokens, ONE latent head shared by all H heads"),
        ("kv (fp8)", tuple(kv_data["fp8"][0].shape), "same rows, 1 byte each + one fp32 scale for the tensor"),
        ("kv (mxfp4 packed)", tuple(kv_data["mxfp4"][0].shape), "two E2M1 nibbles per byte"),
        ("kv (mxfp4 scales)", tuple(kv_data["mxfp4"][1].shape), "one E8M0 byte per 32 dims: 18 used, padded to 24"),
        ("K = kv[..., :576]", (n, P.QK_HEAD_DIM), "per batch element: every dim is a key dim"),
        ("V = kv[..., :512]", (n, P.V_HEAD_DIM), "the latent dims of the same rows: no separate V read"),
        ("scores = q K^T * sm_scale", (bs, s, h, n), f"sm_scale = 1/sqrt(576) = {P.SM_SCALE:.5f}"),
        ("out = softmax(scores) V", (bs * s, h, P.V_HEAD_DIM), "bf16 output, 512 dims per head"),
        ("qo_indptr / kv_indptr", (tuple(qo.shape), tuple(kvp.shape)), "packed-batch offsets (int32)"),
    ]


# --- weight absorption ---------------------------------------------------------------------------
NOPE_DIM = 128  # DeepSeek-R1's per-head "no position" query/key width before absorption (qk_nope_head_dim)


def absorption_check(num_heads: int = 4, kv_len: int = 50, seed: int = 0) -> dict:
    """Weight absorption, numerically (fp64): naive MLA (decompress every KV row into per-head
    k_nope = W_UK c and v = W_UV c) against the absorbed form (q_lat = W_UK^T q_nope, attend over
    the latent c itself: keys [c, k_rope] of width 512 + 64 = 576, values c (the first 512 of the
    same row), then o = W_UV o_lat). Returns both outputs' max difference and the widths."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    c, k_rope = r(kv_len, P.V_HEAD_DIM), r(kv_len, P.QK_ROPE_HEAD_DIM)  # the cached row: latent + shared rope key
    q_nope, q_rope = r(num_heads, NOPE_DIM), r(num_heads, P.QK_ROPE_HEAD_DIM)
    w_uk, w_uv = r(num_heads, NOPE_DIM, P.V_HEAD_DIM) / 23, r(num_heads, NOPE_DIM, P.V_HEAD_DIM) / 23
    scale = 1 / math.sqrt(NOPE_DIM + P.QK_ROPE_HEAD_DIM)
    k_nope = torch.einsum("hdl,nl->hnd", w_uk, c)  # naive: (H, n, 128) per head
    s_naive = torch.einsum("hd,hnd->hn", q_nope, k_nope) + q_rope @ k_rope.T
    v = torch.einsum("hdl,nl->hnd", w_uv, c)  # naive: per-head values (H, n, 128)
    o_naive = torch.einsum("hn,hnd->hd", torch.softmax(s_naive * scale, -1), v)
    q_abs = torch.cat([torch.einsum("hd,hdl->hl", q_nope, w_uk), q_rope], -1)  # (H, 576)
    kv = torch.cat([c, k_rope], -1)  # (n, 576): the one cached row
    o_lat = torch.softmax((q_abs @ kv.T) * scale, -1) @ kv[:, : P.V_HEAD_DIM]  # (H, 512)
    o_abs = torch.einsum("hl,hdl->hd", o_lat, w_uv)
    return dict(max_abs_diff=float((o_naive - o_abs).abs().max()), q_width=q_abs.shape[-1], v_width=o_lat.shape[-1],
                naive_bytes_per_token_per_head=2 * 2 * NOPE_DIM, absorbed_bytes_per_token=2 * kv.shape[-1])


# --- split-K with a skewed softmax ------------------------------------------------------------------
def skewed_input(kv_len: int = 1000, focus: tuple[int, int] = (760, 780), strength: float = 0.16, seed: int = 1):
    """One batch element whose keys in ``focus`` point along the heads' mean query: the softmax mass
    piles up there, so the LSE merge weights are far from the chunks' share of tokens."""
    import mla

    data = mla.generate_input(1, 1, kv_len, seed=seed)
    q, kv_data, qo, kvp, config = data
    kv = kv_data["bf16"].float()
    qm = q.float().mean(dim=(0, 1))
    kv[focus[0]:focus[1], 0] += strength * qm / qm.norm() * math.sqrt(P.QK_HEAD_DIM) * 4
    kv = kv.bfloat16()
    from ..quant import quantize_fp8, quantize_mxfp4

    kv_fp8, s = quantize_fp8(kv)
    packed, sc = quantize_mxfp4(kv.reshape(kv_len, P.QK_HEAD_DIM))
    pad = torch.zeros_like(kv_data["mxfp4"][1])
    pad[:, : sc.shape[1]] = sc
    return (q, {"bf16": kv, "fp8": (kv_fp8, s), "mxfp4": (packed, pad)}, qo, kvp, config)


# --- MXFP4 worked example ---------------------------------------------------------------------------
def mxfp4_block_walkthrough(block: torch.Tensor) -> tuple["pd.DataFrame", dict]:
    """One 32-element block through mla.quant's MXFP4 encoder, step by step: per element the input,
    x / 2**e, the E2M1 value it rounds to, its 4-bit code and the decoded value; plus the block's
    amax, the unbiased exponent e (aiter's "even" rule), the E8M0 byte, and the 17 bytes it takes
    (16 of nibbles, 1 scale) against 64 in bf16. The codes are the encoder's own (checked)."""
    import pandas as pd

    from .. import quant

    x = block.float().reshape(-1)
    if x.numel() != quant.MXFP4_BLOCK:
        raise ValueError(f"an MXFP4 block has {quant.MXFP4_BLOCK} elements, got {x.numel()}")
    packed, scales = quant.quantize_mxfp4(x[None])
    codes = torch.stack([packed[0] & 0xF, packed[0] >> 4], -1).reshape(-1)
    e = int(scales[0, 0]) - quant.E8M0_BIAS
    deq = quant.dequantize_mxfp4(packed, scales)[0]
    amax = float(x.abs().max())
    tab = pd.DataFrame(dict(x=x.numpy(), x_over_scale=(x / 2.0 ** e).numpy(), e2m1=quant.e2m1_to_float(codes).numpy(),
                            code=[f"{int(c):04b}" for c in codes], decoded=deq.numpy()))
    mant = amax / 2.0 ** math.floor(math.log2(amax)) if amax > 0 else 0.0
    info = dict(amax=amax, amax_mantissa=mant, exponent=e, scale=2.0 ** e, e8m0_byte=int(scales[0, 0]),
                rounds_up=mant >= 1.75, floor_rule_exponent=math.floor(math.log2(amax)) - 2 if amax > 0 else None,
                packed_hex=packed[0].numpy().tobytes().hex(" "), bytes_mxfp4=packed.shape[1] + 1, bytes_bf16=2 * x.numel())
    return tab, info


# --- Little's law: bytes in flight ------------------------------------------------------------------
def littles_law(total_bytes, bandwidth_gbs: float, latency_us: float, fixed_us: float = 0.0):
    """A pipe model of one kernel: time = fixed + latency + bytes / bandwidth (the first byte
    arrives after one memory latency; then the pipe streams at ``bandwidth`` only if enough bytes
    are in flight: bandwidth x latency, Little's law). Returns (time_us, % of bandwidth achieved)."""
    import numpy as np

    b = np.asarray(total_bytes, dtype=float)
    stream_us = b / (bandwidth_gbs * 1e3)
    t = fixed_us + latency_us + stream_us
    return t, 100 * stream_us / t


def bytes_in_flight(ctas: int, stages: int, block_n: int, kv_format: str) -> float:
    """KV bytes a launch keeps in flight: every CTA has ``stages - 1`` tiles of ``block_n`` tokens
    requested ahead of the one it computes on."""
    return ctas * max(1, stages - 1) * block_n * P.KV_BYTES_PER_TOKEN[kv_format]


# --- the explorer: case and splits -> bytes, floors, CTAs, partial traffic ----------------------------
def explore(case: str = "bs4-kv8192-q1-h16", num_splits: int | None = None, kv_format: str = "mxfp4",
            bandwidth_gbs: float | None = None, num_sms: int = 132, heads_per_program: int = 16,
            rule: str = "portable"):
    """What one (case, num_splits, KV format) costs before any kernel runs: KV and partial bytes,
    the memory floor with and without the partials, CTAs and CTAs per SM. ``num_splits=None`` takes
    the count a default call picks (where triton imports): ``rule="portable"`` the portable heuristic's
    (ROCm / gfx950, the interpreter, bf16 everywhere), ``rule="sm90"`` the sm90 default call's
    (``measured.sm90_default_call``: one program an SM on short splits, the warp-specialized count on long
    programs; its partials assume one per program). A one-row DataFrame."""
    import pandas as pd

    from . import measured, roofline

    if rule not in ("portable", "sm90"):
        raise ValueError(f"rule must be 'portable' or 'sm90', got {rule!r}")
    c = P.case_from_name(case)
    if num_splits is None:
        if rule == "sm90":
            num_splits = (measured.sm90_default_call(case, kv_format, num_sms) or {}).get("splits") or 1
        else:
            num_splits = measured.heuristic_splits(case, None, kv_format, num_sms) or 1
    if not 1 <= int(num_splits) <= 64:
        raise ValueError(f"num_splits must be in [1, 64], got {num_splits}")
    bw = bandwidth_gbs or roofline.get_device("h200").hbm_gbs
    queries = c.batch_size * c.q_seq_len
    partial = 0 if num_splits == 1 else 2 * queries * c.num_heads * num_splits * (P.V_HEAD_DIM + 1) * 4  # fp32, written + read
    io = P.io_bytes(c, kv_format)
    ctas = c.batch_size * (c.num_heads // heads_per_program) * int(num_splits)
    return pd.DataFrame([dict(case=case, kv_format=kv_format, num_splits=int(num_splits), io_MB=io / 1e6,
                              partial_MB=partial / 1e6, partial_share=partial / (io + partial),
                              mem_floor_us=io / (bw * 1e3), floor_with_partials_us=(io + partial) / (bw * 1e3),
                              ctas=ctas, ctas_per_sm=ctas / num_sms,
                              tokens_per_split=math.ceil(c.kv_seq_len / int(num_splits)), bandwidth_gbs=bw)])
