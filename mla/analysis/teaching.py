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
