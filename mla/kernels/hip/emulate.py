"""A torch model of the arithmetic of ``mla_mxfp4_decode.hip``, to check the *numerical design*
of the gfx950 kernel on a CPU (the kernel itself has not run in this project).

It follows the kernel's steps, tile by tile, with the same roundings:

* Q: MXFP4 with the "even" scale rule (as ``mla.quant.quantize_mxfp4``), dequantised exactly;
  K: the cache's MXFP4 values. QK in fp32 (the scaled FP4 MFMA multiplies exactly and
  accumulates in fp32; only the summation order differs).
* online softmax in base 2 per BN-token tile; P = exp2(s - m) * 256 rounded to fp8 e4m3.
* V: the FP4 values times their block scale, rounded to fp8 e4m3 (exact unless out of range).
* PV in fp32; the row sum uses the unrounded P, as the kernel does.
* split-K as the kernel splits (whole tiles per split), then the base-2 LSE merge.

What it cannot show: scheduling, races, layout/lane mistakes. Those need the hardware.
"""

from __future__ import annotations

import math

import torch

from ...problem import KV_LORA_RANK, MXFP4_PACKED_DIM, SM_SCALE
from ...quant import dequantize_mxfp4, fake_quant

P_SCALE = 256.0
FP8_MAX = 448.0


def _fp8(x: torch.Tensor) -> torch.Tensor:
    """Round to OCP e4m3 (RNE), saturating at +-448 like the kernel's conversions of finite data."""
    return x.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()


def emulate(data, *, block_n: int = 64, num_splits: int = 1) -> torch.Tensor:
    """``(total_q, 16, 512)`` bf16 as the gfx950 kernel would compute it (q_seq_len 1 only)."""
    q, kv_data, qo_indptr, kv_indptr, cfg = data
    if int(cfg["q_seq_len"]) != 1:
        raise ValueError(f"the gfx950 kernel (and this model of it) supports q_seq_len 1, got {cfg['q_seq_len']}")
    if block_n not in (64, 128) or num_splits < 1:
        raise ValueError(f"block_n must be 64 or 128 and num_splits >= 1, got {block_n}, {num_splits}")
    packed, scales = kv_data["mxfp4"]
    k = dequantize_mxfp4(packed.reshape(-1, MXFP4_PACKED_DIM), scales)  # (total_kv, 576) exact
    v = _fp8(k[:, :KV_LORA_RANK])                                         # fp8 V tile values
    qd = fake_quant(q.float(), "mxfp4")                                   # (total_q, H, 576)
    scale_log2 = float(cfg.get("sm_scale", SM_SCALE)) * math.log2(math.e)
    out = torch.empty(q.shape[0], q.shape[1], KV_LORA_RANK)
    kvi, qoi = kv_indptr.tolist(), qo_indptr.tolist()
    for b in range(len(kvi) - 1):
        n = kvi[b + 1] - kvi[b]
        qb = qd[qoi[b]]                                                   # (H, 576)
        chunk = -(-(-(-n // num_splits)) // block_n) * block_n
        parts, lses = [], []
        for s in range(num_splits):
            t0, t1 = s * chunk, min(n, (s + 1) * chunk)
            if t0 >= t1:
                continue  # empty split: weight 0 in the merge
            m = torch.full((qb.shape[0],), -1e30)
            l = torch.zeros(qb.shape[0])
            acc = torch.zeros(qb.shape[0], KV_LORA_RANK)
            for t in range(t0, t1, block_n):
                rows = slice(kvi[b] + t, kvi[b] + min(t + block_n, t1))
                sc = (qb @ k[rows].T) * scale_log2                        # (H, tile)
                m_new = torch.maximum(m, sc.amax(1))
                alpha = torch.exp2(m - m_new)
                p = torch.exp2(sc - m_new[:, None])
                acc = acc * alpha[:, None] + _fp8(p * P_SCALE) @ v[rows]
                l = l * alpha + p.sum(1)
                m = m_new
            parts.append(acc / (l[:, None] * P_SCALE))
            lses.append(m + torch.log2(l))
        lse = torch.stack(lses)                                           # (splits, H)
        w = torch.exp2(lse - lse.amax(0))
        out[qoi[b]] = (w[:, :, None] * torch.stack(parts)).sum(0) / w.sum(0)[:, None]
    return out.to(torch.bfloat16)
