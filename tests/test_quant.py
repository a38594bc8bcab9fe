"""Quantizers against an independent oracle (ml_dtypes) on random and edge values."""

import ml_dtypes
import numpy as np
import pytest
import torch

from mla import quant


def _oracle_mxfp4(x: np.ndarray):
    """numpy + ml_dtypes: aiter's 'even' scale rule written with frexp, elements cast by ml_dtypes."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1)
    m, E = np.frexp(amax)  # amax = m * 2**E, m in [0.5, 1)
    exp = (E - 1) + (2 * m >= 1.75)  # floor(log2) of amax with its significand rounded at 1.75
    e = np.where(amax == 0, -127, exp - 2)
    e = np.where((E - 1 == 127) & (2 * m >= 1.75), 127, e)  # rounding overflowed to inf in aiter's kernel
    e = np.clip(e, -127, 127)
    scaled = blocks / np.exp2(e.astype(np.float64))[:, None]
    codes = scaled.astype(np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    return codes.reshape(x.shape), (e + 127).astype(np.uint8).reshape(*x.shape[:-1], -1)


def _unpack(packed: torch.Tensor) -> np.ndarray:
    p = packed.numpy()
    return np.stack((p & 0xF, p >> 4), axis=-1).reshape(*p.shape[:-1], -1)


def _edge_rows():
    rows = [np.zeros(32), np.full(32, 1e-30), np.full(32, 1e-40),  # all-zero, tiny, fp32 denormal
            np.linspace(-6, 6, 32), np.linspace(-7.9, 7.9, 32),  # saturation candidates
            np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 4),  # exact ties at scale 1
            np.array([3.389e38, -3.389e38] + [1.0] * 30),  # +-bf16 max
            np.array([1.75] + [0.0] * 31), np.array([1.7499] + [0.0] * 31)]  # the scale-rounding threshold
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("source", ["random", "edge", "wide"])
def test_mxfp4_matches_oracle(source):
    g = np.random.default_rng(0)
    if source == "random":
        x = g.standard_normal((64, 576)).astype(np.float32)
    elif source == "wide":  # magnitudes over 60 binades
        x = (g.standard_normal((64, 96)) * np.exp2(g.integers(-30, 30, (64, 96)))).astype(np.float32)
    else:
        x = _edge_rows()
    packed, scales = quant.quantize_mxfp4(torch.from_numpy(x))
    codes_ref, scales_ref = _oracle_mxfp4(x)
    np.testing.assert_array_equal(scales.numpy(), scales_ref)
    got = _unpack(packed)
    # -0 and +0 are the same value; compare values through ml_dtypes' decoding
    dec = lambda c: c.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    np.testing.assert_array_equal(dec(got), dec(codes_ref))


def test_mxfp4_dequant_matches_oracle_decode():
    x = torch.randn(16, 576)
    packed, scales = quant.quantize_mxfp4(x)
    deq = quant.dequantize_mxfp4(packed, scales).numpy()
    vals = _unpack(packed).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    sc = scales.numpy().view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    np.testing.assert_array_equal(deq, (vals.reshape(16, 18, 32) * sc[..., None]).reshape(16, 576))
    # quantization error is bounded by half a step of the largest E2M1 gap (2 units at scale) per element
    err = np.abs(deq - x.numpy()).reshape(16, 18, 32).max(-1)
    assert (err <= sc * 1.0 + 1e-12).all()


def test_mxfp4_packing_even_index_low_nibble():
    x = torch.zeros(32)
    x[0], x[1] = 1.0, -6.0  # scale: amax 6 -> e = 0 ... 6 = 1.5 * 4 -> exponent 2 - 2 = 0
    packed, scales = quant.quantize_mxfp4(x)
    assert scales.item() == 127
    assert packed[0].item() == (0x2 | (0xF << 4))  # 1.0 is code 2 (low), -6 is code 15 (high)


def test_mxfp4_nonfinite_block_is_nan_scale():
    x = torch.randn(2, 64)
    x[0, 3] = float("nan")
    x[1, 40] = float("inf")
    packed, scales = quant.quantize_mxfp4(x)
    assert scales[0, 0].item() == 0xFF and scales[1, 1].item() == 0xFF
    assert scales[0, 1].item() != 0xFF and scales[1, 0].item() != 0xFF
    deq = quant.dequantize_mxfp4(packed, scales)
    assert torch.isnan(deq[0, :32]).all() and torch.isnan(deq[1, 32:]).all()
    assert torch.isfinite(deq[0, 32:]).all() and torch.isfinite(deq[1, :32]).all()


def test_mxfp4_dequant_ignores_scale_padding():
    x = torch.randn(5, 576)
    packed, scales = quant.quantize_mxfp4(x)
    padded = torch.full((5, 24), 0xFF, dtype=torch.uint8)  # NaN padding must never be read
    padded[:, :18] = scales
    torch.testing.assert_close(quant.dequantize_mxfp4(packed, padded), quant.dequantize_mxfp4(packed, scales))


@pytest.mark.parametrize("flavour,npdt", [("e4m3fn", ml_dtypes.float8_e4m3fn), ("e4m3fnuz", ml_dtypes.float8_e4m3fnuz)])
def test_fp8_matches_oracle(flavour, npdt):
    g = np.random.default_rng(1)
    x = np.concatenate([g.standard_normal(4096), [0.0, 1e-30, -1e-30]]).astype(np.float32)
    xq, scale = quant.quantize_fp8(torch.from_numpy(x), dtype=flavour)
    fmax = float(ml_dtypes.finfo(npdt).max)
    assert scale.shape == (1,) and scale.dtype == torch.float32
    assert scale.item() == pytest.approx(np.abs(x).max() / fmax, rel=1e-6)
    ref = np.clip(x / scale.item(), -fmax, fmax).astype(npdt).astype(np.float32)
    np.testing.assert_array_equal(xq.float().numpy(), ref)
    # the largest element maps to +-max exactly
    assert xq.float().abs().max().item() == fmax


def test_fp8_static_scale_saturates_and_zero_tensor():
    x = torch.tensor([1.0, 1000.0, -1000.0])
    xq, s = quant.quantize_fp8(x, scale=1.0)
    assert xq.float().tolist() == [1.0, 448.0, -448.0]
    zq, zs = quant.quantize_fp8(torch.zeros(8))
    assert zs.item() > 0 and (zq.float() == 0).all()


def test_fp8_nan_inf_behaviour_is_as_documented():
    x = torch.tensor([1.0, float("nan")])
    xq, s = quant.quantize_fp8(x)
    assert torch.isnan(s).all() and torch.isnan(xq.float()).all()
    xq, s = quant.quantize_fp8(torch.tensor([1.0, float("inf")]))
    assert torch.isinf(s).all() and xq.float()[0].item() == 0 and torch.isnan(xq.float()[1])


def test_fp8_compute_dtype_is_bf16_or_fp32():
    """fp16 arithmetic breaks the dynamic scale (the 1e-12 clamp underflows to 0 for an all-zero x:
    NaN output; an amax above 65504 is an inf scale): refused, named, also when None takes x's dtype."""
    with pytest.raises(ValueError, match=r"got torch.float16 \(None takes x's dtype, torch.float16\)"):
        quant.quantize_fp8(torch.zeros(8, dtype=torch.float16), compute_dtype=None)
    with pytest.raises(ValueError, match=r"compute_dtype must be one of \(torch.bfloat16, torch.float32\).*float16"):
        quant.quantize_fp8(torch.full((8,), 7e4), compute_dtype=torch.float16)
    with pytest.raises(ValueError, match="got torch.float64"):
        quant.quantize_fp8(torch.zeros(8, dtype=torch.float64), compute_dtype=None)
    for x, cdt in ((torch.zeros(8, dtype=torch.float16), torch.float32), (torch.zeros(8, dtype=torch.bfloat16), None),
                   (torch.full((8,), 7e4), torch.bfloat16),
                   (torch.full((8,), 65504.0, dtype=torch.float16), torch.float32)):
        xq, s = quant.quantize_fp8(x, compute_dtype=cdt)  # fp16 input in fp32 / bf16 math: a sane scale
        assert 0 < s.item() < float("inf") and torch.isfinite(xq.float()).all()


def test_dequantize_fp8_takes_one_scale():
    xq, s = quant.quantize_fp8(torch.randn(8))
    assert torch.equal(quant.dequantize_fp8(xq, s), quant.dequantize_fp8(xq, float(s)))
    with pytest.raises(ValueError, match="a per-tensor fp8 scale has one element, got 2"):
        quant.dequantize_fp8(xq, torch.cat([s, 2 * s]))


def test_q_quantizers_shapes():
    q = torch.randn(3, 16, 576, generator=torch.Generator().manual_seed(0)).clamp(-5.9, 5.9).bfloat16()
    packed, scales = quant.quantize_q_mxfp4(q)
    assert packed.shape == (3, 16, 288) and scales.shape == (3, 16, 18)
    qf, s = quant.quantize_q_fp8(q, scale=6.0 / 448)  # the seeds' static scale for standard-normal Q
    assert qf.dtype == torch.float8_e4m3fn and s.item() == pytest.approx(6.0 / 448)
    err = (quant.dequantize_fp8(qf, s) - q.float()).abs()
    # e4m3 keeps 3 mantissa bits: relative error <= 2**-4 for normals, an absolute floor below them
    assert (err <= q.float().abs() * 2**-4 + s.item() * 2**-9).all()


@pytest.mark.parametrize("call", [
    lambda: quant.quantize_mxfp4(torch.randn(4, 33)),
    lambda: quant.quantize_mxfp4(torch.ones(4, 32, dtype=torch.int32)),
    lambda: quant.quantize_fp8(torch.randn(4), dtype="e5m2"),
    lambda: quant.quantize_fp8(torch.randn(4), scale=-1.0),
    lambda: quant.dequantize_mxfp4(torch.zeros(2, 288, dtype=torch.uint8), torch.zeros(2, 17, dtype=torch.uint8)),
    lambda: quant.dequantize_fp8(torch.randn(4), torch.ones(1)),
    lambda: quant.fake_quant(torch.randn(4, 32), "int4"),
])
def test_bad_quant_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()
