"""Named kernel variants (llm.c style): each is one unit with a one-line "what changed", chosen by
name through :data:`VARIANTS` and run by the one launcher in :mod:`mla.kernels.triton.launch`.

A variant fixes the compile-time shape of the program (BLOCK_N, warps, pipeline stages, heads per
program); ``num_splits`` is chosen per shape by the split heuristic unless given explicitly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    block_n: int  # KV tokens per tile
    num_warps: int
    num_stages: int  # software-pipeline depth of the KV loads (cp.async ring on sm90)
    heads_per_prog: int  # query heads per program (M = q_seq_len x this); 0 = all heads
    what_changed: str
    mx_decode: int = 0  # MXFP4 decode: 0 fp16-bits x fp32 scale, 1 integer exponent -> bf16 bits
    dot_f16: bool = False  # fp16 dot operands (fp8 KV only)
    prefetch: bool = False  # register double buffer of the raw KV tile (for fp8 / MXFP4 decode paths)

    def as_dict(self) -> dict:
        return asdict(self)


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("v1_n32_w4_s2", 32, 4, 2, 0, "baseline: all heads per program, 32-token tiles, 2-stage pipeline"),
    Variant("v2_n64_w4_s2", 64, 4, 2, 0, "64-token tiles: twice the bytes in flight per load, half the loop trips"),
    Variant("v3_n64_w8_s2", 64, 8, 2, 0, "8 warps: more threads to issue loads and the MXFP4 decode ALU work"),
    Variant("v4_n32_w4_s3", 32, 4, 3, 0, "3-stage pipeline on 32-token tiles: deeper prefetch, same smem as v2"),
    Variant("v5_n16_w4_s4", 16, 4, 4, 0, "16-token tiles, 4 stages: small smem per stage, more CTAs per SM"),
    Variant("v6_n32_w8_s2_h16", 32, 8, 2, 16, "16 heads per program: splits 32-head / 4-query M over two programs"),
    Variant("v7_n32_w8_s1", 32, 8, 1, 0, "8 warps on 32-token tiles: half the registers per thread of v1"),
    Variant("v8_n16_w4_s1", 16, 4, 1, 0, "16-token tiles: fewest registers, most resident CTAs per SM"),
    Variant("v9_n64_w4_s2_intmx", 64, 4, 2, 0, "v2 + MXFP4 decoded by integer exponent arithmetic (no cvt/mul)",
            mx_decode=1),
    Variant("v10_n32_w4_s2_intmx", 32, 4, 2, 0, "v1 + integer-exponent MXFP4 decode", mx_decode=1),
    Variant("v11_n64_w4_s2_f16", 64, 4, 2, 0, "v2 + fp16 dots for fp8 KV (one cvt per pair of e4m3)",
            dot_f16=True),
    Variant("v12_n32_w8_s2_f16", 32, 8, 2, 0, "v7 + fp16 dots for fp8 KV, 2 stages", dot_f16=True),
    Variant("v13_n64_w8_s2_f16", 64, 8, 2, 0, "v3 + fp16 dots for fp8 KV", dot_f16=True),
    # not yet measured on a GPU (added after the 2026-11-30 probe showed fp8/MXFP4 loads unpipelined)
    Variant("v14_n32_w4_s2_pf", 32, 4, 2, 0, "v1 + register prefetch of the next raw tile during decode",
            prefetch=True),
    Variant("v15_n64_w8_s2_f16_pf", 64, 8, 2, 0, "v13 + register prefetch of the next raw fp8 tile",
            dot_f16=True, prefetch=True),
    Variant("v16_n64_w8_s2_pf", 64, 8, 2, 0, "v3 + register prefetch of the next raw tile", prefetch=True),
)}

DEFAULT_VARIANT = {  # per KV format: the fastest measured in the H200 probe of 2026-11-30 at
    "bf16": "v4_n32_w4_s3",  # bs256/bs32-kv8192 (docs/notes-triton.md, data/measured/h200/)
    "fp8": "v13_n64_w8_s2_f16",
    "mxfp4": "v1_n32_w4_s2",
}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"unknown triton variant {name!r}; choose from {sorted(VARIANTS)}")
    return VARIANTS[name]
