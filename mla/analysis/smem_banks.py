"""Shared-memory bank conflicts of generation 3's register <-> shared accesses, by a model (no GPU).

The accesses modelled here are 16-byte vectors per lane (GEN3_ACCESSES), so a quarter warp (8 lanes)
is one wavefront when its 8 addresses fall in 8 different 16-byte bank groups of a 128-byte line, or
8-byte vectors (GEN3_ACCESSES_8BYTE, the two-warpgroup kernel's LDS.64), where a half warp is one
wavefront when its 16 addresses fall in 16 different 8-byte bank pairs; the result is the worst
number of wavefronts a phase needs (1 = conflict-free, 4 = 4-way).
A layout enters as its linear-layout bases (lane and warp bases: the coordinates bit i of the lane
/ warp index moves by, XOR-combined), exactly as written in mla/kernels/triton/gluon_sm90.py; an
address function maps coordinates to the byte address of the shared buffer:

    nvmma64_address   the fp8 K tile, [rows, 64 B] with the 64-byte NVMMA swizzle
                      (16-byte unit ^ (row >> 1) & 3)
    ring_address      the packed MXFP4 ring, [64, 256] bytes, plain or swizzled (16-byte unit ^ row % 8)

GEN3_ACCESSES lists the accesses that decided variants v102 / v103 / v116 (the V^T fragment loads
of every variant before v116 and v100's decode stores model as 4-way; v103's stores and v116's
loads as conflict-free). The H200 agreed where the code matched the model: v103's decode stores
-6%; v116's loads -20% at bs256-kv8192, with Nsight Compute's shared wavefronts of those LDS.128
going from 4x to 1x their ideal (gen3/r13-src-*, r14-src-*). v102 measured no gain because its
ROW_PERM moved tokens between rows while the loads kept reading rows 0 / 16 / 32 / 48 together: the
layout this model credited to it was first built in v116. The model does not explain the fp8
tile's cp.async, which ncu counts at 2x its ideal wavefronts where the model sees no conflict.

    python3 scripts/probes/gluon_bank_model.py      (prints the table)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Bases = Sequence[Sequence[int]]


def coords(bases: Bases, index: int) -> list[int]:
    """Coordinates of ``index`` under linear-layout ``bases`` (bit i of index XORs in bases[i])."""
    out = [0] * len(bases[0])
    for i, b in enumerate(bases):
        if index >> i & 1:
            out = [o ^ x for o, x in zip(out, b)]
    return out


def nvmma64_address(row: int, col: int) -> int:
    """Byte address of (row, byte col) in a [rows, 64 B] tile with the 64-byte NVMMA swizzle."""
    return row * 64 + (((col >> 4) ^ ((row >> 1) & 3)) << 4) + (col & 15)


def ring_address(row: int, col: int, swizzled: bool) -> int:
    """Byte address in the [64, 256]-byte packed ring: plain, or 16-byte unit ^ row % 8."""
    unit = ((col >> 4) ^ (row % 8)) if swizzled else (col >> 4)
    return row * 256 + (unit << 4) + (col & 15)


def wavefronts(lane_bases: Bases, warp_bases: Bases, address: Callable[..., int],
               register_offsets: Sequence[Sequence[int]] = ((0, 0),), num_warps: int = 4,
               bytes_per_lane: int = 16) -> int:
    """Worst wavefronts per phase of a ``bytes_per_lane`` access (1 = no bank conflict). A phase is the
    lanes that fill one 128-byte line: a quarter warp at 16 bytes a lane, a half warp at 8; it is one
    wavefront when its addresses fall in distinct ``bytes_per_lane``-wide bank groups of a line."""
    if len(lane_bases) != 5:
        raise ValueError(f"a warp has 32 lanes: 5 lane bases expected, got {len(lane_bases)}")
    if bytes_per_lane not in (8, 16):
        raise ValueError(f"bytes_per_lane must be 8 or 16, got {bytes_per_lane}")
    per_phase = 128 // bytes_per_lane
    worst = 1
    for w in range(num_warps):
        for reg in register_offsets:
            for q in range(32 // per_phase):
                groups: dict[int, set[int]] = {}
                for lane in range(per_phase * q, per_phase * q + per_phase):
                    c = coords(list(lane_bases) + list(warp_bases), lane | (w << 5))
                    a = address(*[x ^ r for x, r in zip(c, reg)])
                    groups.setdefault((a % 128) // bytes_per_lane, set()).add(a // 128)
                worst = max(worst, max(len(v) for v in groups.values()))
    return worst


def _tile_rows(bases_c_t_d: Bases) -> list[list[int]]:
    """[chunk c, token t, dim d] bases of the V^T fragment load -> [row 64 c + t, byte d] of the tile."""
    return [[64 * c + t, d] for c, t, d in bases_c_t_d]


def _block(t: int, blk: int) -> list[int]:
    """(token, MX block) of the decode -> [row, byte] of its 32 e4m3 bytes in the K tile."""
    return [64 * (blk >> 1) + t, 32 * (blk & 1)]


def _blocked_lanes(threads_per_row: int) -> list[list[int]]:
    """Lane bases of BlockedLayout([1, 16], [32 / threads_per_row, threads_per_row], ...) over bytes."""
    return [[0, 16 << i] if (1 << i) < threads_per_row else [(1 << i) // threads_per_row, 0] for i in range(5)]


_V_WARPS = _tile_rows([[2, 0, 0], [4, 0, 0]])
GEN3_ACCESSES = {
    # name: (lane bases, warp bases, address, register offsets) - the layouts of gluon_sm90.py
    "V^T fragment loads, v97-v115 (lanes on rows 16 / 32 apart)": (
        _tile_rows([[0, 16, 0], [0, 32, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]]), _V_WARPS, nvmma64_address, [[0, 0]]),
    "V^T fragment loads, V_CF (v116+: lanes on rows 1 / 4 apart)": (
        _tile_rows([[0, 1, 0], [0, 4, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]]), _V_WARPS, nvmma64_address, [[0, 0]]),
    "MXFP4 decode stores, v100 / v101": (
        [_block(0, 1), _block(0, 2), _block(0, 4), _block(0, 8), _block(1, 0)], [_block(2, 0), _block(4, 0)],
        nvmma64_address, [[0, 0], [0, 16]]),
    "MXFP4 decode stores, ROW_PERM (v103+)": (
        [_block(1, 0), _block(2, 0), _block(4, 0), _block(0, 1), _block(0, 2)], [_block(8, 0), _block(16, 0)],
        nvmma64_address, [[0, 0], [0, 16]]),
    "MXFP4 ring loads, v100 / v101": (
        [[0, 16], [0, 32], [0, 64], [0, 128], [1, 0]], [[2, 0], [4, 0]],
        lambda r, c: ring_address(r, c, False), [[0, 0]]),
    "MXFP4 ring loads, ROW_PERM (v103+)": (
        [[1, 0], [2, 0], [4, 0], [0, 16], [0, 32]], [[8, 0], [16, 0]],
        lambda r, c: ring_address(r, c, True), [[0, 0]]),
    "MXFP4 ring cp.async, v100 / v101": (
        _blocked_lanes(4), [[8, 0], [16, 0]], lambda r, c: ring_address(r, c, False), [[0, 0]]),
    "MXFP4 ring cp.async, ROW_PERM (v103+)": (
        _blocked_lanes(16), [[2, 0], [4, 0]], lambda r, c: ring_address(r, c, True), [[0, 0]]),
    "fp8 tile cp.async": (_blocked_lanes(4), [[8, 0], [16, 0]], nvmma64_address, [[0, 0]]),
}


def wavefronts_8byte(lane_bases: Bases, warp_bases: Bases, address: Callable[..., int],
                     register_offsets: Sequence[Sequence[int]] = ((0, 0),), num_warps: int = 8) -> int:
    """:func:`wavefronts` of an 8-byte-per-lane access (LDS.64) by half warps, 8 warps by default."""
    return wavefronts(lane_bases, warp_bases, address, register_offsets, num_warps, bytes_per_lane=8)


# the two-warpgroup kernel's V^T loads (v121+, v_load8_wg2): 8 dims a lane, 16 token rows per thread
_WG2_TOKENS = [[64 * 0 + t, 0] for t in (16, 8, 4, 32)]
GEN3_ACCESSES_8BYTE = {
    "V^T fragment loads, two warpgroups (v121+)": (
        _tile_rows([[0, 1, 0], [0, 2, 0], [0, 0, 8], [0, 0, 32], [1, 0, 0]]),
        _tile_rows([[2, 0, 0], [4, 0, 0], [0, 0, 16]]), nvmma64_address,
        [coords(_WG2_TOKENS, r) for r in range(16)]),
    # the same loads with v116's lanes (rows 1 / 4 apart, d16 / d32 on lanes): 2-way at 8 bytes a lane
    "V^T fragment loads, two warpgroups with V_CF's lanes": (
        _tile_rows([[0, 1, 0], [0, 4, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]]),
        _tile_rows([[2, 0, 0], [4, 0, 0], [0, 0, 8]]), nvmma64_address,
        [coords([[t, 0] for t in (16, 8, 2, 32)], r) for r in range(16)]),
}


def report() -> dict[str, int]:
    """Worst wavefronts per quarter warp (16-byte accesses) or half warp (8-byte) of every modelled access."""
    return ({name: wavefronts(*spec) for name, spec in GEN3_ACCESSES.items()}
            | {name: wavefronts_8byte(*spec) for name, spec in GEN3_ACCESSES_8BYTE.items()})
