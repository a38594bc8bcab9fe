"""Torch mirror of the Q quantization the kernel does in-kernel (see kernels.py's docstring), so
tests can compare the kernel with ``mla.reference`` on exactly the Q it used."""

from __future__ import annotations

import torch

from ...quant import fake_quant


def quantize_q_like_kernel(q: torch.Tensor, q_format: str) -> torch.Tensor:
    """``q`` (total_q, H, 576) -> fp32 Q as the kernel sees it (quantized, then dequantized).

    bf16: as is. fp8: one scale per (query, head) row, ``amax / 448``, e4m3fn round-to-nearest-even.
    mxfp4: :func:`mla.quant.fake_quant` (the kernel reproduces mla.quant's rule bit for bit)."""
    qf = q.float()
    if q_format == "bf16":
        return qf
    if q_format == "fp8":
        amax = qf.abs().amax(-1, keepdim=True)
        scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
        return (qf / scale).to(torch.float8_e4m3fn).float() * scale
    if q_format == "mxfp4":
        return fake_quant(qf, "mxfp4")
    raise ValueError(f"unknown q_format {q_format!r}; choose from ('bf16', 'fp8', 'mxfp4')")
