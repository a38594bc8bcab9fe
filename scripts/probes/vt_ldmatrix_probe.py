"""Issue 9 / notes-triton "Rounds 30-32" next step 1: can the consumers' V^T A operands (PV_FP8, e4m3,
k_width 4) come from `ldmatrix.trans` instead of LDS.128 + 4x4 byte transposes, in Gluon on triton 3.6?

What it shows (offline sm90 compiles, no GPU):
  1. model   - a Python model of the whole ldmatrix path, element by element: the 64-byte-swizzled e4m3
               K tile (k_lat: [512 = 8 chunks x 64 tokens, 64 B] rows, 16-byte unit ^ (t >> 1) & 3),
               `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16` as the PTX ISA defines it (lane 8j + i
               gives row i of matrix j; thread T gets rows 2 (T % 4), 2 (T % 4) + 1 of column T / 4),
               one `prmt.b32` per output register (0x6240 / 0x7351 on each register pair), and the
               wgmma .m64nNk32 .e4m3 register A fragment (row = 16 w + T / 4 + 8 (r & 1),
               k = 4 (T % 4) + 16 (r >> 1) + byte). It asserts for every element that the thread and
               register byte the wgmma reads hold V^T[m, k] under the relabelling (dims:
               m = c4 c2 d1 d8 d4 d2, slice = c1 d32 d16; tokens: k = t32 t16 t4 t1 t2 t8, i.e. V_CF's
               k order, so _store_p8(V_CF=True) is unchanged), that each A register is one PRMT result
               in byte order (the pack into wgmma registers costs nothing), and that every ldmatrix
               phase (8 row addresses of 16 B) hits 8 distinct 16-byte bank groups.
  2. SASS    - two small Gluon kernels with the consumer's PV structure (a loop over 64-token tiles: a
               barrier, the 8 V^T fragments from a [2 slots, 512, 64] e4m3 tile, _pv_reg8_promoted's 16
               QGMMA into fresh accumulators + FFMA) compiled for GPUTarget("cuda", 90, 32):
                 today - gluon_sm90._v_fragments8(k_smem, slot, _WS_V_CF, True) (LDS.128 + _BYTE_T4_PTX)
                 ldsm  - gluon_sm90._v_fragments8_ldsm (V_LDSM, v140 - v142): the slot reinterpreted as uint16 [512, 32]
                         (shared_memory_descriptor._reinterpret with NVMMASharedLayout(64, 16)), one
                         .load(_V_LDSM) that triton's LinearLayout lowering turns into 16 LDSM.16.MT88.4,
                         one inline-asm PRMT pair per 2 registers, gl.join, and relabelling permutes
               and prints the loop's instruction mix per warp per tile.
  3. b8      - whether ptxas accepts `ldmatrix.m16n16.x1.trans.b8` for sm_90a (it does not: the 8-bit
               forms are sm_100a+; triton's TargetInfo::supportLdStMatrixB8 is also >= 100).

Result (2026-12, triton 3.6.0 and 3.9.0 alike): the model passes (0 bank-group collisions in 256 phases); the
probe loop per warp per tile is 272 instructions today (16 LDS.128, 128 PRMT, 206 registers) and 207 with
ldmatrix (16 LDSM.16.MT88.4 on one base register + immediates, 64 PRMT, no added address arithmetic, no
shared round trip for the A-layout conversion, 166 registers); ptxas refuses the .b8 form on sm_90a.

Run: PYTHONPATH=/tmp/tri36:. .venv/bin/python scripts/probes/vt_ldmatrix_probe.py
(triton 3.6.0 at /tmp/tri36: pip install --no-deps --target /tmp/tri36 triton==3.6.0)
"""

from __future__ import annotations

import collections
import itertools
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# ---------------------------------------------------------------------------------------------------
# 1. the Python model (no triton needed)
# ---------------------------------------------------------------------------------------------------
# the 16-bit load layout over [8 c, 64 t, 32 p] (p = the byte pair of dims 2p, 2p + 1 of chunk c):
# register bit 0 = row + 1 of an 8x8 matrix (t2), lanes 0-1 = rows + 2, + 4 (t1, t4), lanes 2-4 = the
# 8 columns of 16 bytes (p1 p2 p4 = dims d2 d4 d8); register bit 1 = the PRMT pair (t8); the rest free
LDSM_REG = [[0, 2, 0], [0, 8, 0], [0, 0, 8], [0, 0, 16], [0, 16, 0], [0, 32, 0], [1, 0, 0]]
LDSM_LANE = [[0, 1, 0], [0, 4, 0], [0, 0, 1], [0, 0, 2], [0, 0, 4]]
LDSM_WARP = [[2, 0, 0], [4, 0, 0]]
PAIR_SEL = (0x6240, 0x7351)  # out0 = (A0 B0 A2 B2): the even dim; out1 = (A1 B1 A3 B3): the odd dim
# after the PRMT pair and gl.join the [8, 64, 64] tensor's 15 binary axes (c4 c2 c1 t32 .. t1 d32 .. d1) hold
# these true labels (bytes 1 / 2 of a result are the t8 / t2 rows: the labels t2, t8 swap) ...
TRUE_AXES = ["c4", "c2", "c1", "t32", "t16", "t2", "t4", "t8", "t1", "d32", "d16", "d8", "d4", "d2", "d1"]
# ... and _v_fragment8_ldsm's permute orders them m = (c4 c2 d1 d8 d4 d2), k = (t32 t16 t4 t1 t2 t8) (V_CF's
# k order), slice = (c1 d32 d16)
PERM_LDSM = (0, 1, 14, 11, 12, 13, 3, 4, 6, 8, 5, 7, 2, 9, 10)


def _apply(bases, idx):
    out = [0, 0, 0]
    for bit, b in enumerate(bases):
        if (idx >> bit) & 1:
            out = [o ^ x for o, x in zip(out, b)]
    return out


def _smem_addr(c, t, byte):
    """Byte address of (chunk c, token t, byte) in k_lat's slot: rows of 64 B, 64-byte NVMMA swizzle."""
    row = 64 * c + t
    unit = (byte >> 4) ^ ((row >> 1) & 3)
    return row * 64 + unit * 16 + (byte & 15)


def _prmt(a, b, sel):
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def _bit(x, i):
    return (x >> i) & 1


def model_check(verbose=True):
    """Simulate the ldmatrix path and assert that it yields exactly the wgmma A fragments."""
    rnd = random.Random(0)
    V = [[[rnd.randrange(256) for _ in range(64)] for _ in range(64)] for _ in range(8)]  # V[c][t][d] bytes
    mem = bytearray(8 * 64 * 64)
    for c, t, d in itertools.product(range(8), range(64), range(64)):
        mem[_smem_addr(c, t, d)] = V[c][t][d]
    # the relabelling the kernel applies (_v_fragment8_ldsm's permute of the true axes): k -> token,
    # (slice, m) -> (chunk, dim)
    new_axes = [TRUE_AXES[i] for i in PERM_LDSM]  # m (6 bits), k (6 bits), slice (3 bits), MSB first
    m_ax, k_ax, s_ax = new_axes[:6], new_axes[6:12], new_axes[12:]

    def _field(ax, x, prefix):
        return sum(int(a[1:]) for i, a in enumerate(reversed(ax)) if a[0] == prefix and _bit(x, i))

    def token(k):
        return _field(k_ax, k, "t")

    def chunk_dim(s, m):
        c = _field(m_ax, m, "c") + _field(s_ax, s, "c")
        d = _field(m_ax, m, "d") + _field(s_ax, s, "d")
        return c, d

    # _store_p8(V_CF=True): permute((0, 1, 3, 5, 4, 2, 6)) of pt's bits (t32 t16 t8 t4 t2 t1, R)
    src_bits = ["t32", "t16", "t8", "t4", "t2", "t1"]
    kbits = [src_bits[i] for i in (0, 1, 3, 5, 4, 2)]  # MSB first
    weight = {"t32": 32, "t16": 16, "t8": 8, "t4": 4, "t2": 2, "t1": 1}
    for k in range(64):
        assert token(k) == sum(weight[b] for i, b in enumerate(reversed(kbits)) if _bit(k, i)), "k order != V_CF"
    assert sorted(token(k) for k in range(64)) == list(range(64))
    assert sorted(chunk_dim(s, m) for s in range(8) for m in range(64)) == [(c, d) for c in range(8)
                                                                            for d in range(64)]
    n_regs16 = 1 << len(LDSM_REG)  # 128 16-bit elements a thread = 64 registers
    phases = conflicts = 0
    a_regs = {}  # (warp, lane, slice, kk, r) -> 32-bit A register as the wgmma reads it
    prmt_out = {}  # (warp, lane, q, half) -> (value, list of logical positions of its 4 bytes)
    for w in range(4):
        # ldmatrix.x4.trans: instruction q covers 16-bit registers 8q .. 8q + 7 (2 per matrix j)
        regs = {}
        for q in range(n_regs16 // 8):
            rows = {}  # matrix j, row i -> address supplied by lane 8 j + i
            for j in range(4):
                for i in range(8):
                    reg_idx = 8 * q + 2 * j + (i & 1)
                    lane = (i >> 1)  # lanes 0-1 = rows 2, 4; lanes 2-4 (the column) = 0 for the row address
                    c, t, p = [a ^ b for a, b in zip(_apply(LDSM_REG, reg_idx), _apply(LDSM_LANE, lane))]
                    c ^= _apply(LDSM_WARP, w)[0]
                    rows[j, i] = _smem_addr(c, t, 2 * p)
                    assert rows[j, i] % 16 == 0
                # one phase per matrix: 8 rows of 16 B; bank group = (addr / 16) % 8
                groups = {(rows[j, i] // 16) % 8 for i in range(8)}
                phases += 1
                conflicts += 8 - len(groups)
            for T in range(32):
                for j in range(4):
                    lo = int.from_bytes(mem[rows[j, 2 * (T % 4)] + 2 * (T // 4):][:2], "little")
                    hi = int.from_bytes(mem[rows[j, 2 * (T % 4) + 1] + 2 * (T // 4):][:2], "little")
                    regs[T, 8 * q + 2 * j] = lo | (hi << 16)  # elements (2j, 2j + 1) of instruction q
        # inline asm, pack = 4 on uint16: $2 = elements 4g, 4g+1; $3 = 4g+2, 4g+3 -> two uint8 x 4 outputs
        for T in range(32):
            for g in range(n_regs16 // 4):
                a, b = regs[T, 4 * g], regs[T, 4 * g + 2]
                for half, sel in enumerate(PAIR_SEL):
                    pos = []
                    for byte in range(4):  # output element 4g + byte of tensor `half` (= d1 after gl.join)
                        c, t, p = [x ^ y for x, y in zip(_apply(LDSM_REG, 4 * g + byte), _apply(LDSM_LANE, T))]
                        c ^= _apply(LDSM_WARP, w)[0]
                        pos.append((c, t, 2 * p + half))
                    prmt_out[w, T, g, half] = (_prmt(a, b, sel), pos)
    # the tensor's labels are its positions with t2 <-> t8 swapped (PRMT 0x6240 puts the t8 row in byte 1):
    # relabel each byte's position to (slice, m, k) and check it against the wgmma fragment
    swap = lambda t: (t & ~10) | (_bit(t, 1) << 3) | (_bit(t, 3) << 1)
    inv_tok = {token(k): k for k in range(64)}
    inv_cd = {chunk_dim(s, m): (s, m) for s in range(8) for m in range(64)}
    for (w, T, g, half), (val, pos) in prmt_out.items():
        owners = set()
        for byte, (c, t, d) in enumerate(pos):
            s, m = inv_cd[c, d]
            k = inv_tok[swap(t)]
            # wgmma A: warp w rows 16w..16w+15; lane T: row T/4 (+8 for r odd), k 4 (T % 4) + byte (+16 r>1)
            kk, kr = divmod(k, 32)
            r = (_bit(m, 3)) + 2 * (kr >> 4)
            assert m >> 4 == w and (m & 7) == T // 4, "row not owned by this thread"
            assert ((kr >> 2) & 3) == T % 4 and (kr & 3) == byte, "k not in this thread / byte"
            owners.add((s, kk, r))
            # the content: the true token of the byte is swap(t) (the PRMT order), i.e. V^T[m, k]
            cc, dd = chunk_dim(s, m)
            assert (val >> (8 * byte)) & 0xFF == V[cc][token(k)][dd], "wrong value"
        assert len(owners) == 1, "an A register built from more than one PRMT result"
        a_regs[(w, T) + owners.pop()] = val
    assert len(a_regs) == 4 * 32 * 8 * 2 * 4  # warps x lanes x slices x k-instructions x 4 registers
    if verbose:
        print(f"model: {len(a_regs)} A registers (4 warps x 32 lanes x 8 slices x 2 k32 x 4) = "
              f"{n_regs16 // 2} PRMT per thread per tile, all {8 * 64 * 64} bytes in place; "
              f"{phases} ldmatrix phases, {conflicts} bank-group collisions")
    assert conflicts == 0
    return True


# _natural_rows_ldsm's permute of x = join-tree of the 8 slices reshaped to (m bits MSB first, R, s0, s1, s2)
NATURAL_PERM_LDSM = (6, 0, 1, 9, 8, 7, 3, 4, 5, 2)  # -> R, c4 c2 c1, d32 d16 d8 d4 d2 d1


def epilogue_check(verbose=True):
    """_natural_rows_ldsm puts row m of slice s at latent dim 64 c + d of the model's relabelling."""
    m_ax = [TRUE_AXES[i] for i in PERM_LDSM][:6]
    s_ax = [TRUE_AXES[i] for i in PERM_LDSM][12:]
    src_axes = m_ax + ["R"] + list(reversed(s_ax))  # join tree: s0 (s bit 0) first after R
    out_axes = [src_axes[i] for i in NATURAL_PERM_LDSM]
    assert out_axes == ["R", "c4", "c2", "c1", "d32", "d16", "d8", "d4", "d2", "d1"], out_axes
    if verbose:
        print(f"epilogue: _natural_rows_ldsm's permute {NATURAL_PERM_LDSM} restores (R, dim) order")
    return True


# ---------------------------------------------------------------------------------------------------
# 2. the Gluon kernels (triton 3.6)
# ---------------------------------------------------------------------------------------------------
try:  # the Gluon kernels need triton >= 3.5 (3.6 here); the model above does not
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    from mla.kernels.triton import gluon_sm90 as G

    # (the ldmatrix path is the kernel's own: gluon_sm90._v_fragments8_ldsm / _natural_rows_ldsm, V_LDSM)
    @gluon.jit
    def probe_kernel(kv_ptr, p_ptr, out_ptr, n_tiles, MODE: gl.constexpr):
        """The consumer's PV half on a fixed 2-slot K ring: per tile a barrier, the 8 fragments, 16 QGMMA."""
        k_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float8e4nv)
        p_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([16, 64], gl.float8e4nv)
        cp: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])
        k_lat = gl.allocate_shared_memory(gl.float8e4nv, [2, 512, 64], k_sl)
        p8 = gl.allocate_shared_memory(gl.float8e4nv, [2, 16, 64], p_sl)
        rows = gl.arange(0, 512, layout=gl.SliceLayout(1, cp))
        cols = gl.arange(0, 64, layout=gl.SliceLayout(0, cp))
        tile = gl.load(kv_ptr + rows[:, None] * 64 + cols[None, :]).to(gl.float8e4nv, bitcast=True)
        k_lat.index(0).store(tile)
        k_lat.index(1).store(tile)
        pr = gl.arange(0, 16, layout=gl.SliceLayout(1, cp))
        pt = gl.load(p_ptr + pr[:, None] * 64 + cols[None, :]).to(gl.float8e4nv, bitcast=True)
        p8.index(0).store(pt)
        p8.index(1).store(pt)
        o_layout: gl.constexpr = G._WS_S
        acc0 = gl.zeros([64, 16], gl.float32, layout=o_layout)
        acc_zero = acc0
        acc1 = acc0
        acc2 = acc0
        acc3 = acc0
        acc4 = acc0
        acc5 = acc0
        acc6 = acc0
        acc7 = acc0
        alpha = gl.full([16], 0.5, gl.float32, layout=gl.SliceLayout(0, o_layout))[None, :]
        v_cf: gl.constexpr = G._WS_V_CF
        a_layout: gl.constexpr = G._WS_A
        for j in range(n_tiles):
            slot = j % 2
            G._cta_barrier()
            if MODE == 0:
                f0, f1, f2, f3, f4, f5, f6, f7 = G._v_fragments8((k_lat, k_lat), slot, v_cf, True)
            else:
                f0, f1, f2, f3, f4, f5, f6, f7 = G._v_fragments8_ldsm(k_lat, slot)
            acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = G._pv_reg8_promoted(
                f0, f1, f2, f3, f4, f5, f6, f7, p8, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                alpha, acc_zero, a_layout)
        if MODE == 0:
            o = G._natural_rows(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, 16)
        else:
            o = G._natural_rows_ldsm(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, 16)
        ob: gl.constexpr = G._WS_OUT
        o = gl.convert_layout(o, ob)
        r = gl.arange(0, 16, layout=gl.SliceLayout(1, ob))
        d = gl.arange(0, 512, layout=gl.SliceLayout(0, ob))
        gl.store(out_ptr + r[:, None] * 512 + d[None, :], o)



except ImportError as exc:  # pragma: no cover
    probe_kernel = None
    GLUON_ERROR = exc


def compile_probe(mode: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    fn = probe_kernel
    sig = {"kv_ptr": "*u8", "p_ptr": "*u8", "out_ptr": "*fp32", "n_tiles": "i32", "MODE": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    src = GluonASTSource(fn, sig, attrs=attrs, constexprs={(4,): mode})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))


def loop_mix(sass: str):
    """The innermost backward-branch loop's op mix (per warp, one trip = one 64-token tile)."""
    from mla.analysis import isa

    body = next(iter(isa.sass_functions(sass).values()))
    index = {ins.addr: i for i, ins in enumerate(body)}
    edges = []
    for i, ins in enumerate(body):
        t = isa._branch_target(ins)
        if t is not None and t < ins.addr and t in index:
            edges.append((index[t], i))
    inner = [(a, b) for a, b in edges if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in edges)]
    a, b = max(inner, key=lambda e: e[1] - e[0])
    return body[a:b + 1]


def _count(ops, pred):
    return sum(1 for o in ops if pred(o))


def sass_table():
    from mla.analysis.isa_triton import _cuobjdump

    rows = []
    for mode, name in ((0, "today: LDS.128 + _BYTE_T4_PTX (v116 / v133 consumer)"),
                       (1, "ldsm: LDSM.16.MT88.4 + 1 PRMT / register")):
        ck = compile_probe(mode)
        usage, sass = _cuobjdump(ck.asm["cubin"])
        Path("/tmp/vt").mkdir(exist_ok=True)
        Path(f"/tmp/vt/probe_mode{mode}.sass").write_text(sass)
        Path(f"/tmp/vt/probe_mode{mode}.ptx").write_text(ck.asm["ptx"])
        loop = loop_mix(sass)
        ops = [i.op for i in loop]
        mix = collections.Counter(o.split(".")[0] for o in ops)
        lds = collections.Counter(o for o in ops if o.startswith("LDS"))
        row = dict(path=name, total=len(ops), LDS128=lds.get("LDS.128", 0),
                   LDSM=_count(ops, lambda o: o.startswith("LDSM")), PRMT=mix["PRMT"], QGMMA=mix["QGMMA"],
                   addr=mix["IADD3"] + mix["LOP3"] + mix["IMAD"] + mix["LEA"] + mix["SHF"] + mix["VIADD"],
                   other=0, regs=usage.get("registers", ""), spill=usage.get("local_bytes", ""))
        row["other"] = row["total"] - row["LDS128"] - row["LDSM"] - row["PRMT"] - row["QGMMA"] - row["addr"]
        row["mix"] = mix.most_common(10)
        rows.append(row)
    cols = ("total", "LDS128", "LDSM", "PRMT", "QGMMA", "addr", "other", "regs", "spill")
    print(f"\nSASS, loop trip per warp per 64-token tile (8 PV slices' A fragments + 16 QGMMA), triton "
          f"{__import__('triton').__version__}, sm90:")
    print(f"{'path':58s} " + " ".join(f"{c:>6s}" for c in cols))
    for r in rows:
        print(f"{r['path']:58s} " + " ".join(f"{str(r[c]):>6s}" for c in cols))
    for r in rows:
        print(f"  {r['path'].split(':')[0]} mix: {r['mix']}")
    return rows


def b8_check():
    """ptxas on a one-instruction kernel with ldmatrix.m16n16.x1.trans.shared.b8 for sm_90a."""
    from mla.analysis.isa_triton import _nv_bin

    ptxas = _nv_bin("ptxas")
    out = {}
    for arch in ("sm_90a", "sm_100a"):
        ptx = (".version 8.7\n.target %s\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n"
               ".visible .entry k(.param .u64 p) {\n .reg .b32 r<4>; .reg .b64 rd<2>;\n"
               " mov.u32 r0, smem;\n ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {r1, r2}, [r0];\n"
               " ld.param.u64 rd0, [p];\n st.global.v2.u32 [rd0], {r1, r2};\n ret;\n}\n") % arch
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "k.ptx"
            f.write_text(ptx)
            res = subprocess.run([ptxas, f"-arch={arch}", str(f), "-o", str(Path(d) / "k.o")],
                                 capture_output=True, text=True)
        out[arch] = "ok" if res.returncode == 0 else (res.stderr.strip().splitlines() or ["error"])[0][:150]
    print("\nptxas ldmatrix.m16n16.x1.trans.b8: " + "; ".join(f"{k}: {v}" for k, v in out.items()))
    return out


if __name__ == "__main__":
    from mla.kernels.triton import gluon_sm90 as _G  # the kernel's permutes are the model's

    assert str(PERM_LDSM) in _G._v_fragments8_ldsm.src, "kernel permute != model's"
    assert str(NATURAL_PERM_LDSM) in _G._natural_rows_ldsm.src
    model_check()
    epilogue_check()
    if os.environ.get("VT_MODEL_ONLY") != "1":
        b8_check()
        sass_table()
