"""v154: generation 3's fp8 kernel (v153's dataflow) with the work-stealing schedule (steal_protocol.py).

Round 50 measured, on an H100, that at the large shapes the launch ends with the slowest programs: the tokens are
shared equally but the time is not (the same SMs finish early at every shape). This kernel keeps v153's tile
body (QGMMA QK with Q as fp8 hi + lo, e4m3 PV promoted per tile, V^T by ldmatrix, lazy sums) and changes only
who computes which tiles:

- the grid is the usual (head groups, splits, batch) of *owners*, plus ``helper`` rows past the batch
  (program_id(2) >= steal_batch), which the hardware starts as slots free up;
- an owner claims its range ``chunk`` tiles at a time from the front (an atomic add on the range's word, issued
  a chunk ahead and read at the chunk's last tile, so its latency hides behind the tiles);
- a helper scans every range's word, takes up to ``STEAL_MAX`` tiles (at most half of what is unclaimed) from
  the back of the range with the most left (a compare-and-swap), computes them with the same body (its own Q
  prologue) and stores a partial in the range's slot ``1 + k``;
- an owner that was not stolen from stores as v153 does (the output, or its split's partial for the tile
  reduce): no extra traffic. One that was stores slot 0; every contributor then adds its tiles to the range's
  done counter, and the one that completes it merges the slots by their LSE into the owner's place;
- the last program of the grid to finish (an exit counter) zeroes the words and counters for the next call or
  graph replay (no program reads them after its own exit count).

fp8 KV only, uniform batches only (the helpers derive every range's tiles from ``uniform_kv_len``); the plan
refuses the rest (launch.py). Round 51 in docs/notes-triton.md has the prediction and the measurement.
"""

from __future__ import annotations

from .gluon_sm90 import (_cta_barrier, _issue_tile, _natural_rows_ldsm, _pv_reg8_promoted, _qk_issue, _qk_wait,
                         _row_amax, _store_p8, _store_q_terms, _timeline_mark, _timeline_put, _timeline_start,
                         _v_fragments8_ldsm, async_copy, fence_async_shared, gl, gluon)
from .kernels import gdc_launch_dependents
from .steal_protocol import B_SHIFT, FIELD_MASK, K_SHIFT, MIN_LEFT

if gl is not None:

    _F_MASK: gl.constexpr = gl.constexpr(FIELD_MASK)
    _B_SHIFT: gl.constexpr = gl.constexpr(B_SHIFT)
    _K_SHIFT: gl.constexpr = gl.constexpr(K_SHIFT)
    _MIN_LEFT: gl.constexpr = gl.constexpr(MIN_LEFT)

    @gluon.jit
    def _range_tiles(split, kv_len, chunk_tiles, BLOCK_N: gl.constexpr):
        """Tiles of split ``split``'s range (generation 1's split boundaries: chunk_tiles tiles, the last shorter)."""
        start = split * chunk_tiles * BLOCK_N
        return gl.maximum(gl.cdiv(gl.minimum(start + chunk_tiles * BLOCK_N, kv_len) - start, BLOCK_N), 0)

    @gluon.jit
    def _steal(words_ptr, num_ranges, num_head_groups, num_splits, kv_len, chunk_tiles, helper, BLOCK_N: gl.constexpr,
               SLOTS: gl.constexpr, MAX_STEAL: gl.constexpr, RANGES_P2: gl.constexpr, num_warps: gl.constexpr,
               WAIT: gl.constexpr = False, ROTATE: gl.constexpr = False):
        """A helper's steal (steal_protocol.helper_steal): the range with the most unclaimed tiles, up to 4 tries
        (a compare-and-swap that loses to another program rescans). Returns (range, first tile, tiles, slot);
        tiles = 0 when there was nothing worth taking. WAIT (v156): first wait until some owner has ended (the flag
        word after the exit counter), so that no helper runs beside the owners from the launch on. ROTATE (v156):
        among ranges with equally many tiles left, helper h takes the first at or after range h (not all the
        lowest: helpers that start together would race for one word)."""
        scan_l: gl.constexpr = gl.BlockedLayout([max(1, RANGES_P2 // (32 * num_warps))], [32], [num_warps], [0])
        idx = gl.arange(0, RANGES_P2, layout=scan_l)
        valid = idx < num_ranges
        n_v = _range_tiles((idx // num_head_groups) % num_splits, kv_len, chunk_tiles, BLOCK_N)
        zero = gl.program_id(0) * 0  # (loop-carried scalars start as int32 tensors)
        if WAIT:  # (an owner sets the flag as its loop ends; volatile: every poll reads L2)
            flag = gl.load(words_ptr + 2 * num_ranges + 1, volatile=True)
            while flag == 0:
                flag = gl.load(words_ptr + 2 * num_ranges + 1, volatile=True)
        r_out = zero
        first = zero
        count = zero
        slot = zero
        state = zero  # 0: looking, 1: stolen, 2: nothing to take
        tries = zero
        while (state == 0) & (tries < 4):
            # .cg: the words live at L2 (another SM's atomics changed them; this SM's L1 may hold a stale line)
            w = gl.load(words_ptr + idx, mask=valid, other=0, cache_modifier=".cg")
            f = w & _F_MASK
            bk = (w >> _B_SHIFT) & _F_MASK
            k = w >> _K_SHIFT
            rem = gl.where(valid & (k < SLOTS), n_v - f - bk, -1)
            best = gl.max(rem, axis=0)
            if ROTATE:
                victim = (gl.min(gl.where(rem == best, (idx - helper % num_ranges + RANGES_P2) % RANGES_P2, RANGES_P2),
                                 axis=0) + helper % num_ranges) % RANGES_P2
            else:
                victim = gl.min(gl.where(rem == best, idx, RANGES_P2), axis=0)
            victim = gl.where(best >= _MIN_LEFT, victim, 0)
            w_v = gl.max(gl.where(idx == victim, w, 0), axis=0)  # (words are >= 0: k has 4 bits)
            n_vic = gl.max(gl.where(idx == victim, n_v, 0), axis=0)
            s = gl.minimum(best // 2, MAX_STEAL)
            # nothing worth taking: compare against -1, which no word equals (the swap never writes)
            expect = gl.where(best >= _MIN_LEFT, w_v, -1)
            got = gl.atomic_cas(words_ptr + victim, expect, w_v + (s << _B_SHIFT) + (1 << _K_SHIFT), sem="relaxed",
                                scope="gpu")
            won = (best >= _MIN_LEFT) & (got == w_v)
            r_out = gl.where(won, victim, r_out)
            first = gl.where(won, n_vic - ((w_v >> _B_SHIFT) & _F_MASK) - s, first)
            count = gl.where(won, s, count)
            slot = gl.where(won, 1 + (w_v >> _K_SHIFT), slot)
            state = gl.where(won, 1, gl.where(best >= _MIN_LEFT, 0, 2))
            tries += 1
        return r_out, first, count, slot

    @gluon.jit
    def _merge_slots(slot_o_ptr, slot_lse_ptr, slot_row0, nslots, row_ok, R: gl.constexpr, layout: gl.constexpr):
        """The range's partials (slots 0 .. nslots - 1, rows slot_row0 + slot x R + row) merged by their LSE:
        (O [R, 512] fp32, normalized; LSE [R], base 2, -inf where no slot saw a visible token)."""
        d = gl.arange(0, 512, layout=gl.SliceLayout(0, layout))
        rows = gl.arange(0, R, layout=gl.SliceLayout(1, layout))
        m = gl.full([R], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        den = gl.zeros([R], gl.float32, layout=gl.SliceLayout(1, layout))
        acc = gl.zeros([R, 512], gl.float32, layout=layout)
        for s in range(0, nslots):
            row = slot_row0 + s * R + rows
            # .cg: the other SMs' partials are at L2
            lse = gl.load(slot_lse_ptr + row, mask=row_ok, other=float("-inf"), cache_modifier=".cg")
            part = gl.load(slot_o_ptr + row.to(gl.int64)[:, None] * 512 + d[None, :], mask=row_ok[:, None],
                           other=0.0, cache_modifier=".cg")
            m_new = gl.maximum(m, lse)
            m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = gl.exp2(m - m_safe)
            w = gl.exp2(lse - m_safe)
            den = den * alpha + w
            acc = acc * alpha[:, None] + w[:, None] * part
            m = m_new
        o = acc / gl.where(den > 0, den, 1.0)[:, None]
        m_safe = gl.where(m == float("-inf"), 0.0, m)
        lse = gl.where(den > 0, m_safe + gl.log2(gl.where(den > 0, den, 1.0)), float("-inf"))
        return o, lse

    @gluon.jit
    def _store_result(o, lse, out_ptr, part_o_ptr, part_lse_ptr, tok_out, head, split, num_splits, stride_o_tok,
                      stride_o_head, row_ok, NUM_HEADS: gl.constexpr, SINGLE_PASS: gl.constexpr,
                      layout: gl.constexpr):
        """What v153 stores for a range: the output rows (bf16), or its split's partial (fp32 O + LSE) for the
        tile reduce."""
        d = gl.arange(0, 512, layout=gl.SliceLayout(0, layout))
        if SINGLE_PASS:
            row_base = out_ptr + tok_out * stride_o_tok + head * stride_o_head
            gl.store(row_base[:, None] + d[None, :], o.to(gl.bfloat16), mask=row_ok[:, None])
        else:
            part_row = (tok_out * NUM_HEADS + head) * num_splits + split
            gl.store(part_lse_ptr + part_row, lse, mask=row_ok)
            gl.store(part_o_ptr + part_row.to(gl.int64)[:, None] * 512 + d[None, :], o, mask=row_ok[:, None])

    @gluon.jit
    def mla_decode_gluon_sm90_steal_kernel(
        q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
        part_o_ptr, part_lse_ptr, out_ptr,
        stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
        sm_scale, num_splits, work_ptr, counter_ptr, chunk_tokens, uniform_kv_len,
        steal_words_ptr, steal_part_ptr, steal_batch, timeline_ptr,
        NUM_HEADS: gl.constexpr, Q_SEQ_LEN: gl.constexpr, HEADS_PER_PROG: gl.constexpr,
        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, SINGLE_PASS: gl.constexpr, KV_FORMAT: gl.constexpr,
        STAGES: gl.constexpr = 2, V_SLOTS: gl.constexpr = 8, QK_PAIRS: gl.constexpr = True,
        PV_REG: gl.constexpr = True, EPI_NATURAL: gl.constexpr = True, ROW_PERM: gl.constexpr = False,
        LAZY_SUM: gl.constexpr = True, LAZY_RESCALE: gl.constexpr = False, PV_FP8: gl.constexpr = True,
        QK_CAT: gl.constexpr = True, PV_PROMOTE: gl.constexpr = 1, V_CF: gl.constexpr = True,
        CP_ROWS: gl.constexpr = False, MX_OWN: gl.constexpr = False, FUSED_REDUCE: gl.constexpr = False,
        WORK_LIST: gl.constexpr = False, WARPGROUPS: gl.constexpr = 1, WS_SLOTS: gl.constexpr = 0,
        WS_CONSUMER_REGS: gl.constexpr = 0, WS_DECODER_REGS: gl.constexpr = 0, WS_DECODERS: gl.constexpr = 0,
        WS_HALVES: gl.constexpr = False, WS_TMA: gl.constexpr = False, WS_LOADER: gl.constexpr = False,
        MX_LUT2: gl.constexpr = False, V_LDSM: gl.constexpr = True, EPI_DIRECT: gl.constexpr = False,
        EARLY_TMA: gl.constexpr = False, KV_FIRST: gl.constexpr = False, LAUNCH_DEPENDENTS: gl.constexpr = 0,
        COOP_MERGE: gl.constexpr = False, SPLITS_P2: gl.constexpr = 2, UNIFORM_RANGES: gl.constexpr = True,
        SCALE_FIRST: gl.constexpr = True, TIMELINE: gl.constexpr = False, Q_FIRST: gl.constexpr = False,
        CP_ONE: gl.constexpr = False, ISSUE_LATE: gl.constexpr = False, KV_TMA: gl.constexpr = False,
        WS_PAIR_MERGE: gl.constexpr = False,
        STEAL: gl.constexpr = True, STEAL_CHUNK: gl.constexpr = 4, STEAL_SLOTS: gl.constexpr = 8,
        STEAL_MAX: gl.constexpr = 8, STEAL_RANGES_P2: gl.constexpr = 256, STEAL_WAIT: gl.constexpr = False,
        STEAL_ROTATE: gl.constexpr = False,
        num_warps: gl.constexpr = 4,
    ):
        """The one-warpgroup kernel's arguments (uniform_kv_len > 0 always: the plan refuses ragged batches), then
        steal_words_ptr (int32: a word per range, a done counter per range, the exit counter, the WAIT flag),
        steal_part_ptr (fp32: [ranges, 1 + STEAL_SLOTS, R, 512] partial O, then [ranges, 1 + STEAL_SLOTS, R] LSE), steal_batch
        (the batch size: programs with program_id(2) >= it are helpers). A range is (element, split, head
        group), numbered as the owners' linear program id."""
        gl.static_assert(STEAL, "mla_decode_gluon_sm90_steal_kernel is the STEAL kernel")
        gl.static_assert(KV_FORMAT == 1, "v154 steals on v153's fp8 dataflow (fp8 KV)")
        gl.static_assert(QK_PAIRS and QK_CAT and PV_REG and EPI_NATURAL and LAZY_SUM and PV_FP8 and V_CF and V_LDSM
                         and PV_PROMOTE == 1 and not LAZY_RESCALE and not ROW_PERM and WARPGROUPS == 1,
                         "v154 is v153's tile body (QK_CAT pairs, e4m3 PV promoted, V by ldmatrix, lazy sums)")
        gl.static_assert(not FUSED_REDUCE and not WORK_LIST and not COOP_MERGE and WS_SLOTS == 0,
                         "v154's reduce is the tile reduce (or none at one split)")
        gl.static_assert(UNIFORM_RANGES and SCALE_FIRST and STAGES == 2, "v154 is v153 (uniform ranges, 2 stages)")
        gl.static_assert(not WS_PAIR_MERGE, "WS_PAIR_MERGE: the warp-specialized kernel's (v170)")
        gl.static_assert(not Q_FIRST and not CP_ONE and not ISSUE_LATE and not KV_TMA,
                         "Q_FIRST, CP_ONE, ISSUE_LATE, KV_TMA: the one-warpgroup kernel's (v158 - v160, v166 - v169)")
        gl.static_assert(BLOCK_N == 64 and num_warps == 4, "v154: 64-token tiles, one warpgroup")
        _timeline_start(TIMELINE, timeline_ptr)
        if LAUNCH_DEPENDENTS == 1:
            gdc_launch_dependents()
        ROWS: gl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
        R: gl.constexpr = BLOCK_M
        QR: gl.constexpr = 2 * R
        C: gl.constexpr = STEAL_CHUNK
        NSLOT: gl.constexpr = 1 + STEAL_SLOTS

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                           instr_shape=[16, R, 32])
        s2_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                            instr_shape=[16, 2 * R, 32])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                           instr_shape=[16, R, 32])
        kv_blk: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])
        q_blk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        out_blk: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [4, 1], [1, 0])
        lane_l: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])  # one int32 a thread: the owner's claims
        k_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, 64], gl.float8e4nv)
        q_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([QR, 64], gl.float8e4nv)
        qlo_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([R, 64], gl.float8e4nv)
        a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=4)

        # -- this program's range: its own (an owner) or a piece of another's (a helper) -------------
        hg_n = gl.num_programs(0)
        num_ranges = steal_batch * num_splits * hg_n
        kv_len = uniform_kv_len
        chunk_tiles = gl.cdiv(gl.cdiv(kv_len, num_splits), BLOCK_N)
        pid_r = (gl.program_id(2) * num_splits + gl.program_id(1)) * hg_n + gl.program_id(0)
        is_owner = gl.program_id(2) < steal_batch
        if is_owner:
            r = pid_r
            first = pid_r * 0
            count = pid_r * 0
            slot = pid_r * 0
        else:
            r, first, count, slot = _steal(steal_words_ptr, num_ranges, hg_n, num_splits, kv_len, chunk_tiles,
                                           pid_r - num_ranges, BLOCK_N, STEAL_SLOTS, STEAL_MAX, STEAL_RANGES_P2,
                                           num_warps, STEAL_WAIT, STEAL_ROTATE)
        head_group = r % hg_n
        split = (r // hg_n) % num_splits
        b = r // (hg_n * num_splits)
        q_start = b * Q_SEQ_LEN
        kv_start = b * kv_len
        kv_scale_first = gl.load(kv_aux_ptr)
        start = split * chunk_tiles * BLOCK_N
        end = gl.minimum(start + chunk_tiles * BLOCK_N, kv_len)
        n_r = _range_tiles(split, kv_len, chunk_tiles, BLOCK_N)
        word_ptr = steal_words_ptr + r
        # the owner's first claim, read after the Q prologue (its first tile is never stolen: prefetch it now).
        # Lane 0 claims, at word_ptr + lane: with a warp-uniform address ptxas aggregates the atomic and shuffles
        # its answer to the warp at once (SHFL.IDX right after ATOMG), which would wait for it there
        lane = gl.arange(0, 32 * num_warps, layout=lane_l)
        lane0 = lane == 0
        claim = gl.atomic_add(word_ptr + lane, gl.full([32 * num_warps], C, gl.int32, layout=lane_l),
                              mask=lane0 & is_owner, sem="relaxed", scope="gpu")
        base = start + first * BLOCK_N  # the first tile of this program's piece

        k_smem = (gl.allocate_shared_memory(gl.float8e4nv, [STAGES, 8 * BLOCK_N, 64], k_sl),
                  gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_N, 64], k_sl))
        q_hi = gl.allocate_shared_memory(gl.float8e4nv, [9, QR, 64], q_sl)
        q_lo = gl.allocate_shared_memory(gl.float8e4nv, [R, 64], qlo_sl)
        p_smem = gl.allocate_shared_memory(gl.float8e4nv, [2, R, 64], qlo_sl)

        # a helper's tiles end at its piece's end; an owner's where its claims say (the mask of the prefetches)
        piece_end = gl.where(is_owner, end, gl.minimum(base + count * BLOCK_N, end))
        _issue_tile(kv_ptr, kv_start, base, piece_end, stride_kv_tok, 0, k_smem, BLOCK_N, kv_blk, False)

        amax = _row_amax(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, R, ROWS, HEADS_PER_PROG, q_blk)
        s1 = gl.where(amax > 0, amax / 448.0, 1.0)
        _store_q_terms(q_ptr, q_start, head_group, stride_q_tok, stride_q_head, s1, q_hi, q_lo, R, ROWS,
                       HEADS_PER_PROG, q_blk, True, True, False)
        kv_scale = gl.where((kv_scale_first > 0) & (kv_scale_first < float("inf")), kv_scale_first, float("nan"))
        score_scale = sm_scale * 1.4426950408889634 * kv_scale
        c_hi = gl.convert_layout(s1, gl.SliceLayout(0, s_layout)) * score_scale
        c_lo = c_hi * 0.0625
        rows_s = gl.arange(0, R, layout=gl.SliceLayout(0, s_layout))
        q_idx_s = gl.where(rows_s < ROWS, rows_s // HEADS_PER_PROG, 0)
        visible = kv_len - Q_SEQ_LEN + q_idx_s + 1
        offs_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, s_layout))

        # the owner's first claim: [0, min(C, n - b)) if anything is left (a helper: its piece)
        old = gl.max(gl.where(lane0, claim, 0), axis=0)
        f_old = old & _F_MASK
        b_old = (old >> _B_SHIFT) & _F_MASK
        own_first = gl.where(f_old < n_r - b_old, gl.minimum(f_old + C, n_r - b_old), 0)
        n_own = gl.where(is_owner, own_first, count)  # tiles of this program's piece known so far
        k_seen = gl.where(is_owner, old >> _K_SHIFT, 0)
        pending = pid_r * 0

        P_LOG2: gl.constexpr = 8.0
        m_i = gl.full([R], float("-inf"), gl.float32, layout=gl.SliceLayout(0, s_layout))
        l_t = gl.zeros([BLOCK_N, R], gl.float32, layout=s_layout)
        zero_s = gl.zeros([BLOCK_N, R], gl.float32, layout=s_layout)
        zero_s2 = gl.zeros([BLOCK_N, 2 * R], gl.float32, layout=s2_layout)
        acc0 = gl.zeros([64, R], gl.float32, layout=o_layout)
        acc_zero = acc0
        acc1 = acc0
        acc2 = acc0
        acc3 = acc0
        acc4 = acc0
        acc5 = acc0
        acc6 = acc0
        acc7 = acc0
        fence_async_shared()
        _cta_barrier()
        _timeline_mark(TIMELINE, timeline_ptr, 1, 6)  # Q ready

        j = pid_r * 0
        while j < n_own:
            # the owner: the answer to the claim issued at this chunk's start, before the next chunk's first
            # tile is prefetched below; then, at a full chunk's start, the claim for the next one
            if pending != 0:
                if j % C == C - 1:
                    old = gl.max(gl.where(lane0, claim, 0), axis=0)
                    f_old = old & _F_MASK
                    b_old = (old >> _B_SHIFT) & _F_MASK
                    n_own = gl.where(f_old < n_r - b_old, gl.minimum(f_old + C, n_r - b_old), n_own)
                    k_seen = old >> _K_SHIFT
                    pending = 0
            # (in a branch: the answer's register is read only at the chunk's last tile, where the wait is)
            if is_owner & (j % C == 0) & (n_own == j + C):
                claim = gl.atomic_add(word_ptr + lane, gl.full([32 * num_warps], C, gl.int32, layout=lane_l),
                                      mask=lane0, sem="relaxed", scope="gpu")
                pending = pending * 0 + 1
            n0 = base + j * BLOCK_N
            stage = j % STAGES
            _issue_tile(kv_ptr, kv_start, n0 + BLOCK_N, gl.minimum(piece_end, base + n_own * BLOCK_N), stride_kv_tok,
                        (j + 1) % STAGES, k_smem, BLOCK_N, kv_blk, False)
            async_copy.wait_group(STAGES - 1)
            fence_async_shared()
            _cta_barrier()
            _timeline_mark(TIMELINE, timeline_ptr, 2, 7, j == 0)
            s_hi, s_lo = _qk_issue(k_smem, stage, q_hi, q_lo, zero_s, zero_s2, True)
            f0, f1, f2, f3, f4, f5, f6, f7 = _v_fragments8_ldsm(k_smem[0], stage)
            st = _qk_wait(s_hi, s_lo, c_hi, c_lo, R, True, s_layout, True, False)
            pos = n0 + offs_n
            st = gl.where(pos[:, None] < visible[None, :], st, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(st, axis=0))
            m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = gl.exp2(m_i - m_safe)
            pt = gl.exp2(st - (m_safe - P_LOG2)[None, :])
            l_t = l_t * alpha[None, :] + pt
            m_i = m_new
            _store_p8(pt, p_smem, R, True, False)
            fence_async_shared()
            _cta_barrier()
            acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7 = _pv_reg8_promoted(
                f0, f1, f2, f3, f4, f5, f6, f7, p_smem, acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7,
                gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))[None, :], acc_zero, a_layout)
            j += 1
        async_copy.wait_group(0)
        _timeline_mark(TIMELINE, timeline_ptr, 3, 8)
        if STEAL_WAIT:  # an owner's loop is over: the waiting helpers may start
            if is_owner:
                gl.store(steal_words_ptr + 2 * num_ranges + 1, 1)
        _timeline_put(TIMELINE, timeline_ptr, 11, n_own)
        if LAUNCH_DEPENDENTS == 2:
            gdc_launch_dependents()
        l_i = gl.sum(l_t, axis=0) * (1.0 / 256.0)

        # -- epilogue ------------------------------------------------------------------------------
        l_o = gl.convert_layout(l_i, gl.SliceLayout(0, o_layout))
        has = l_o > 0
        inv = gl.where(has, kv_scale / 256.0 / gl.where(has, l_o, 1.0), 0.0)[None, :]
        rows = gl.arange(0, R, layout=gl.SliceLayout(1, out_blk))
        row_ok = rows < ROWS
        q_idx = gl.where(row_ok, rows // HEADS_PER_PROG, 0)
        tok_out = q_start + q_idx
        head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
        o = _natural_rows_ldsm(acc0 * inv, acc1 * inv, acc2 * inv, acc3 * inv, acc4 * inv, acc5 * inv, acc6 * inv,
                               acc7 * inv, R)
        o = gl.convert_layout(o, out_blk)
        has_r = gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)) > 0
        l_r = gl.where(has_r, gl.convert_layout(l_i, gl.SliceLayout(1, out_blk)), 1.0)
        lse = gl.where(has_r, gl.convert_layout(m_i, gl.SliceLayout(1, out_blk)) + gl.log2(l_r), float("-inf"))
        slot_o_ptr = steal_part_ptr
        slot_lse_ptr = steal_part_ptr + num_ranges.to(gl.int64) * (NSLOT * R * 512)
        if is_owner & (k_seen == 0):  # nobody took a tile of this range: v153's store
            _store_result(o, lse, out_ptr, part_o_ptr, part_lse_ptr, tok_out, head, split, num_splits, stride_o_tok,
                          stride_o_head, row_ok, NUM_HEADS, SINGLE_PASS, out_blk)
        elif n_own > 0:  # a piece of a stolen range: its slot, then the done count; the last contributor merges
            slot_row0 = r * (NSLOT * R)
            row = slot_row0 + slot * R + rows
            gl.store(slot_lse_ptr + row, lse, mask=row_ok)
            gl.store(slot_o_ptr + row.to(gl.int64)[:, None] * 512 + gl.arange(0, 512, layout=gl.SliceLayout(
                0, out_blk))[None, :], o, mask=row_ok[:, None])
            _cta_barrier()  # every thread's stores before the release
            done = gl.atomic_add(steal_words_ptr + num_ranges + r, n_own, sem="acq_rel", scope="gpu")
            if done + n_own == n_r:
                k_all = gl.atomic_add(word_ptr, 0, sem="relaxed", scope="gpu") >> _K_SHIFT
                mo, ml = _merge_slots(slot_o_ptr, slot_lse_ptr, slot_row0, 1 + k_all, row_ok, R, out_blk)
                _store_result(mo, ml, out_ptr, part_o_ptr, part_lse_ptr, tok_out, head, split, num_splits,
                              stride_o_tok, stride_o_head, row_ok, NUM_HEADS, SINGLE_PASS, out_blk)

        # -- the grid's last program sets every word and counter back to 0 for the next call --------
        _cta_barrier()
        total = gl.num_programs(0) * gl.num_programs(1) * gl.num_programs(2)
        left = gl.atomic_add(steal_words_ptr + 2 * num_ranges, 1, sem="acq_rel", scope="gpu")
        if left == total - 1:
            zl: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
            zi = gl.arange(0, 512, layout=zl)
            for z0 in range(0, 2 * num_ranges, 512):
                gl.store(steal_words_ptr + z0 + zi, gl.zeros([512], gl.int32, layout=zl),
                         mask=z0 + zi < 2 * num_ranges)
            if STEAL_WAIT:
                gl.store(steal_words_ptr + 2 * num_ranges + 1, 0)  # (the helpers' start flag)
            gl.atomic_xchg(steal_words_ptr + 2 * num_ranges, 0, sem="relaxed", scope="gpu")
        _timeline_mark(TIMELINE, timeline_ptr, 4, 9)
else:  # pragma: no cover
    mla_decode_gluon_sm90_steal_kernel = None
