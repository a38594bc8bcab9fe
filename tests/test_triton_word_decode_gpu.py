"""GPU only: the inline-PTX word decodes (fp8 and MXFP4, mla/kernels/triton/kernels.py) against
their portable twins and against mla's own dequantization semantics, bit-exact. Moved here from
scripts/h200_triton_probe.py (phase ``decode``), so the probe script keeps only timing through mla.bench.
On a CPU machine this file is skipped (the PTX path needs a CUDA device)."""

from __future__ import annotations

import pytest
import torch

if not torch.cuda.is_available() or torch.version.hip:  # before triton is imported: CPU runs stay clean
    pytest.skip("needs an NVIDIA GPU (inline PTX)", allow_module_level=True)

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from mla.kernels.triton.kernels import _decode_fp8_words, _decode_mx_words  # noqa: E402

DEV = "cuda"


@triton.jit
def _mx_unit_kernel(w_ptr, s_ptr, o_ptr, USE_PTX: tl.constexpr):
    r = tl.arange(0, 32)
    w = tl.load(w_ptr + r[:, None] * 64 + tl.arange(0, 64)[None, :])
    sc = tl.load(s_ptr + r[:, None] * 16 + tl.arange(0, 16)[None, :])
    x = _decode_mx_words(w, sc[:, :, None], 16, 32, USE_PTX, tl.float16)
    tl.store(o_ptr + r[:, None] * 512 + tl.arange(0, 512)[None, :], x)


@triton.jit
def _f8_unit_kernel(w_ptr, o_ptr, USE_PTX: tl.constexpr):
    r = tl.arange(0, 32)
    w = tl.load(w_ptr + r[:, None] * 128 + tl.arange(0, 128)[None, :])
    x = _decode_fp8_words(w, 128, 32, USE_PTX, tl.float16)
    tl.store(o_ptr + r[:, None] * 512 + tl.arange(0, 512)[None, :], x)


PTX_MODES = (True, False)


def test_word_decodes_ptx_equal_portable_equal_reference():
    """Unit check of the inline-PTX word decodes against their portable twins (bit-exact expected)."""
    g = torch.Generator(device=DEV).manual_seed(1)
    words = torch.randint(-2**31, 2**31 - 1, (32, 64), dtype=torch.int32, device=DEV, generator=g)
    scales = torch.randint(104, 137, (32, 16), dtype=torch.int32, device=DEV, generator=g)
    outs = []
    for ptx in PTX_MODES:
        o = torch.full((32, 512), float("nan"), dtype=torch.float16, device=DEV)
        _mx_unit_kernel[(1,)](words, scales, o, USE_PTX=ptx)
        outs.append(o)
    # reference from mla's own dequantizer semantics: nibble i of the row, value e2m1 * 2**(e - 127)
    nib = torch.stack([(words >> (4 * i)) & 0xF for i in range(8)], -1).reshape(32, 512)
    lut = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6], device=DEV)
    ref = lut[nib & 7] * torch.where(nib >= 8, -1.0, 1.0) * torch.exp2(scales.float() - 127).repeat_interleave(32, 1)
    mx_ok = bool((outs[0].float() == ref).all() and (outs[1].float() == ref).all())
    f8 = torch.randint(-2**31, 2**31 - 1, (32, 128), dtype=torch.int32, device=DEV, generator=g)
    b8 = f8.view(torch.uint8)
    b8[(b8 & 0x7F) == 0x7F] = 0  # no e4m3fn NaN bytes (0x7F / 0xFF): the portable decode does not handle them
    o8 = []
    for ptx in PTX_MODES:
        o = torch.full((32, 512), float("nan"), dtype=torch.float16, device=DEV)
        _f8_unit_kernel[(1,)](f8, o, USE_PTX=ptx)
        o8.append(o)
    bytes_ = f8.view(torch.uint8).view(torch.float8_e4m3fn).float().reshape(32, 512)
    f8_ok = bool(torch.equal(o8[0].float(), bytes_) and torch.equal(o8[1].float(), bytes_))
    assert mx_ok, f"mxfp4 word decode: max_abs {float((outs[0].float() - ref).abs().max())}"
    assert f8_ok, f"fp8 word decode: max_abs {float((o8[0].float() - bytes_).abs().nan_to_num(99.0).max())}"
