"""The trusted reference: plain attention in fp32 (or fp64) over each batch element's KV segment.

    scores = (q . K^T) * sm_scale        K = kv[:, :576]   (all dims, latent + rope)
    out    = softmax(scores) . V         V = kv[:, :512]   (the latent dims of the same rows)

``kv_format`` / ``q_format`` first pass KV / Q through that format (dequantized), which is how the
accuracy notebook separates quantization error from kernel error: a kernel on fp8 KV should match
``reference(data, kv_format="fp8")`` tightly and ``reference(data)`` (the bf16 truth) loosely.
"""

from __future__ import annotations

import torch

from . import problem as P
from .inputs import check_fp8_scale, validate_data
from .quant import dequantize_fp8, dequantize_mxfp4, fake_quant


def dequantize_kv(kv_data, kv_format: str, dtype=torch.float32) -> torch.Tensor:
    """The KV cache of one format as ``(total_kv, 576)`` in ``dtype``."""
    if kv_format == "bf16":
        kv = kv_data["bf16"].to(dtype)
    elif kv_format == "fp8":
        buf, scale = kv_data["fp8"]
        kv = dequantize_fp8(buf, scale, dtype=dtype)
    elif kv_format == "mxfp4":
        packed, scales = kv_data["mxfp4"]
        kv = dequantize_mxfp4(packed.reshape(packed.shape[0], -1), scales, dtype=dtype)
    else:
        raise ValueError(f"unknown kv_format {kv_format!r}; choose from {P.KV_FORMATS}")
    return kv.reshape(-1, P.QK_HEAD_DIM)


def decode_causal_mask(q_seq_len: int, kv_len: int, device) -> torch.Tensor:
    """(s, kv_len) bool, True where query i may attend: the first kv_len - s + i + 1 positions."""
    i = torch.arange(q_seq_len, device=device).unsqueeze(1)
    j = torch.arange(kv_len, device=device).unsqueeze(0)
    return j < (kv_len - q_seq_len + i + 1)


def _attend(qb: torch.Tensor, kvb: torch.Tensor, sm_scale: float) -> torch.Tensor:
    """qb (B, s, H, 576), kvb (B, n, 576) -> (B, s, H, 512)."""
    s, n = qb.shape[1], kvb.shape[1]
    scores = torch.einsum("bshd,bnd->bshn", qb, kvb) * sm_scale
    if s > 1:
        mask = decode_causal_mask(s, n, qb.device)  # (s, n)
        scores = scores.masked_fill(~mask[None, :, None, :], float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.einsum("bshn,bnd->bshd", p, kvb[..., : P.V_HEAD_DIM])


def attend_batches(qf: torch.Tensor, kv: torch.Tensor, kv_lens, q_seq_len: int, sm_scale: float,
                   attend=_attend) -> torch.Tensor:
    """Attention of every batch element over its own KV segment: ``qf`` ``(bs * s, H, 576)``, ``kv``
    ``(total_kv, 576)`` with ``kv_lens`` rows per element, in order -> ``(bs * s, H, 512)`` in ``qf``'s
    dtype. ``attend`` is :func:`_attend` or one with its signature. Uniform batches run as one batched
    call; ragged ones loop over batch elements (one definition for every caller that attends a batch)."""
    s, heads, bs = q_seq_len, qf.shape[1], len(kv_lens)
    if len(set(kv_lens)) == 1:
        out = attend(qf.reshape(bs, s, heads, -1), kv.reshape(bs, kv_lens[0], -1), sm_scale)
        return out.reshape(bs * s, heads, P.V_HEAD_DIM).to(qf.dtype)
    out = torch.empty((bs * s, heads, P.V_HEAD_DIM), dtype=qf.dtype, device=qf.device)
    start = 0
    for b, n in enumerate(kv_lens):
        out[b * s:(b + 1) * s] = attend(qf[b * s:(b + 1) * s].unsqueeze(0), kv[start:start + n].unsqueeze(0),
                                        sm_scale)[0]
        start += n
    return out


def reference(data, *, kv_format: str = "bf16", q_format: str = "bf16", dtype=torch.float32) -> torch.Tensor:
    """``(total_q, H, 512)`` attention output in ``dtype`` (fp32 by default).

    Uniform batches run as one batched einsum; ragged batches loop over batch elements."""
    if q_format not in P.Q_FORMATS:
        raise ValueError(f"unknown q_format {q_format!r}; choose from {P.Q_FORMATS}")
    kv_lens = validate_data(data, kv_format)
    q, kv_data, _, _, config = data
    if kv_format == "fp8":  # a scale mla.decode refuses (<= 0, NaN, inf) would give garbage or zeros here
        check_fp8_scale(kv_data)
    sm_scale = float(config.get("sm_scale", P.SM_SCALE))
    kv = dequantize_kv(kv_data, kv_format, dtype)
    qf = (q.float() if q_format == "bf16" else fake_quant(q.float(), q_format)).to(dtype)
    return attend_batches(qf, kv, kv_lens, int(config["q_seq_len"]), sm_scale)
