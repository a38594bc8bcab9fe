"""Triton offline compiles for gfx950 and sm90 on this CPU machine, parsed by the ISA lab."""

import os

import pytest
import triton
import triton.language as tl

from mla.analysis.isa import parse_amdgpu_asm, parse_ptx
from mla.analysis.isa_triton import TritonOfflineUnavailable, gpu_target, triton_rows


def _tiny_dot(a, b, c, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i[:, None] * N + i[None, :]).to(tl.bfloat16)
    y = tl.load(b + i[:, None] * N + i[None, :]).to(tl.bfloat16)
    tl.store(c + i[:, None] * N + i[None, :], tl.dot(x, y))


# a compiled (not interpreted) kernel even when the CPU tests run with TRITON_INTERPRET=1
_saved = os.environ.pop("TRITON_INTERPRET", None)
try:
    _tiny_dot = triton.jit(_tiny_dot)
finally:
    if _saved is not None:
        os.environ["TRITON_INTERPRET"] = _saved


def _tiny(target):
    from triton.compiler import ASTSource

    src = ASTSource(fn=_tiny_dot, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32", "N": "constexpr"},
                    constexprs={"N": 32})
    return triton.compile(src, target=gpu_target(target), options={"num_warps": 4})


def test_parsers_on_a_tiny_triton_dot():
    (k,) = parse_amdgpu_asm(_tiny("gfx950").asm["amdgcn"])
    assert k.vgpr_total > 0 and k.mix["mfma"] > 0
    assert parse_ptx(_tiny("sm90").asm["ptx"])["mma"] + parse_ptx(_tiny("sm90").asm["ptx"])["wgmma"] > 0


def test_unknown_target():
    with pytest.raises(ValueError, match="unknown target"):
        gpu_target("gfx942")


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_triton_backend_kernel_offline(target):
    try:
        rows = triton_rows(target, variants=["v2_n64_w4_s2"], kv_formats=("mxfp4",), knob_sweep=False)
    except TritonOfflineUnavailable as e:
        pytest.skip(str(e))
    assert rows
    r = rows[0]
    if target == "gfx950":
        assert r["vgpr_total"] > 0 and r["mfma"] > 0 and r["workgroup_size"] > 0
    else:
        assert r["registers"] > 0 and r["sass_instructions"] > 0
        assert r["ptx_mma"] + r["ptx_wgmma"] > 0
