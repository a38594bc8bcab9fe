"""The queued contents check of mla.validate as one kernel (issue 10: the fresh-input call's host cost).

``CallGuard._queue`` checks a new input set's indptrs (equal to the plan's canonical ones) and the fp8
scale (finite and > 0) on a side stream. As torch ops that was cat, clamp, ne_, any and a copy into the
pinned flag: five launches, ~300 us of host time per fresh call on the H200's host (gap probe 4,
``data/measured/h200/issue10/gap-r4-bs64-kv8192.csv``: check_ops 219 us + d2h_copy 80 us). Here it is one
program, launched without the JIT's dispatch (direct.py), that writes the verdict straight into the
pinned host flag (page-locked memory is device-addressable under CUDA's unified addressing).

The rule is validate._contents_bounds' bit for bit: bad iff some indptr entry differs from the canonical
one, or the fp32 scale's bits as int32 lie outside [1, 0x7F7FFFFF] (negative, -0, zero, inf, NaN).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .direct import DirectLaunch

CHECK_BLOCK = 1024  # indptr entries per step (batch sizes of thousands take a few steps)


@triton.jit
def contents_check_kernel(qo_ptr, kv_ptr, ref_qo_ptr, ref_kv_ptr, scale_ptr, flag_ptr, n,
                          HAS_SCALE: tl.constexpr, BLOCK: tl.constexpr):
    """flag = 1 if qo[:n] != ref_qo[:n] or kv[:n] != ref_kv[:n] anywhere, or (HAS_SCALE) the fp32 scale
    at scale_ptr is not finite and > 0; else 0. One program."""
    bad = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < n
        qo = tl.load(qo_ptr + i, mask=m, other=0)
        rq = tl.load(ref_qo_ptr + i, mask=m, other=0)
        kv = tl.load(kv_ptr + i, mask=m, other=0)
        rk = tl.load(ref_kv_ptr + i, mask=m, other=0)
        bad |= ((qo != rq) | (kv != rk)).to(tl.int32)
    verdict = tl.max(bad, axis=0)
    if HAS_SCALE:
        bits = tl.load(scale_ptr).to(tl.int32, bitcast=True)
        verdict = verdict | ((bits < 1) | (bits > 0x7F7FFFFF)).to(tl.int32)
    tl.store(flag_ptr, verdict != 0)


class ContentsCheck:
    """``check(qo, kv, scale, flag)``: enqueue the check on the current stream; ``flag`` is a one-byte
    tensor (a pinned host bool, or any device byte) that receives the verdict. ``ref`` = the canonical
    (qo_indptr, kv_indptr)."""

    def __init__(self, ref: tuple, with_scale: bool):
        self.ref_qo, self.ref_kv = ref
        self.n = int(self.ref_qo.numel())
        self.with_scale = with_scale
        self.launch = DirectLaunch(contents_check_kernel, (1,), dict(HAS_SCALE=with_scale, BLOCK=CHECK_BLOCK,
                                                                       num_warps=4))

    def __call__(self, qo, kv, scale, flag) -> None:
        if qo.numel() != self.n or kv.numel() != self.n:  # (the guard's structure check makes this impossible)
            raise ValueError(f"indptrs of {qo.numel()} / {kv.numel()} entries; the plan's have {self.n}")
        self.launch(qo, kv, self.ref_qo, self.ref_kv, scale if self.with_scale else qo, flag, self.n)
