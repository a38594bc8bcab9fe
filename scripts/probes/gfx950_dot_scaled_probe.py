#!/usr/bin/env python3
"""Does ``tl.dot_scaled`` reach gfx950's scaled MFMA for MLA's QK^T? (offline compile, no GPU; not run on an MI355X)

    python scripts/probes/gfx950_dot_scaled_probe.py

The portable Triton kernels decode MXFP4 K to 16-bit floats and run bf16 MFMA on gfx950 (mla/kernels/triton/kernels.py,
"KV formats"; docs/notes-gfx950.md section 4). QK^T's MX blocks run along its reduction dim (the 576 head dims), which is
what ``tl.dot_scaled`` scales, so QK^T alone could take the packed K and its E8M0 scales as they are. This compiles one
QK^T tile (16 heads x 512 dims x BN tokens) for ``GPUTarget("hip", "gfx950", 64)`` with Q as bf16 (no Q scale) and as
e4m3 with E8M0 scales per 32 dims (MXFP8 Q, quantized in-kernel in a real kernel), and prints the MFMA opcodes the
compiler chose. PV cannot follow as written: V's MX blocks run along PV's output dim (the 512 value dims), not along
its reduction (the tokens), so V needs a decode or a per-block rescale of P.
"""
from __future__ import annotations

import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def qk_tile(q_ptr, kp_ptr, ks_ptr, qs_ptr, out_ptr, BN: tl.constexpr, D: tl.constexpr, Q_FMT: tl.constexpr):
    h = tl.arange(0, 16)
    n = tl.arange(0, BN)
    if Q_FMT == "bf16":
        q = tl.load(q_ptr + h[:, None] * D + tl.arange(0, D)[None, :])
        q_scale = None
    else:  # e4m3 values + one E8M0 byte per 32 dims (MXFP8)
        q = tl.load(q_ptr.to(tl.pointer_type(tl.float8e4nv)) + h[:, None] * D + tl.arange(0, D)[None, :])
        q_scale = tl.load(qs_ptr + h[:, None] * (D // 32) + tl.arange(0, D // 32)[None, :])
    k_packed = tl.load(kp_ptr + tl.arange(0, D // 2)[:, None] + n[None, :] * (D // 2))  # [D/2, BN]: 2 nibbles a byte
    k_scale = tl.load(ks_ptr + n[:, None] * (D // 32) + tl.arange(0, D // 32)[None, :])  # [BN, D/32] E8M0
    tl.store(out_ptr + h[:, None] * BN + n[None, :], tl.dot_scaled(q, q_scale, Q_FMT, k_packed, k_scale, "e2m1"))


def mfma_opcodes(q_fmt: str, block_n: int = 64) -> list[str]:
    sig = {"q_ptr": "*bf16", "kp_ptr": "*u8", "ks_ptr": "*u8", "qs_ptr": "*u8", "out_ptr": "*fp32",
           "BN": "constexpr", "D": "constexpr", "Q_FMT": "constexpr"}
    src = ASTSource(qk_tile, sig, constexprs={"BN": block_n, "D": 512, "Q_FMT": q_fmt})
    kernel = triton.compile(src, target=GPUTarget("hip", "gfx950", 64), options={"num_warps": 4})
    return sorted(set(re.findall(r"v_mfma\w*", kernel.asm["amdgcn"])))


if __name__ == "__main__":
    print(f"triton {triton.__version__}, gfx950, QK^T tile 16 x 512 x 64, K = e2m1 + E8M0 per 32 dims")
    for q_fmt in ("bf16", "e4m3"):
        print(f"  Q {q_fmt:5s} -> {', '.join(mfma_opcodes(q_fmt)) or 'no MFMA'}")
