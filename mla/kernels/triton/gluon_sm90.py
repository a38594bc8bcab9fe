"""Generation 3 of the Triton family: the fp8 / MXFP4 swap-AB decode written in Gluon for sm90 (Hopper).

Why Gluon (docs/notes-triton.md, "Generation 3"): generation 2 (swapab.py) put QK^T on fp8
warpgroup MMA, but Nsight Compute showed what plain Triton generates around the MMAs is what binds:
the fp8 V operand of PV read by byte-wide LDS (~420 of 1130 instructions per warp per tile), every
MMA followed by a wait of depth 0, 255 registers (2 CTAs x 4 warps per SM). Plain Triton does not
let us choose the shared-memory layout of V or when a wgmma is waited for; Gluon does. This kernel
keeps generation 2's math and changes only what the measurements named:

    per 64-token tile (one warpgroup, 4 warps):
    1. cp.async the fp8 tile (8 latent chunks [64, 64] + the rope chunk) STAGES - 1 tiles ahead into
       NVMMA-swizzled shared memory (multi-stage ring; no register round trip);
    2. S^T [64, R] = K @ Q^T on QGMMA e4m3, K straight from the tile, Q as fp8 hi + lo with one scale
       per row built once per program: two N = R accumulators, or (QK_PAIRS) one N = 2R operand with
       the terms in adjacent columns (K read once);
    3. softmax down the token axis; P^T [64, R] to shared memory as fp16 (PV's B operand);
    4. PV, acc^T [512, R] += V^T P^T on fp16 HGMMA, with V converted from fp8 once, either
       V_SLOTS = 8: into a whole fp16 tile in shared memory read MN-major (PV one tile behind QK),
       V_SLOTS = 2 / 4: through a ring of 64-dim fp16 slices (small enough for two CTAs per SM), or
       PV_REG: straight into registers as the MMA's A operands - the latent dims relabelled so one
       16-byte load per token is each thread's fragment (_v_fragments); the epilogue stores each
       row of acc^T at its dim (_slice_dims).
    MXFP4 (KV_FORMAT 2, on the PV_REG + QK_PAIRS + EPI_NATURAL kernel): the ring holds packed tiles
    (288 bytes per token); each iteration decodes one into a single e4m3 K tile - every MX block
    by one thread, a PRMT table lookup per 4 elements with the block scale in the exponent field
    (_E2M1_E4M3_PTX) - after which steps 2-4 are the fp8 kernel's (scale 1). The scales come by
    register loads one tile ahead.
    ROW_PERM: the tile's rows hold its tokens in a bit-swapped order (_row_token), with the MXFP4
    decode by 8 consecutive rows per quarter warp: its stores are conflict-free. (It was meant for the
    V^T fragment loads too, but those read tile rows, not tokens: their lanes stayed on rows 16 / 32
    apart, 4-way conflicted, until V_CF.)
    PV_FP8: PV on e4m3 QGMMA too - V^T's fragments only byte-transposed into the A layout (_BYTE_T4_PTX,
    no conversion), P^T as 256 P = hi + lo, two e4m3 K-major B tiles into one accumulator (_store_p8).
    QK_CAT: QK_PAIRS' operand as [hi; lo] rows, so the accumulator's halves are the softmax layout
    as they are (the interleaved order cost 16 SHFL.IDX per tile).
    PV_PROMOTE (with PV_FP8): each tile's PV in a fresh accumulator, added to the fp32 output by the
    rescale's FFMA - e4m3 QGMMA accumulates with fewer bits than fp32 (v108 - v111 lost accuracy over
    128 tiles); 2: each slice waited for at once.
    V_CF (with PV_FP8): the V^T fragment loads with their lanes on tile rows 1 and 4 apart, so a
    quarter warp's LDS.128 hit 8 different bank groups (_v_fragment8cf; ncu: 4x -> 1x the ideal
    shared wavefronts, the largest step of rounds 11-15).
    CP_ROWS: the fp8 tile's cp.async by 8 consecutive rows per quarter warp (measured no faster).
    MX_OWN (MXFP4, ROW_PERM): the packed tile's cp.async in the decode's own layout (each thread decodes
    the bytes it copied): one address computation serves both, 51 fewer instructions per warp per tile
    (offline SASS). The barrier after the copy's wait stays: the compiler's shared-memory analysis puts
    one there whatever the layouts.
    LAZY_SUM: the softmax denominators accumulate per thread ([64, R], rescaled by alpha like the
    output) and are summed across the warps once after the loop: one cross-warp reduction (shuffles,
    a shared exchange, a barrier) per tile instead of two.
    LAZY_RESCALE (with LAZY_SUM): P against the running max, the output and sums rescaled only when a
    column's max grows by more than 2**8 (a CTA-uniform branch): no 64 multiplies per thread per tile.
    WARPGROUPS = 2 (on v116 / v117's options; num_warps 8, a register cap of 128 so that two CTAs = 16
    warps share an SM): QK's N (the 16 query rows with their two Q terms) and PV's M (the 512 output
    dims) split between the warpgroups, nothing computed twice; V^T by conflict-free LDS.64
    (_v_fragments8_wg2), the output as 4 slices of [128, R]. Measured slower (v121 / v122, rounds
    22-23): the split adds ~30% instructions per tile (8-byte loads, per-warp wgmma descriptors,
    smaller MMAs, spill reloads at 128 registers) and the second CTA per SM returns ~9%.
    WS_SLOTS > 0 (MXFP4, mla_decode_gluon_sm90_ws_kernel, v127+): warp-specialized, one CTA per SM:
    one or two decoder partitions copy the packed tiles and decode them into a ring of WS_SLOTS e4m3 K
    tiles, two consumer partitions run v116's loop on alternate tiles and write a partial each (two
    splits per program for the tile reduce); full / empty mbarriers per slot.
    WS_HALVES (v131+): decoder P owns latent blocks 8P..8P+7 of every token and the rope of tokens
    32P..32P+31 (equal halves), its scale bytes copied through the packed ring by cp.async.
    WS_TMA (v133+): each half's packed bytes by two TMA loads (lat_desc / rope_desc, built by the
    launcher) on the ring entry's mbarrier (v133: 5% under v130, 11% under v117 at bs256-kv8192).
    WS_LOADER (v136+): a one-warp partition issues every copy and the decoders only decode (slower:
    one tile of lookahead, and its warpgroup's registers come out of the consumers').
    MX_LUT2 (v138 / v139, MXFP4): each block's two table words by one PTX block (_MX_LUT2_PTX): the same words
    for every scale byte, one integer instruction fewer a block (no 8-bit mask in the range check; measured
    within noise in round 33, 0.1-1.6% under v117 on four of five short shapes in round 38c).
    V_LDSM (v140 - v142, with PV_FP8 + V_CF + EPI_NATURAL, one warpgroup): V^T's fragments by ldmatrix.trans on
    byte pairs (the e4m3 tile read as uint16, 16 LDSM.16.MT88.4 a thread) and one PRMT a register
    (_v_fragments8_ldsm) instead of LDS.128 + 4x4 byte transposes (2 PRMT a register); the output dims
    relabelled to match (_natural_rows_ldsm). Layouts checked element by element by
    scripts/probes/vt_ldmatrix_probe.py's model (measured in rounds 33-34).
    EPI_DIRECT (v143+, the warp-specialized V_LDSM consumers): each output slice stored from its accumulator
    registers at its dims, without the slice-by-slice layout conversion (16 partition barriers a consumer);
    v143 is the MXFP4 default on programs of >= 32 KV tiles (launch.ws_by_default; round 38).
    EARLY_TMA (v144): the first tiles' TMA loads issued by the default warps before the Q prologue (measured
    0.5-2% slower than v143).
    WS_SLOTS > 0 with fp8 KV (v149, WS_TMA + WS_LOADER, no decoders): v143's two consumers fed by a one-warp
    loader partition that TMA-loads each fp8 tile straight into the ring of K tiles (nine [64, 64 B] boxes on
    the entry's full barrier): the producer / consumer structure of FlashMLA's and FlashInfer's sm90 decode,
    one CTA per SM, WS_SLOTS (even) tiles in flight or in use; measured -2.5..-3.5% against v141 on the long
    shapes where it was steady, not a default (round 41).
    KV_FIRST (v145 / v146): the KV range and the first tile's copies issued before Q's loads (round 39).
    COOP_MERGE (v147 / v148, one warpgroup): the splits of each (batch element, head group) merge the output
    together in this kernel (_coop_merge; a cooperative grid of one program per SM, no reduce kernel): measured
    slower than the PDL-overlapped tile reduce on every split shape (round 40).
Measured variants v91-v149 (variants.py; docs/notes-triton.md "Generation 3" .. "Round 41").

The grid, split boundaries, partial layout and LSE convention are generation 1's (split kernel), so
the split heuristic and the tile / loop reduce kernels serve it unchanged; FUSED_REDUCE is generation
1's one-launch reduce (_merge_if_last), WORK_LIST (with it) generation 1's balanced work list. Not
supported here (the plan refuses them): bf16 partials, quantized Q, and MXFP4 scales outside E8M0
122..133 (generation 2 takes those). Hopper only: the plan refuses other GPUs (and the interpreter: Gluon kernels have none),
where generation 2 remains the portable path.
"""

from __future__ import annotations

try:  # Gluon ships with triton >= 3.5; the CPU tests import this module without needing it to run
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, warpgroup_mma,
                                                                  warpgroup_mma_wait)
    from triton.experimental.gluon.language.nvidia.hopper import tma
    GLUON_IMPORT_ERROR = None
except Exception as exc:  # pragma: no cover - depends on the installed triton
    gluon = gl = async_copy = None
    GLUON_IMPORT_ERROR = f"{type(exc).__name__}: {exc}"

from .kernels import gdc_launch_dependents  # Triton's extern (PDL's trigger): it lowers inside a Gluon kernel too

# the program timeline's row (TIMELINE; mla.analysis.timeline reads it): the five events' %globaltimer (ns) and
# %clock64, %smid, the tiles consumer 0 ran, then the warp-specialized kernel's second consumer (-1 elsewhere)
TIMELINE_FIELDS = ("start_ns", "q_ready_ns", "first_tile_ns", "loop_end_ns", "end_ns",
                   "start_clk", "q_ready_clk", "first_tile_clk", "loop_end_clk", "end_clk",
                   "smid", "n_tiles", "first_tile2_ns", "loop_end2_ns", "end2_ns", "n_tiles2")
TIMELINE_COLUMNS = len(TIMELINE_FIELDS)  # (the kernels' row stride: 16)

if gl is not None:
    # the names moved between triton 3.6 (the H200 image) and 3.9 (CI): resolve them once here
    _cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
    _cta_barrier = getattr(gl, "barrier", None) or gl.thread_barrier
    _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared

    # -- the program timeline (TIMELINE, an instrument: off in every named variant) -----------------------
    # One row of TIMELINE_COLUMNS int64 per program (row = the program's linear id), columns as
    # mla.analysis.timeline.TIMELINE_COLUMNS names them: five events' %globaltimer (ns, one clock for all
    # SMs: aligns programs) and %clock64 (the SM's cycles: precise within a program), %smid, the tiles each
    # consumer ran and, for the warp-specialized kernel's second consumer, its three events' ns.
    # The helpers take TIMELINE as a constexpr parameter so that with it off nothing is emitted, also in
    # the warp-specialized partitions (triton 3.6 compiles both sides of an `if` on a flag taken from their
    # argument tuples; a constexpr parameter is decided where the helper is specialized). The pointer is a
    # real tensor either way (the plan's rows, one unused row without TIMELINE): a None argument fails these
    # helper calls.

    @gluon.jit
    def _timeline_row(timeline_ptr):
        pid = gl.program_id(0) + gl.num_programs(0) * (gl.program_id(1) + gl.num_programs(1) * gl.program_id(2))
        return timeline_ptr + pid.to(gl.int64) * 16, pid  # (16 = TIMELINE_COLUMNS)

    @gluon.jit
    def _timeline_mark(TIMELINE: gl.constexpr, timeline_ptr, NS_COL: gl.constexpr, CLK_COL: gl.constexpr,
                       when=True):
        """Event stamps: %globaltimer into column NS_COL and (CLK_COL >= 0) %clock64 into CLK_COL, when `when`."""
        if TIMELINE:
            if when:
                row, pid = _timeline_row(timeline_ptr)
                # (the program id is an unused operand: every triton version then has a shape to give the asm)
                ns = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [pid], dtype=gl.int64,
                                               is_pure=False, pack=1)
                gl.store(row + NS_COL, ns)
                if CLK_COL >= 0:
                    clk = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [pid], dtype=gl.int64,
                                                    is_pure=False, pack=1)
                    gl.store(row + CLK_COL, clk)

    @gluon.jit
    def _timeline_start(TIMELINE: gl.constexpr, timeline_ptr):
        """The start event (columns 0 / 5) and the SM (column 10)."""
        if TIMELINE:
            _timeline_mark(TIMELINE, timeline_ptr, 0, 5)
            row, pid = _timeline_row(timeline_ptr)
            sm = gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [pid], dtype=gl.int32, is_pure=True, pack=1)
            gl.store(row + 10, sm.to(gl.int64))

    @gluon.jit
    def _timeline_put(TIMELINE: gl.constexpr, timeline_ptr, COL: gl.constexpr, value):
        """A count (the tiles a consumer ran) into column COL; a split past its element's end computes a negative
        count and runs no tile: 0."""
        if TIMELINE:
            row, pid = _timeline_row(timeline_ptr)
            gl.store(row + COL, gl.maximum(value, 0).to(gl.int64))

    @gluon.jit
    def _load_q_rows(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, col0,
                     NCOL: gl.constexpr, R: gl.constexpr, ROWS: gl.constexpr, HEADS_PER_PROG: gl.constexpr,
                     layout: gl.constexpr):
        """Q rows [R, NCOL] (fp32) of this program's (query, head) rows, columns col0 .. col0 + NCOL."""
        rows = gl.arange(0, R, layout=gl.SliceLayout(1, layout))
        cols = gl.arange(0, NCOL, layout=gl.SliceLayout(0, layout))
        row_ok = rows < ROWS
        q_idx = gl.where(row_ok, rows // HEADS_PER_PROG, 0)
        head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
        ptr = q_ptr + ((q_start + q_idx) * stride_q_tok + head * stride_q_head + col0)[:, None] + cols[None, :]
        return gl.load(ptr, mask=row_ok[:, None], other=0.0).to(gl.float32)

    @gluon.jit
    def _load_q_chunks(q_ptr, q_start, head_group, stq, sth, R: gl.constexpr, ROWS: gl.constexpr, HPP: gl.constexpr,
                       layout: gl.constexpr):
        """This program's Q rows as 9 register chunks of [R, 64] fp32 (dims 64 c .. 64 c + 63): one load of Q,
        placed where the caller wants its requests issued (Q_FIRST: before the first KV copies). stq / sth: Q's
        token and head strides, HPP: heads per program."""
        return (_load_q_rows(q_ptr, q_start, head_group, stq, sth, 0, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 64, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 128, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 192, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 256, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 320, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 384, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 448, 64, R, ROWS, HPP, layout),
                _load_q_rows(q_ptr, q_start, head_group, stq, sth, 512, 64, R, ROWS, HPP, layout))

    @gluon.jit
    def _plus_chunks(qs, z):
        """Each Q chunk + z (zeros from shared memory, Q_FIRST): the quantization then waits for a shared load that
        no compiler moves above the barrier before it. ptxas hoists register-only math above a barrier, and the
        math waits for Q's loads: the first tile's copies would be issued only after Q had landed."""
        return (qs[0] + z, qs[1] + z, qs[2] + z, qs[3] + z, qs[4] + z, qs[5] + z, qs[6] + z, qs[7] + z, qs[8] + z)

    @gluon.jit
    def _row_amax_of(qs):
        """Row maxima of |Q| over the 9 chunks of _load_q_chunks."""
        a = gl.max(gl.abs(qs[0]), axis=1)
        for c in gl.static_range(1, 9):
            a = gl.maximum(a, gl.max(gl.abs(qs[c]), axis=1))
        return a

    @gluon.jit
    def _store_q_terms_of(qs, s1, hi_smem, lo_smem, R: gl.constexpr, QK_PAIRS: gl.constexpr,
                          QK_CAT: gl.constexpr = False, WG2: gl.constexpr = False):
        """_store_q_terms on Q already in registers (_load_q_chunks). Its body repeats _store_q_terms' on purpose:
        _store_q_terms written as this function on _load_q_chunks gives v143 / v149 / v152 / v153 / v154 other SASS
        (32 fewer instructions), and those are measured units."""
        for c in gl.static_range(9):
            n = qs[c] / s1[:, None]
            hi = n.to(gl.float8e4nv)
            if QK_PAIRS:
                lo_smem.store(hi)  # (see _store_q_terms: hi stored before its fp32 round trip)
                lo = ((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv)
                if WG2:
                    x = gl.reshape(gl.join(hi, lo), [2, R // 2, 64, 2])
                    hi_smem.index(c).store(gl.reshape(gl.permute(x, (0, 3, 1, 2)), [2 * R, 64]))
                elif QK_CAT:
                    hi_smem.index(c).store(gl.reshape(gl.permute(gl.join(hi, lo), (2, 0, 1)), [2 * R, 64]))
                else:
                    hi_smem.index(c).store(gl.reshape(gl.permute(gl.join(hi, lo), (0, 2, 1)), [2 * R, 64]))
            else:
                hi_smem.index(c).store(hi)
                lo_smem.index(c).store(((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv))

    @gluon.jit
    def _store_q_terms(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, s1, hi_smem, lo_smem,
                       R: gl.constexpr, ROWS: gl.constexpr, HEADS_PER_PROG: gl.constexpr, layout: gl.constexpr,
                       QK_PAIRS: gl.constexpr, QK_CAT: gl.constexpr = False, WG2: gl.constexpr = False):
        """q ~= s1 * (hi + lo / 16) per row, hi and lo e4m3, into shared memory as 9 chunks of 64 dims.
        |q / s1| <= 448, so the residual is at most e4m3's half-ulp there (16) and 16 x it <= 256 is
        in range: one fixed second scale, no second pass over Q (rel. error ~6e-4, as generation 2).
        QK_PAIRS: both terms in hi_smem [9, 2R, 64], rows interleaved (2r = hi of row r, 2r + 1 = lo), or
        with QK_CAT concatenated (r = hi, R + r = lo of row r); WG2 (two warpgroups splitting QK's N):
        concatenated per half, rows (g, term, r) for row g R/2 + r."""
        for c in gl.static_range(9):
            n = _load_q_rows(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, c * 64, 64, R, ROWS,
                             HEADS_PER_PROG, layout) / s1[:, None]
            hi = n.to(gl.float8e4nv)
            # hi is stored before it is converted back: triton 3.6 miscompiles the residual when the
            # fp8 -> fp32 round trip precedes the store (H200, scripts/probes/gluon36_fp8_roundtrip.py)
            if QK_PAIRS:
                lo_smem.store(hi)  # (lo_smem is a [R, 64] scratch buffer here)
                lo = ((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv)
                if WG2:  # [hi; lo] per warpgroup's half of the rows: (g, term, r)
                    x = gl.reshape(gl.join(hi, lo), [2, R // 2, 64, 2])
                    hi_smem.index(c).store(gl.reshape(gl.permute(x, (0, 3, 1, 2)), [2 * R, 64]))
                elif QK_CAT:
                    hi_smem.index(c).store(gl.reshape(gl.permute(gl.join(hi, lo), (2, 0, 1)), [2 * R, 64]))
                else:
                    hi_smem.index(c).store(gl.reshape(gl.permute(gl.join(hi, lo), (0, 2, 1)), [2 * R, 64]))
            else:
                hi_smem.index(c).store(hi)
                lo_smem.index(c).store(((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv))

    @gluon.jit
    def _row_amax(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, R: gl.constexpr, ROWS: gl.constexpr,
                  HEADS_PER_PROG: gl.constexpr, layout: gl.constexpr):
        a = gl.max(gl.abs(_load_q_rows(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, 0, 64, R, ROWS,
                                       HEADS_PER_PROG, layout)), axis=1)
        for c in gl.static_range(1, 9):
            a = gl.maximum(a, gl.max(gl.abs(_load_q_rows(q_ptr, q_start, head_group, stride_q_tok, stride_q_head,
                                                         c * 64, 64, R, ROWS, HEADS_PER_PROG, layout)), axis=1))
        return a

    @gluon.jit
    def _chunk(k_smem, stage, c: gl.constexpr):
        """Chunk c of a stage's tile: latent dims [64 c, 64 c + 64) (c < 8) or the rope dims (c = 8)."""
        if c == 8:
            return k_smem[1].index(stage)
        else:
            return k_smem[0].index(stage).slice(c * 64, 64, dim=0)

    @gluon.jit
    def _row_token(r, ROW_PERM: gl.constexpr):
        """The token (offset in the tile) whose data sits in row r of the tile: r itself, or with ROW_PERM
        bits 0 <-> 4 and 2 <-> 5 swapped (an involution). The tile is only relabelled: QK^T, softmax
        and PV read rows, and the mask asks this function which token a row is. (The intent, lanes of
        the V^T fragment loads on rows 0, 1, 4, 5 instead of 0, 16, 32, 48, needed the loads' lanes
        moved, not the tokens: the loads read rows. V_CF does that; ROW_PERM is kept for the MXFP4
        decode's layout, which v103 measured faster.)"""
        if ROW_PERM:
            return (r & 0b001010) | ((r >> 4) & 1) | ((r & 1) << 4) | (((r >> 5) & 1) << 2) | (((r >> 2) & 1) << 5)
        else:
            return r

    @gluon.jit
    def _issue_tile(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, k_smem, BLOCK_N: gl.constexpr,
                    layout: gl.constexpr, ROW_PERM: gl.constexpr):
        """cp.async of one tile, 576 bytes per token as 9 chunks of 64 (tokens >= end zero-filled), + commit."""
        t = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
        col = gl.arange(0, 64, layout=gl.SliceLayout(0, layout))
        pos = n0 + _row_token(t, ROW_PERM)
        ok = (pos < end)[:, None]
        base = kv_ptr + ((kv_start + pos).to(gl.int64) * stride_kv_tok)[:, None] + col[None, :]
        for c in gl.static_range(9):
            _cp_async(_chunk(k_smem, stage, c), base + c * 64, mask=ok)
        async_copy.commit_group()

    @gluon.jit
    def _issue_tile_one(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, k_smem, BLOCK_N: gl.constexpr,
                        layout: gl.constexpr, ROW_PERM: gl.constexpr):
        """_issue_tile as two copies (CP_ONE, v160): the latent part as one [8 x 64 tokens, 64] copy into the
        stage's latent buffer (row 64 c + token), the rope part as another. Nine copies into one buffer get a
        barrier between each two (triton's shared-memory hazard pass cannot tell the slices apart: 8 bar.sync
        per tile issue in v153's SASS); two copies into two buffers get none."""
        r = gl.arange(0, 8 * BLOCK_N, layout=gl.SliceLayout(1, layout))
        col = gl.arange(0, 64, layout=gl.SliceLayout(0, layout))
        pos = n0 + _row_token(r % BLOCK_N, ROW_PERM)
        row = (kv_start + pos).to(gl.int64) * stride_kv_tok + (r // BLOCK_N) * 64
        _cp_async(k_smem[0].index(stage), kv_ptr + row[:, None] + col[None, :], mask=(pos < end)[:, None])
        t = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
        pos_r = n0 + _row_token(t, ROW_PERM)
        row_r = (kv_start + pos_r).to(gl.int64) * stride_kv_tok + 512
        _cp_async(k_smem[1].index(stage), kv_ptr + row_r[:, None] + col[None, :], mask=(pos_r < end)[:, None])
        async_copy.commit_group()

    @gluon.jit
    def _issue_tile_tma(kv_desc, kv_start, n0, end, stage, k_smem, kbar):
        """KV_TMA (v168): one fp8 tile as nine TMA loads ([64 t, 64 B] boxes: the 8 latent chunks, the rope) on the
        stage's barrier, which counts their bytes; none for a tile past the program's range (n0 >= end). Rows past
        `end` inside it are other tokens' (or the TMA unit's zeros past the cache): the loop zeroes them."""
        has = n0 < end
        bar = kbar.index(stage)
        mbarrier.expect(bar, 64 * 576, pred=has)
        for c in gl.static_range(9):
            _tma_load(kv_desc, [kv_start + n0, 64 * c], bar, _chunk(k_smem, stage, c), pred=has)

    @gluon.jit
    def _issue_next_tile(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, k_smem, BLOCK_N: gl.constexpr,
                         layout: gl.constexpr, ROW_PERM: gl.constexpr, CP_ONE: gl.constexpr):
        """The loop's fp8 tile issue: two copies (CP_ONE) or nine."""
        if CP_ONE:
            _issue_tile_one(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, k_smem, BLOCK_N, layout, ROW_PERM)
        else:
            _issue_tile(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, k_smem, BLOCK_N, layout, ROW_PERM)

    # -- MXFP4 (KV_FORMAT 2) -------------------------------------------------------------------
    # One packed byte holds two E2M1 codes (even element low). With the block's E8M0 byte e, d = e - 127,
    # every e2m1 value x 2**d is a normal e4m3 value while 0.5 * 2**d >= 2**-6 and 6 * 2**d <= 448, i.e.
    # e in [122, 133] (MXFP4_GLUON_EXACT; the plan refuses other scales, except byte 0 on all-zero
    # blocks). The 8 magnitudes of a block's codes as e4m3 bytes are then a table of two int32 words:
    # codes 0..3 -> 00 30 38 3C, codes 4..7 -> 40 44 48 4C, + 8 d in every exponent field but code 0's.
    # Per 4 packed bytes (8 elements): one PRMT looks up 4 magnitudes (selector = the codes, sign bits
    # cleared); the sign bits are bit 7 of the bytes of w (odd elements) and of w << 4 (even elements),
    # so one more PRMT gathers them into place and LOP3 merges. 9 integer instructions per 8 elements,
    # no conversion, no multiply (bit logic checked against quant.dequantize_mxfp4 in tests).
    _E2M1_E4M3_PTX: gl.constexpr = gl.constexpr("""
    {
    .reg .b32 m, h, t, s, k;
    mov.b32 k, 0x80808080;
    and.b32 m, $2, 0x77777777;
    prmt.b32 $0, $3, $7, m;
    shr.b32 h, m, 16;
    prmt.b32 $1, $3, $7, h;
    shl.b32 t, $2, 4;
    prmt.b32 s, t, $2, 0x5140;
    lop3.b32 $0, $0, s, k, 0xF8;
    prmt.b32 s, t, $2, 0x7362;
    lop3.b32 $1, $1, s, k, 0xF8;
    }
    """)

    @gluon.jit
    def _issue_mx_tile(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, mx_lat, mx_rope, BLOCK_N: gl.constexpr,
                       lat_layout: gl.constexpr, rope_layout: gl.constexpr, ROW_PERM: gl.constexpr):
        """cp.async of one packed MXFP4 tile: bytes 0..255 (latent) and 256..287 (rope) of each token's row,
        16 bytes per copy (tokens >= end zero-filled), + commit. The scales travel by register loads."""
        t = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, lat_layout))
        col = gl.arange(0, 256, layout=gl.SliceLayout(0, lat_layout))
        pos = n0 + _row_token(t, ROW_PERM)
        base = kv_ptr + ((kv_start + pos).to(gl.int64) * stride_kv_tok)[:, None] + col[None, :]
        _cp_async(mx_lat.index(stage), base, mask=(pos < end)[:, None])
        tr = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, rope_layout))
        colr = gl.arange(0, 32, layout=gl.SliceLayout(0, rope_layout))
        posr = n0 + _row_token(tr, ROW_PERM)
        baser = kv_ptr + ((kv_start + posr).to(gl.int64) * stride_kv_tok)[:, None] + 256 + colr[None, :]
        _cp_async(mx_rope.index(stage), baser, mask=(posr < end)[:, None])
        async_copy.commit_group()

    @gluon.jit
    def _load_mx_scales(sc_ptr, kv_start, n0, end, stride_sc_tok, NBLK: gl.constexpr, blk0: gl.constexpr,
                        BLOCK_N: gl.constexpr, layout: gl.constexpr, ROW_PERM: gl.constexpr):
        """E8M0 bytes [BLOCK_N, NBLK] of blocks blk0 .. blk0 + NBLK of one tile (0 past end), as int32."""
        t = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
        blk = gl.arange(0, NBLK, layout=gl.SliceLayout(0, layout))
        pos = n0 + _row_token(t, ROW_PERM)
        ptr = sc_ptr + ((kv_start + pos).to(gl.int64) * stride_sc_tok)[:, None] + blk0 + blk[None, :]
        return gl.load(ptr, mask=(pos < end)[:, None], other=0).to(gl.int32)

    # MX_LUT2 (v138+): the same two table words by one PTX block. _mx_to_e4m3's Triton expression compiles (triton
    # 3.6, v133's decoder) to 8 integer instructions per block: LLVM narrows (sc - 122) u<= 11 to 8 bits (sc is
    # a zero-extended byte), so the range check is VIADD + LOP3 0xff + ISETP, then ISETP (sc == 0), SEL (the
    # 0 / NaN word), IMAD + SEL (lo), a predicated IMAD (hi). Here the range check stays 32-bit (sc - 122 is
    # u< 12 exactly when 122 <= sc <= 133 for any 32-bit sc: no mask), and d = sc - 127 is folded into the
    # IMAD constants (0x3C383000 - 127 * 0x08080800 = 0x403C3800, 0x4C484440 - 127 * 0x08080808 = 0x504C4848
    # mod 2**32). Every byte 0..255 gives the old words bit for bit (tests: the interpreter runs both).
    _MX_LUT2_PTX: gl.constexpr = gl.constexpr("""
    {
    .reg .pred ok, z;
    .reg .b32 t, o;
    sub.u32 t, $2, 122;
    setp.lt.u32 ok, t, 12;
    setp.eq.u32 z, $2, 0;
    selp.b32 o, 0, 0x7F7F7F7F, z;
    mad.lo.u32 t, $2, 0x08080800, 0x403C3800;
    selp.b32 $0, t, o, ok;
    mad.lo.u32 t, $2, 0x08080808, 0x504C4848;
    selp.b32 $1, t, o, ok;
    }
    """)

    @gluon.jit
    def _mx_to_e4m3(packed, sc, MX_LUT2: gl.constexpr = False):
        """packed [T, NBLK, 16] uint8 (one MX block per thread row) + its E8M0 bytes [T, NBLK] ->
        [T, NBLK, 32] e4m3 in element order (values exact: the block scale is in the exponent)."""
        # the plan refuses scales outside 122..133 when it is built; a later call's data is not re-read on
        # the host, so here such a block decodes to e4m3 NaN (a NaN output row, as the reference gives for
        # the NaN scale 0xFF) instead of a wrong value. Byte 0 (an all-zero block) decodes to +-0.
        if MX_LUT2:  # (the same words: _MX_LUT2_PTX)
            lut_lo, lut_hi = gl.inline_asm_elementwise(_MX_LUT2_PTX, "=r,=r,r", [sc], dtype=(gl.int32, gl.int32),
                                                       is_pure=True, pack=1)
            lut_lo = gl.expand_dims(lut_lo, 2)
            lut_hi = gl.expand_dims(lut_hi, 2)
        else:
            ok = (sc - 122).to(gl.uint32) <= 11  # 122 <= sc <= 133 in one compare
            d = sc - 127  # (outside that range the products below are discarded)
            other = gl.where(sc == 0, 0, 0x7F7F7F7F)
            lut_lo = gl.expand_dims(gl.where(ok, 0x3C383000 + d * 0x08080800, other), 2)
            lut_hi = gl.expand_dims(gl.where(ok, 0x4C484440 + d * 0x08080808, other), 2)
        lut_lo = gl.broadcast(lut_lo, packed)[0]
        lut_hi = gl.broadcast(lut_hi, packed)[0]
        # per 4 packed bytes (one 32-bit register): a = e4m3 of elements 0..3, b = of elements 4..7
        a, b = gl.inline_asm_elementwise(_E2M1_E4M3_PTX, "=r,=r,r,r,r,r,r,r,r,r,r", [packed, lut_lo, lut_hi],
                                         dtype=(gl.uint8, gl.uint8), is_pure=True, pack=4)
        T: gl.constexpr = packed.shape[0]
        NB: gl.constexpr = packed.shape[1]
        x = gl.join(gl.reshape(a, [T, NB, 4, 4]), gl.reshape(b, [T, NB, 4, 4]))  # [T, NB, q, i, half]
        x = gl.reshape(gl.permute(x, (0, 1, 2, 4, 3)), [T, NB, 32])  # element 8 q + 4 half + i
        return x.to(gl.float8e4nv, bitcast=True)

    @gluon.jit
    def _mx_decode_tile(mx_lat, mx_rope, stage, sc_lat, sc_rope, k_smem, dec_lat: gl.constexpr,
                        dec_rope: gl.constexpr, dec_lat_2d: gl.constexpr, ROW_PERM: gl.constexpr,
                        MX_LUT2: gl.constexpr = False):
        """One packed tile from the ring -> the e4m3 K tile (fp8 generation 3's k_smem layout, stage 0):
        each thread decodes whole MX blocks (16 bytes by one LDS.128), each element once."""
        if ROW_PERM:  # (the swizzled ring is read as [64, 256], then split into blocks in registers)
            packed = gl.convert_layout(gl.reshape(mx_lat.index(stage).load(dec_lat_2d), [64, 16, 16]), dec_lat)
        else:
            packed = mx_lat.index(stage).reshape([64, 16, 16]).load(dec_lat)
        lat = _mx_to_e4m3(packed, sc_lat, MX_LUT2)  # [64 t, 16 blk, 32]
        lat = gl.permute(gl.reshape(lat, [64, 8, 64]), (1, 0, 2))  # [8 c, 64 t, 64 d]: dim = 64 c + d
        k_smem[0].index(0).store(gl.reshape(lat, [512, 64]))
        rope = _mx_to_e4m3(mx_rope.index(stage).reshape([64, 2, 16]).load(dec_rope), sc_rope, MX_LUT2)  # [64, 2, 32]
        k_smem[1].index(0).store(gl.reshape(rope, [64, 64]))

    @gluon.jit
    def _scale_all(a0, a1, a2, a3, a4, a5, a6, a7, f):
        return a0 * f, a1 * f, a2 * f, a3 * f, a4 * f, a5 * f, a6 * f, a7 * f

    @gluon.jit
    def _qk_issue(k_smem, stage, q_hi, q_lo, zero_s, zero_s2, QK_PAIRS: gl.constexpr):
        """S^T of one tile on QGMMA e4m3, K from the tile as copied (rope chunk first), left in flight:
        two [64, R] accumulators (Q hi, Q lo: K read twice), or with QK_PAIRS one [64, 2R] against the
        interleaved Qcat (K read once). Returns (s_hi, s_lo) or (s_cat, s_cat)."""
        if QK_PAIRS:
            s = warpgroup_mma(_chunk(k_smem, stage, 8), q_hi.index(8).permute((1, 0)), zero_s2, use_acc=False,
                              is_async=True)
            for c in gl.static_range(8):
                s = warpgroup_mma(_chunk(k_smem, stage, c), q_hi.index(c).permute((1, 0)), s, is_async=True)
            return s, s
        else:
            s_hi = warpgroup_mma(_chunk(k_smem, stage, 8), q_hi.index(8).permute((1, 0)), zero_s, use_acc=False,
                                 is_async=True)
            s_lo = warpgroup_mma(_chunk(k_smem, stage, 8), q_lo.index(8).permute((1, 0)), zero_s, use_acc=False,
                                 is_async=True)
            for c in gl.static_range(8):
                s_hi = warpgroup_mma(_chunk(k_smem, stage, c), q_hi.index(c).permute((1, 0)), s_hi,
                                     is_async=True)
                s_lo = warpgroup_mma(_chunk(k_smem, stage, c), q_lo.index(c).permute((1, 0)), s_lo,
                                     is_async=True)
            return s_hi, s_lo

    @gluon.jit
    def _qk_wait(s_hi, s_lo, c_hi, c_lo, R: gl.constexpr, QK_PAIRS: gl.constexpr, s_layout: gl.constexpr,
                 QK_CAT: gl.constexpr = False, WG2: gl.constexpr = False):
        """Wait for S^T and combine the two Q terms: c_hi * S_hi + c_lo * S_lo, [64, R] fp32. With
        QK_PAIRS the terms are adjacent columns, which a thread of the accumulator layout holds together:
        the split is register-local, and the halves' layout is the m64nRk32 accumulator's."""
        if QK_PAIRS:
            s = warpgroup_mma_wait(num_outstanding=0, deps=(s_hi, ))
            if WG2:  # columns (g, term, r): warpgroup g's N = R half holds [hi; lo] of its R/2 rows
                x = gl.permute(gl.reshape(s, [s.shape[0], 2, 2, R // 2]), (0, 1, 3, 2))
                s_h, s_l = gl.split(gl.reshape(x, [s.shape[0], R, 2]))
            elif QK_CAT:
                # columns c and c + R of the m64n2Rk32 accumulator sit in one thread at the place the
                # m64nRk32 layout gives column c: the halves are s_layout as they are (no shuffles;
                # the interleaved order needs 16 SHFL.IDX per tile to get there, r11's ncu: ~10%
                # of the stall samples)
                s_h, s_l = gl.split(gl.permute(gl.reshape(s, [s.shape[0], 2, R]), (0, 2, 1)))
            else:
                s_h, s_l = gl.split(gl.reshape(s, [s.shape[0], R, 2]))
            s_h = gl.convert_layout(s_h, s_layout)
            s_l = gl.convert_layout(s_l, s_layout)
        else:
            s_h, s_l = warpgroup_mma_wait(num_outstanding=0, deps=(s_hi, s_lo))
        return s_h * c_hi[None, :] + s_l * c_lo[None, :]

    @gluon.jit
    def _split3(x):
        """The 8 tensors of x [..., 2, 2, 2] indexed by its last three (binary) dims, last dim lowest bit."""
        a0, a1 = gl.split(x)
        a00, a01 = gl.split(a0)
        a10, a11 = gl.split(a1)
        x0, x4 = gl.split(a00)
        x2, x6 = gl.split(a01)
        x1, x5 = gl.split(a10)
        x3, x7 = gl.split(a11)
        return x0, x1, x2, x3, x4, x5, x6, x7

    @gluon.jit
    def _v_fragment(x):
        """One PV slice's V^T [64 m, 64 k] (fp8) from its bits of the tile (see _v_fragments): reorder the
        12 binary dims (c4 c2 c1 t32 t16 t8 t4 t2 t1 d32 d16 d1) into m = (c4 c2 d1 c1 d32 d16),
        k = (t8 t4 t2 t32 t16 t1)."""
        return gl.reshape(gl.permute(x, (0, 1, 11, 2, 9, 10, 5, 6, 7, 3, 4, 8)), [64, 64])

    # PV_FP8's V^T operands: each register of the load holds 4 dims of one token, each register of
    # the e4m3 A fragment 4 tokens of one dim; per 16 registers (4 tokens x 16 dims, the elements 0..63
    # of a thread in load order) four 4 x 4 byte transposes, 8 PRMT each (the generic layout
    # conversion takes 3 per register). Register r in = token r // 4, dims 4 (r % 4) .. + 3; register
    # g + 4 d out = dim 4 g + d of the 4 tokens.
    _BYTE_T4_CONSTRAINTS: gl.constexpr = gl.constexpr("=r," * 16 + ",".join(["r"] * 16))  # 16 out, 16 in
    def _byte_t4_ptx() -> str:
        """Four 4x4 byte transposes: for group g, a_t = $(16 + g + 4 t) -> $(g + 4 d); PRMT 0x5140 /
        0x7362 interleave two registers' bytes 0-1 / 2-3, 0x5410 / 0x7632 take their low / high halves."""
        lines = ["{", ".reg .b32 x0, x1, y0, y1;"]
        for g in range(4):
            a0, a1, a2, a3 = (f"${16 + g + 4 * t}" for t in range(4))
            lines += [f"prmt.b32 x0, {a0}, {a1}, 0x5140;", f"prmt.b32 x1, {a0}, {a1}, 0x7362;",
                      f"prmt.b32 y0, {a2}, {a3}, 0x5140;", f"prmt.b32 y1, {a2}, {a3}, 0x7362;",
                      f"prmt.b32 ${g}, x0, y0, 0x5410;", f"prmt.b32 ${g + 4}, x0, y0, 0x7632;",
                      f"prmt.b32 ${g + 8}, x1, y1, 0x5410;", f"prmt.b32 ${g + 12}, x1, y1, 0x7632;"]
        return "\n".join(lines + ["}"])

    _BYTE_T4_PTX: gl.constexpr = gl.constexpr(_byte_t4_ptx())

    @gluon.jit
    def _v_fragments8(k_smem, stage, load_layout: gl.constexpr, V_CF: gl.constexpr = False):
        """PV_FP8: V^T of one tile as the e4m3 register A operands (k_width 4) of the 8 PV slices, read
        once with 16-byte loads. The relabelling is _v_fragments' for the dims (slice s = (d8 d4 d2),
        m = (c4 c2 d1 c1 d32 d16)); the tokens are k = (t4 t2 t32 t16 t1 t8), so that a register's 4 k
        are (t8, t1) of one dim after the byte transposes and a thread of P^T's accumulator layout,
        which holds rows t and t + 8, stores them as one 2-byte word. The load layout's registers run
        d1 d2 d4 d8 t8 t1 t2 t4 (as _v_fragments' with t8 moved first)."""
        x = k_smem[0].index(stage).reshape([8, 64, 64]).load(load_layout)  # [8 c, 64 t, 64 d] fp8
        x = gl.inline_asm_elementwise(_BYTE_T4_PTX, _BYTE_T4_CONSTRAINTS, [x.to(gl.uint8, bitcast=True)],
                                      dtype=gl.uint8, is_pure=True, pack=64).to(gl.float8e4nv, bitcast=True)
        # the transposes swapped what the element bits (d1, d2) and (t8, t1) hold: read with the true
        # labels, the axes below are c4 c2 c1 t32 t16 [d1] t4 t2 [d2] d32 d16 d8 d4 [t1] [t8]
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
        if V_CF:
            # v_load8_cf: registers d1 d2 d4 d8 t8 t2 t16 t32, lanes t1 t4 d16 d32 c1; the transposes
            # swapped (d1, d2) with (t8, t2): true axes c4 c2 c1 t32 t16 [d1] t4 [d2] t1 d32 d16 d8 d4 [t2] [t8]
            x = gl.permute(x, (0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 13, 14, 11, 12, 7))  # slices (d8 d4 d2) last
            x0, x1, x2, x3, x4, x5, x6, x7 = _split3(x)
            return (_v_fragment8cf(x0), _v_fragment8cf(x1), _v_fragment8cf(x2), _v_fragment8cf(x3),
                    _v_fragment8cf(x4), _v_fragment8cf(x5), _v_fragment8cf(x6), _v_fragment8cf(x7))
        else:
            x = gl.permute(x, (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 13, 14, 11, 12, 8))  # slices (d8 d4 d2) last
            x0, x1, x2, x3, x4, x5, x6, x7 = _split3(x)
            return (_v_fragment8(x0), _v_fragment8(x1), _v_fragment8(x2), _v_fragment8(x3), _v_fragment8(x4),
                    _v_fragment8(x5), _v_fragment8(x6), _v_fragment8(x7))

    @gluon.jit
    def _v_fragments8_wg2(k_smem, stage, load_layout: gl.constexpr):
        """WARPGROUPS = 2: V^T of one tile as the e4m3 register A operands of 4 PV slices [128 m, 64 k],
        warpgroup g holding the 64 rows m6 = g of each (PV's 512 output dims split between the two).
        The load layout (v_load8_wg2): registers d1 d2 d4 t16 t8 t4 t32 (8 contiguous dims of a token:
        one LDS.64, 16 per thread), lanes t1 t2 d8 d32 c1 (a half warp's 16 loads cover all 32 banks:
        mla/analysis/smem_banks.py's swizzle), warps c2 c4 d16. The byte transposes swap (d1, d2) with
        (t8, t4). Relabelled: m = (d16 c4 c2 d4 c1 d32 d8), k = (t32 t16 t2 t1 t4 t8), slice s = d1 + 2 d2."""
        x = k_smem[0].index(stage).reshape([8, 64, 64]).load(load_layout)  # [8 c, 64 t, 64 d] fp8
        x = gl.inline_asm_elementwise(_BYTE_T4_PTX, _BYTE_T4_CONSTRAINTS, [x.to(gl.uint8, bitcast=True)],
                                      dtype=gl.uint8, is_pure=True, pack=64).to(gl.float8e4nv, bitcast=True)
        # true axes: c4 c2 c1 t32 t16 [d1] [d2] t2 t1 d32 d16 d8 d4 [t4] [t8]
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
        x = gl.permute(x, (10, 0, 1, 12, 2, 9, 11, 3, 4, 7, 8, 13, 14, 6, 5))  # m, k, then [d2] [d1]
        a0, a1 = gl.split(x)  # d1
        x0, x2 = gl.split(a0)  # d2
        x1, x3 = gl.split(a1)
        return (gl.reshape(x0, [128, 64]), gl.reshape(x1, [128, 64]), gl.reshape(x2, [128, 64]),
                gl.reshape(x3, [128, 64]))

    @gluon.jit
    def _pv_reg8_promoted_wg2(f0, f1, f2, f3, p8, acc0, acc1, acc2, acc3, alpha, zero_o, a_layout: gl.constexpr):
        """_pv_reg8_promoted for WARPGROUPS = 2: 4 slices of [128 dims, R], each warpgroup its 64 rows."""
        t0 = _pv8_fresh(f0, p8, zero_o, a_layout)
        t1 = _pv8_fresh(f1, p8, zero_o, a_layout)
        t0 = warpgroup_mma_wait(num_outstanding=2, deps=(t0, ))
        acc0 = acc0 * alpha + t0
        t2 = _pv8_fresh(f2, p8, zero_o, a_layout)
        t1 = warpgroup_mma_wait(num_outstanding=2, deps=(t1, ))
        acc1 = acc1 * alpha + t1
        t3 = _pv8_fresh(f3, p8, zero_o, a_layout)
        t2 = warpgroup_mma_wait(num_outstanding=2, deps=(t2, ))
        acc2 = acc2 * alpha + t2
        t3 = warpgroup_mma_wait(num_outstanding=0, deps=(t3, ))
        acc3 = acc3 * alpha + t3
        return acc0, acc1, acc2, acc3

    @gluon.jit
    def _v_fragment8cf(x):
        """V_CF's slice from the axes (c4 c2 c1 t32 t16 d1 t4 t1 d32 d16 t2 t8): m as _v_fragment8's,
        k = (t32 t16 t4 t1 t2 t8): the lanes' k4, k8 are tile rows t1, t4, so a quarter warp's 8
        LDS.128 hit 8 distinct 16-byte bank groups of the 64-byte-swizzled tile (row bit 0 picks the
        128-byte line's half, row bit 2 flips the swizzled chunk's high bit); v_load8's lanes t16,
        t32 read rows with identical banks (4-way conflicts: r13's ncu counted 4x the ideal shared
        wavefronts on those loads, 1024 per tile)."""
        return gl.reshape(gl.permute(x, (0, 1, 5, 2, 8, 9, 3, 4, 6, 7, 10, 11)), [64, 64])

    @gluon.jit
    def _v_fragment8(x):
        """One PV_FP8 slice from _v_fragments8's axes (c4 c2 c1 t32 t16 d1 t4 t2 d32 d16 t1 t8): m = (c4 c2
        d1 c1 d32 d16), k = (t4 t2 t32 t16 t1 t8)."""
        return gl.reshape(gl.permute(x, (0, 1, 5, 2, 8, 9, 6, 7, 3, 4, 10, 11)), [64, 64])

    # V_LDSM: the e4m3 tile [512 = 8 c x 64 t, 64 B] read as uint16 pairs [8 c, 64 t, 32 p] (dims 2p, 2p + 1 of
    # chunk c) in the layout triton's lowering turns into ldmatrix.x4.trans.b16 (sm90 has no 8-bit transposing
    # ldmatrix): register bit 0 = an 8x8 matrix's row + 1 (t2), lanes 0-1 its rows + 2, + 4 (t1, t4), lanes 2-4
    # its 8 columns of 16 bytes (p1 p2 p4 = d2 d4 d8); register bit 1 (t8) pairs the registers the PRMT merges.
    # Every phase's 8 row addresses hit 8 distinct 16-byte bank groups of the 64-byte swizzle (the probe's model).
    _V_LDSM: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 2, 0], [0, 8, 0], [0, 0, 8], [0, 0, 16], [0, 16, 0], [0, 32, 0], [1, 0, 0]],
        lane_bases=[[0, 1, 0], [0, 4, 0], [0, 0, 1], [0, 0, 2], [0, 0, 4]],
        warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 64, 32])
    _K16_SL: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16, rank=2)  # (the bytes' swizzle)
    _PUBLIC_REINTERPRET: gl.constexpr = gl.constexpr(hasattr(gl.shared_memory_descriptor, "reinterpret"))
    # registers A, B (the same dim pair of tokens t and t + 8): out0 = the even dim's 4 bytes, out1 the odd dim's
    _PAIR_PTX: gl.constexpr = gl.constexpr("prmt.b32 $0, $2, $3, 0x6240; prmt.b32 $1, $2, $3, 0x7351;")

    @gluon.jit
    def _v_fragments8_ldsm(k_lat, stage):
        """V_LDSM: PV_FP8's 8 V^T slices by ldmatrix.x4.trans.b16 (16 LDSM a thread) + one PRMT a register.
        Relabelled: slice s = (c1 d32 d16), m = (c4 c2 d1 d8 d4 d2), k = V_CF's (t32 t16 t4 t1 t2 t8), so
        _store_p8(V_CF=True) stores P^T unchanged; _natural_rows_ldsm undoes the dims' relabelling."""
        if _PUBLIC_REINTERPRET:  # (triton 3.9: reinterpret; 3.6: _reinterpret, the same memdesc_reinterpret)
            k16 = k_lat.index(stage).reinterpret(gl.uint16, [512, 32], _K16_SL)
        else:
            k16 = k_lat.index(stage)._reinterpret(gl.uint16, [512, 32], _K16_SL)
        x = k16.reshape([8, 64, 32]).load(_V_LDSM)
        ev, od = gl.inline_asm_elementwise(_PAIR_PTX, "=r,=r,r,r", [x], dtype=(gl.uint8, gl.uint8),
                                           is_pure=True, pack=4)
        x = gl.reshape(gl.join(ev, od), [8, 64, 64]).to(gl.float8e4nv, bitcast=True)
        # axes c4 c2 c1 t32 t16 [t8 = true t2] t4 [t2 = true t8] t1 d32 d16 d8 d4 d2 d1 -> m, k, then the
        # slice bits (c1 d32 d16)
        x = gl.permute(gl.reshape(x, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]),
                       (0, 1, 14, 11, 12, 13, 3, 4, 6, 8, 5, 7, 2, 9, 10))
        x0, x1, x2, x3, x4, x5, x6, x7 = _split3(x)
        return (gl.reshape(x0, [64, 64]), gl.reshape(x1, [64, 64]), gl.reshape(x2, [64, 64]),
                gl.reshape(x3, [64, 64]), gl.reshape(x4, [64, 64]), gl.reshape(x5, [64, 64]),
                gl.reshape(x6, [64, 64]), gl.reshape(x7, [64, 64]))

    @gluon.jit
    def _v_fragments(k_smem, stage, load_layout: gl.constexpr):
        """V^T of one tile as the (fp8) register A operands of the 8 PV slices, read once with 16-byte loads.

        The 512 latent dims and 64 tokens are relabelled so that each thread's 16 contiguous dims of
        a token (one LDS.128) and 16 tokens are exactly its wgmma A fragments: dim = 64 c + d with
        c, d in bits (c4 c2 c1), (d32 d16 d8 d4 d2 d1); slice s = (d8 d4 d2), row m = (c4 c2 d1 c1 d32
        d16); token t = (t32 .. t1), k = (t8 t4 t2 t32 t16 t1). P^T is stored in the same k order
        (_p_to_k_order) and the epilogue writes row m of slice s to its dim (_slice_dims)."""
        x = k_smem[0].index(stage).reshape([8, 64, 64]).load(load_layout)  # [8 c, 64 t, 64 d] fp8
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])  # c4 c2 c1 t32..t1 d32..d1
        # move (d8 d4 d2) last: dims 0..8 = c, t; 9 d32, 10 d16, 11 d8, 12 d4, 13 d2, 14 d1
        x = gl.permute(x, (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 11, 12, 13))
        x0, x1, x2, x3, x4, x5, x6, x7 = _split3(x)
        return (_v_fragment(x0), _v_fragment(x1), _v_fragment(x2), _v_fragment(x3), _v_fragment(x4),
                _v_fragment(x5), _v_fragment(x6), _v_fragment(x7))

    @gluon.jit
    def _pv_reg(f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                a_layout: gl.constexpr):
        """PV on register A operands, slice by slice: fp8 fragment -> fp16 in the wgmma A layout (a
        register permutation + F2FP), issue, then wait for the slice before (its A registers stay live
        through that wait), so at most two fp16 fragments exist at a time."""
        a0 = gl.convert_layout(f0.to(gl.float16), a_layout)
        acc0 = warpgroup_mma(a0, p_smem, acc0, is_async=True)
        a1 = gl.convert_layout(f1.to(gl.float16), a_layout)
        acc1 = warpgroup_mma(a1, p_smem, acc1, is_async=True)
        acc0, a0 = warpgroup_mma_wait(num_outstanding=1, deps=(acc0, a0))
        a2 = gl.convert_layout(f2.to(gl.float16), a_layout)
        acc2 = warpgroup_mma(a2, p_smem, acc2, is_async=True)
        acc1, a1 = warpgroup_mma_wait(num_outstanding=1, deps=(acc1, a1))
        a3 = gl.convert_layout(f3.to(gl.float16), a_layout)
        acc3 = warpgroup_mma(a3, p_smem, acc3, is_async=True)
        acc2, a2 = warpgroup_mma_wait(num_outstanding=1, deps=(acc2, a2))
        a4 = gl.convert_layout(f4.to(gl.float16), a_layout)
        acc4 = warpgroup_mma(a4, p_smem, acc4, is_async=True)
        acc3, a3 = warpgroup_mma_wait(num_outstanding=1, deps=(acc3, a3))
        a5 = gl.convert_layout(f5.to(gl.float16), a_layout)
        acc5 = warpgroup_mma(a5, p_smem, acc5, is_async=True)
        acc4, a4 = warpgroup_mma_wait(num_outstanding=1, deps=(acc4, a4))
        a6 = gl.convert_layout(f6.to(gl.float16), a_layout)
        acc6 = warpgroup_mma(a6, p_smem, acc6, is_async=True)
        acc5, a5 = warpgroup_mma_wait(num_outstanding=1, deps=(acc5, a5))
        a7 = gl.convert_layout(f7.to(gl.float16), a_layout)
        acc7 = warpgroup_mma(a7, p_smem, acc7, is_async=True)
        acc6, a6 = warpgroup_mma_wait(num_outstanding=1, deps=(acc6, a6))
        acc7, a7 = warpgroup_mma_wait(num_outstanding=0, deps=(acc7, a7))
        return acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7

    @gluon.jit
    def _pv8_slice(f, p8, acc, a_layout: gl.constexpr):
        """acc^T [64 dims, R] += V^T slice (e4m3 registers, only permuted into the A layout: no
        conversion) @ (P_hi + P_lo)^T: two QGMMA operands of one accumulator, left in flight."""
        a = gl.convert_layout(f, a_layout)
        acc = warpgroup_mma(a, p8.index(0).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma(a, p8.index(1).permute((1, 0)), acc, is_async=True)
        return acc

    @gluon.jit
    def _pv_reg8(f0, f1, f2, f3, f4, f5, f6, f7, p8, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                 a_layout: gl.constexpr):
        """PV_FP8: PV on e4m3 register A operands, slice by slice; each slice waited for after the
        next one is issued (two groups per slice). (The wait takes no 8-bit operands in triton 3.9
        (WGMMAWaitGroupOp), so the A registers are not passed through it: ptxas keeps them until the
        MMA that reads them is waited for.)"""
        acc0 = _pv8_slice(f0, p8, acc0, a_layout)
        acc1 = _pv8_slice(f1, p8, acc1, a_layout)
        acc0 = warpgroup_mma_wait(num_outstanding=2, deps=(acc0, ))
        acc2 = _pv8_slice(f2, p8, acc2, a_layout)
        acc1 = warpgroup_mma_wait(num_outstanding=2, deps=(acc1, ))
        acc3 = _pv8_slice(f3, p8, acc3, a_layout)
        acc2 = warpgroup_mma_wait(num_outstanding=2, deps=(acc2, ))
        acc4 = _pv8_slice(f4, p8, acc4, a_layout)
        acc3 = warpgroup_mma_wait(num_outstanding=2, deps=(acc3, ))
        acc5 = _pv8_slice(f5, p8, acc5, a_layout)
        acc4 = warpgroup_mma_wait(num_outstanding=2, deps=(acc4, ))
        acc6 = _pv8_slice(f6, p8, acc6, a_layout)
        acc5 = warpgroup_mma_wait(num_outstanding=2, deps=(acc5, ))
        acc7 = _pv8_slice(f7, p8, acc7, a_layout)
        acc6 = warpgroup_mma_wait(num_outstanding=2, deps=(acc6, ))
        acc7 = warpgroup_mma_wait(num_outstanding=0, deps=(acc7, ))
        return acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7

    @gluon.jit
    def _pv8_fresh(f, p8, zero_o, a_layout: gl.constexpr):
        """PV_PROMOTE: one slice's tile product V^T (P_hi + P_lo)^T in a fresh accumulator, in flight."""
        a = gl.convert_layout(f, a_layout)
        t = warpgroup_mma(a, p8.index(0).permute((1, 0)), zero_o, use_acc=False, is_async=True)
        return warpgroup_mma(a, p8.index(1).permute((1, 0)), t, is_async=True)

    @gluon.jit
    def _pv_reg8_promoted(f0, f1, f2, f3, f4, f5, f6, f7, p8, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                          alpha, zero_o, a_layout: gl.constexpr):
        """PV_FP8 + PV_PROMOTE: e4m3 warpgroup MMA keeps fewer accumulator bits than fp32 (DeepSeek-V3 s.
        3.3.2: ~14; round 12: v110's rel_l2 doubled at 128 tiles per program, not at 2), so each
        tile's product is accumulated by the MMA over its 64 tokens only and added to the running
        fp32 output on the CUDA cores, acc = acc * alpha + tile: the rescale's multiply becomes that
        FFMA. Each slice is waited for after the next is issued (two groups per slice)."""
        t0 = _pv8_fresh(f0, p8, zero_o, a_layout)
        t1 = _pv8_fresh(f1, p8, zero_o, a_layout)
        t0 = warpgroup_mma_wait(num_outstanding=2, deps=(t0, ))
        acc0 = acc0 * alpha + t0
        t2 = _pv8_fresh(f2, p8, zero_o, a_layout)
        t1 = warpgroup_mma_wait(num_outstanding=2, deps=(t1, ))
        acc1 = acc1 * alpha + t1
        t3 = _pv8_fresh(f3, p8, zero_o, a_layout)
        t2 = warpgroup_mma_wait(num_outstanding=2, deps=(t2, ))
        acc2 = acc2 * alpha + t2
        t4 = _pv8_fresh(f4, p8, zero_o, a_layout)
        t3 = warpgroup_mma_wait(num_outstanding=2, deps=(t3, ))
        acc3 = acc3 * alpha + t3
        t5 = _pv8_fresh(f5, p8, zero_o, a_layout)
        t4 = warpgroup_mma_wait(num_outstanding=2, deps=(t4, ))
        acc4 = acc4 * alpha + t4
        t6 = _pv8_fresh(f6, p8, zero_o, a_layout)
        t5 = warpgroup_mma_wait(num_outstanding=2, deps=(t5, ))
        acc5 = acc5 * alpha + t5
        t7 = _pv8_fresh(f7, p8, zero_o, a_layout)
        t6 = warpgroup_mma_wait(num_outstanding=2, deps=(t6, ))
        acc6 = acc6 * alpha + t6
        t7 = warpgroup_mma_wait(num_outstanding=0, deps=(t7, ))
        acc7 = acc7 * alpha + t7
        return acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7

    @gluon.jit
    def _pv_reg8_serial(f0, f1, f2, f3, f4, f5, f6, f7, p8, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        alpha, zero_o, a_layout: gl.constexpr):
        """As _pv_reg8_promoted with each slice waited for right after it is issued (PV_PROMOTE 2): one
        fresh accumulator live at a time instead of two, for the MXFP4 kernel's registers."""
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f0, p8, zero_o, a_layout), ))
        acc0 = acc0 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f1, p8, zero_o, a_layout), ))
        acc1 = acc1 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f2, p8, zero_o, a_layout), ))
        acc2 = acc2 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f3, p8, zero_o, a_layout), ))
        acc3 = acc3 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f4, p8, zero_o, a_layout), ))
        acc4 = acc4 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f5, p8, zero_o, a_layout), ))
        acc5 = acc5 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f6, p8, zero_o, a_layout), ))
        acc6 = acc6 * alpha + t
        t = warpgroup_mma_wait(num_outstanding=0, deps=(_pv8_fresh(f7, p8, zero_o, a_layout), ))
        acc7 = acc7 * alpha + t
        return acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7

    @gluon.jit
    def _store_p8(pt, p8, R: gl.constexpr, V_CF: gl.constexpr = False, WG2: gl.constexpr = False):
        """PV_FP8's B operands: P^T [64 tokens, R] (the kernel's exp2 makes it 256 P, max 256) as hi + lo,
        both e4m3, stored K-major ([R, 64] rows, tokens in _v_fragments8's k order). hi is within
        e4m3's 2**-4, lo takes the residual to ~2**-8 of P: the output's rel_l2 from P alone is
        2.4-4.7e-4 in a CPU model (fp16 P 0.8-1.5e-4), far under the bf16 output's ~1.7e-3
        (scripts/probes/p8_accuracy_model.py, data/accuracy/p8-model.csv); values under 2**-17 are
        lost, as fp16 loses them under 2**-24."""
        if WG2:  # k = (t32 t16 t2 t1 t4 t8), _v_fragments8_wg2's
            y = gl.permute(gl.reshape(pt, [2, 2, 2, 2, 2, 2, R]), (0, 1, 4, 5, 3, 2, 6))
        elif V_CF:  # k = (t32 t16 t4 t1 t2 t8), _v_fragment8cf's
            y = gl.permute(gl.reshape(pt, [2, 2, 2, 2, 2, 2, R]), (0, 1, 3, 5, 4, 2, 6))
        else:  # k = (t4 t2 t32 t16 t1 t8)
            y = gl.permute(gl.reshape(pt, [2, 2, 2, 2, 2, 2, R]), (3, 4, 0, 1, 5, 2, 6))
        y = gl.permute(gl.reshape(y, [64, R]), (1, 0))  # [R, 64 k]
        hi = y.to(gl.float8e4nv)
        p8.index(0).store(hi)  # before the round trip (the triton 3.6 miscompile _store_q_terms avoids)
        p8.index(1).store((y - hi.to(gl.float32)).to(gl.float8e4nv))

    @gluon.jit
    def _p_to_k_order(pt, R: gl.constexpr):
        """P^T [64 tokens, R] with its rows in the k order of _v_fragments (row k = token t)."""
        y = gl.reshape(pt, [2, 2, 2, 2, 2, 2, R])  # t32 t16 t8 t4 t2 t1, R
        y = gl.permute(y, (2, 3, 4, 0, 1, 5, 6))  # k = (t8 t4 t2 t32 t16 t1)
        return gl.reshape(y, [64, R])

    @gluon.jit
    def _pv_slice(acc, v_slot, p_smem):
        """acc^T [64 dims, R] += V^T slice [64 dims, 64 tokens] (MN-major view of the fp16 tile) @ P^T."""
        return warpgroup_mma(v_slot.permute((1, 0)), p_smem, acc, is_async=True)

    @gluon.jit
    def _pv_tile(v16, p_smem, a0, a1, a2, a3, a4, a5, a6, a7):
        """PV of a whole tile from the fp16 V tile (V_SLOTS = 8): the 8 slices issued, left in flight."""
        a0 = _pv_slice(a0, v16.index(0), p_smem)
        a1 = _pv_slice(a1, v16.index(1), p_smem)
        a2 = _pv_slice(a2, v16.index(2), p_smem)
        a3 = _pv_slice(a3, v16.index(3), p_smem)
        a4 = _pv_slice(a4, v16.index(4), p_smem)
        a5 = _pv_slice(a5, v16.index(5), p_smem)
        a6 = _pv_slice(a6, v16.index(6), p_smem)
        a7 = _pv_slice(a7, v16.index(7), p_smem)
        return a0, a1, a2, a3, a4, a5, a6, a7

    @gluon.jit
    def _convert_v(src, v16, dst, layout: gl.constexpr):
        """V slice = fp8 -> fp16 once: 16-byte loads, pair converts, 32-byte stores."""
        v16.index(dst).store(src.load(layout).to(gl.float16))

    @gluon.jit
    def _ring_slice(i: gl.constexpr, k_smem, stage, v16, p_smem, a0, a1, a2, a3, a4, a5, a6, a7,
                    V_SLOTS: gl.constexpr, layout: gl.constexpr):
        """V ring (V_SLOTS < 8), slice i: wait until slice i - V_SLOTS has left its slot, convert slice i
        into it, make it visible to the async proxy, issue its PV (left in flight) on accumulator i."""
        if i >= V_SLOTS:
            a0, a1, a2, a3, a4, a5, a6, a7 = warpgroup_mma_wait(num_outstanding=V_SLOTS - 1,
                                                                deps=(a0, a1, a2, a3, a4, a5, a6, a7))
        _convert_v(_chunk(k_smem, stage, i), v16, i % V_SLOTS, layout)
        fence_async_shared()
        _cta_barrier()
        v = v16.index(i % V_SLOTS)
        if i == 0:
            a0 = _pv_slice(a0, v, p_smem)
        elif i == 1:
            a1 = _pv_slice(a1, v, p_smem)
        elif i == 2:
            a2 = _pv_slice(a2, v, p_smem)
        elif i == 3:
            a3 = _pv_slice(a3, v, p_smem)
        elif i == 4:
            a4 = _pv_slice(a4, v, p_smem)
        elif i == 5:
            a5 = _pv_slice(a5, v, p_smem)
        elif i == 6:
            a6 = _pv_slice(a6, v, p_smem)
        else:
            a7 = _pv_slice(a7, v, p_smem)
        return a0, a1, a2, a3, a4, a5, a6, a7

    @gluon.jit
    def _merge_if_last(part_o_ptr, part_lse_ptr, counter, part_base, num_splits, out_row, row_ok,
                       R: gl.constexpr, layout: gl.constexpr):
        """FUSED_REDUCE (generation 1's _merge_if_last in Gluon): count this program's partial in; the
        program that brings the (batch element, head group) counter to num_splits merges every split's
        partial by its LSE into the output and resets the counter for the next call (or graph replay)."""
        # every thread's partial stores precede the CTA barrier, the barrier precedes the release half
        # of the atomic: the program that acquires the final count sees every split's partial
        _cta_barrier()
        done = gl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
        if done == num_splits - 1:
            d = gl.arange(0, 512, layout=gl.SliceLayout(0, layout))
            m = gl.full([R], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
            den = gl.zeros([R], gl.float32, layout=gl.SliceLayout(1, layout))
            acc = gl.zeros([R, 512], gl.float32, layout=layout)
            for k in range(0, num_splits):
                # .cg: read at L2, where the other SMs' partials are (this SM's L1 may hold none of them)
                lse = gl.load(part_lse_ptr + part_base + k, mask=row_ok, other=float("-inf"), cache_modifier=".cg")
                part = gl.load(part_o_ptr + (part_base + k).to(gl.int64)[:, None] * 512 + d[None, :],
                               mask=row_ok[:, None], other=0.0, cache_modifier=".cg")
                m_new = gl.maximum(m, lse)
                m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)  # splits with no visible token
                alpha = gl.exp2(m - m_safe)
                w = gl.exp2(lse - m_safe)
                den = den * alpha + w
                acc = acc * alpha[:, None] + w[:, None] * part
                m = m_new
            o = acc / gl.where(den > 0, den, 1.0)[:, None]
            gl.store(out_row[:, None] + d[None, :], o.to(gl.bfloat16), mask=row_ok[:, None])
            gl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")

    @gluon.jit
    def _coop_merge(part_o_ptr, part_lse_ptr, counter, out_ptr, stride_o_tok, stride_o_head, q_start, head_group,
                    split, num_splits, NUM_HEADS: gl.constexpr, HEADS_PER_PROG: gl.constexpr, ROWS: gl.constexpr,
                    R: gl.constexpr, SPLITS_P2: gl.constexpr):
        """COOP_MERGE: every split of a (batch element, head group) merges a 1 / SPLITS_P2 column slice of the
        group's output (slices split, split + num_splits, ...) once all of them have stored their partials: one
        launch, the merge spread over the splits' own programs (the last-program merge of FUSED_REDUCE reads
        every partial alone). The programs wait for each other, so they must all be resident at once: the plan
        launches the grid cooperatively (the driver refuses a grid that cannot be) and takes this only for a
        grid of at most one program per SM. The counter counts arrivals (0 -> num_splits) and then departures
        (-> 2 num_splits); the last to leave sets it back to 0 for the next call or graph replay."""
        # every thread's partial stores precede the barrier, the barrier the release: a program that
        # acquires num_splits arrivals sees every split's partial (the .cg loads below read L2)
        _cta_barrier()
        gl.atomic_add(counter, 1, sem="release", scope="gpu")
        seen = gl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        while seen < num_splits:
            seen = gl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        SLICE: gl.constexpr = 512 // SPLITS_P2
        RS: gl.constexpr = R * SLICE  # [splits, rows x slice columns]: 8192 values, one load each
        lay: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [1, 4], [1, 0])
        k = gl.arange(0, SPLITS_P2, layout=gl.SliceLayout(1, lay))
        j = gl.arange(0, RS, layout=gl.SliceLayout(0, lay))
        r = j // SLICE
        c = j % SLICE
        ok_r = r < ROWS
        tok = q_start + gl.where(ok_r, r // HEADS_PER_PROG, 0)
        head = head_group * HEADS_PER_PROG + r % HEADS_PER_PROG
        prow = (tok * NUM_HEADS + head) * num_splits
        mask = (k < num_splits)[:, None] & ok_r[None, :]
        lse = gl.load(part_lse_ptr + prow[None, :] + k[:, None], mask=mask, other=float("-inf"),
                      cache_modifier=".cg")
        m = gl.max(lse, axis=0)
        m = gl.where(m == float("-inf"), 0.0, m)  # rows no split saw a token of
        w = gl.exp2(lse - m[None, :])
        den = gl.sum(w, axis=0)
        inv = 1.0 / gl.where(den > 0, den, 1.0)
        part_rows = (prow[None, :] + k[:, None]).to(gl.int64) * 512
        out_rows = out_ptr + tok * stride_o_tok + head * stride_o_head
        for sl in range(split, SPLITS_P2, num_splits):
            col = sl * SLICE + c
            part = gl.load(part_o_ptr + part_rows + col[None, :], mask=mask, other=0.0, cache_modifier=".cg")
            o = gl.sum(w * part, axis=0) * inv
            gl.store(out_rows + col, o.to(gl.bfloat16), mask=ok_r)
        left = gl.atomic_add(counter, 1, sem="relaxed", scope="gpu")
        if left == 2 * num_splits - 1:
            gl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")

    @gluon.jit
    def _partial_out(o, ptr, part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_row, row_ok,
                     R: gl.constexpr, layout: gl.constexpr, FUSED_REDUCE: gl.constexpr):
        """This split's partial O (fp32 rows at ptr), then with FUSED_REDUCE the merge if it was the last."""
        gl.store(ptr, o, mask=row_ok[:, None])
        if FUSED_REDUCE:
            _merge_if_last(part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_row, row_ok, R, layout)

    @gluon.jit
    def mla_decode_gluon_sm90_kernel(
        q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
        part_o_ptr, part_lse_ptr, out_ptr,
        stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
        sm_scale, num_splits, work_ptr, counter_ptr, chunk_tokens, uniform_kv_len, kv_desc, timeline_ptr,
        NUM_HEADS: gl.constexpr, Q_SEQ_LEN: gl.constexpr, HEADS_PER_PROG: gl.constexpr,
        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, SINGLE_PASS: gl.constexpr, KV_FORMAT: gl.constexpr,
        STAGES: gl.constexpr = 3, V_SLOTS: gl.constexpr = 8, QK_PAIRS: gl.constexpr = False,
        PV_REG: gl.constexpr = False, EPI_NATURAL: gl.constexpr = False, ROW_PERM: gl.constexpr = False,
        LAZY_SUM: gl.constexpr = False, LAZY_RESCALE: gl.constexpr = False, PV_FP8: gl.constexpr = False,
        QK_CAT: gl.constexpr = False, PV_PROMOTE: gl.constexpr = 0, V_CF: gl.constexpr = False,
        CP_ROWS: gl.constexpr = False, MX_OWN: gl.constexpr = False, FUSED_REDUCE: gl.constexpr = False,
        WORK_LIST: gl.constexpr = False, WARPGROUPS: gl.constexpr = 1, WS_SLOTS: gl.constexpr = 0,
        WS_CONSUMER_REGS: gl.constexpr = 0, WS_DECODER_REGS: gl.constexpr = 0, WS_DECODERS: gl.constexpr = 0,
        WS_HALVES: gl.constexpr = False, WS_TMA: gl.constexpr = False, WS_LOADER: gl.constexpr = False,
        MX_LUT2: gl.constexpr = False, V_LDSM: gl.constexpr = False, EPI_DIRECT: gl.constexpr = False,
        EARLY_TMA: gl.constexpr = False, KV_FIRST: gl.constexpr = False, LAUNCH_DEPENDENTS: gl.constexpr = 0,
        COOP_MERGE: gl.constexpr = False, SPLITS_P2: gl.constexpr = 2, UNIFORM_RANGES: gl.constexpr = False,
        SCALE_FIRST: gl.constexpr = False, TIMELINE: gl.constexpr = False, Q_FIRST: gl.constexpr = False,
        CP_ONE: gl.constexpr = False, ISSUE_LATE: gl.constexpr = False, KV_TMA: gl.constexpr = False,
        WS_PAIR_MERGE: gl.constexpr = False,
        num_warps: gl.constexpr = 4,
    ):
        """Arguments as generation 1's split kernel: counter_ptr with FUSED_REDUCE (generation 1's
        one-launch reduce, see _merge_if_last), work_ptr / chunk_tokens with WORK_LIST (generation 1's
        balanced work list: grid (head groups, items, 1), item = (batch element, split, its splits)).
        uniform_kv_len with UNIFORM_RANGES: every element's KV length when the batch is uniform (the ranges are
        then b x Q_SEQ_LEN and b x uniform_kv_len, what the validated indptrs hold), 0 for a ragged batch (the
        indptrs are loaded); ignored without UNIFORM_RANGES.
        timeline_ptr with TIMELINE (an instrument; one unused row otherwise): this program's row of the timeline
        (_timeline_mark): start, Q ready, the first tile ready (MXFP4: decoded), the loop's end, the end.
        BLOCK_M = R, the padded row count (16: heads_per_program keeps q_seq_len x heads <= 16);
        BLOCK_N must be 64 (warpgroup MMA's M). See the module docstring for STAGES, V_SLOTS,
        QK_PAIRS and PV_REG.
        V_SLOTS = 8: the whole fp16 V tile (64 KB) in shared memory, PV one tile behind QK; 2 or 4: a
        ring of 64-dim slices (16 / 32 KB), PV issued slice by slice, so that with STAGES = 2 two
        CTAs fit on an SM."""
        gl.static_assert(KV_FORMAT == 1 or KV_FORMAT == 2, "the Gluon kernel reads fp8 or MXFP4 KV")
        _timeline_start(TIMELINE, timeline_ptr)
        if LAUNCH_DEPENDENTS == 1:  # the reduce launched with PDL may start now (its programs wait for this grid)
            gdc_launch_dependents()
        gl.static_assert(KV_FORMAT == 1 or (PV_REG and QK_PAIRS and EPI_NATURAL),
                         "MXFP4 is built on the PV_REG + QK_PAIRS + EPI_NATURAL kernel (v99)")
        gl.static_assert(BLOCK_N == 64, "tokens are warpgroup MMA's M = 64")
        gl.static_assert(LAZY_SUM or not LAZY_RESCALE, "LAZY_RESCALE keeps the sums per thread (LAZY_SUM)")
        gl.static_assert(not PV_FP8 or (PV_REG and EPI_NATURAL), "PV_FP8 is built on the PV_REG + EPI_NATURAL kernel")
        gl.static_assert(QK_PAIRS or not QK_CAT, "QK_CAT orders QK_PAIRS' operand")
        gl.static_assert(PV_FP8 or not V_CF, "V_CF is a load layout of PV_FP8's fragments")
        gl.static_assert(not PV_PROMOTE or PV_FP8, "PV_PROMOTE is PV_FP8's")
        # LAZY_RESCALE lets P grow to 2**8 before rescaling; at PV_FP8's 256 P that overflows e4m3 (448)
        gl.static_assert(not (PV_FP8 and LAZY_RESCALE), "PV_FP8 rescales every tile (e4m3 P holds 256 P at most)")
        WG2: gl.constexpr = WARPGROUPS == 2
        gl.static_assert(WS_SLOTS == 0, "WS_SLOTS: mla_decode_gluon_sm90_ws_kernel")
        gl.static_assert(not EPI_DIRECT and not EARLY_TMA, "EPI_DIRECT, EARLY_TMA: the warp-specialized kernel's")
        gl.static_assert(not SCALE_FIRST or KV_FORMAT == 1, "SCALE_FIRST: fp8's per-tensor scale")
        gl.static_assert(not (Q_FIRST and KV_FIRST), "Q_FIRST and KV_FIRST pin opposite orders")
        gl.static_assert(not Q_FIRST or QK_PAIRS, "Q_FIRST holds its zeros in QK_PAIRS' [R, 64] scratch (q_lo)")
        gl.static_assert(not CP_ONE or KV_FORMAT == 1, "CP_ONE: fp8's tile copies")
        gl.static_assert(not ISSUE_LATE or (STAGES == 2 and PV_REG),
                         "ISSUE_LATE: the next tile's copies after this tile's fence, PV's fence waits for them")
        gl.static_assert(not WS_PAIR_MERGE, "WS_PAIR_MERGE: the warp-specialized kernel's (v170)")
        gl.static_assert(not KV_TMA or (KV_FORMAT == 1 and not ROW_PERM and not WORK_LIST and not ISSUE_LATE and PV_REG
                                        and BLOCK_N == 64 and WARPGROUPS == 1),
                         "KV_TMA: fp8 tiles by TMA into the one-warpgroup kernel's ring (tokens in order, uniform splits)")
        gl.static_assert(num_warps == 4 * WARPGROUPS, "num_warps = 4 x WARPGROUPS")
        gl.static_assert(WARPGROUPS == 1 or (WG2 and PV_FP8 and V_CF and QK_CAT and PV_PROMOTE == 1 and LAZY_SUM
                                             and not LAZY_RESCALE and BLOCK_M == 16),
                         "WARPGROUPS = 2 is built on v116 / v117 (PV_FP8, V_CF, QK_CAT, PV_PROMOTE 1, LAZY_SUM; R = 16)")
        gl.static_assert(not FUSED_REDUCE or (PV_REG and EPI_NATURAL), "FUSED_REDUCE is built on the EPI_NATURAL epilogue")
        gl.static_assert(not WORK_LIST or FUSED_REDUCE, "WORK_LIST's splits per element differ: the fused reduce merges")
        gl.static_assert(not COOP_MERGE or (PV_REG and EPI_NATURAL and not FUSED_REDUCE and not WORK_LIST
                                            and WARPGROUPS == 1),
                         "COOP_MERGE is built on the one-warpgroup EPI_NATURAL epilogue, uniform splits, no FUSED_REDUCE")
        gl.static_assert(not MX_OWN or (KV_FORMAT == 2 and ROW_PERM), "MX_OWN is a copy layout of ROW_PERM's MXFP4 decode")
        gl.static_assert(not V_LDSM or (PV_FP8 and V_CF and EPI_NATURAL and WARPGROUPS == 1),
                         "V_LDSM loads PV_FP8's V_CF fragments (one warpgroup, the EPI_NATURAL epilogue)")
        ROWS: gl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
        R: gl.constexpr = BLOCK_M
        QR: gl.constexpr = 2 * R if QK_PAIRS else R  # rows of the (first) Q operand buffer

        # -- layouts ------------------------------------------------------------------------------
        # S^T accumulators (QGMMA m64nRk32) and acc^T slices [64 dims, R] (HGMMA m64nRk16)
        # WG2: QK's N (the query rows, with their two Q terms) split between the warpgroups, PV's M (the
        # output dims) split between them: each warpgroup its own rows' softmax, its own dims' PV
        WG: gl.constexpr = WARPGROUPS
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, WG],
                                                           instr_shape=[16, R // WG, 32])
        s2_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, WG],
                                                            instr_shape=[16, 2 * R // WG, 32])
        # (PV_FP8: QGMMA m64nRk32; the accumulator's registers are the same, only the MMA's K differs)
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4 * WG, 1],
                                                           instr_shape=[16, R, 32 if PV_FP8 else 16])
        # global -> shared copies and the V conversion: 16 contiguous bytes per thread
        kv_blk: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4 * WG, 1], [1, 0])
        # CP_ROWS: the fp8 tile's cp.async with a quarter warp on 8 consecutive rows of one 16-byte
        # column (r14's ncu: kv_blk's copies took 2x their ideal shared wavefronts)
        if CP_ROWS:
            cp_blk: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4 * WG, 1], [0, 1])
        else:
            cp_blk: gl.constexpr = kv_blk
        q_blk: gl.constexpr = gl.BlockedLayout([1, 8 // WG], [4, 8], [4, WG], [1, 0])
        out_blk: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [4 * WG, 1], [1, 0])
        k_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, 64], gl.float8e4nv)
        q_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([QR, 64], gl.float8e4nv)
        qlo_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([R, 64], gl.float8e4nv)
        v_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, 64], gl.float16)
        p_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, R], gl.float16)
        # PV_REG: V^T as register A operands (_v_fragments): the tile's latent part [8 c, 64 t, 64 d]
        # read so that registers hold 16 contiguous dims (one LDS.128) x 16 tokens, lanes and warps
        # exactly as the wgmma A fragments of the relabelled (m, k)
        v_load: gl.constexpr = gl.DistributedLinearLayout(
            reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 8, 0]],
            lane_bases=[[0, 16, 0], [0, 32, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]],
            warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 64, 64])
        v_load8: gl.constexpr = gl.DistributedLinearLayout(  # PV_FP8 (_v_fragments8): t8 first of the tokens
            reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 8, 0], [0, 1, 0], [0, 2, 0], [0, 4, 0]],
            lane_bases=[[0, 16, 0], [0, 32, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]],
            warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 64, 64])
        v_load8_cf: gl.constexpr = gl.DistributedLinearLayout(  # V_CF: conflict-free lanes (_v_fragment8cf)
            reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 8, 0], [0, 2, 0], [0, 16, 0], [0, 32, 0]],
            lane_bases=[[0, 1, 0], [0, 4, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]],
            warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 64, 64])
        v_load8_wg2: gl.constexpr = gl.DistributedLinearLayout(  # WG2 (_v_fragments8_wg2): LDS.64, half-warp conflict-free
            reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 16, 0], [0, 8, 0], [0, 4, 0], [0, 32, 0]],
            lane_bases=[[0, 1, 0], [0, 2, 0], [0, 0, 8], [0, 0, 32], [1, 0, 0]],
            warp_bases=[[2, 0, 0], [4, 0, 0], [0, 0, 16]], block_bases=[], shape=[8, 64, 64])
        a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=4 if PV_FP8 else 2)
        # MXFP4: packed tiles [64 t, 256 | 32 bytes] copied by 16 bytes per thread; decoded as [64 t, blk, 16 bytes]
        # with one whole MX block (16 bytes, one LDS.128) per thread and a quarter warp reading 128
        # contiguous bytes (8 blocks of one token: no bank conflicts)
        if WG2:
            rope_blk: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [8, 1], [1, 0])
        else:
            rope_blk: gl.constexpr = gl.BlockedLayout([1, 16], [16, 2], [4, 1], [1, 0])
        if ROW_PERM and WG2:  # ROW_PERM's decode layouts with the token bit 32 on the third warp bit
            dec_lat_2d: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [0, 64], [0, 128]],
                lane_bases=[[1, 0], [2, 0], [4, 0], [0, 16], [0, 32]],
                warp_bases=[[8, 0], [16, 0], [32, 0]], block_bases=[], shape=[64, 256])
            if MX_OWN:
                mx_copy: gl.constexpr = dec_lat_2d
            else:
                mx_copy: gl.constexpr = gl.BlockedLayout([1, 16], [2, 16], [8, 1], [1, 0])
            dec_lat: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 4, 0], [0, 8, 0]],
                lane_bases=[[1, 0, 0], [2, 0, 0], [4, 0, 0], [0, 1, 0], [0, 2, 0]],
                warp_bases=[[8, 0, 0], [16, 0, 0], [32, 0, 0]], block_bases=[], shape=[64, 16, 16])
            mx_lat_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=16, per_phase=1, max_phase=8, order=[1, 0])
        elif ROW_PERM:
            # a quarter warp = 8 consecutive rows of one block: the ring is swizzled (16-byte unit ^ row % 8)
            # and the K tile's 64-byte swizzle spreads 8 consecutive rows over all banks, so both the
            # LDS.128 of the packed bytes and the STS.128 of the e4m3 bytes are conflict-free (v100's
            # layout, 8 blocks of one token per quarter warp, wrote 4 rows 4 KB apart: 4-way conflicts)
            dec_lat_2d: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [32, 0], [0, 64], [0, 128]],
                lane_bases=[[1, 0], [2, 0], [4, 0], [0, 16], [0, 32]],
                warp_bases=[[8, 0], [16, 0]], block_bases=[], shape=[64, 256])
            if MX_OWN:  # each thread copies the 16-byte units it decodes (the rope's layouts already agree)
                mx_copy: gl.constexpr = dec_lat_2d
            else:
                mx_copy: gl.constexpr = gl.BlockedLayout([1, 16], [2, 16], [4, 1], [1, 0])
            dec_lat: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [32, 0, 0], [0, 4, 0], [0, 8, 0]],
                lane_bases=[[1, 0, 0], [2, 0, 0], [4, 0, 0], [0, 1, 0], [0, 2, 0]],
                warp_bases=[[8, 0, 0], [16, 0, 0]], block_bases=[], shape=[64, 16, 16])
            mx_lat_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=16, per_phase=1, max_phase=8, order=[1, 0])
        else:
            mx_copy: gl.constexpr = kv_blk
            dec_lat_2d: gl.constexpr = kv_blk  # (unused)
            dec_lat: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [8, 0, 0], [16, 0, 0], [32, 0, 0]],
                lane_bases=[[0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 8, 0], [1, 0, 0]],
                warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[64, 16, 16])
            mx_lat_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
        if WG2:  # half a block (8 bytes) per thread
            dec_rope: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4]],
                lane_bases=[[0, 0, 8], [0, 1, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0]],
                warp_bases=[[8, 0, 0], [16, 0, 0], [32, 0, 0]], block_bases=[], shape=[64, 2, 16])
        else:
            dec_rope: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8]],
                lane_bases=[[0, 1, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0]],
                warp_bases=[[16, 0, 0], [32, 0, 0]], block_bases=[], shape=[64, 2, 16])
        mx_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])

        # -- this program's work (generation 1's split kernel without the work list) -------------
        head_group = gl.program_id(0)
        if WORK_LIST:  # (generation 1's _program_work)
            item = gl.program_id(1)
            b = gl.load(work_ptr + item * 3)
            split = gl.load(work_ptr + item * 3 + 1)
            splits_b = gl.load(work_ptr + item * 3 + 2)
        else:
            split = gl.program_id(1)
            b = gl.program_id(2)
            splits_b = num_splits
        # (v151 / v152) no global round trip before the first copies; the plan passes 0 for a ragged batch and
        # with the work list (the default call's schedule for ragged batches), which then load the indptrs
        if UNIFORM_RANGES and uniform_kv_len > 0:
            q_start = b * Q_SEQ_LEN
            kv_start = b * uniform_kv_len
            kv_len = uniform_kv_len
        else:
            q_start = gl.load(qo_indptr_ptr + b)
            kv_start = gl.load(kv_indptr_ptr + b)
            kv_len = gl.load(kv_indptr_ptr + b + 1) - kv_start
        if SCALE_FIRST:  # (v153) fp8's per-tensor scale asked for with the ranges, not after Q's quantization
            kv_scale_first = gl.load(kv_aux_ptr)
        if WORK_LIST:
            chunk = chunk_tokens
        else:
            chunk = gl.cdiv(gl.cdiv(kv_len, num_splits), BLOCK_N) * BLOCK_N
        start = split * chunk
        end = gl.minimum(start + chunk, kv_len)

        # -- shared memory: STAGES tiles of 9 x [64, 64] fp8, Q terms, the fp16 V slices, P^T -----
        # the latent chunks of a stage as one [512, 64] buffer (row 64 c + token), the rope chunk apart
        # (MXFP4: the ring holds the packed tiles; one e4m3 K tile is decoded from it per iteration)
        K_STAGES: gl.constexpr = STAGES if KV_FORMAT == 1 else 1
        k_smem = (gl.allocate_shared_memory(gl.float8e4nv, [K_STAGES, 8 * BLOCK_N, 64], k_sl),
                  gl.allocate_shared_memory(gl.float8e4nv, [K_STAGES, BLOCK_N, 64], k_sl))
        if KV_FORMAT == 2:
            mx_lat = gl.allocate_shared_memory(gl.uint8, [STAGES, BLOCK_N, 256], mx_lat_sl)
            mx_rope = gl.allocate_shared_memory(gl.uint8, [STAGES, BLOCK_N, 32], mx_sl)
        q_hi = gl.allocate_shared_memory(gl.float8e4nv, [9, QR, 64], q_sl)  # QK_PAIRS: both terms, interleaved
        if QK_PAIRS:
            q_lo = gl.allocate_shared_memory(gl.float8e4nv, [R, 64], qlo_sl)  # scratch for hi (see _store_q_terms)
        else:
            q_lo = gl.allocate_shared_memory(gl.float8e4nv, [9, R, 64], qlo_sl)
        if not PV_REG:
            v16 = gl.allocate_shared_memory(gl.float16, [V_SLOTS, BLOCK_N, 64], v_sl)
        if PV_FP8:  # P^T as e4m3 hi / lo, K-major [R, 64] each
            p_smem = gl.allocate_shared_memory(gl.float8e4nv, [2, R, 64], qlo_sl)
        else:
            p_smem = gl.allocate_shared_memory(gl.float16, [BLOCK_N, R], p_sl)

        if KV_TMA:  # (v168 / v169) one barrier a stage, completed by the tile's TMA bytes
            kbar = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            for i in gl.static_range(STAGES):
                mbarrier.init(kbar.index(i), count=1)
            fence_async_shared()  # the barriers' init before the TMA unit uses them (nothing is in flight yet)
            _cta_barrier()
        if Q_FIRST:  # (v158 / v159) Q's loads ask first: its 18 KB would otherwise queue behind the first tile's copies
            qs = _load_q_chunks(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, R, ROWS, HEADS_PER_PROG, q_blk)
            q_lo.store(gl.zeros([R, 64], gl.float8e4nv, layout=q_blk))  # read back below the copies (_plus_chunks)
            _cta_barrier()  # a compiler fence: the loads stay above the copies (a barrier does not wait for them)
        # prefetch: the first STAGES - 1 tiles in flight while Q is quantized
        for i in gl.static_range(STAGES - 1):
            if KV_FORMAT == 2:
                _issue_mx_tile(kv_ptr, kv_start, start + i * BLOCK_N, end, stride_kv_tok, i, mx_lat, mx_rope, BLOCK_N,
                               mx_copy, rope_blk, ROW_PERM)
            elif KV_TMA:
                _issue_tile_tma(kv_desc, kv_start, start + i * BLOCK_N, end, i, k_smem, kbar)
            else:
                if CP_ONE:
                    _issue_tile_one(kv_ptr, kv_start, start + i * BLOCK_N, end, stride_kv_tok, i, k_smem, BLOCK_N,
                                    cp_blk, ROW_PERM)
                else:
                    _issue_tile(kv_ptr, kv_start, start + i * BLOCK_N, end, stride_kv_tok, i, k_smem, BLOCK_N,
                                cp_blk, ROW_PERM)
        if KV_FORMAT == 2:  # the first tile's scales (register prefetch, one tile ahead from here on)
            sc_lat = _load_mx_scales(kv_aux_ptr, kv_start, start, end, stride_sc_tok, 16, 0, BLOCK_N,
                                     gl.SliceLayout(2, dec_lat), ROW_PERM)
            sc_rope = _load_mx_scales(kv_aux_ptr, kv_start, start, end, stride_sc_tok, 2, 16, BLOCK_N,
                                      gl.SliceLayout(2, dec_rope), ROW_PERM)

        if KV_FIRST or Q_FIRST:  # pin the order: the compiler may sink the copies above (and the KV range's loads
            # they need) below Q's loads and quantization (triton 3.9: v141 and v117; 3.6: v117 only); a barrier is a
            # memory fence for the compiler. KV_FIRST measured no faster on the H200 (round 39); Q_FIRST (Q's loads
            # above, its quantization below) measured up to 10% faster at the short shapes on an H100 (round 52)
            _cta_barrier()
        # -- Q: fp8 hi + lo, one scale per row, once per program -----------------------------------
        if Q_FIRST:
            qs = _plus_chunks(qs, q_lo.load(q_blk).to(gl.float32))  # the quantization below the copies
            amax = _row_amax_of(qs)
            s1 = gl.where(amax > 0, amax / 448.0, 1.0)
            _store_q_terms_of(qs, s1, q_hi, q_lo, R, QK_PAIRS, QK_CAT, WG2)
        else:
            amax = _row_amax(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, R, ROWS, HEADS_PER_PROG, q_blk)
            s1 = gl.where(amax > 0, amax / 448.0, 1.0)
            _store_q_terms(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, s1, q_hi, q_lo, R, ROWS,
                           HEADS_PER_PROG, q_blk, QK_PAIRS, QK_CAT, WG2)

        if KV_FORMAT == 1:
            if SCALE_FIRST:
                kv_scale = kv_scale_first
            else:
                kv_scale = gl.load(kv_aux_ptr)  # fp8: the per-tensor scale (MXFP4: block scales are in the K tile)
            # a scale the validation would refuse (<= 0, inf, NaN) gives NaN rows (see kernels.py)
            kv_scale = gl.where((kv_scale > 0) & (kv_scale < float("inf")), kv_scale, float("nan"))
        else:
            kv_scale = 1.0
        score_scale = sm_scale * 1.4426950408889634 * kv_scale  # base 2, fp8 KV scale folded in
        c_hi = gl.convert_layout(s1, gl.SliceLayout(0, s_layout)) * score_scale
        c_lo = c_hi * 0.0625
        rows_s = gl.arange(0, R, layout=gl.SliceLayout(0, s_layout))
        q_idx_s = gl.where(rows_s < ROWS, rows_s // HEADS_PER_PROG, 0)
        visible = kv_len - Q_SEQ_LEN + q_idx_s + 1  # decode-causal, per row
        offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, s_layout))

        # PV_FP8: P at 256 P (exp2 of 8 more), where e4m3's hi + lo keep ~2**-8 of it (_store_p8)
        P_LOG2: gl.constexpr = 8.0 if PV_FP8 else 0.0
        m_i = gl.full([R], float("-inf"), gl.float32, layout=gl.SliceLayout(0, s_layout))
        l_i = gl.zeros([R], gl.float32, layout=gl.SliceLayout(0, s_layout))
        if LAZY_SUM:  # per-thread partial row sums; the one cross-warp sum happens after the loop
            l_t = gl.zeros([BLOCK_N, R], gl.float32, layout=s_layout)
        zero_s = gl.zeros([BLOCK_N, R], gl.float32, layout=s_layout)
        zero_s2 = gl.zeros([BLOCK_N, 2 * R], gl.float32, layout=s2_layout)
        acc0 = gl.zeros([64 * WG, R], gl.float32, layout=o_layout)  # (WG2: 4 slices of 128 dims, acc4-7 unused)
        acc_zero = acc0  # (PV_PROMOTE: the fresh accumulator of each tile's product)
        acc1 = acc0
        acc2 = acc0
        acc3 = acc0
        acc4 = acc0
        acc5 = acc0
        acc6 = acc0
        acc7 = acc0
        if V_SLOTS == 8 and not PV_REG:
            # PV runs one tile behind QK (issued at the top of the next iteration, waited for there
            # after that tile's QK was issued): zero V and P^T so the first "tile - 1" adds 0
            zero_v = gl.zeros([BLOCK_N, 64], gl.float16, layout=kv_blk)
            for c in gl.static_range(8):
                v16.index(c).store(zero_v)
            p_smem.store(gl.zeros([BLOCK_N, R], gl.float16, layout=s_layout))
        fence_async_shared()  # Q / V / P^T generic stores before the wgmma (async proxy) reads them
        _cta_barrier()
        _timeline_mark(TIMELINE, timeline_ptr, 1, 6)  # Q ready

        n_tiles = gl.cdiv(end - start, BLOCK_N)
        _timeline_put(TIMELINE, timeline_ptr, 11, n_tiles)
        for j in range(0, n_tiles):
            n0 = start + j * BLOCK_N
            stage = j % STAGES
            if V_SLOTS == 8 and not PV_REG:  # PV of tile j - 1, from the V tile and P^T stored last iteration
                acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_tile(
                    v16, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7)
            # the tile STAGES - 1 ahead goes into the stage every warp finished reading last
            # iteration (its QK MMAs were waited for and its V loads precede that iteration's barrier)
            if KV_FORMAT == 2:
                if not ISSUE_LATE:
                    _issue_mx_tile(kv_ptr, kv_start, n0 + (STAGES - 1) * BLOCK_N, end, stride_kv_tok,
                                   (j + STAGES - 1) % STAGES, mx_lat, mx_rope, BLOCK_N, mx_copy, rope_blk, ROW_PERM)
                sc_lat_next = _load_mx_scales(kv_aux_ptr, kv_start, n0 + BLOCK_N, end, stride_sc_tok, 16, 0, BLOCK_N,
                                              gl.SliceLayout(2, dec_lat), ROW_PERM)
                sc_rope_next = _load_mx_scales(kv_aux_ptr, kv_start, n0 + BLOCK_N, end, stride_sc_tok, 2, 16, BLOCK_N,
                                               gl.SliceLayout(2, dec_rope), ROW_PERM)
                async_copy.wait_group(STAGES - 2 if ISSUE_LATE else STAGES - 1)
                _cta_barrier()  # tile j's packed bytes are in; every warp is done with the last K tile
                _mx_decode_tile(mx_lat, mx_rope, stage, sc_lat, sc_rope, k_smem, dec_lat, dec_rope, dec_lat_2d, ROW_PERM,
                                MX_LUT2)
                sc_lat = sc_lat_next
                sc_rope = sc_rope_next
                fence_async_shared()
                _cta_barrier()  # the decoded K tile, visible to the MMAs and to every warp's V loads
                if ISSUE_LATE:  # (v166 / v167) below the fence: its MEMBAR.ALL.CTA waits for this thread's cp.async too
                    _issue_mx_tile(kv_ptr, kv_start, n0 + (STAGES - 1) * BLOCK_N, end, stride_kv_tok,
                                   (j + STAGES - 1) % STAGES, mx_lat, mx_rope, BLOCK_N, mx_copy, rope_blk, ROW_PERM)
                kst = 0
            elif KV_TMA:
                # the stage of tile j - 1: every warp passed PV's fence and barrier after reading it (QK waited, V in
                # registers); TMA writes in the async proxy, so no proxy fence (and no MEMBAR) waits for them here
                _issue_tile_tma(kv_desc, kv_start, n0 + (STAGES - 1) * BLOCK_N, end, (j + STAGES - 1) % STAGES, k_smem,
                                kbar)
                mbarrier.wait(kbar.index(stage), (j // STAGES) & 1)
                lim = end - n0
                if lim < BLOCK_N:  # (at most once a program) rows past the range hold other tokens: zero, as cp.async
                    _ws_zero_rows_from(k_smem[0], k_smem[1], stage, lim)
                    fence_async_shared()  # the zeros (generic stores) before the wgmma reads
                    _cta_barrier()
                kst = stage
            else:
                if not ISSUE_LATE:
                    _issue_next_tile(kv_ptr, kv_start, n0 + (STAGES - 1) * BLOCK_N, end, stride_kv_tok,
                                     (j + STAGES - 1) % STAGES, k_smem, BLOCK_N, cp_blk, ROW_PERM, CP_ONE)
                async_copy.wait_group(STAGES - 2 if ISSUE_LATE else STAGES - 1)  # this thread's copies of tile j
                fence_async_shared()
                _cta_barrier()  # ... and everyone's
                if ISSUE_LATE:  # (v166) below the fence: its MEMBAR.ALL.CTA would wait for these copies too (round 53)
                    _issue_next_tile(kv_ptr, kv_start, n0 + (STAGES - 1) * BLOCK_N, end, stride_kv_tok,
                                     (j + STAGES - 1) % STAGES, k_smem, BLOCK_N, cp_blk, ROW_PERM, CP_ONE)
                kst = stage
            _timeline_mark(TIMELINE, timeline_ptr, 2, 7, j == 0)  # the first tile ready
            s_hi, s_lo = _qk_issue(k_smem, kst, q_hi, q_lo, zero_s, zero_s2, QK_PAIRS)
            if PV_REG:  # V^T fragments straight into registers while QK runs
                if WG2:
                    f0, f1, f2, f3 = _v_fragments8_wg2(k_smem, kst, v_load8_wg2)
                elif PV_FP8:
                    if V_LDSM:
                        f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8_ldsm(k_smem[0], kst)
                    elif V_CF:
                        f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8(k_smem, kst, v_load8_cf, True)
                    else:
                        f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8(k_smem, kst, v_load8)
                else:
                    f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments(k_smem, kst, v_load)
            elif V_SLOTS == 8:
                # PV of tile j - 1 (issued before QK) must be done with v16 / P^T: wait for it (all
                # but the QK groups), then convert this tile's V while its QK runs
                acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = warpgroup_mma_wait(
                    num_outstanding=9 if QK_PAIRS else 18, deps=(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7))
                for c in gl.static_range(8):
                    _convert_v(_chunk(k_smem, kst, c), v16, c, kv_blk)
            st = _qk_wait(s_hi, s_lo, c_hi, c_lo, R, QK_PAIRS, s_layout, QK_CAT, WG2)

            pos = n0 + _row_token(offs_n, ROW_PERM)
            st = gl.where(pos[:, None] < visible[None, :], st, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(st, axis=0))
            if LAZY_RESCALE:
                # P is taken against the running max m_i and the output / sums are rescaled only when
                # some column's max grew past it by more than 2**8 (every warp computes the same m_new,
                # so the branch is uniform); otherwise P <= 256, which fp16 and the fp32 sums hold
                grow = gl.max((m_new > m_i + 8.0).to(gl.int32), axis=0)
                if grow > 0:
                    m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
                    alpha = gl.exp2(m_i - m_safe)
                    l_t = l_t * alpha[None, :]
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _scale_all(
                        acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :])
                    m_i = m_new
                m_ref = gl.where(m_i == float("-inf"), 0.0, m_i)
                pt = gl.exp2(st - (m_ref - P_LOG2)[None, :])
                l_t = l_t + pt
            else:
                m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
                alpha = gl.exp2(m_i - m_safe)
                pt = gl.exp2(st - (m_safe - P_LOG2)[None, :])
                if LAZY_SUM:
                    l_t = l_t * alpha[None, :] + pt
                else:
                    l_i = l_i * alpha + gl.sum(pt, axis=0)
                m_i = m_new
            if PV_FP8:
                _store_p8(pt, p_smem, R, V_CF, WG2)
            elif PV_REG:
                p_smem.store(_p_to_k_order(pt.to(gl.float16), R))
            else:
                p_smem.store(pt.to(gl.float16))
            if not LAZY_RESCALE and not PV_PROMOTE:
                acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _scale_all(
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                    gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :])
            if PV_REG:
                fence_async_shared()  # P^T generic stores before HGMMA (async proxy) reads them
                _cta_barrier()
                if WG2:
                    acc0, acc1, acc2, acc3 = _pv_reg8_promoted_wg2(
                        f0, f1, f2, f3, p_smem, acc0, acc1, acc2, acc3,
                        gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :], acc_zero, a_layout)
                elif PV_PROMOTE == 2:
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg8_serial(
                        f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :], acc_zero, a_layout)
                elif PV_PROMOTE:
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg8_promoted(
                        f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :], acc_zero, a_layout)
                elif PV_FP8:
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg8(
                        f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        a_layout)
                else:
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg(
                        f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                        a_layout)
            elif V_SLOTS == 8:
                fence_async_shared()  # v16 / P^T generic stores before HGMMA (async proxy) reads them
                _cta_barrier()
            else:  # slice by slice through the ring; everything waited for before the next tile
                for i in gl.static_range(8):
                    acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _ring_slice(
                        i, k_smem, kst, v16, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, V_SLOTS,
                        kv_blk)
                acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = warpgroup_mma_wait(
                    num_outstanding=0, deps=(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7))
        if V_SLOTS == 8 and not PV_REG:  # the last tile's PV
            acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_tile(
                v16, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7)
            acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = warpgroup_mma_wait(
                num_outstanding=0, deps=(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7))
        async_copy.wait_group(0)
        _timeline_mark(TIMELINE, timeline_ptr, 3, 8)  # the loop's end
        if LAUNCH_DEPENDENTS == 2:  # late: the reduce's programs launch while this grid writes its partials
            gdc_launch_dependents()
        if LAZY_SUM:
            l_i = gl.sum(l_t, axis=0)
        if PV_FP8:
            l_i = l_i * (1.0 / 256.0)  # P (and with it the sums) ran at 256 P

        # -- epilogue: acc^T slices -> rows-major [R, 64] pieces of the output / partial -----------
        l_o = gl.convert_layout(l_i, gl.SliceLayout(0, o_layout))
        has = l_o > 0
        inv = gl.where(has, kv_scale / (256.0 if PV_FP8 else 1.0) / gl.where(has, l_o, 1.0), 0.0)[None, :]
        rows = gl.arange(0, R, layout=gl.SliceLayout(1, out_blk))
        row_ok = rows < ROWS
        q_idx = gl.where(row_ok, rows // HEADS_PER_PROG, 0)
        tok_out = q_start + q_idx
        head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
        m = gl.arange(0, 64, layout=gl.SliceLayout(0, out_blk))
        if SINGLE_PASS:
            row_base = out_ptr + tok_out * stride_o_tok + head * stride_o_head
        else:
            part_row = (tok_out * NUM_HEADS + head) * num_splits + split
            row_base = part_o_ptr + part_row.to(gl.int64) * 512
            has_r = gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)) > 0
            l_r = gl.where(has_r, gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)), 1.0)
            lse = gl.where(has_r, gl.convert_layout(m_i, gl.SliceLayout(1, out_blk)) + gl.log2(l_r), float("-inf"))
            gl.store(part_lse_ptr + part_row, lse, mask=row_ok)
        if PV_REG and EPI_NATURAL:  # rows back in dim order in registers, then whole-row stores
            if WG2:
                o = _natural_rows_wg2(acc0 * inv, acc1 * inv, acc2 * inv, acc3 * inv, R)
            elif V_LDSM:
                o = _natural_rows_ldsm(acc0 * inv, acc1 * inv, acc2 * inv, acc3 * inv, acc4 * inv, acc5 * inv,
                                       acc6 * inv, acc7 * inv, R)
            else:
                o = _natural_rows(acc0 * inv, acc1 * inv, acc2 * inv, acc3 * inv, acc4 * inv, acc5 * inv,
                                  acc6 * inv, acc7 * inv, R)
            o = gl.convert_layout(o, out_blk)
            ptr = row_base[:, None] + gl.arange(0, 512, layout=gl.SliceLayout(0, out_blk))[None, :]
            out_row = out_ptr + tok_out * stride_o_tok + head * stride_o_head
            counter = counter_ptr + b * gl.num_programs(0) + head_group
            part_base = (tok_out * NUM_HEADS + head) * num_splits
            if SINGLE_PASS:
                gl.store(ptr, o.to(gl.bfloat16), mask=row_ok[:, None])
            elif WORK_LIST:  # (nested ifs, not `WORK_LIST and ...`: a constexpr/tensor `and` is version-fragile)
                if splits_b == 1:  # a short element of a ragged batch: one split, the output directly
                    dims = gl.arange(0, 512, layout=gl.SliceLayout(0, out_blk))
                    gl.store(out_row[:, None] + dims[None, :], o.to(gl.bfloat16), mask=row_ok[:, None])
                else:
                    _partial_out(o, ptr, part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_row, row_ok,
                                 R, out_blk, FUSED_REDUCE)
            elif COOP_MERGE:
                gl.store(ptr, o, mask=row_ok[:, None])
                _coop_merge(part_o_ptr, part_lse_ptr, counter, out_ptr, stride_o_tok, stride_o_head, q_start,
                            head_group, split, num_splits, NUM_HEADS, HEADS_PER_PROG, ROWS, R, SPLITS_P2)
            else:
                _partial_out(o, ptr, part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_row, row_ok, R,
                             out_blk, FUSED_REDUCE)
        else:
            _store_slice(acc0 * inv, row_base, _slice_dims(m, 0, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc1 * inv, row_base, _slice_dims(m, 1, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc2 * inv, row_base, _slice_dims(m, 2, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc3 * inv, row_base, _slice_dims(m, 3, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc4 * inv, row_base, _slice_dims(m, 4, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc5 * inv, row_base, _slice_dims(m, 5, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc6 * inv, row_base, _slice_dims(m, 6, PV_REG), row_ok, SINGLE_PASS, out_blk)
            _store_slice(acc7 * inv, row_base, _slice_dims(m, 7, PV_REG), row_ok, SINGLE_PASS, out_blk)
        _timeline_mark(TIMELINE, timeline_ptr, 4, 9)  # the end (the stores issued; a merge included)

    @gluon.jit
    def _natural_rows(a0, a1, a2, a3, a4, a5, a6, a7, R: gl.constexpr):
        """The 8 PV_REG slices acc^T_s [64 m, R] as one [R, 512] tensor in dim order (_v_fragments'
        relabelling undone: m = c4 c2 d1 c1 d32 d16, s = d8 d4 d2, dim = 64 c + d)."""
        x = gl.join(gl.join(gl.join(a0, a1), gl.join(a2, a3)), gl.join(gl.join(a4, a5), gl.join(a6, a7)))
        # x [64, R, s0 = d2, s1 = d4, s2 = d8] -> bits (c4 c2 d1 c1 d32 d16, R, d2, d4, d8)
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, R, 2, 2, 2])
        x = gl.permute(x, (6, 0, 1, 3, 4, 5, 9, 8, 7, 2))  # R, c4 c2 c1, d32 d16 d8 d4 d2 d1
        return gl.reshape(x, [R, 512])

    @gluon.jit
    def _natural_rows_ldsm(a0, a1, a2, a3, a4, a5, a6, a7, R: gl.constexpr):
        """_natural_rows for V_LDSM's relabelling (m = c4 c2 d1 d8 d4 d2, s = c1 d32 d16)."""
        x = gl.join(gl.join(gl.join(a0, a1), gl.join(a2, a3)), gl.join(gl.join(a4, a5), gl.join(a6, a7)))
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, R, 2, 2, 2])  # c4 c2 d1 d8 d4 d2, R, s0 = d16, s1 = d32, s2 = c1
        x = gl.permute(x, (6, 0, 1, 9, 8, 7, 3, 4, 5, 2))  # R, c4 c2 c1, d32 d16 d8 d4 d2 d1
        return gl.reshape(x, [R, 512])

    @gluon.jit
    def _natural_rows_wg2(a0, a1, a2, a3, R: gl.constexpr):
        """WARPGROUPS = 2: the 4 slices acc^T_s [128 m, R] as one [R, 512] tensor in dim order
        (_v_fragments8_wg2's relabelling undone: m = d16 c4 c2 d4 c1 d32 d8, s = d1 + 2 d2)."""
        x = gl.join(gl.join(a0, a1), gl.join(a2, a3))  # [128, R, d1, d2]
        x = gl.reshape(x, [2, 2, 2, 2, 2, 2, 2, R, 2, 2])  # d16 c4 c2 d4 c1 d32 d8, R, d1, d2
        x = gl.permute(x, (7, 1, 2, 4, 5, 0, 6, 3, 9, 8))  # R, c4 c2 c1, d32 d16 d8 d4 d2 d1
        return gl.reshape(x, [R, 512])

    @gluon.jit
    def _slice_dims(m, s: gl.constexpr, PV_REG: gl.constexpr):
        """The latent dim of row m of PV slice s: 64 s + m, or _v_fragments' relabelling
        (m = c4 c2 d1 c1 d32 d16, s = d8 d4 d2 -> dim = 64 c + d)."""
        if PV_REG:
            c = ((m >> 2) & 1) + ((m >> 4) & 1) * 2 + ((m >> 5) & 1) * 4
            d = (((m >> 3) & 1) + (s & 1) * 2 + ((s >> 1) & 1) * 4 + ((s >> 2) & 1) * 8 + (m & 1) * 16
                 + ((m >> 1) & 1) * 32)
            return c * 64 + d
        else:
            return m + s * 64

    @gluon.jit
    def _ldsm_slice_dims(m, s: gl.constexpr):
        """The latent dim of row m of PV slice s under V_LDSM's relabelling (m = c4 c2 d1 d8 d4 d2, s = c1 d32
        d16 -> dim = 64 c + d; _natural_rows_ldsm's permute as a formula)."""
        c = ((m >> 5) & 1) * 4 + ((m >> 4) & 1) * 2 + ((s >> 2) & 1)
        d = (((s >> 1) & 1) * 32 + (s & 1) * 16 + ((m >> 2) & 1) * 8 + ((m >> 1) & 1) * 4 + (m & 1) * 2
             + ((m >> 3) & 1))
        return c * 64 + d

    @gluon.jit
    def _store_slice(acc_t, row_base, dims, row_ok, SINGLE_PASS: gl.constexpr, out_blk: gl.constexpr):
        """One [64 rows, R] slice of acc^T, transposed to rows-major and stored at its dims (bf16 output
        or fp32 partial)."""
        o = gl.convert_layout(gl.permute(acc_t, (1, 0)), out_blk)
        ptr = row_base[:, None] + dims[None, :]
        if SINGLE_PASS:
            gl.store(ptr, o.to(gl.bfloat16), mask=row_ok[:, None])
        else:
            gl.store(ptr, o, mask=row_ok[:, None])

    # -- generation 3, warp-specialized MXFP4 (WS_SLOTS > 0, variant v127+) ----------------------------
    # One CTA per SM = three 4-warp partitions: two consumers (v116's fp8 loop: QK, softmax, PV on the
    # e4m3 tile) taking the program's tiles alternately, and a decoder that copies the packed tiles by
    # cp.async and decodes each into a ring of WS_SLOTS e4m3 K tiles, signalled by mbarriers (full /
    # empty per slot). The decoder's integer work then runs beside the consumers' MMA / softmax phases
    # instead of between them (rounds 16-23: at a fixed warp count the time followed the instruction
    # count of one stream that did both). Each consumer keeps its own softmax state and writes its
    # own partial: the plan counts two splits per program and the tile reduce merges them.

    # registers per thread of the worker partitions (the default consumer gets what maxnreg leaves:
    # maxnreg x 12 warps x 32 = 4 warps x 32 x (default + 232 + 40); maxnreg 168 -> the default 232)
    # the partitions take no constexpr arguments (an int passed through warp_specialize arrives as a
    # tensor): the query rows and the packed ring's depth are fixed here, the kernel asserts them
    # (the packed ring's depth is read from its buffer's shape instead: a memdesc shape stays constant)
    _WS_R: gl.constexpr = gl.constexpr(16)
    # the partitions' layouts (module constants: a layout built inside a jit helper gets tuples where
    # the builder wants lists); R = 16 query rows, 4 warps per partition
    _WS_S: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 32])
    _WS_S2: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 32])
    _WS_V_CF: gl.constexpr = gl.DistributedLinearLayout(  # v116's v_load8_cf
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 8, 0], [0, 2, 0], [0, 16, 0], [0, 32, 0]],
        lane_bases=[[0, 1, 0], [0, 4, 0], [0, 0, 16], [0, 0, 32], [1, 0, 0]],
        warp_bases=[[2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 64, 64])
    _WS_A: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=_WS_S, k_width=4)
    _WS_OUT: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [4, 1], [1, 0])
    # decoder: 16 bytes a thread per copy; the latent ring is [stage x 4 chunks, 64 t, 64 B], 64-byte swizzled
    # (a quarter warp's 8 rows of one 16-byte column: conflict-free, as the K tile's)
    _WS_CP_LAT: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])  # one [64, 64 B] chunk
    _WS_CP_ROPE: gl.constexpr = gl.BlockedLayout([1, 16], [16, 2], [4, 1], [1, 0])
    # decode: [64 t, 4 blk, 16 B] per chunk; a quarter warp = 8 consecutive tokens of one block
    _WS_DEC: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [32, 0, 0]],
        lane_bases=[[1, 0, 0], [2, 0, 0], [4, 0, 0], [0, 1, 0], [0, 2, 0]],
        warp_bases=[[8, 0, 0], [16, 0, 0]], block_bases=[], shape=[64, 4, 16])
    _WS_DEC_2D: gl.constexpr = gl.DistributedLinearLayout(  # _WS_DEC over [64 t, 64 B]
        reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [32, 0]],
        lane_bases=[[1, 0], [2, 0], [4, 0], [0, 16], [0, 32]],
        warp_bases=[[8, 0], [16, 0]], block_bases=[], shape=[64, 64])
    _WS_DEC_ROPE: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8]],
        lane_bases=[[0, 1, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0]],
        warp_bases=[[16, 0, 0], [32, 0, 0]], block_bases=[], shape=[64, 2, 16])

    # WS_HALVES (v131+): decoder P owns latent blocks 8P .. 8P + 7 (packed bytes 128 P .. 128 P + 127) of every
    # token and the rope of tokens 32 P .. 32 P + 31, copied by one cp.async each into its own ring entries;
    # the scale bytes come through the ring too ([64 t, 8]: its 8 latent blocks; [32 t, 4]: bytes 16..19 = the
    # rope's two + padding)
    _WS2_CP_LAT: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])  # [64 t, 128 B], 4 copies a thread
    _WS2_CP_ROPE: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [4, 1], [1, 0])  # [32 t, 32 B], 8-byte copies
    _WS2_CP_SC: gl.constexpr = gl.BlockedLayout([1, 4], [16, 2], [4, 1], [1, 0])  # [64 t, 8 B], 4-byte copies
    _WS2_CP_SCR: gl.constexpr = gl.BlockedLayout([1, 4], [32, 1], [1, 4], [1, 0])  # [32 t, 4 B] (warps replicate)
    # decode: [64 t, 8 blk, 16 B]; a quarter warp = 8 consecutive tokens of one block (the ring's 16-byte
    # units are swizzled by t & 7: conflict-free), each thread 4 whole blocks
    _WS2_DEC: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [32, 0, 0], [0, 4, 0]],
        lane_bases=[[1, 0, 0], [2, 0, 0], [4, 0, 0], [0, 1, 0], [0, 2, 0]],
        warp_bases=[[8, 0, 0], [16, 0, 0]], block_bases=[], shape=[64, 8, 16])
    _WS2_DEC_2D: gl.constexpr = gl.DistributedLinearLayout(  # _WS2_DEC over [64 t, 128 B]
        reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [32, 0], [0, 64]],
        lane_bases=[[1, 0], [2, 0], [4, 0], [0, 16], [0, 32]],
        warp_bases=[[8, 0], [16, 0]], block_bases=[], shape=[64, 128])
    # WS_LOADER (v136): one warp copies both halves (4-byte scale pieces: [64 t, 8 B] twice, [64 t, 4 B])
    _WS3_CP_SC: gl.constexpr = gl.BlockedLayout([1, 4], [16, 2], [1, 1], [1, 0])
    _WS3_CP_SCR: gl.constexpr = gl.BlockedLayout([1, 4], [32, 1], [1, 1], [1, 0])
    # the rope: [32 t, 2 blk, 16 B], half a block (8 bytes) a thread
    _WS2_DEC_ROPE: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 0, 1], [0, 0, 2], [0, 0, 4]],
        lane_bases=[[0, 0, 8], [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0]],
        warp_bases=[[16, 0, 0], [0, 1, 0]], block_bases=[], shape=[32, 2, 16])
    _WS2_DEC_ROPE_2D: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 1], [0, 2], [0, 4]],
        lane_bases=[[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]],
        warp_bases=[[16, 0], [0, 16]], block_bases=[], shape=[32, 32])

    @gluon.jit
    def _ws_decoder_body(PART: gl.constexpr, ptrs, ints, bufs):
        """A decoder partition: packed tiles -> the e4m3 K ring, one MX block chunk at a time (4 blocks of 64
        tokens = 4 KB, 32 bytes a thread) so that it fits a small register budget. PART 2: the whole tile
        (v127 / v128); 0 / 1: one of two decoders (v129): latent chunks 0-1 and the rope, or chunks 2-3,
        each with its own copies of its part of the packed ring; both arrive on the slot's full barrier."""
        kv_ptr, kv_aux_ptr, kv_indptr_ptr = ptrs[1], ptrs[2], ptrs[4]
        stride_kv_tok, stride_sc_tok, num_splits, WS_SLOTS, MX_LUT2 = ints[2], ints[3], ints[5], ints[9], ints[10]
        k_lat, k_rope, mx_lat, mx_rope, full, empty = bufs[0], bufs[1], bufs[2], bufs[3], bufs[8], bufs[9]
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        dec: gl.constexpr = _WS_DEC
        dec_rope: gl.constexpr = _WS_DEC_ROPE
        LO: gl.constexpr = PART != 1  # chunks 0-1 and the rope
        HI: gl.constexpr = PART != 0  # chunks 2-3
        STAGES_: gl.constexpr = mx_rope.shape[0]
        # the scales travel one tile ahead with a 3-stage ring (v128) or two decoders (v129+); v127 loaded
        # them in the tile's own iteration, and waited
        AHEAD: gl.constexpr = STAGES_ >= 3 or PART != 2
        for i in gl.static_range(STAGES_ - 1):
            _ws_issue_packed(kv_ptr, kv_start, start + i * 64, end, stride_kv_tok, i, mx_lat, mx_rope, LO, HI)
        if AHEAD:
            if LO:
                n_s0, n_s1, n_sr = _ws_scales_lo(kv_aux_ptr, kv_start, start, end, stride_sc_tok, dec, dec_rope)
            if HI:
                n_s2, n_s3 = _ws_scales_hi(kv_aux_ptr, kv_start, start, end, stride_sc_tok, dec)
        for j in range(0, n_tiles):
            n0 = start + j * 64
            _ws_issue_packed(kv_ptr, kv_start, n0 + (STAGES_ - 1) * 64, end, stride_kv_tok, (j + STAGES_ - 1) % STAGES_,
                             mx_lat, mx_rope, LO, HI)
            if AHEAD:
                if LO:
                    s0, s1, sr = n_s0, n_s1, n_sr
                    n_s0, n_s1, n_sr = _ws_scales_lo(kv_aux_ptr, kv_start, n0 + 64, end, stride_sc_tok, dec, dec_rope)
                if HI:
                    s2, s3 = n_s2, n_s3
                    n_s2, n_s3 = _ws_scales_hi(kv_aux_ptr, kv_start, n0 + 64, end, stride_sc_tok, dec)
            else:  # (v127) this tile's scales while its bytes land
                s0, s1, sr = _ws_scales_lo(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, dec, dec_rope)
                s2, s3 = _ws_scales_hi(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, dec)
            async_copy.wait_group(STAGES_ - 1)
            _cta_barrier()  # (partition-local) every thread's copies of tile j have landed
            slot = j % WS_SLOTS
            mbarrier.wait(empty.index(slot), ((j // WS_SLOTS) & 1) ^ 1)  # the consumer of tile j - WS_SLOTS is done
            stage = j % STAGES_
            if LO:
                _ws_decode_chunk(mx_lat, stage, 0, s0, k_lat, slot, dec, MX_LUT2)
                _ws_decode_chunk(mx_lat, stage, 1, s1, k_lat, slot, dec, MX_LUT2)
            if HI:
                _ws_decode_chunk(mx_lat, stage, 2, s2, k_lat, slot, dec, MX_LUT2)
                _ws_decode_chunk(mx_lat, stage, 3, s3, k_lat, slot, dec, MX_LUT2)
            if LO:
                rope = _mx_to_e4m3(mx_rope.index(stage).reshape([64, 2, 16]).load(dec_rope), sr, MX_LUT2)  # [64, 2, 32]
                k_rope.index(slot).store(gl.reshape(rope, [64, 64]))
            fence_async_shared()  # generic stores before the consumers' wgmma (async proxy) reads
            _cta_barrier()  # every thread's part of the tile (and its reads of the ring stage) done
            mbarrier.arrive(full.index(slot), count=1)
        async_copy.wait_group(0)

    @gluon.jit
    def _ws_decode_half(PART: gl.constexpr, lat_e, rope_e, sc_e, scr_e, k_lat, k_rope, slot, MX_LUT2: gl.constexpr = False):
        """WS_HALVES' decode of one half (v131+): the packed ring entry's latent [64 t, 128 B] with its scale bytes
        sc_e [64 t, 8] -> K chunks 4 PART .. 4 PART + 3 of slot; its rope [32 t, 32 B] with scr_e [32 t, >= 2]
        -> rope rows 32 PART .. 32 PART + 31. Every element once."""
        packed = gl.convert_layout(gl.reshape(lat_e.load(_WS2_DEC_2D), [64, 8, 16]), _WS2_DEC)
        sc = sc_e.load(gl.SliceLayout(2, _WS2_DEC)).to(gl.int32)
        x = _mx_to_e4m3(packed, sc, MX_LUT2)  # [64 t, 8 blk, 32]
        x = gl.permute(gl.reshape(x, [64, 4, 64]), (1, 0, 2))  # [4 c, 64 t, 64 d]: K chunks 4 PART + c
        k_lat.index(slot).slice(256 * PART, 256, dim=0).store(gl.reshape(x, [256, 64]))
        rp = gl.convert_layout(gl.reshape(rope_e.load(_WS2_DEC_ROPE_2D), [32, 2, 16]), _WS2_DEC_ROPE)
        scr = scr_e.slice(0, 2, dim=1).load(gl.SliceLayout(2, _WS2_DEC_ROPE)).to(gl.int32)
        rope = _mx_to_e4m3(rp, scr, MX_LUT2)  # [32 t, 2 blk, 32]
        k_rope.index(slot).slice(32 * PART, 32, dim=0).store(gl.reshape(rope, [32, 64]))

    @gluon.jit
    def _ws_halves_body(PART: gl.constexpr, ptrs, ints, bufs):
        """A WS_HALVES decoder partition (v131+): its half of every tile (latent blocks 8 PART .. 8 PART + 7 of
        the 64 tokens, the rope of tokens 32 PART ..) copied with its scale bytes by three cp.async ops into
        its own ring entries and decoded by one op each: no scale loads through registers (v129 / v130
        moved each prefetched scale byte at the end of the iteration that loaded it, and waited for it),
        no per-chunk barriers, the copies' addresses computed once (a tile adds a scalar)."""
        kv_ptr, kv_aux_ptr, kv_indptr_ptr = ptrs[1], ptrs[2], ptrs[4]
        stride_kv_tok, stride_sc_tok, num_splits, WS_SLOTS, MX_LUT2 = ints[2], ints[3], ints[5], ints[9], ints[10]
        k_lat, k_rope, mx_lat, mx_rope, full, empty, mx_sc, mx_scr = (bufs[0], bufs[1], bufs[2], bufs[3], bufs[8],
                                                                     bufs[9], bufs[10], bufs[11])
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        STAGES_: gl.constexpr = mx_lat.shape[0] // 2
        # loop-invariant offsets (int32: 64 rows x the row stride stays far below 2**31)
        t_l = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS2_CP_LAT))
        c_l = gl.arange(0, 128, layout=gl.SliceLayout(0, _WS2_CP_LAT))
        off_lat = t_l[:, None] * stride_kv_tok + (128 * PART + c_l)[None, :]
        t_r = gl.arange(0, 32, layout=gl.SliceLayout(1, _WS2_CP_ROPE)) + 32 * PART
        c_r = gl.arange(0, 32, layout=gl.SliceLayout(0, _WS2_CP_ROPE))
        off_rope = t_r[:, None] * stride_kv_tok + (256 + c_r)[None, :]
        t_s = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS2_CP_SC))
        off_sc = t_s[:, None] * stride_sc_tok + (8 * PART + gl.arange(0, 8, layout=gl.SliceLayout(0, _WS2_CP_SC)))[None, :]
        t_q = gl.arange(0, 32, layout=gl.SliceLayout(1, _WS2_CP_SCR)) + 32 * PART
        off_scr = t_q[:, None] * stride_sc_tok + (16 + gl.arange(0, 4, layout=gl.SliceLayout(0, _WS2_CP_SCR)))[None, :]
        for i in gl.static_range(STAGES_ - 1):
            _ws_issue_half(kv_ptr, kv_aux_ptr, kv_start, start + i * 64, end, stride_kv_tok, stride_sc_tok,
                           off_lat, t_l, off_rope, t_r, off_sc, t_s, off_scr, t_q, i * 2 + PART, mx_lat, mx_rope, mx_sc, mx_scr)
        for j in range(0, n_tiles):
            n0 = start + j * 64
            _ws_issue_half(kv_ptr, kv_aux_ptr, kv_start, n0 + (STAGES_ - 1) * 64, end, stride_kv_tok, stride_sc_tok,
                           off_lat, t_l, off_rope, t_r, off_sc, t_s, off_scr, t_q, ((j + STAGES_ - 1) % STAGES_) * 2 + PART,
                           mx_lat, mx_rope, mx_sc, mx_scr)
            async_copy.wait_group(STAGES_ - 1)
            _cta_barrier()  # (partition-local) every thread's copies of tile j have landed
            slot = j % WS_SLOTS
            mbarrier.wait(empty.index(slot), ((j // WS_SLOTS) & 1) ^ 1)  # the consumer of tile j - WS_SLOTS is done
            e = (j % STAGES_) * 2 + PART
            _ws_decode_half(PART, mx_lat.index(e), mx_rope.index(e), mx_sc.index(e), mx_scr.index(e), k_lat, k_rope, slot,
                            MX_LUT2)
            fence_async_shared()  # generic stores before the consumers' wgmma (async proxy) reads
            _cta_barrier()  # every thread's part of the tile (and its reads of the ring entry) done
            mbarrier.arrive(full.index(slot), count=1)
        async_copy.wait_group(0)

    @gluon.jit
    def _ws_issue_half(kv_ptr, kv_aux_ptr, kv_start, n0, end, stride_kv_tok, stride_sc_tok, off_lat, t_l, off_rope,
                       t_r, off_sc, t_s, off_scr, t_q, e, mx_lat, mx_rope, mx_sc, mx_scr):
        """cp.async of one decoder's half of the tile at n0 into ring entry e, one commit group. A whole tile
        copies unmasked (a uniform branch); the program's last one zero-fills tokens >= end (their scale
        byte 0 decodes to 0)."""
        row0 = (kv_start + n0).to(gl.int64)
        lim = end - n0
        kv_base = kv_ptr + row0 * stride_kv_tok
        # (the launcher checks the 4-byte alignment of the scale base and rows the copies rely on)
        sc_base = kv_aux_ptr + row0 * stride_sc_tok
        p_sc = gl.max_contiguous(gl.multiple_of(sc_base + off_sc, [4, 4]), [1, 4])
        p_scr = gl.max_contiguous(gl.multiple_of(sc_base + off_scr, [4, 4]), [1, 4])
        if lim >= 64:
            _cp_async(mx_lat.index(e), kv_base + off_lat)
            _cp_async(mx_rope.index(e), kv_base + off_rope)
            _cp_async(mx_sc.index(e), p_sc)
            _cp_async(mx_scr.index(e), p_scr)
        else:
            _cp_async(mx_lat.index(e), kv_base + off_lat, mask=(t_l < lim)[:, None])
            _cp_async(mx_rope.index(e), kv_base + off_rope, mask=(t_r < lim)[:, None])
            _cp_async(mx_sc.index(e), p_sc, mask=(t_s < lim)[:, None])
            _cp_async(mx_scr.index(e), p_scr, mask=(t_q < lim)[:, None])
        async_copy.commit_group()

    @gluon.jit
    def _ws_tma_body(PART: gl.constexpr, ptrs, ints, bufs, EARLY_TMA: gl.constexpr = False):
        """A WS_TMA decoder partition (v133+): WS_HALVES' half of every tile, its packed bytes by two TMA loads
        ([64 t, 128 B] of the latent, [32 t, 32 B] of the rope; one thread issues them, the entry's mbarrier
        counts the bytes) and only the scale bytes by cp.async: no per-copy address math or masks in the loop.
        Rows past the program's end hold the next tokens of the cache (or TMA's zeros past its end): their
        scale bytes, copied masked, are 0, so they decode to 0 as v131's zero-filled rows do."""
        kv_aux_ptr, kv_indptr_ptr, lat_desc, rope_desc = ptrs[2], ptrs[4], ptrs[7], ptrs[8]
        stride_sc_tok, num_splits, WS_SLOTS, MX_LUT2 = ints[3], ints[5], ints[9], ints[10]
        k_lat, k_rope, mx_lat, mx_rope, full, empty, mx_sc, mx_scr, ready = (
            bufs[0], bufs[1], bufs[2], bufs[3], bufs[8], bufs[9], bufs[10], bufs[11], bufs[12])
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        STAGES_: gl.constexpr = mx_lat.shape[0] // 2
        t_s = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS2_CP_SC))
        off_sc = t_s[:, None] * stride_sc_tok + (8 * PART + gl.arange(0, 8, layout=gl.SliceLayout(0, _WS2_CP_SC)))[None, :]
        t_q = gl.arange(0, 32, layout=gl.SliceLayout(1, _WS2_CP_SCR)) + 32 * PART
        off_scr = t_q[:, None] * stride_sc_tok + (16 + gl.arange(0, 4, layout=gl.SliceLayout(0, _WS2_CP_SCR)))[None, :]
        for i in gl.static_range(STAGES_ - 1):
            if EARLY_TMA:  # (the kernel issued these tiles' TMA loads before the Q prologue)
                _ws_issue_scales(kv_aux_ptr, kv_start, start + i * 64, end, stride_sc_tok, off_sc, t_s, off_scr, t_q,
                                 i * 2 + PART, mx_sc, mx_scr)
            else:
                _ws_issue_tma(lat_desc, rope_desc, kv_aux_ptr, kv_start, start + i * 64, end, stride_sc_tok, off_sc,
                              t_s, off_scr, t_q, i * 2 + PART, PART, mx_lat, mx_rope, mx_sc, mx_scr, ready)
        for j in range(0, n_tiles):
            n0 = start + j * 64
            _ws_issue_tma(lat_desc, rope_desc, kv_aux_ptr, kv_start, n0 + (STAGES_ - 1) * 64, end, stride_sc_tok, off_sc,
                          t_s, off_scr, t_q, ((j + STAGES_ - 1) % STAGES_) * 2 + PART, PART, mx_lat, mx_rope, mx_sc,
                          mx_scr, ready)
            e = (j % STAGES_) * 2 + PART
            async_copy.wait_group(STAGES_ - 1)
            _cta_barrier()  # (partition-local) every thread's scale copies of tile j have landed
            mbarrier.wait(ready.index(e), (j // STAGES_) & 1)  # and the tile's TMA bytes
            slot = j % WS_SLOTS
            mbarrier.wait(empty.index(slot), ((j // WS_SLOTS) & 1) ^ 1)  # the consumer of tile j - WS_SLOTS is done
            _ws_decode_half(PART, mx_lat.index(e), mx_rope.index(e), mx_sc.index(e), mx_scr.index(e), k_lat, k_rope, slot,
                            MX_LUT2)
            fence_async_shared()  # generic stores before the consumers' wgmma (async proxy) reads; and the
            # entry's generic reads before its next TMA write
            _cta_barrier()  # every thread's part of the tile (and its reads of the ring entry) done
            mbarrier.arrive(full.index(slot), count=1)
        async_copy.wait_group(0)

    @gluon.jit
    def _ws_issue_tma(lat_desc, rope_desc, kv_aux_ptr, kv_start, n0, end, stride_sc_tok, off_sc, t_s, off_scr, t_q,
                      e, PART: gl.constexpr, mx_lat, mx_rope, mx_sc, mx_scr, ready):
        """One decoder's half of the tile at n0 into ring entry e: the packed bytes by TMA (when the program
        has that tile; the entry's barrier expects their bytes), the scale bytes by cp.async, masked to the
        program's tokens (one commit group, possibly empty)."""
        _ws_issue_tma_bytes(lat_desc, rope_desc, kv_start, n0, end, e, PART, mx_lat, mx_rope, ready)
        _ws_issue_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, off_sc, t_s, off_scr, t_q, e, mx_sc, mx_scr)

    @gluon.jit
    def _ws_issue_tma_bytes(lat_desc, rope_desc, kv_start, n0, end, e, PART: gl.constexpr, mx_lat, mx_rope, ready):
        """The packed bytes of one decoder's half of the tile at n0 by two TMA loads on entry e's barrier
        (which then expects their bytes), when the program has that tile."""
        row = kv_start + n0
        has = n0 < end
        mbarrier.expect(ready.index(e), 64 * 128 + 32 * 32, pred=has)
        _tma_load(lat_desc, [row, 128 * PART], ready.index(e), mx_lat.index(e), pred=has)
        _tma_load(rope_desc, [row + 32 * PART, 256], ready.index(e), mx_rope.index(e), pred=has)

    @gluon.jit
    def _ws_issue_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, off_sc, t_s, off_scr, t_q, e, mx_sc, mx_scr):
        """The scale bytes of that half by cp.async, masked to the program's tokens (one commit group)."""
        row = kv_start + n0
        lim = end - n0
        sc_base = kv_aux_ptr + row.to(gl.int64) * stride_sc_tok
        # (the launcher checks the 4-byte alignment of the scale base and rows the copies rely on)
        p_sc = gl.max_contiguous(gl.multiple_of(sc_base + off_sc, [4, 4]), [1, 4])
        p_scr = gl.max_contiguous(gl.multiple_of(sc_base + off_scr, [4, 4]), [1, 4])
        _cp_async(mx_sc.index(e), p_sc, mask=(t_s < lim)[:, None])
        _cp_async(mx_scr.index(e), p_scr, mask=(t_q < lim)[:, None])
        async_copy.commit_group()

    @gluon.jit
    def _ws_loader(ptrs, ints, bufs):
        """The WS_LOADER partition (v136, one warp): both halves of every tile into ring entry (stage, half) -
        four TMA loads and the scale bytes by cp.async, whose completion the stage's ready barrier also
        tracks (cp.async.mbarrier.arrive, one arrival per lane) - once both decoders have freed the stage.
        The decoders then only wait, decode and arrive: no copy, no commit group, no barrier for copies."""
        kv_aux_ptr, kv_indptr_ptr, lat_desc, rope_desc = ptrs[2], ptrs[4], ptrs[7], ptrs[8]
        stride_sc_tok, num_splits = ints[3], ints[5]
        mx_lat, mx_rope, mx_sc, mx_scr, ready, free = bufs[2], bufs[3], bufs[10], bufs[11], bufs[12], bufs[13]
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        STAGES_: gl.constexpr = ready.shape[0]
        t_s = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS3_CP_SC))
        c_s = gl.arange(0, 8, layout=gl.SliceLayout(0, _WS3_CP_SC))
        off_sc = t_s[:, None] * stride_sc_tok + c_s[None, :]
        t_q = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS3_CP_SCR))
        off_scr = t_q[:, None] * stride_sc_tok + (16 + gl.arange(0, 4, layout=gl.SliceLayout(0, _WS3_CP_SCR)))[None, :]
        for j in range(0, n_tiles):
            s = j % STAGES_
            mbarrier.wait(free.index(s), ((j // STAGES_) & 1) ^ 1)  # both decoders are done with tile j - STAGES
            n0 = start + j * 64
            row = kv_start + n0
            mbarrier.expect(ready.index(s), 2 * (64 * 128 + 32 * 32))
            for h in gl.static_range(2):
                _tma_load(lat_desc, [row, 128 * h], ready.index(s), mx_lat.index(2 * s + h))
                _tma_load(rope_desc, [row + 32 * h, 256], ready.index(s), mx_rope.index(2 * s + h))
            lim = end - n0
            sc_base = kv_aux_ptr + row.to(gl.int64) * stride_sc_tok
            # (the launcher checks the 4-byte alignment of the scale base and rows the copies rely on)
            for h in gl.static_range(2):
                p = gl.max_contiguous(gl.multiple_of(sc_base + (off_sc + 8 * h), [4, 4]), [1, 4])
                _cp_async(mx_sc.index(2 * s + h), p, mask=(t_s < lim)[:, None])
            p = gl.max_contiguous(gl.multiple_of(sc_base + off_scr, [4, 4]), [1, 4])
            _cp_async(mx_scr.index(s), p, mask=(t_q < lim)[:, None])
            async_copy.mbarrier_arrive(ready.index(s), increment_count=False)  # each lane, when its copies land

    @gluon.jit
    def _ws_fed_body(PART: gl.constexpr, ptrs, ints, bufs):
        """A WS_LOADER decoder partition (v136): WS_TMA's decode of its half, fed by the loader warp."""
        kv_indptr_ptr = ptrs[4]
        num_splits, WS_SLOTS, MX_LUT2 = ints[5], ints[9], ints[10]
        k_lat, k_rope, mx_lat, mx_rope, full, empty, mx_sc, mx_scr, ready, free = (
            bufs[0], bufs[1], bufs[2], bufs[3], bufs[8], bufs[9], bufs[10], bufs[11], bufs[12], bufs[13])
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        STAGES_: gl.constexpr = ready.shape[0]
        for j in range(0, n_tiles):
            s = j % STAGES_
            e = 2 * s + PART
            mbarrier.wait(ready.index(s), (j // STAGES_) & 1)  # the tile's TMA bytes and scale copies
            slot = j % WS_SLOTS
            mbarrier.wait(empty.index(slot), ((j // WS_SLOTS) & 1) ^ 1)  # the consumer of tile j - WS_SLOTS is done
            _ws_decode_half(PART, mx_lat.index(e), mx_rope.index(e), mx_sc.index(e),
                            mx_scr.index(s).slice(32 * PART, 32, dim=0), k_lat, k_rope, slot, MX_LUT2)
            fence_async_shared()  # generic stores before the consumers' wgmma reads; the entry's reads before TMA's
            _cta_barrier()  # every thread's part of the tile (and its reads of the ring entry) done
            mbarrier.arrive(full.index(slot), count=1)
            mbarrier.arrive(free.index(s), count=1)

    @gluon.jit
    def _ws_fed_lo(ptrs, ints, bufs):
        _ws_fed_body(0, ptrs, ints, bufs)

    @gluon.jit
    def _ws_fed_hi(ptrs, ints, bufs):
        _ws_fed_body(1, ptrs, ints, bufs)

    @gluon.jit
    def _ws_tma_lo(ptrs, ints, bufs):
        _ws_tma_body(0, ptrs, ints, bufs)

    @gluon.jit
    def _ws_tma_hi(ptrs, ints, bufs):
        _ws_tma_body(1, ptrs, ints, bufs)

    @gluon.jit
    def _ws_tma_lo_early(ptrs, ints, bufs):
        _ws_tma_body(0, ptrs, ints, bufs, True)

    @gluon.jit
    def _ws_tma_hi_early(ptrs, ints, bufs):
        _ws_tma_body(1, ptrs, ints, bufs, True)

    @gluon.jit
    def _ws_halves_lo(ptrs, ints, bufs):
        _ws_halves_body(0, ptrs, ints, bufs)

    @gluon.jit
    def _ws_halves_hi(ptrs, ints, bufs):
        _ws_halves_body(1, ptrs, ints, bufs)

    # the partitions (gl.warp_specialize: every worker takes the same arguments, none of them a constexpr
    # int; the kernel passes three tuples: ptrs = (q, kv, kv_aux, qo_indptr, kv_indptr, part_o, part_lse, the two
    # TMA descriptors or None),
    # ints = (stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, sm_scale, num_splits, NUM_HEADS,
    # Q_SEQ_LEN, HEADS_PER_PROG, WS_SLOTS, MX_LUT2 (a bool constexpr: it stays one)), bufs = (k_lat, k_rope, mx_lat, mx_rope, q_hi, p8a, p8b, s1, full, empty,
    # mx_sc, mx_scr (WS_HALVES' scale rings), ready (WS_TMA's per-entry barriers))
    @gluon.jit
    def _ws_decoder(ptrs, ints, bufs):
        _ws_decoder_body(2, ptrs, ints, bufs)

    @gluon.jit
    def _ws_decoder_lo(ptrs, ints, bufs):
        _ws_decoder_body(0, ptrs, ints, bufs)

    @gluon.jit
    def _ws_decoder_hi(ptrs, ints, bufs):
        _ws_decoder_body(1, ptrs, ints, bufs)

    @gluon.jit
    def _ws_consumer0(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs)

    @gluon.jit
    def _ws_consumer1(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs)

    # V_LDSM's consumers: an `if` on a flag taken from the args tuple compiled both branches here (triton 3.6),
    # which fails where they differ in layout, as the two fragment paths do; a literal argument is a constexpr,
    # so the choice is made where the kernel picks its partitions
    @gluon.jit
    def _ws_consumer0_ldsm(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs, True)

    @gluon.jit
    def _ws_consumer1_ldsm(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs, True)

    @gluon.jit
    def _ws_consumer0_direct(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs, True, True)

    @gluon.jit
    def _ws_consumer1_direct(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs, True, True)

    # v170's (WS_PAIR_MERGE; _pm1: one program an element, the output itself): literal flags, as V_LDSM's above
    # (read from the partitions' argument tuple they are no constexprs on triton 3.6)
    @gluon.jit
    def _ws_consumer0_pm(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs, True, True, False, True)

    @gluon.jit
    def _ws_consumer1_pm(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs, True, True, False, True)

    @gluon.jit
    def _ws_consumer0_pm1(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs, True, True, False, True, True)

    @gluon.jit
    def _ws_consumer1_pm1(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs, True, True, False, True, True)

    @gluon.jit
    def _ws_consumer0_fp8(ptrs, ints, bufs):
        _ws_consumer(0, ptrs, ints, bufs, True, True, True)

    @gluon.jit
    def _ws_consumer1_fp8(ptrs, ints, bufs):
        _ws_consumer(1, ptrs, ints, bufs, True, True, True)

    # the zeroing's view of a K tile: 4-byte words (the swizzle moves 16-byte units within a 64-byte row, so a
    # word stays in its token's row), 16 bytes a thread
    _K32_SL: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=32, rank=2)
    _WS_ZERO: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])

    @gluon.jit
    def _ws_zero_rows_from(k_lat, k_rope, slot, lim):
        """Rows lim .. 63 of ring entry `slot` (the token rows of its 9 chunks) set to 0, as the one-warpgroup
        kernel's masked cp.async leaves them (e4m3 0 is byte 0), by 4-byte words."""
        if _PUBLIC_REINTERPRET:
            w_lat = k_lat.index(slot).reinterpret(gl.int32, [512, 16], _K32_SL)
            w_rope = k_rope.index(slot).reinterpret(gl.int32, [64, 16], _K32_SL)
        else:
            w_lat = k_lat.index(slot)._reinterpret(gl.int32, [512, 16], _K32_SL)
            w_rope = k_rope.index(slot)._reinterpret(gl.int32, [64, 16], _K32_SL)
        t = gl.arange(0, 512, layout=gl.SliceLayout(1, _WS_ZERO)) % 64
        w_lat.store(gl.where((t < lim)[:, None], w_lat.load(_WS_ZERO), 0))
        tr = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS_ZERO))
        w_rope.store(gl.where((tr < lim)[:, None], w_rope.load(_WS_ZERO), 0))

    @gluon.jit
    def _ws_fp8_loader(ptrs, ints, bufs):
        """The fp8 kernel's loader partition (v149, one warp): each tile of the program straight into a ring
        entry of the consumers - nine TMA loads ([64 t, 64 B] each: the 8 latent chunks and the rope) on the
        entry's full barrier, which counts their bytes - once the consumer of the tile WS_SLOTS back has
        freed it. No decode, so no decoder partition: the ring entries are the consumers' K tiles."""
        kv_indptr_ptr, kv_desc = ptrs[4], ptrs[7]
        num_splits, WS_SLOTS = ints[5], ints[9]
        k_lat, k_rope, full, empty = bufs[0], bufs[1], bufs[8], bufs[9]
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        for j in range(0, n_tiles):
            slot = j % WS_SLOTS
            mbarrier.wait(empty.index(slot), ((j // WS_SLOTS) & 1) ^ 1)  # the consumer of tile j - WS_SLOTS is done
            row = kv_start + start + j * 64
            mbarrier.expect(full.index(slot), 64 * 576)
            for c in gl.static_range(9):
                _tma_load(kv_desc, [row, 64 * c], full.index(slot), _chunk((k_lat, k_rope), slot, c))

    @gluon.jit
    def _ws_program_range(kv_indptr_ptr, num_splits):
        """This program's KV range (generation 1's split boundaries over num_splits / 2 programs per batch
        element: num_splits counts the two consumers' partials): kv_start, kv_len, start, end, n_tiles."""
        b = gl.program_id(2)
        kv_start = gl.load(kv_indptr_ptr + b)
        kv_len = gl.load(kv_indptr_ptr + b + 1) - kv_start
        chunk = gl.cdiv(gl.cdiv(kv_len, num_splits // 2), 64) * 64
        start = gl.program_id(1) * chunk
        end = gl.minimum(start + chunk, kv_len)
        return kv_start, kv_len, start, end, gl.cdiv(end - start, 64)

    @gluon.jit
    def _ws_scales_lo(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, dec: gl.constexpr, dec_rope: gl.constexpr):
        """The E8M0 bytes of one tile for chunks 0-1 ([64, 4] each, the decode's layout) and the rope ([64, 2])."""
        s0 = _load_mx_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, 4, 0, 64, gl.SliceLayout(2, dec), False)
        s1 = _load_mx_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, 4, 4, 64, gl.SliceLayout(2, dec), False)
        sr = _load_mx_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, 2, 16, 64, gl.SliceLayout(2, dec_rope), False)
        return s0, s1, sr

    @gluon.jit
    def _ws_scales_hi(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, dec: gl.constexpr):
        """The E8M0 bytes of one tile for chunks 2-3."""
        s2 = _load_mx_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, 4, 8, 64, gl.SliceLayout(2, dec), False)
        s3 = _load_mx_scales(kv_aux_ptr, kv_start, n0, end, stride_sc_tok, 4, 12, 64, gl.SliceLayout(2, dec), False)
        return s2, s3

    @gluon.jit
    def _ws_issue_packed(kv_ptr, kv_start, n0, end, stride_kv_tok, stage, mx_lat, mx_rope, LO: gl.constexpr,
                         HI: gl.constexpr):
        """cp.async of one packed tile (LO: latent chunks 0-1 and the rope bytes [64, 32], HI: chunks 2-3), each
        latent chunk [64 t, 64 B] into ring entry 4 stage + q; tokens >= end zero-filled; one commit group."""
        t = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS_CP_LAT))
        col = gl.arange(0, 64, layout=gl.SliceLayout(0, _WS_CP_LAT))
        pos = n0 + t
        ok = (pos < end)[:, None]
        base = kv_ptr + ((kv_start + pos).to(gl.int64) * stride_kv_tok)[:, None] + col[None, :]
        if LO:
            _cp_async(mx_lat.index(stage * 4 + 0), base, mask=ok)
            _cp_async(mx_lat.index(stage * 4 + 1), base + 64, mask=ok)
            tr = gl.arange(0, 64, layout=gl.SliceLayout(1, _WS_CP_ROPE))
            colr = gl.arange(0, 32, layout=gl.SliceLayout(0, _WS_CP_ROPE))
            posr = n0 + tr
            baser = kv_ptr + ((kv_start + posr).to(gl.int64) * stride_kv_tok)[:, None] + 256 + colr[None, :]
            _cp_async(mx_rope.index(stage), baser, mask=(posr < end)[:, None])
        if HI:
            _cp_async(mx_lat.index(stage * 4 + 2), base + 128, mask=ok)
            _cp_async(mx_lat.index(stage * 4 + 3), base + 192, mask=ok)
        async_copy.commit_group()

    @gluon.jit
    def _ws_decode_chunk(mx_lat, stage, q: gl.constexpr, sc, k_lat, slot, dec: gl.constexpr, MX_LUT2: gl.constexpr = False):
        """Latent blocks 4q .. 4q + 3 of every token (dims 128 q .. 128 q + 127 = K chunks 2q, 2q + 1)."""
        # (read as [64, 64] and split in registers: triton 3.6 cannot reshape a swizzled buffer's minor dim)
        packed = gl.convert_layout(gl.reshape(mx_lat.index(stage * 4 + q).load(_WS_DEC_2D), [64, 4, 16]), dec)
        x = _mx_to_e4m3(packed, sc, MX_LUT2)  # [64 t, 4 blk, 32]
        x = gl.permute(gl.reshape(x, [64, 2, 64]), (1, 0, 2))  # [2 c, 64 t, 64 d]
        k_lat.index(slot).slice(128 * q, 128, dim=0).store(gl.reshape(x, [128, 64]))

    # v170's hand-over between the consumers: consumer 1's accumulators as 8 [64 dims, R rows] fp32 slices over the
    # ring's K entry 1 (32 KB), its l and m (m broadcast) over rope entries 1 and 3;
    # 8-byte units swizzled by row, so an accumulator fragment's 8 rows x 4 column pairs hit 2-way at most
    _WS_X_SL: gl.constexpr = gl.SwizzledSharedLayout(vec=2, per_phase=1, max_phase=8, order=[1, 0])

    @gluon.jit
    def _ws_pair_views(k_lat, k_rope):
        if _PUBLIC_REINTERPRET:
            o_x = k_lat.index(1).reinterpret(gl.float32, [512, _WS_R], _WS_X_SL)
            l_x = k_rope.index(1).reinterpret(gl.float32, [64, _WS_R], _WS_X_SL)
            m_x = k_rope.index(3).reinterpret(gl.float32, [64, _WS_R], _WS_X_SL)
        else:
            o_x = k_lat.index(1)._reinterpret(gl.float32, [512, _WS_R], _WS_X_SL)
            l_x = k_rope.index(1)._reinterpret(gl.float32, [64, _WS_R], _WS_X_SL)
            m_x = k_rope.index(3)._reinterpret(gl.float32, [64, _WS_R], _WS_X_SL)
        return o_x, l_x, m_x

    @gluon.jit
    def _ws_consumer(PARITY: gl.constexpr, ptrs, ints, bufs, V_LDSM: gl.constexpr = False,
                     EPI_DIRECT: gl.constexpr = False, FP8_KV: gl.constexpr = False, WS_PAIR_MERGE: gl.constexpr = False,
                     SINGLE_PASS: gl.constexpr = False):
        """A consumer partition: v116's loop (QK_CAT, PV_FP8, PV_PROMOTE, V_CF, LAZY_SUM) over the tiles
        j = PARITY, PARITY + 2, ... of the program, then its own partial (split 2 split + PARITY); with
        WS_PAIR_MERGE (v170) consumer 0 merges consumer 1's state and stores the program's one partial (split
        `split`), or with SINGLE_PASS the output.
        FP8_KV (v149+): the tiles are the fp8 cache's rows as the loader's TMA wrote them - the per-tensor
        scale folded into the scores and the output, and a last tile that ends inside the ring entry has
        the rows past the program's end zeroed first (TMA fills only past the tensor's end; the next rows
        are other tokens, whose V must not reach PV even times P = 0, should they hold a NaN)."""
        qo_indptr_ptr, kv_indptr_ptr, part_o_ptr, part_lse_ptr = ptrs[3], ptrs[4], ptrs[5], ptrs[6]
        sm_scale, num_splits, NUM_HEADS, Q_SEQ_LEN, HEADS_PER_PROG, WS_SLOTS = (ints[4], ints[5], ints[6], ints[7],
                                                                               ints[8], ints[9])
        k_lat, k_rope, q_hi, p8a, p8b, s1_smem, full, empty = (bufs[0], bufs[1], bufs[4], bufs[5], bufs[6], bufs[7],
                                                              bufs[8], bufs[9])
        timeline_ptr, TIMELINE = ptrs[9], ints[11]
        # this consumer's timeline columns: consumer 0 the program's events (ns and cycles), consumer 1 its ns
        TL_NS: gl.constexpr = 2 + 10 * PARITY  # first tile, loop end, end: TL_NS + 0, 1, 2
        TL_CLK0: gl.constexpr = 7 - 8 * PARITY  # (-1: no cycle stamp)
        TL_CLK1: gl.constexpr = 8 - 9 * PARITY
        TL_CLK2: gl.constexpr = 9 - 10 * PARITY
        head_group = gl.program_id(0)
        split = gl.program_id(1)
        q_start = gl.load(qo_indptr_ptr + gl.program_id(2))
        kv_start, kv_len, start, end, n_tiles = _ws_program_range(kv_indptr_ptr, num_splits)
        _timeline_put(TIMELINE, timeline_ptr, 11 + 4 * PARITY, (n_tiles + 1 - PARITY) // 2)
        ROWS = Q_SEQ_LEN * HEADS_PER_PROG
        s_layout: gl.constexpr = _WS_S  # (= the PV accumulator's: m64nRk32)
        s2_layout: gl.constexpr = _WS_S2
        o_layout: gl.constexpr = _WS_S
        v_load8_cf: gl.constexpr = _WS_V_CF
        a_layout: gl.constexpr = _WS_A
        out_blk: gl.constexpr = _WS_OUT
        k_smem = (k_lat, k_rope)
        if PARITY == 0:  # (two buffers, not slices of one: triton 3.6 asserts on slicing a 3-d NVMMA buffer)
            p8 = p8a
        else:
            p8 = p8b
        if FP8_KV:
            kv_scale = gl.load(ptrs[2])  # the per-tensor scale; one the validation would refuse gives NaN rows
            kv_scale = gl.where((kv_scale > 0) & (kv_scale < float("inf")), kv_scale, float("nan"))
        else:
            kv_scale = 1.0  # (MXFP4: the block scales are in the decoded tile)
        score_scale = sm_scale * 1.4426950408889634 * kv_scale
        # (loaded plain, then converted: triton 3.6 asserts on a shared load straight into a slice layout)
        c_hi = gl.convert_layout(s1_smem.load(gl.BlockedLayout([1], [32], [4], [0])), gl.SliceLayout(0, s_layout)) * score_scale
        c_lo = c_hi * 0.0625
        rows_s = gl.arange(0, _WS_R, layout=gl.SliceLayout(0, s_layout))
        q_idx_s = gl.where(rows_s < ROWS, rows_s // HEADS_PER_PROG, 0)
        visible = kv_len - Q_SEQ_LEN + q_idx_s + 1
        offs_n = gl.arange(0, 64, layout=gl.SliceLayout(1, s_layout))
        m_i = gl.full([_WS_R], float("-inf"), gl.float32, layout=gl.SliceLayout(0, s_layout))
        l_t = gl.zeros([64, _WS_R], gl.float32, layout=s_layout)
        zero_s2 = gl.zeros([64, 2 * _WS_R], gl.float32, layout=s2_layout)
        acc0 = gl.zeros([64, _WS_R], gl.float32, layout=o_layout)
        acc_zero = acc0
        acc1 = acc0
        acc2 = acc0
        acc3 = acc0
        acc4 = acc0
        acc5 = acc0
        acc6 = acc0
        acc7 = acc0
        for j in range(PARITY, n_tiles, 2):
            slot = j % WS_SLOTS
            mbarrier.wait(full.index(slot), (j // WS_SLOTS) & 1)
            _timeline_mark(TIMELINE, timeline_ptr, TL_NS, TL_CLK0, j == PARITY)  # this consumer's first tile ready
            if FP8_KV:
                lim = end - (start + j * 64)
                if lim < 64:  # (at most once a program: the last tile of a length that 64 does not divide)
                    _ws_zero_rows_from(k_lat, k_rope, slot, lim)
                    fence_async_shared()  # the zeros (generic stores) before the wgmma reads
                    _cta_barrier()
            s_cat, _ = _qk_issue(k_smem, slot, q_hi, q_hi, zero_s2, zero_s2, True)
            if V_LDSM:
                f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8_ldsm(k_lat, slot)
            else:
                f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8(k_smem, slot, v_load8_cf, True)
            st = _qk_wait(s_cat, s_cat, c_hi, c_lo, _WS_R, True, s_layout, True)
            pos = start + j * 64 + offs_n
            st = gl.where(pos[:, None] < visible[None, :], st, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(st, axis=0))
            m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = gl.exp2(m_i - m_safe)
            pt = gl.exp2(st - (m_safe - 8.0)[None, :])  # 256 P (PV_FP8's e4m3 P, see _store_p8)
            l_t = l_t * alpha[None, :] + pt
            m_i = m_new
            _store_p8(pt, p8, _WS_R, True)
            fence_async_shared()
            _cta_barrier()  # (partition-local) P^T stored by every warp before the PV MMAs read it
            acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg8_promoted(
                f0, f1, f2, f3, f4, f5, f6, f7, p8, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :], acc_zero, a_layout)
            _cta_barrier()  # every warp's reads of the slot (V^T loads, the waited MMAs) are done
            mbarrier.arrive(empty.index(slot), count=1)
        _timeline_mark(TIMELINE, timeline_ptr, TL_NS + 1, TL_CLK1)  # the loop's end
        part_stride = num_splits  # (partials a row: two a program, or one with WS_PAIR_MERGE)
        part_idx = 2 * split + PARITY
        if WS_PAIR_MERGE:  # v170: one partial a program. Consumer 1 hands its unnormalized state to consumer 0
            # through the ring's odd entries - with an even ring only consumer 1's tiles (j odd) use them, so they
            # are free once its loop has ended - and consumer 0 merges it into its own before the one store
            part_stride = num_splits // 2
            part_idx = split
            o_x, l_x, m_x = _ws_pair_views(k_lat, k_rope)
            if PARITY == 1:
                o_x.slice(0, 64).store(acc0)
                o_x.slice(64, 64).store(acc1)
                o_x.slice(128, 64).store(acc2)
                o_x.slice(192, 64).store(acc3)
                o_x.slice(256, 64).store(acc4)
                o_x.slice(320, 64).store(acc5)
                o_x.slice(384, 64).store(acc6)
                o_x.slice(448, 64).store(acc7)
                l_x.store(l_t)
                m_x.store(gl.zeros([64, _WS_R], gl.float32, layout=s_layout) + m_i[None, :])
                _cta_barrier()  # every warp's stores before the one arrival (release) that consumer 0 waits on
                mbarrier.arrive(bufs[14].index(0), count=1)
            else:
                mbarrier.wait(bufs[14].index(0), 0)
                m_1 = gl.max(m_x.load(s_layout), axis=0)
                m_new = gl.maximum(m_i, m_1)
                m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
                a_0 = gl.exp2(m_i - m_safe)  # (a side with no visible token: m = -inf, factor 0)
                a_1 = gl.exp2(m_1 - m_safe)
                l_t = l_t * a_0[None, :] + l_x.load(s_layout) * a_1[None, :]
                m_i = m_new
                b_0 = gl.convert_layout(a_0, gl.SliceLayout(0, o_layout))[None, :]
                b_1 = gl.convert_layout(a_1, gl.SliceLayout(0, o_layout))[None, :]
                acc0 = acc0 * b_0 + o_x.slice(0, 64).load(o_layout) * b_1
                acc1 = acc1 * b_0 + o_x.slice(64, 64).load(o_layout) * b_1
                acc2 = acc2 * b_0 + o_x.slice(128, 64).load(o_layout) * b_1
                acc3 = acc3 * b_0 + o_x.slice(192, 64).load(o_layout) * b_1
                acc4 = acc4 * b_0 + o_x.slice(256, 64).load(o_layout) * b_1
                acc5 = acc5 * b_0 + o_x.slice(320, 64).load(o_layout) * b_1
                acc6 = acc6 * b_0 + o_x.slice(384, 64).load(o_layout) * b_1
                acc7 = acc7 * b_0 + o_x.slice(448, 64).load(o_layout) * b_1
        if not WS_PAIR_MERGE or PARITY == 0:
            _ws_store_partial(ptrs, ints, m_i, l_t, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, kv_scale, q_start,
                              head_group, part_stride, part_idx, V_LDSM, EPI_DIRECT, SINGLE_PASS)
        _timeline_mark(TIMELINE, timeline_ptr, TL_NS + 2, TL_CLK2)  # this consumer's end

    @gluon.jit
    def _ws_store_partial(ptrs, ints, m_i, l_t, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7, kv_scale, q_start,
                          head_group, part_stride, part_idx, V_LDSM: gl.constexpr, EPI_DIRECT: gl.constexpr,
                          SINGLE_PASS: gl.constexpr):
        """A consumer's epilogue: its partial (row part_idx of part_stride a (token, head)) normalized, with its
        log-sum-exp; or with SINGLE_PASS (v170's one program an element) the bf16 output itself."""
        part_o_ptr, part_lse_ptr, out_ptr = ptrs[5], ptrs[6], ptrs[10]
        NUM_HEADS, Q_SEQ_LEN, HEADS_PER_PROG = ints[6], ints[7], ints[8]
        stride_o_tok, stride_o_head = ints[12], ints[13]
        ROWS = Q_SEQ_LEN * HEADS_PER_PROG
        o_layout: gl.constexpr = _WS_S
        out_blk: gl.constexpr = _WS_OUT
        l_i = gl.sum(l_t, axis=0) * (1.0 / 256.0)
        l_o = gl.convert_layout(l_i, gl.SliceLayout(0, o_layout))
        has = l_o > 0
        inv = gl.where(has, kv_scale / 256.0 / gl.where(has, l_o, 1.0), 0.0)[None, :]
        rows = gl.arange(0, _WS_R, layout=gl.SliceLayout(1, out_blk))
        row_ok = rows < ROWS
        q_idx = gl.where(row_ok, rows // HEADS_PER_PROG, 0)
        tok_out = q_start + q_idx
        head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
        part_row = (tok_out * NUM_HEADS + head) * part_stride + part_idx
        has_r = gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)) > 0
        l_r = gl.where(has_r, gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)), 1.0)
        lse = gl.where(has_r, gl.convert_layout(m_i, gl.SliceLayout(1, out_blk)) + gl.log2(l_r), float("-inf"))
        if not SINGLE_PASS:
            gl.store(part_lse_ptr + part_row, lse, mask=row_ok)
        if EPI_DIRECT:  # each slice from its accumulator registers straight to its dims: no layout conversion,
            # so none of the 16 partition barriers and shared round trips of the slice-by-slice epilogue
            # (v140's cost on short programs, rounds 33-34); 4-byte stores, 64 a thread
            rows_o = gl.arange(0, _WS_R, layout=gl.SliceLayout(0, o_layout))
            ok_o = rows_o < ROWS
            tok_o = q_start + gl.where(ok_o, rows_o // HEADS_PER_PROG, 0)
            head_o = head_group * HEADS_PER_PROG + rows_o % HEADS_PER_PROG
            m_o = gl.arange(0, 64, layout=gl.SliceLayout(1, o_layout))
            ok_o = ok_o[None, :]
            if SINGLE_PASS:  # (v170 with one program an element: no partial, no reduce)
                base_b = (out_ptr + tok_o.to(gl.int64) * stride_o_tok + head_o * stride_o_head)[None, :]
                gl.store(base_b + _ldsm_slice_dims(m_o, 0)[:, None], (acc0 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 1)[:, None], (acc1 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 2)[:, None], (acc2 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 3)[:, None], (acc3 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 4)[:, None], (acc4 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 5)[:, None], (acc5 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 6)[:, None], (acc6 * inv).to(gl.bfloat16), mask=ok_o)
                gl.store(base_b + _ldsm_slice_dims(m_o, 7)[:, None], (acc7 * inv).to(gl.bfloat16), mask=ok_o)
            else:
                prow_o = (tok_o * NUM_HEADS + head_o) * part_stride
                base_o = (part_o_ptr + (prow_o + part_idx).to(gl.int64) * 512)[None, :]
                gl.store(base_o + _ldsm_slice_dims(m_o, 0)[:, None], acc0 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 1)[:, None], acc1 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 2)[:, None], acc2 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 3)[:, None], acc3 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 4)[:, None], acc4 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 5)[:, None], acc5 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 6)[:, None], acc6 * inv, mask=ok_o)
                gl.store(base_o + _ldsm_slice_dims(m_o, 7)[:, None], acc7 * inv, mask=ok_o)
        elif V_LDSM:  # slice by slice at their dims: _natural_rows_ldsm's [R, 512] conversion took 12 KB more
            # shared scratch per consumer than v133's (242 KB in all: over the 227 KB an SM has)
            row_base = part_o_ptr + part_row.to(gl.int64) * 512
            m = gl.arange(0, 64, layout=gl.SliceLayout(0, out_blk))
            _store_slice(acc0 * inv, row_base, _ldsm_slice_dims(m, 0), row_ok, False, out_blk)
            _store_slice(acc1 * inv, row_base, _ldsm_slice_dims(m, 1), row_ok, False, out_blk)
            _store_slice(acc2 * inv, row_base, _ldsm_slice_dims(m, 2), row_ok, False, out_blk)
            _store_slice(acc3 * inv, row_base, _ldsm_slice_dims(m, 3), row_ok, False, out_blk)
            _store_slice(acc4 * inv, row_base, _ldsm_slice_dims(m, 4), row_ok, False, out_blk)
            _store_slice(acc5 * inv, row_base, _ldsm_slice_dims(m, 5), row_ok, False, out_blk)
            _store_slice(acc6 * inv, row_base, _ldsm_slice_dims(m, 6), row_ok, False, out_blk)
            _store_slice(acc7 * inv, row_base, _ldsm_slice_dims(m, 7), row_ok, False, out_blk)
        else:
            o = _natural_rows(acc0 * inv, acc1 * inv, acc2 * inv, acc3 * inv, acc4 * inv, acc5 * inv, acc6 * inv,
                              acc7 * inv, _WS_R)
            o = gl.convert_layout(o, out_blk)
            ptr = (part_o_ptr + part_row.to(gl.int64)[:, None] * 512
                   + gl.arange(0, 512, layout=gl.SliceLayout(0, out_blk))[None, :])
            gl.store(ptr, o, mask=row_ok[:, None])

    @gluon.jit
    def mla_decode_gluon_sm90_ws_kernel(
        q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
        part_o_ptr, part_lse_ptr, out_ptr,
        stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
        sm_scale, num_splits, work_ptr, counter_ptr, chunk_tokens, lat_desc, rope_desc, timeline_ptr,
        NUM_HEADS: gl.constexpr, Q_SEQ_LEN: gl.constexpr, HEADS_PER_PROG: gl.constexpr,
        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, SINGLE_PASS: gl.constexpr, KV_FORMAT: gl.constexpr,
        STAGES: gl.constexpr = 2, V_SLOTS: gl.constexpr = 8, QK_PAIRS: gl.constexpr = False,
        PV_REG: gl.constexpr = False, EPI_NATURAL: gl.constexpr = False, ROW_PERM: gl.constexpr = False,
        LAZY_SUM: gl.constexpr = False, LAZY_RESCALE: gl.constexpr = False, PV_FP8: gl.constexpr = False,
        QK_CAT: gl.constexpr = False, PV_PROMOTE: gl.constexpr = 0, V_CF: gl.constexpr = False,
        CP_ROWS: gl.constexpr = False, MX_OWN: gl.constexpr = False, FUSED_REDUCE: gl.constexpr = False,
        WORK_LIST: gl.constexpr = False, WARPGROUPS: gl.constexpr = 1, WS_SLOTS: gl.constexpr = 3,
        WS_CONSUMER_REGS: gl.constexpr = 232, WS_DECODER_REGS: gl.constexpr = 40, WS_DECODERS: gl.constexpr = 1,
        WS_HALVES: gl.constexpr = False, WS_TMA: gl.constexpr = False, WS_LOADER: gl.constexpr = False,
        MX_LUT2: gl.constexpr = False, V_LDSM: gl.constexpr = False, EPI_DIRECT: gl.constexpr = False,
        EARLY_TMA: gl.constexpr = False, KV_FIRST: gl.constexpr = False, LAUNCH_DEPENDENTS: gl.constexpr = 0,
        UNIFORM_RANGES: gl.constexpr = False, SCALE_FIRST: gl.constexpr = False, TIMELINE: gl.constexpr = False,
        Q_FIRST: gl.constexpr = False, CP_ONE: gl.constexpr = False, ISSUE_LATE: gl.constexpr = False,
        KV_TMA: gl.constexpr = False, WS_PAIR_MERGE: gl.constexpr = False, num_warps: gl.constexpr = 4,
    ):
        """The warp-specialized kernel (see the partition functions above): MXFP4 (decoder partitions fill a ring
        of e4m3 tiles), or fp8 (KV_FORMAT 1, v149+: a one-warp loader TMA-loads the tiles into that ring); the
        arguments are the other generation-3 kernel's + two TMA descriptors of the packed cache (WS_TMA; None
        otherwise), or for fp8 the cache's one descriptor and None. num_splits counts partials: two per program
        (grid splits = num_splits / 2). The variant constexprs it does not implement must be v116's choices."""
        FP8_WS: gl.constexpr = KV_FORMAT == 1  # v149+: a TMA loader feeds the consumers the fp8 tiles themselves
        gl.static_assert(not UNIFORM_RANGES and not SCALE_FIRST and not Q_FIRST and not CP_ONE and not ISSUE_LATE
                         and not KV_TMA, "UNIFORM_RANGES, SCALE_FIRST, Q_FIRST, CP_ONE, ISSUE_LATE, KV_TMA: the "
                         "one-warpgroup kernel's")
        gl.static_assert(KV_FORMAT == 2 or (WS_TMA and WS_LOADER and WS_DECODERS == 0 and EPI_DIRECT),
                         "the warp-specialized fp8 kernel is v143's consumers fed by a one-warp TMA loader")
        gl.static_assert(not FP8_WS or (not WS_HALVES and not EARLY_TMA and not MX_LUT2),
                         "the fp8 loader has no decoders")
        # an even ring: TMA completes tiles out of order, and a consumer's parity wait on its slot is only sound
        # when that consumer itself waited for the slot's previous phase - with an odd ring a slot alternates
        # between the consumers and one can pass a barrier still in an older phase (v150, round 41: faults)
        gl.static_assert(not FP8_WS or WS_SLOTS % 2 == 0, "the fp8 loader's ring needs an even number of slots")
        gl.static_assert(QK_PAIRS and QK_CAT and PV_REG and EPI_NATURAL and LAZY_SUM and PV_FP8 and PV_PROMOTE == 1
                         and V_CF and not LAZY_RESCALE and not ROW_PERM and not MX_OWN and WARPGROUPS == 1,
                         "the warp-specialized consumers are v116's loop")
        gl.static_assert(not FUSED_REDUCE and not WORK_LIST and (not SINGLE_PASS or WS_PAIR_MERGE),
                         "two partials per program (one with WS_PAIR_MERGE, or the output itself), tile reduce")
        # v170: consumer 1 hands its state over in the ring entries only its tiles use (j odd: an even ring), and
        # only v143's consumers (the direct epilogue) take it
        gl.static_assert(not WS_PAIR_MERGE or (WS_SLOTS % 2 == 0 and EPI_DIRECT and WS_TMA and not WS_LOADER
                                               and not EARLY_TMA),
                         "WS_PAIR_MERGE: v143's consumers over an even ring")
        gl.static_assert(not V_LDSM or (WS_TMA and (not WS_LOADER or FP8_WS)),
                         "V_LDSM's consumers: with WS_TMA's decoders (v140) or the fp8 loader (v149)")
        gl.static_assert(not EPI_DIRECT or V_LDSM, "EPI_DIRECT: V_LDSM's consumers (v143)")
        gl.static_assert(not EARLY_TMA or EPI_DIRECT, "EARLY_TMA: v143's partitions (v144)")
        gl.static_assert(not KV_FIRST, "KV_FIRST: the one-warpgroup kernel's prologue order (v145 / v146)")
        gl.static_assert(BLOCK_N == 64 and num_warps == 4 and WS_SLOTS >= 2 and BLOCK_M == _WS_R and STAGES >= 2,
                         "64-token tiles, 16 query rows, 4-warp partitions")
        _timeline_start(TIMELINE, timeline_ptr)
        if LAUNCH_DEPENDENTS:  # (early either way: the consumers' loop end is inside the partitions)
            gdc_launch_dependents()
        R: gl.constexpr = BLOCK_M
        ROWS: gl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
        k_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float8e4nv)
        q_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([2 * R, 64], gl.float8e4nv)
        qlo_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([R, 64], gl.float8e4nv)
        mx_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
        s1_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
        q_blk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        k_lat = gl.allocate_shared_memory(gl.float8e4nv, [WS_SLOTS, 512, 64], k_sl)
        k_rope = gl.allocate_shared_memory(gl.float8e4nv, [WS_SLOTS, 64, 64], k_sl)
        # [stage x chunk, t, 64 B], swizzled as the K tile (16-byte unit ^ (t >> 1) & 3): the decode's 8
        # consecutive rows of one unit per quarter warp hit 8 distinct bank groups
        if FP8_WS:  # no packed ring: the loader's TMA writes the K tiles (placeholders for the unused buffers)
            mx_lat = k_rope
            mx_rope = k_rope
            mx_sc = k_rope
            mx_scr = k_rope
            ready = k_rope
            free = k_rope
        elif WS_HALVES:  # [stage x decoder, ...]: [64 t, 128 B] swizzled by t & 7 (16-byte units), the rope's 32 rows,
            # the scale bytes [64 t, 16]
            gl.static_assert(WS_DECODERS == 2, "WS_HALVES: two decoders, one half of every tile each")
            if WS_TMA:  # the descriptors' layouts: 128-byte swizzle = 16-byte unit ^ (t & 7), as below
                mx_lat = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 64, 128], lat_desc.layout)
                mx_rope = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 32, 32], rope_desc.layout)
            else:
                mx_lat = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 64, 128],
                                                   gl.SwizzledSharedLayout(vec=16, per_phase=1, max_phase=8, order=[1, 0]))
                mx_rope = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 32, 32], mx_sl)
            if WS_LOADER:  # per stage: ready (the expect + one cp.async arrival per loader lane), free (both decoders)
                ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
                free = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
                for i in gl.static_range(STAGES):
                    mbarrier.init(ready.index(i), count=33)
                    mbarrier.init(free.index(i), count=2)
            else:
                ready = gl.allocate_shared_memory(gl.int64, [STAGES * 2, 1], mbarrier.MBarrierLayout())
                for i in gl.static_range(STAGES * 2):
                    mbarrier.init(ready.index(i), count=1)
                free = ready
            mx_sc = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 64, 8], mx_sl)
            if WS_LOADER:  # (the loader copies all 64 tokens' rope scale bytes once per stage)
                mx_scr = gl.allocate_shared_memory(gl.uint8, [STAGES, 64, 4], mx_sl)
            else:
                mx_scr = gl.allocate_shared_memory(gl.uint8, [STAGES * 2, 32, 4], mx_sl)
        else:
            mx_lat_sl: gl.constexpr = gl.SwizzledSharedLayout(vec=16, per_phase=2, max_phase=4, order=[1, 0])
            mx_lat = gl.allocate_shared_memory(gl.uint8, [STAGES * 4, 64, 64], mx_lat_sl)
            mx_rope = gl.allocate_shared_memory(gl.uint8, [STAGES, 64, 32], mx_sl)
            mx_sc = mx_rope  # (unused)
            mx_scr = mx_rope
            ready = mx_rope
            free = mx_rope
        q_hi = gl.allocate_shared_memory(gl.float8e4nv, [9, 2 * R, 64], q_sl)
        q_lo = gl.allocate_shared_memory(gl.float8e4nv, [R, 64], qlo_sl)
        p8a = gl.allocate_shared_memory(gl.float8e4nv, [2, R, 64], qlo_sl)  # consumer 0's P^T hi / lo
        p8b = gl.allocate_shared_memory(gl.float8e4nv, [2, R, 64], qlo_sl)  # consumer 1's
        s1_smem = gl.allocate_shared_memory(gl.float32, [R], s1_sl)
        full = gl.allocate_shared_memory(gl.int64, [WS_SLOTS, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [WS_SLOTS, 1], mbarrier.MBarrierLayout())
        pair = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())  # (WS_PAIR_MERGE's hand-over)
        mbarrier.init(pair.index(0), count=1)
        for i in gl.static_range(WS_SLOTS):
            # every decoder arrives on each tile (fp8: the loader's expect, the bytes complete it)
            mbarrier.init(full.index(i), count=1 if FP8_WS else WS_DECODERS)
            mbarrier.init(empty.index(i), count=1)
        if EARLY_TMA:  # the first tiles' packed bytes in flight while the default warps load and quantize Q
            fence_async_shared()  # (the barriers' init before the TMA unit uses them)
            kv_start0, kv_len0, start0, end0, n_tiles0 = _ws_program_range(kv_indptr_ptr, num_splits)
            for i in gl.static_range(STAGES - 1):
                _ws_issue_tma_bytes(lat_desc, rope_desc, kv_start0, start0 + i * 64, end0, i * 2, 0, mx_lat, mx_rope,
                                    ready)
                _ws_issue_tma_bytes(lat_desc, rope_desc, kv_start0, start0 + i * 64, end0, i * 2 + 1, 1, mx_lat,
                                    mx_rope, ready)
        head_group = gl.program_id(0)
        b = gl.program_id(2)
        q_start = gl.load(qo_indptr_ptr + b)
        amax = _row_amax(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, R, ROWS, HEADS_PER_PROG, q_blk)
        s1 = gl.where(amax > 0, amax / 448.0, 1.0)
        _store_q_terms(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, s1, q_hi, q_lo, R, ROWS,
                       HEADS_PER_PROG, q_blk, True, True)
        s1_smem.store(s1)
        fence_async_shared()  # Q terms (generic stores) before the consumers' wgmma reads them
        _cta_barrier()
        _timeline_mark(TIMELINE, timeline_ptr, 1, 6)  # Q ready
        args = ((q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr, part_o_ptr, part_lse_ptr, lat_desc, rope_desc,
                 timeline_ptr, out_ptr),
                (stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, sm_scale, num_splits, NUM_HEADS, Q_SEQ_LEN,
                 HEADS_PER_PROG, WS_SLOTS, MX_LUT2, TIMELINE, stride_o_tok, stride_o_head),
                # (run-time values in the partitions, but MX_LUT2 and TIMELINE: constexprs where a helper's parameter)
                (k_lat, k_rope, mx_lat, mx_rope, q_hi, p8a, p8b, s1_smem, full, empty, mx_sc, mx_scr, ready, free, pair))
        if FP8_WS:  # two consumers and the one-warp loader (its warpgroup's other 3 warps idle: 12 warps)
            gl.warp_specialize([(_ws_consumer0_fp8, args), (_ws_consumer1_fp8, args), (_ws_fp8_loader, args)],
                               [4, 1], [WS_CONSUMER_REGS, WS_DECODER_REGS])
        elif WS_LOADER:
            gl.static_assert(WS_TMA and WS_HALVES, "WS_LOADER feeds WS_TMA's decoders")
            gl.warp_specialize([(_ws_consumer0, args), (_ws_consumer1, args), (_ws_fed_lo, args), (_ws_fed_hi, args),
                                (_ws_loader, args)], [4, 4, 4, 1],
                               [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS, 24])
        elif WS_TMA:
            gl.static_assert(WS_HALVES, "WS_TMA is WS_HALVES with the packed bytes by TMA")
            if EARLY_TMA:
                gl.warp_specialize([(_ws_consumer0_direct, args), (_ws_consumer1_direct, args),
                                    (_ws_tma_lo_early, args), (_ws_tma_hi_early, args)], [4, 4, 4],
                                   [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
            elif WS_PAIR_MERGE and SINGLE_PASS:
                gl.warp_specialize([(_ws_consumer0_pm1, args), (_ws_consumer1_pm1, args), (_ws_tma_lo, args),
                                    (_ws_tma_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
            elif WS_PAIR_MERGE:
                gl.warp_specialize([(_ws_consumer0_pm, args), (_ws_consumer1_pm, args), (_ws_tma_lo, args),
                                    (_ws_tma_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
            elif EPI_DIRECT:
                gl.warp_specialize([(_ws_consumer0_direct, args), (_ws_consumer1_direct, args), (_ws_tma_lo, args),
                                    (_ws_tma_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
            elif V_LDSM:
                gl.warp_specialize([(_ws_consumer0_ldsm, args), (_ws_consumer1_ldsm, args), (_ws_tma_lo, args),
                                    (_ws_tma_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
            else:
                gl.warp_specialize([(_ws_consumer0, args), (_ws_consumer1, args), (_ws_tma_lo, args),
                                    (_ws_tma_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
        elif WS_HALVES:
            gl.warp_specialize([(_ws_consumer0, args), (_ws_consumer1, args), (_ws_halves_lo, args),
                                (_ws_halves_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
        elif WS_DECODERS == 1:  # (the default consumer gets what maxnreg leaves)
            gl.warp_specialize([(_ws_consumer0, args), (_ws_consumer1, args), (_ws_decoder, args)], [4, 4],
                               [WS_CONSUMER_REGS, WS_DECODER_REGS])
        else:
            gl.warp_specialize([(_ws_consumer0, args), (_ws_consumer1, args), (_ws_decoder_lo, args),
                                (_ws_decoder_hi, args)], [4, 4, 4], [WS_CONSUMER_REGS, WS_DECODER_REGS, WS_DECODER_REGS])
else:  # pragma: no cover
    mla_decode_gluon_sm90_kernel = mla_decode_gluon_sm90_ws_kernel = None
    # (the helpers gluon_steal.py imports: names without Gluon too, so that its top-level import stands)
    _cta_barrier = _issue_tile = _natural_rows_ldsm = _pv_reg8_promoted = _qk_issue = _qk_wait = _row_amax = None
    _store_p8 = _store_q_terms = _timeline_mark = _timeline_put = _timeline_start = _v_fragments8_ldsm = None
    fence_async_shared = None


# WS_TMA: the packed cache [total_kv, 288 B] as two TMA descriptors (the latent half [64 t, 128 B] at column
# 128 P, the rope [32 t, 32 B] at column 256); the kernel's ring entries take the same layouts
WS_TMA_BLOCKS = {"lat": [64, 128], "rope": [32, 32]}


def ws_tma_layout(which: str):
    return gl.NVMMASharedLayout.get_default_for(WS_TMA_BLOCKS[which], gl.uint8)


# validated descriptor fields per (rows, row stride): a new address of a known cache shape (eval.py's fresh
# inputs, a new tensor every call) gets its descriptors without Gluon's constructor, whose checks and
# layout objects cost more host time than the launch itself on the H200's host (issue 10, gap probe 5)
_WS_TMA_FIELDS: dict = {}


def ws_tma_descriptors(packed, stride_kv: int) -> tuple:
    """(lat_desc, rope_desc) of the MXFP4 cache ``packed`` (rows of 288 bytes, ``stride_kv`` apart). The first
    call per (rows, stride) builds them through Gluon's checked constructor and keeps their fields (never the
    tensor); later calls re-base copies of those fields on ``packed``, whose 16-byte alignment the caller
    checks (TritonDecodePlan._args refuses a misaligned cache before this runs)."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    if packed.data_ptr() % 16 or packed.dtype != torch.uint8:
        raise ValueError(f"the MXFP4 cache's TMA descriptors need a 16-byte aligned uint8 tensor; got ptr % 16 = "
                         f"{packed.data_ptr() % 16}, {packed.dtype}")
    key = (packed.shape[0], stride_kv)
    fields = _WS_TMA_FIELDS.get(key)
    if fields is None:
        shape = [packed.shape[0], 288]
        built = [TensorDescriptor(packed, shape, [stride_kv, 1], WS_TMA_BLOCKS[w], ws_tma_layout(w))
                 for w in ("lat", "rope")]
        fields = _WS_TMA_FIELDS[key] = tuple({k: v for k, v in vars(d).items() if k != "base"} for d in built)
    out = []
    for f in fields:
        d = TensorDescriptor.__new__(TensorDescriptor)
        d.__dict__.update({k: list(v) if isinstance(v, list) else v for k, v in f.items()})
        d.base = packed
        out.append(d)
    return tuple(out)


def ws_tma_signature(kv_format: str = "mxfp4") -> dict:
    """The descriptors' argument types for an offline compile (what the JIT derives from the objects)."""
    if kv_format == "fp8":
        return {"lat_desc": f"tensordesc<fp8e4nv{WS_FP8_TMA_BLOCK},{ws_fp8_tma_layout()!r}>"}
    return {f"{w}_desc": f"tensordesc<u8{WS_TMA_BLOCKS[w]},{ws_tma_layout(w)!r}>" for w in ("lat", "rope")}


# the fp8 loader (v149+): the cache [total_kv, 576] e4m3 as one descriptor of [64 t, 64 B] boxes, the layout of the
# K tile's chunks (NVMMA, 64-byte swizzle), so TMA writes each chunk where the consumers' wgmma / ldmatrix read it
WS_FP8_TMA_BLOCK = [64, 64]
_WS_FP8_FIELDS: dict = {}


def ws_fp8_tma_layout():
    return gl.NVMMASharedLayout.get_default_for(WS_FP8_TMA_BLOCK, gl.float8e4nv)


def ws_fp8_tma_descriptors(kv, stride_kv: int) -> tuple:
    """(kv_desc, None): the fp8 cache's TMA descriptor (fields kept per (rows, stride) as ws_tma_descriptors')."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    if kv.data_ptr() % 16 or stride_kv % 16 or kv.dtype != torch.float8_e4m3fn:
        raise ValueError(f"the fp8 cache's TMA descriptor needs a 16-byte aligned float8_e4m3fn tensor with a row "
                         f"stride of a multiple of 16; got ptr % 16 = {kv.data_ptr() % 16}, stride {stride_kv}, "
                         f"{kv.dtype}")
    key = (kv.shape[0], stride_kv)
    fields = _WS_FP8_FIELDS.get(key)
    if fields is None:
        built = TensorDescriptor(kv, [kv.shape[0], 576], [stride_kv, 1], WS_FP8_TMA_BLOCK, ws_fp8_tma_layout())
        fields = _WS_FP8_FIELDS[key] = {k: v for k, v in vars(built).items() if k != "base"}
    d = TensorDescriptor.__new__(TensorDescriptor)
    d.__dict__.update({k: list(v) if isinstance(v, list) else v for k, v in fields.items()})
    d.base = kv
    return d, None


def gluon_unavailable_reason(device) -> str | None:
    """Why generation 3 cannot run on ``device`` (None when it can)."""
    import torch

    if GLUON_IMPORT_ERROR is not None:
        return f"Gluon is not importable from this triton ({GLUON_IMPORT_ERROR})"
    if device.type != "cuda" or not torch.cuda.is_available() or getattr(torch.version, "hip", None):
        return "needs an NVIDIA sm90 GPU (Gluon kernels have no interpreter and this one uses Hopper wgmma)"
    if torch.cuda.get_device_capability(device)[0] != 9:
        return f"needs sm90 (Hopper); this GPU is sm{''.join(map(str, torch.cuda.get_device_capability(device)))}"
    return None
