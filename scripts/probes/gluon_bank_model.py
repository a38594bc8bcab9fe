#!/usr/bin/env python3
"""Shared-memory bank conflicts of generation 3's register <-> shared accesses, by a model (no GPU).

Each access is a 16-byte vector per lane, so a quarter warp (8 lanes) is one wavefront if its 8
addresses fall in 8 different 16-byte bank groups of a 128-byte line; the printed number is the worst
wavefronts per quarter warp (1 = conflict-free). Lane / warp -> coordinates are the layouts'
bases as written in mla/kernels/triton/gluon_sm90.py; addresses: the 64-byte NVMMA swizzle of the
[rows, 64 B] fp8 K tile (16-byte unit ^ (row >> 1) & 3) and the packed MXFP4 ring ([64, 256] bytes,
plain or 16-byte unit ^ row % 8). Used for round 7 (scripts/probes/gen3-r7.txt): the V^T fragment
loads of v97-v101 and v100's decode stores come out 4-way, v102 / v103's 1.

    python3 scripts/probes/gluon_bank_model.py
"""
def coords(bases, idx):
    out = [0]*len(bases[0])
    for i, b in enumerate(bases):
        if idx >> i & 1:
            out = [o ^ x for o, x in zip(out, b)]
    return out
def nvmma64(r, col):  # byte address in a [rows, 64 B] 64-byte-swizzled tile
    return r*64 + ((((col >> 4) ^ ((r >> 1) & 3))) << 4) + (col & 15)
def ring_sw(r, col, sw):  # [64, 256] uint8, 16-byte unit ^ row % 8 (sw) or none
    return r*256 + ((((col >> 4) ^ (r % 8)) if sw else (col >> 4)) << 4) + (col & 15)
def conflicts(lane_bases, warp_bases, addr, reg_offsets):
    worst = 1
    for w in range(4):
        for reg in reg_offsets:
            for q in range(4):  # quarter warps (16-byte accesses)
                lines = {}
                for l in range(8*q, 8*q+8):
                    c = coords(lane_bases + warp_bases, l | (w << 5))
                    c = [a ^ b for a, b in zip(c, reg)]
                    a = addr(*c)
                    lines.setdefault((a % 128) // 16, set()).add(a // 128)
                worst = max(worst, max(len(v) for v in lines.values()))
    return worst
# V fragment loads on [512 rows (64c+t), 64 d]: lanes/warps as 2-D bases
def td(b): return [[64*c+t, d] for c, t, d in b]
warps = td([[2,0,0],[4,0,0]])
print("v_load orig", conflicts(td([[0,16,0],[0,32,0],[0,0,16],[0,0,32],[1,0,0]]), warps, nvmma64, [[0,0]]))
print("v_load perm", conflicts(td([[0,1,0],[0,4,0],[0,0,16],[0,0,32],[1,0,0]]), warps, nvmma64, [[0,0]]))
def m(t, blk, e=0): return [64*(blk>>1)+t, 32*(blk&1)+e]
print("v100 dec store", conflicts([m(0,1),m(0,2),m(0,4),m(0,8),m(1,0)], [m(2,0),m(4,0)], nvmma64, [[0,0],[0,16]]))
print("v103 dec store", conflicts([m(1,0),m(2,0),m(4,0),m(0,1),m(0,2)], [m(8,0),m(16,0)], nvmma64, [[0,0],[0,16]]))
print("v100 ring load", conflicts([[0,16],[0,32],[0,64],[0,128],[1,0]], [[2,0],[4,0]], lambda r,c: ring_sw(r,c,False), [[0,0]]))
print("v103 ring load", conflicts([[1,0],[2,0],[4,0],[0,16],[0,32]], [[8,0],[16,0]], lambda r,c: ring_sw(r,c,True), [[0,0]]))
# cp.async writes: BlockedLayout [1,16] x threads [8,4] (v100) / [2,16] (v103): lane l -> (row, col)
def blocked(tpw_cols):
    lanes = []
    for i in range(5):
        l = 1 << i
        lanes.append([0, 16*l] if l < tpw_cols else [l // tpw_cols, 0])
    return lanes
print("v100 ring copy", conflicts(blocked(4)[:5], [[8,0],[16,0]], lambda r,c: ring_sw(r,c,False), [[0,0]]))
print("v103 ring copy", conflicts(blocked(16)[:5], [[2,0],[4,0]], lambda r,c: ring_sw(r,c,True), [[0,0]]))
print("fp8 tile copy", conflicts(blocked(4)[:5], [[8,0],[16,0]], nvmma64, [[0,0]]))
