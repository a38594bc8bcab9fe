"""Quantizers and dequantizers for the KV cache and for Q, in pure torch (no aiter).

fp8, per tensor
    ``scale = amax / fp8_max`` (dynamic) or a given static scale; ``x_q = clamp(x / scale)``
    rounded to nearest even by torch's cast. ``dequant = x_q * scale``. Two flavours:
    OCP ``e4m3fn`` (max 448; gfx950, Hopper) and ``e4m3fnuz`` (max 240; gfx942).

MXFP4 (OCP Microscaling spec v1.0), block 32
    Each run of 32 consecutive elements shares one E8M0 scale (a biased power of two, bias 127,
    0xFF = NaN); each element is E2M1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives);
    two elements per byte, the even index in the low nibble.

    Scale rule: the one of aiter's ``dynamic_mxfp4_quant`` (scaling_mode "even"):
        amax_r  = amax with its fp32 mantissa rounded at bit 21, i.e. bits (amax + 0x200000) & 0xFF800000
        e       = clamp(floor(log2(amax_r)) - 2, -127, 127)         (2 = log2 of E2M1's largest power of two, 4)
        x_q     = E2M1_round_nearest_even(x / 2**e), saturating at +-6
    Why this rule: it is what the leaderboard's inputs were made with, so our kernels and
    accuracy studies see the same bytes. Compared with the OCP spec's floor rule
    (e = floor(log2(amax)) - 2), rounding amax first means a block whose amax mantissa is >= 1.75
    gets the next scale up, so its largest elements (which would otherwise clip from up to 7.99
    down to 6) round instead; small elements lose a little resolution in exchange.

NaN / inf
    fp8: torch's cast semantics. A NaN anywhere makes amax NaN, hence the scale and every
    output NaN; an inf makes the scale inf, so finite elements become 0 and the inf becomes NaN.
    MXFP4: a block that holds a NaN or an inf gets scale byte 0xFF (E8M0 NaN) and zero elements,
    so it dequantizes to all-NaN, as the OCP spec defines for a NaN scale. (aiter's kernel instead
    produces an arbitrary finite block here; no valid KV cache contains such values.)
"""

from __future__ import annotations

import torch

from .problem import MXFP4_BLOCK

FP8_DTYPES = {"e4m3fn": torch.float8_e4m3fn, "e4m3fnuz": torch.float8_e4m3fnuz}

# E2M1 code -> value (code bit 3 is the sign)
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
E2M1_MAX = 6.0
E8M0_NAN = 0xFF
E8M0_BIAS = 127
# Decision boundaries between neighbouring E2M1 magnitudes, with the direction a tie goes under
# round-to-nearest-even: ties go to the even code (0->0, 0.75->1.0 (code 2), 1.25->1.0, 1.75->2.0, ...).
_E2M1_BOUNDS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True), (5.0, False))


# ----------------------------------------------------------------------------------------------
# fp8 per tensor
# ----------------------------------------------------------------------------------------------
def _fp8_dtype(dtype) -> torch.dtype:
    if isinstance(dtype, str):
        if dtype not in FP8_DTYPES:
            raise ValueError(f"unknown fp8 flavour {dtype!r}; choose from {list(FP8_DTYPES)}")
        return FP8_DTYPES[dtype]
    if dtype not in FP8_DTYPES.values():
        raise ValueError(f"fp8 dtype must be one of {list(FP8_DTYPES.values())}, got {dtype}")
    return dtype


_FP8_COMPUTE_DTYPES = (torch.bfloat16, torch.float32)


def fp8_max(dtype=torch.float8_e4m3fn) -> float:
    return float(torch.finfo(_fp8_dtype(dtype)).max)


def quantize_fp8(x: torch.Tensor, *, dtype=torch.float8_e4m3fn, scale=None, compute_dtype=torch.float32):
    """Per-tensor fp8: returns ``(x_fp8, scale)`` with ``scale`` an fp32 tensor of shape (1,).

    ``scale=None`` is dynamic (``amax / fp8_max``, amax clamped to 1e-12 so an all-zero tensor
    gets a tiny positive scale); a float or tensor is a static scale (values beyond
    ``scale * fp8_max`` saturate).
    ``compute_dtype``: the arithmetic of ``amax / fp8_max`` and ``x / scale``, bf16 or fp32. fp32
    (default) is what our kernels do to Q; ``None`` = ``x``'s own dtype (so x must be bf16 or fp32),
    what the contract's ``reference.py`` (``quantize_fp8``) does to the bf16 KV cache and Q: the
    scale and every quotient are rounded to bf16 before the cast to fp8, so the scale is a bf16 value
    and a few % of the bytes differ from fp32 math (``accuracy.fp8_math_difference``). ``generate_input`` uses it, so our fp8 KV is the
    leaderboard's."""
    dt = _fp8_dtype(dtype)
    if not torch.is_floating_point(x):
        raise ValueError(f"quantize_fp8 needs a floating-point tensor, got {x.dtype}")
    cdt = x.dtype if compute_dtype is None else compute_dtype
    # fp32's exponent range only: in fp16 the 1e-12 clamp underflows (an all-zero x: scale 0, NaN
    # output) and an amax above 65504 makes the scale inf
    if cdt not in _FP8_COMPUTE_DTYPES:
        via = f" (None takes x's dtype, {x.dtype})" if compute_dtype is None else ""
        raise ValueError(f"compute_dtype must be one of {_FP8_COMPUTE_DTYPES} or None, got {cdt!r}{via}")
    fmax = fp8_max(dt)
    if scale is None:
        scale_t = (x.detach().abs().amax().to(cdt).clamp(min=1e-12) / fmax).reshape(1)
    else:
        if isinstance(scale, (int, float)) and not scale > 0:  # a tensor scale is not read back (no sync)
            raise ValueError(f"fp8 scale must be positive, got {scale}")
        scale_t = torch.as_tensor(scale, dtype=torch.float32, device=x.device).reshape(-1).to(cdt)
        if scale_t.numel() != 1:
            raise ValueError(f"a per-tensor fp8 scale has one element, got {scale_t.numel()}")
    xq = (x.to(cdt) / scale_t).clamp(-fmax, fmax).to(dt)
    return xq, scale_t.float()


def dequantize_fp8(x_fp8: torch.Tensor, scale: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``x_fp8 * scale`` in ``dtype``; ``scale`` is the one per-tensor value (a float or a 1-element tensor)."""
    if x_fp8.dtype not in FP8_DTYPES.values():
        raise ValueError(f"dequantize_fp8 needs an fp8 tensor, got {x_fp8.dtype}")
    scale_t = torch.as_tensor(scale, device=x_fp8.device)
    if scale_t.numel() != 1:
        raise ValueError(f"a per-tensor fp8 scale has one element, got {scale_t.numel()}")
    return (x_fp8.to(torch.float32) * scale_t.float().reshape(-1)[0]).to(dtype)


# ----------------------------------------------------------------------------------------------
# MXFP4
# ----------------------------------------------------------------------------------------------
def mxfp4_scale_exponent(amax: torch.Tensor) -> torch.Tensor:
    """Unbiased E8M0 exponent (int32) for per-block amax values, aiter's "even" rule (see module doc).

    Non-finite amax is not handled here (callers mark such blocks NaN)."""
    bits = amax.float().contiguous().view(torch.int32)
    rounded = torch.bitwise_and(bits + 0x200000, -0x800000)  # -0x800000 == 0xFF800000 as int32
    biased = torch.bitwise_right_shift(rounded, 23) & 0xFF  # floor(log2(amax_r)) + 127 (0 for 0/denormal)
    e = biased - E8M0_BIAS - 2
    # amax_r overflowing to inf (amax >= 1.5 * 2**127): aiter's log2 gives inf -> clamps to 127
    e = torch.where(biased == 0xFF, torch.full_like(e, 127), e)
    return e.clamp(-127, 127)


def _e2m1_encode(v: torch.Tensor) -> torch.Tensor:
    """fp32 values (already divided by the block scale) -> E2M1 codes (uint8, 0..15), RNE, saturating."""
    a = v.abs()
    code = torch.zeros(v.shape, dtype=torch.uint8, device=v.device)
    for bound, tie_up in _E2M1_BOUNDS:
        code += (a >= bound if tie_up else a > bound).to(torch.uint8)
    return code | (torch.signbit(v).to(torch.uint8) << 3)


def quantize_mxfp4(x: torch.Tensor):
    """MXFP4 along the last dim (a multiple of 32).

    Returns ``(packed, scales)``: packed uint8 ``(..., N // 2)`` (even element in the low nibble),
    scales uint8 ``(..., N // 32)`` holding biased E8M0 exponents."""
    if not torch.is_floating_point(x):
        raise ValueError(f"quantize_mxfp4 needs a floating-point tensor, got {x.dtype}")
    n = x.shape[-1]
    if n % MXFP4_BLOCK:
        raise ValueError(f"MXFP4 needs the last dim to be a multiple of {MXFP4_BLOCK}, got {n}")
    lead = x.shape[:-1]
    xb = x.float().reshape(-1, n // MXFP4_BLOCK, MXFP4_BLOCK)
    finite = torch.isfinite(xb).all(-1)
    amax = torch.where(torch.isfinite(xb), xb.abs(), torch.zeros_like(xb)).amax(-1)
    e = mxfp4_scale_exponent(amax)
    scaled = xb * torch.exp2(-e.float()).unsqueeze(-1)  # exact: a power of two
    codes = _e2m1_encode(torch.where(finite.unsqueeze(-1), scaled, torch.zeros_like(scaled)))
    scales = torch.where(finite, (e + E8M0_BIAS).to(torch.uint8), torch.full_like(e, E8M0_NAN).to(torch.uint8))
    codes = codes.reshape(-1, n)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed.reshape(*lead, n // 2), scales.reshape(*lead, n // MXFP4_BLOCK)


def e8m0_to_float(scales: torch.Tensor) -> torch.Tensor:
    """Biased E8M0 bytes -> fp32 powers of two (0 -> 2**-127, 0xFF -> NaN)."""
    if scales.dtype != torch.uint8:
        raise ValueError(f"E8M0 scales are uint8, got {scales.dtype}")
    s = scales.to(torch.int32)
    val = torch.ldexp(torch.ones(s.shape, dtype=torch.float32, device=s.device), s - E8M0_BIAS)
    return torch.where(s == E8M0_NAN, torch.full_like(val, float("nan")), val)


def e2m1_to_float(codes: torch.Tensor) -> torch.Tensor:
    lut = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=codes.device)
    return lut[codes.long()]


def dequantize_mxfp4(packed: torch.Tensor, scales: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Inverse of :func:`quantize_mxfp4`. ``packed`` is ``(..., P)``; ``scales`` has one row per
    packed row (any leading shape with the same row count) and at least ``2P / 32`` columns;
    extra columns (aiter's padding) are ignored. Returns ``(..., 2P)``."""
    if packed.dtype != torch.uint8:
        raise ValueError(f"packed MXFP4 data is uint8, got {packed.dtype}")
    p = packed.shape[-1]
    n = 2 * p
    if n % MXFP4_BLOCK:
        raise ValueError(f"packed last dim {p} is not a whole number of 32-element blocks")
    nblk = n // MXFP4_BLOCK
    rows = packed.reshape(-1, p)
    srows = scales.reshape(rows.shape[0], -1) if scales.numel() else scales
    if srows.shape[0] != rows.shape[0] or srows.shape[-1] < nblk:
        raise ValueError(f"scales {tuple(scales.shape)} do not cover {rows.shape[0]} rows x {nblk} blocks")
    codes = torch.stack((rows & 0xF, rows >> 4), dim=-1).reshape(rows.shape[0], n)
    vals = e2m1_to_float(codes).reshape(-1, nblk, MXFP4_BLOCK)
    out = vals * e8m0_to_float(srows[:, :nblk].contiguous()).unsqueeze(-1)
    return out.reshape(*packed.shape[:-1], n).to(dtype)


# ----------------------------------------------------------------------------------------------
# Q quantizers (for "full low-precision" kernels that quantize the query as well)
# ----------------------------------------------------------------------------------------------
def quantize_q_fp8(q: torch.Tensor, *, scale=None, dtype=torch.float8_e4m3fn):
    """Q to fp8, one scale for the tensor: dynamic (amax) or static (e.g. the seeds' 6/448 for
    standard-normal Q, which saves the amax reduction in the hot path)."""
    return quantize_fp8(q, dtype=dtype, scale=scale)


def quantize_q_mxfp4(q: torch.Tensor):
    """Q ``(total_q, H, 576)`` to MXFP4 per block of 32 along the head dim: packed ``(total_q, H, 288)``
    uint8 and scales ``(total_q, H, 18)`` uint8."""
    return quantize_mxfp4(q)


def fake_quant(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Quantize then dequantize (fp32 result): what a tensor looks like after passing through ``fmt``."""
    if fmt == "bf16":
        return x.to(torch.bfloat16).float()
    if fmt == "fp8":
        return dequantize_fp8(*quantize_fp8(x))
    if fmt == "mxfp4":
        return dequantize_mxfp4(*quantize_mxfp4(x))
    raise ValueError(f"unknown format {fmt!r}; choose from ('bf16', 'fp8', 'mxfp4')")
