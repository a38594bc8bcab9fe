"""Generation 2 of the Triton family: QK^T in swap-AB orientation on fp8 tensor cores.

Why (docs/notes-triton.md, "generation 2"): with 16 query heads as the M of every dot, sm90 has no
warpgroup MMA for QK^T (its M is 64) and the fp8 / MXFP4 kernels of generation 1 run every dot on
``mma.sync`` with the KV tile converted to 16 bits first: 108-153 warp-instructions per KV token.
Swapping the operands makes the KV tokens the M dimension:

    S^T [BLOCK_N, 2R] = K [BLOCK_N, 576] (fp8, straight from the shared-memory tile)
                        @ Qcat^T [576, 2R] (fp8, built once per program)

``Qcat`` holds every query row twice, as fp8 hi + lo terms with one scale each per row
(q ~= s1 * (hi + s2 * lo); a single fp8 term is 2.5e-2 relative error, two terms 5.8e-4), rows
interleaved (column 2r = hi of row r, 2r + 1 = lo) so that splitting S^T back into the two terms is
register-local in the MMA accumulator layout (each thread holds adjacent column pairs). With 16
heads N = 32: a ``wgmma m64n32k32`` e4m3 instruction, no padding, no conversion of K.

Softmax runs along axis 0 (tokens) of S^T; PV then takes P back to the query-major orientation:
``acc [R, 512] += P [R, BLOCK_N] @ V [BLOCK_N, 512]`` (``PV_SWAP=False``, ``mma.sync`` with M = R)
or stays swapped: ``acc^T [512, R] += V^T [512, BLOCK_N] @ P^T [BLOCK_N, R]`` (``PV_SWAP=True``,
warpgroup MMA with M = 512). V is the latent part of the same tile, converted to 16 bits once.

KV formats:
    1 fp8    - K feeds the fp8 MMA as loaded; V = e4m3 -> fp16/bf16 (exact); the per-tensor scale
               folds into the score multiplier and the final normalisation.
    2 mxfp4  - each element is decoded once (int32 words of nibbles -> e4m3 bytes -> fp16 times the
               block scale, the generation-1 word decode); the fp16 values are V, and their e4m3
               rounding is K. E2M1 x 2**(e8m0 - 127) is exact in e4m3 for E8M0 in [119, 133] (the
               plan refuses other scales at build, except 0 on all-zero blocks; on later calls such
               a block decodes to NaN), so QK^T sees the exact dequantised K with the block scale
               applied per element, once.

The program grid, split boundaries, partial layout and LSE convention are generation 1's
(:func:`mla.kernels.triton.kernels.mla_decode_split_kernel`), so its split heuristic and both
reduce kernels serve this kernel unchanged.

Portable: no inline PTX unless ``USE_PTX`` (the MXFP4 word decode, sm90 only); on other GPUs and
for gfx950 the same source lowers to whatever MMA the target has. ``DOT_FP32`` (the interpreter)
casts dot operands to fp32, which keeps the fp8 values exact.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import (_bytes_of_words, _decode_fp8_words, _decode_mx_words, _program_work, _round_to_e4m3,
                      _write_output, gdc_launch_dependents)


@triton.jit
def _fp8_two_terms(q_lat, q_rope):
    """Per row: q ~= s1 * (hi + s2 * lo), hi and lo exact e4m3 values (as fp32). Returns
    (hi_lat, lo_lat, hi_rope, lo_rope, s1, s2)."""
    amax = tl.maximum(tl.max(tl.abs(q_lat), axis=1), tl.max(tl.abs(q_rope), axis=1))
    s1 = tl.where(amax > 0, amax / 448.0, 1.0)
    n_lat = q_lat / s1[:, None]
    n_rope = q_rope / s1[:, None]
    hi_lat = _round_to_e4m3(n_lat)
    hi_rope = _round_to_e4m3(n_rope)
    r_lat = n_lat - hi_lat
    r_rope = n_rope - hi_rope
    ramax = tl.maximum(tl.max(tl.abs(r_lat), axis=1), tl.max(tl.abs(r_rope), axis=1))
    s2 = tl.where(ramax > 0, ramax / 448.0, 1.0)
    lo_lat = _round_to_e4m3(r_lat / s2[:, None])
    lo_rope = _round_to_e4m3(r_rope / s2[:, None])
    return hi_lat, lo_lat, hi_rope, lo_rope, s1, s2


@triton.jit
def _interleave_rows(hi, lo, R: tl.constexpr, D: tl.constexpr):
    """[R, D] x 2 -> [2R, D] with row 2r = hi[r], row 2r + 1 = lo[r]."""
    return tl.reshape(tl.permute(tl.join(hi, lo), (0, 2, 1)), (2 * R, D))


@triton.jit
def _e4m3_of_words(w, N_WORDS: tl.constexpr, BLOCK_N: tl.constexpr, K_DTYPE: tl.constexpr):
    """int32 words of e4m3 bytes -> [BN, 4 * N_WORDS] e4m3 (or their fp32 values for the interpreter)."""
    byte = _bytes_of_words(w, N_WORDS, BLOCK_N).to(tl.uint8).to(tl.float8e4nv, bitcast=True)
    return byte.to(K_DTYPE)


@triton.jit
def _kv_chunk(kv_ptr, sc_ptr, tok, tok_mask, stride_kv_tok, stride_sc_tok, c: tl.constexpr, D: tl.constexpr,
              KV_FORMAT: tl.constexpr, BLOCK_N: tl.constexpr, K_DTYPE: tl.constexpr, V_DTYPE: tl.constexpr,
              V_PATH: tl.constexpr, USE_PTX: tl.constexpr, MX_PAIRS: tl.constexpr = False,
              SCALE_LO: tl.constexpr = 0, SCALE_HI: tl.constexpr = 255):
    """Latent dims [c * D, (c + 1) * D) of one tile -> (k [BN, D] in K_DTYPE, v [BN, D] in V_DTYPE),
    each element decoded once. fp8 ``V_PATH``: 0 = ``.to(V_DTYPE)`` where the compiler puts it (on
    sm90 per-byte shared-memory loads in the MMA operand layout); 2 = the chunk loaded as int32
    words, K = their bytes, V = the impure pair-convert asm, i.e. converted once in the loaded layout.
    MXFP4: int32 words of nibbles + the chunk's E8M0 bytes, decoded to fp16 (= V) and rounded to
    e4m3 (= K, exact for the scales the plan admits); a block scaled outside [SCALE_LO, SCALE_HI]
    decodes to NaN."""
    m2 = tok_mask[:, None]
    if KV_FORMAT == 2:
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        w = tl.load(wrow + c * (D // 8) + tl.arange(0, D // 8)[None, :], mask=m2, other=0)
        swrow = (sc_ptr + tok[:, None] * stride_sc_tok).to(tl.pointer_type(tl.int32))
        sw = tl.load(swrow + c * (D // 128) + tl.arange(0, D // 128)[None, :], mask=m2, other=0)
        v16 = _decode_mx_words(w, _bytes_of_words(sw, D // 128, BLOCK_N)[:, :, None], D // 32, BLOCK_N, USE_PTX,
                               tl.float16, MX_PAIRS, SCALE_LO, SCALE_HI)
        return v16.to(K_DTYPE), v16.to(V_DTYPE)
    elif V_PATH == 2:
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        w = tl.load(wrow + c * (D // 4) + tl.arange(0, D // 4)[None, :], mask=m2, other=0)
        return _e4m3_of_words(w, D // 4, BLOCK_N, K_DTYPE), _decode_fp8_words(w, D // 4, BLOCK_N, USE_PTX, V_DTYPE,
                                                                                 False)
    else:
        x = tl.load(kv_ptr + tok[:, None] * stride_kv_tok + c * D + tl.arange(0, D)[None, :], mask=m2, other=0.0)
        return x.to(K_DTYPE), x.to(V_DTYPE)


@triton.jit
def _rope_chunk(kv_ptr, sc_ptr, tok, tok_mask, stride_kv_tok, stride_sc_tok, KV_FORMAT: tl.constexpr,
                BLOCK_N: tl.constexpr, K_DTYPE: tl.constexpr, V_PATH: tl.constexpr, USE_PTX: tl.constexpr,
                SCALE_LO: tl.constexpr = 0, SCALE_HI: tl.constexpr = 255):
    """The 64 rope dims of one tile as K only [BN, 64] (V never reads them)."""
    m2 = tok_mask[:, None]
    if KV_FORMAT == 2:
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        w = tl.load(wrow + 64 + tl.arange(0, 8)[None, :], mask=m2, other=0)
        swrow = (sc_ptr + tok[:, None] * stride_sc_tok).to(tl.pointer_type(tl.int32))
        d = tl.load(swrow + 4 + tl.arange(0, 2)[None, :], mask=m2 & (tl.arange(0, 2) < 1)[None, :], other=0)
        w4, _ = tl.split(d)
        sc = tl.join(w4 & 0xFF, (w4 >> 8) & 0xFF)
        return _decode_mx_words(w, sc[:, :, None], 2, BLOCK_N, USE_PTX, tl.float16, False, SCALE_LO,
                                SCALE_HI).to(K_DTYPE)
    elif V_PATH == 2:
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        w = tl.load(wrow + 128 + tl.arange(0, 16)[None, :], mask=m2, other=0)
        return _e4m3_of_words(w, 16, BLOCK_N, K_DTYPE)
    else:
        x = tl.load(kv_ptr + tok[:, None] * stride_kv_tok + 512 + tl.arange(0, 64)[None, :], mask=m2, other=0.0)
        return x.to(K_DTYPE)


@triton.jit
def _q_chunk_t(hi, lo, Q_TERMS: tl.constexpr, R: tl.constexpr, D: tl.constexpr, K_DTYPE: tl.constexpr):
    """Qcat^T [D, 2R] (hi / lo columns interleaved) or hi^T [D, R] for one chunk of dims."""
    if Q_TERMS == 2:
        x = tl.trans(_interleave_rows(hi, lo, R, D))
    else:
        x = tl.trans(hi)
    return x.to(K_DTYPE)


@triton.jit
def _pv(acc, alpha, pt, v, PV_SWAP: tl.constexpr, V_DTYPE: tl.constexpr):
    """acc * alpha + P V for one chunk of dims: acc [R, D] (acc^T [D, R] with PV_SWAP), v [BN, D]."""
    if PV_SWAP:
        acc = acc * alpha[None, :] + tl.dot(tl.trans(v), pt.to(V_DTYPE))
    else:
        acc = acc * alpha[:, None] + tl.dot(tl.trans(pt).to(V_DTYPE), v)
    return acc


@triton.jit
def _rows_major(acc, PV_SWAP: tl.constexpr):
    if PV_SWAP:
        acc = tl.trans(acc)
    return acc


@triton.jit
def _full_acc(acc0, acc1, acc2, acc3, LAT_CHUNKS: tl.constexpr, PV_SWAP: tl.constexpr, R: tl.constexpr):
    """The chunk accumulators as one [R, 512] tile (chunk-major along the dims), for the epilogue."""
    a0 = _rows_major(acc0, PV_SWAP)
    if LAT_CHUNKS == 1:
        acc = a0
    elif LAT_CHUNKS == 2:
        acc = tl.reshape(tl.permute(tl.join(a0, _rows_major(acc1, PV_SWAP)), (0, 2, 1)), (R, 512))
    else:  # [R, D, k, l] holds chunk 2l + k
        j = tl.join(tl.join(a0, _rows_major(acc1, PV_SWAP)),
                    tl.join(_rows_major(acc2, PV_SWAP), _rows_major(acc3, PV_SWAP)))
        acc = tl.reshape(tl.permute(j, (0, 3, 2, 1)), (R, 512))
    return acc


@triton.jit
def mla_decode_swapab_kernel(
    q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
    part_o_ptr, part_lse_ptr, out_ptr,
    stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
    sm_scale, num_splits, work_ptr, counter_ptr, chunk_tokens,
    NUM_HEADS: tl.constexpr, Q_SEQ_LEN: tl.constexpr, HEADS_PER_PROG: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SINGLE_PASS: tl.constexpr,
    KV_FORMAT: tl.constexpr, DOT_FP32: tl.constexpr,
    Q_TERMS: tl.constexpr = 2, PV_SWAP: tl.constexpr = False, PV_F16: tl.constexpr = True,
    V_PATH: tl.constexpr = 0, LAT_CHUNKS: tl.constexpr = 1, QK_F16: tl.constexpr = False,
    MX_PAIRS: tl.constexpr = False, USE_PTX: tl.constexpr = False, WORK_LIST: tl.constexpr = False,
    FUSED_REDUCE: tl.constexpr = False, PARTIAL_BF16: tl.constexpr = False, LAUNCH_DEPENDENTS: tl.constexpr = 0,
    MX_SCALE_LO: tl.constexpr = 0, MX_SCALE_HI: tl.constexpr = 255,
):
    """Grid, work list, fused reduce and outputs as generation 1's split kernel (same arguments).
    BLOCK_M (>= 16, a power of two) is the padded row count R = Q_SEQ_LEN x HEADS_PER_PROG.
    LAT_CHUNKS (1, 2 or 4) cuts the 512 latent dims into chunks with their own loads, QK^T partial
    dots and PV accumulators, so one chunk's V is live in registers at a time. QK_F16 runs QK^T on
    fp16 operands instead (Q as one fp16 term, K = the very fp16 tile that is V: one decode feeds
    both dots, no e4m3 rounding of K). MX_SCALE_LO / MX_SCALE_HI: the E8M0 bytes the MXFP4 decode is
    exact for (the plan passes its variant's range; byte 0 always passes). The plan checks the scales
    of the inputs it is built on; a later call's are not read on the host (that would be a sync per
    call), so a block outside the range decodes to NaN and its rows come out NaN, not silently wrong."""
    if LAUNCH_DEPENDENTS:  # the reduce launched with PDL may start now (early either way in generation 2)
        gdc_launch_dependents()
    ROWS: tl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
    R: tl.constexpr = BLOCK_M
    D: tl.constexpr = 512 // LAT_CHUNKS
    K_DTYPE: tl.constexpr = tl.float32 if DOT_FP32 else (tl.float16 if QK_F16 else tl.float8e4nv)
    TERMS: tl.constexpr = 1 if QK_F16 else Q_TERMS
    V_DTYPE: tl.constexpr = tl.float32 if DOT_FP32 else (tl.float16 if PV_F16 else tl.bfloat16)
    head_group, b, split, splits_b, q_start, kv_start, kv_len, start, end = _program_work(
        qo_indptr_ptr, kv_indptr_ptr, work_ptr, num_splits, chunk_tokens, BLOCK_N, WORK_LIST)

    rows = tl.arange(0, R)
    row_ok = rows < ROWS
    q_idx = tl.where(row_ok, rows // HEADS_PER_PROG, 0)
    head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
    q_row_ptr = q_ptr + (q_start + q_idx)[:, None] * stride_q_tok + head[:, None] * stride_q_head
    q_lat = tl.load(q_row_ptr + tl.arange(0, 512)[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)
    q_rope = tl.load(q_row_ptr + 512 + tl.arange(0, 64)[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)

    score_scale = sm_scale * 1.4426950408889634  # base-2 softmax
    kv_scale = 1.0
    if KV_FORMAT == 1:
        kv_scale = tl.load(kv_aux_ptr)
        # a scale the validation would refuse (<= 0, inf, NaN) gives NaN rows (see kernels.py)
        kv_scale = tl.where((kv_scale > 0) & (kv_scale < float("inf")), kv_scale, float("nan"))
        score_scale = score_scale * kv_scale
    if QK_F16:  # one fp16 term, no row scale (bf16 values are fp16 values while |q| < 65504)
        hi_lat, lo_lat, hi_rope, lo_rope = q_lat, q_lat, q_rope, q_rope
        c_hi = tl.zeros([R], dtype=tl.float32) + score_scale
        c_lo = c_hi
    else:
        hi_lat, lo_lat, hi_rope, lo_rope, s1, s2 = _fp8_two_terms(q_lat, q_rope)
        c_hi = s1 * score_scale  # [R]: multiplies the hi-term scores of each query row
        c_lo = c_hi * s2
    qt_rope = _q_chunk_t(hi_rope, lo_rope, TERMS, R, 64, K_DTYPE)
    if LAT_CHUNKS == 1:
        qt0 = _q_chunk_t(hi_lat, lo_lat, TERMS, R, 512, K_DTYPE)
    else:  # the same Q, cut along dims: [R, 512] -> chunks of D
        h3 = tl.permute(tl.reshape(hi_lat, (R, 2, 256)), (0, 2, 1))
        l3 = tl.permute(tl.reshape(lo_lat, (R, 2, 256)), (0, 2, 1))
        h_a, h_b = tl.split(h3)
        l_a, l_b = tl.split(l3)
        if LAT_CHUNKS == 2:
            qt0 = _q_chunk_t(h_a, l_a, TERMS, R, D, K_DTYPE)
            qt1 = _q_chunk_t(h_b, l_b, TERMS, R, D, K_DTYPE)
        else:
            h0, h1 = tl.split(tl.permute(tl.reshape(h_a, (R, 2, 128)), (0, 2, 1)))
            h2, h3_ = tl.split(tl.permute(tl.reshape(h_b, (R, 2, 128)), (0, 2, 1)))
            l0, l1 = tl.split(tl.permute(tl.reshape(l_a, (R, 2, 128)), (0, 2, 1)))
            l2, l3_ = tl.split(tl.permute(tl.reshape(l_b, (R, 2, 128)), (0, 2, 1)))
            qt0 = _q_chunk_t(h0, l0, TERMS, R, D, K_DTYPE)
            qt1 = _q_chunk_t(h1, l1, TERMS, R, D, K_DTYPE)
            qt2 = _q_chunk_t(h2, l2, TERMS, R, D, K_DTYPE)
            qt3 = _q_chunk_t(h3_, l3_, TERMS, R, D, K_DTYPE)

    visible = kv_len - Q_SEQ_LEN + q_idx + 1  # decode-causal, per row
    m_i = tl.full([R], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([R], dtype=tl.float32)
    if PV_SWAP:
        acc0 = tl.zeros([D, R], dtype=tl.float32)
    else:
        acc0 = tl.zeros([R, D], dtype=tl.float32)
    acc1 = acc0
    acc2 = acc0
    acc3 = acc0
    offs_n = tl.arange(0, BLOCK_N)
    for n0 in range(start, end, BLOCK_N):
        pos = n0 + offs_n
        tok = kv_start + pos
        ok = pos < end
        k0, v0 = _kv_chunk(kv_ptr, kv_aux_ptr, tok, ok, stride_kv_tok, stride_sc_tok, 0, D, KV_FORMAT, BLOCK_N,
                           K_DTYPE, V_DTYPE, V_PATH, USE_PTX, MX_PAIRS, MX_SCALE_LO, MX_SCALE_HI)
        kr = _rope_chunk(kv_ptr, kv_aux_ptr, tok, ok, stride_kv_tok, stride_sc_tok, KV_FORMAT, BLOCK_N, K_DTYPE,
                         V_PATH, USE_PTX, MX_SCALE_LO, MX_SCALE_HI)
        st = tl.dot(kr, qt_rope, tl.dot(k0, qt0))  # [BN, 2R] (or [BN, R]), fp32
        if LAT_CHUNKS >= 2:
            k1, v1 = _kv_chunk(kv_ptr, kv_aux_ptr, tok, ok, stride_kv_tok, stride_sc_tok, 1, D, KV_FORMAT, BLOCK_N,
                               K_DTYPE, V_DTYPE, V_PATH, USE_PTX, MX_PAIRS, MX_SCALE_LO, MX_SCALE_HI)
            st = tl.dot(k1, qt1, st)
        if LAT_CHUNKS == 4:
            k2, v2 = _kv_chunk(kv_ptr, kv_aux_ptr, tok, ok, stride_kv_tok, stride_sc_tok, 2, D, KV_FORMAT, BLOCK_N,
                               K_DTYPE, V_DTYPE, V_PATH, USE_PTX, MX_PAIRS, MX_SCALE_LO, MX_SCALE_HI)
            k3, v3 = _kv_chunk(kv_ptr, kv_aux_ptr, tok, ok, stride_kv_tok, stride_sc_tok, 3, D, KV_FORMAT, BLOCK_N,
                               K_DTYPE, V_DTYPE, V_PATH, USE_PTX, MX_PAIRS, MX_SCALE_LO, MX_SCALE_HI)
            st = tl.dot(k3, qt3, tl.dot(k2, qt2, st))
        if TERMS == 2:
            s_hi, s_lo = tl.split(tl.reshape(st, (BLOCK_N, R, 2)))
            st = s_hi * c_hi[None, :] + s_lo * c_lo[None, :]
        else:
            st = st * c_hi[None, :]
        st = tl.where(pos[:, None] < visible[None, :], st, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(st, axis=0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        pt = tl.exp2(st - m_safe[None, :])  # P^T [BN, R]
        l_i = l_i * alpha + tl.sum(pt, axis=0)
        acc0 = _pv(acc0, alpha, pt, v0, PV_SWAP, V_DTYPE)
        if LAT_CHUNKS >= 2:
            acc1 = _pv(acc1, alpha, pt, v1, PV_SWAP, V_DTYPE)
        if LAT_CHUNKS == 4:
            acc2 = _pv(acc2, alpha, pt, v2, PV_SWAP, V_DTYPE)
            acc3 = _pv(acc3, alpha, pt, v3, PV_SWAP, V_DTYPE)
        m_i = m_new

    acc = _full_acc(acc0, acc1, acc2, acc3, LAT_CHUNKS, PV_SWAP, R)
    if KV_FORMAT == 1:
        acc = acc * kv_scale
    _write_output(acc, m_i, l_i, q_start + q_idx, head, row_ok, b, head_group, split, splits_b, num_splits,
                  part_o_ptr, part_lse_ptr, out_ptr, counter_ptr, stride_o_tok, stride_o_head, NUM_HEADS, R,
                  SINGLE_PASS, DOT_FP32, WORK_LIST, FUSED_REDUCE, PARTIAL_BF16)
