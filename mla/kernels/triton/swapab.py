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
               plan refuses other scales, except 0 on all-zero blocks), so QK^T sees the exact
               dequantised K with the block scale applied per element, once.

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

from .kernels import _bytes_of_words, _decode_fp8_words, _decode_mx_words, _round_to_e4m3, _to_bf16


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
def _load_tile(kv_ptr, sc_ptr, tok, tok_mask, stride_kv_tok, stride_sc_tok, KV_FORMAT: tl.constexpr,
               BLOCK_N: tl.constexpr, V_PATH: tl.constexpr):
    """The tile as stored. fp8: (latent [BN, 512] e4m3, rope [BN, 64] e4m3, latent as int32 words
    [BN, 128] when V_PATH >= 1 (else a placeholder), -); with V_PATH == 2 the first two are the int32
    words of latent and rope instead. MXFP4: int32 words (latent [BN, 64], rope [BN, 8], latent scale
    words [BN, 4], rope scale word [BN, 2])."""
    if KV_FORMAT == 1 and V_PATH == 2:  # one load, as words: K bytes and V both come from them
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        a = tl.load(wrow + tl.arange(0, 128)[None, :], mask=tok_mask[:, None], other=0)
        b = tl.load(wrow + 128 + tl.arange(0, 16)[None, :], mask=tok_mask[:, None], other=0)
        c = a
        d = tl.zeros([BLOCK_N, 2], dtype=tl.int32)
    elif KV_FORMAT == 1 and V_PATH == 1:  # K as e4m3 (straight into the MMA), V's bytes again as words
        row = kv_ptr + tok[:, None] * stride_kv_tok
        a = tl.load(row + tl.arange(0, 512)[None, :], mask=tok_mask[:, None], other=0.0)
        b = tl.load(row + 512 + tl.arange(0, 64)[None, :], mask=tok_mask[:, None], other=0.0)
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        c = tl.load(wrow + tl.arange(0, 128)[None, :], mask=tok_mask[:, None], other=0)
        d = tl.zeros([BLOCK_N, 2], dtype=tl.int32)
    elif KV_FORMAT == 2:
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        m2 = tok_mask[:, None]
        a = tl.load(wrow + tl.arange(0, 64)[None, :], mask=m2, other=0)
        b = tl.load(wrow + 64 + tl.arange(0, 8)[None, :], mask=m2, other=0)
        swrow = (sc_ptr + tok[:, None] * stride_sc_tok).to(tl.pointer_type(tl.int32))
        c = tl.load(swrow + tl.arange(0, 4)[None, :], mask=m2, other=0)
        d = tl.load(swrow + 4 + tl.arange(0, 2)[None, :], mask=m2 & (tl.arange(0, 2) < 1)[None, :], other=0)
    else:
        row = kv_ptr + tok[:, None] * stride_kv_tok
        a = tl.load(row + tl.arange(0, 512)[None, :], mask=tok_mask[:, None], other=0.0)
        b = tl.load(row + 512 + tl.arange(0, 64)[None, :], mask=tok_mask[:, None], other=0.0)
        c = tl.zeros([BLOCK_N, 4], dtype=tl.int32)
        d = tl.zeros([BLOCK_N, 2], dtype=tl.int32)
    return a, b, c, d


@triton.jit
def _e4m3_of_words(w, N_WORDS: tl.constexpr, BLOCK_N: tl.constexpr, K_DTYPE: tl.constexpr):
    """int32 words of e4m3 bytes -> [BN, 4 * N_WORDS] e4m3 (or their fp32 values for the interpreter)."""
    byte = _bytes_of_words(w, N_WORDS, BLOCK_N).to(tl.uint8).to(tl.float8e4nv, bitcast=True)
    return byte.to(K_DTYPE)


@triton.jit
def _k_and_v(a, b, c, d, KV_FORMAT: tl.constexpr, BLOCK_N: tl.constexpr, K_DTYPE: tl.constexpr,
             V_DTYPE: tl.constexpr, USE_PTX: tl.constexpr, V_PATH: tl.constexpr):
    """(k_lat [BN, 512], k_rope [BN, 64]) in K_DTYPE and v [BN, 512] in V_DTYPE, each element
    decoded once. fp8 V_PATH: 0 = ``a.to(V_DTYPE)`` where the compiler puts it (on sm90: per-byte
    shared-memory loads in the MMA operand layout); 1 / 2 = the impure pair-convert asm of
    generation 1 on int32 words, i.e. converted once in the loaded layout, then one 16-bit copy
    through shared memory into the PV operand."""
    if KV_FORMAT == 1 and V_PATH >= 1:
        if V_PATH == 2:
            k_lat = _e4m3_of_words(a, 128, BLOCK_N, K_DTYPE)
            k_rope = _e4m3_of_words(b, 16, BLOCK_N, K_DTYPE)
        else:
            k_lat = a.to(K_DTYPE)
            k_rope = b.to(K_DTYPE)
        v = _decode_fp8_words(c, 128, BLOCK_N, USE_PTX, V_DTYPE, False)
    elif KV_FORMAT == 2:
        sc_lat = _bytes_of_words(c, 4, BLOCK_N)
        w4, _ = tl.split(d)
        sc_rope = tl.join(w4 & 0xFF, (w4 >> 8) & 0xFF)
        v16 = _decode_mx_words(a, sc_lat[:, :, None], 16, BLOCK_N, USE_PTX, tl.float16, False)
        r16 = _decode_mx_words(b, sc_rope[:, :, None], 2, BLOCK_N, USE_PTX, tl.float16, False)
        k_lat = v16.to(K_DTYPE)
        k_rope = r16.to(K_DTYPE)
        v = v16.to(V_DTYPE)
    else:
        k_lat = a.to(K_DTYPE)
        k_rope = b.to(K_DTYPE)
        v = a.to(V_DTYPE)
    return k_lat, k_rope, v


@triton.jit
def mla_decode_swapab_kernel(
    q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
    part_o_ptr, part_lse_ptr, out_ptr,
    stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
    sm_scale, num_splits,
    NUM_HEADS: tl.constexpr, Q_SEQ_LEN: tl.constexpr, HEADS_PER_PROG: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SINGLE_PASS: tl.constexpr,
    KV_FORMAT: tl.constexpr, DOT_FP32: tl.constexpr,
    Q_TERMS: tl.constexpr = 2, PV_SWAP: tl.constexpr = False, PV_F16: tl.constexpr = True,
    V_PATH: tl.constexpr = 0, USE_PTX: tl.constexpr = False,
):
    """Grid (NUM_HEADS // HEADS_PER_PROG, num_splits, batch); outputs as generation 1's split kernel.
    BLOCK_M (>= 16, a power of two) is the padded row count R = Q_SEQ_LEN x HEADS_PER_PROG."""
    ROWS: tl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
    R: tl.constexpr = BLOCK_M
    K_DTYPE: tl.constexpr = tl.float32 if DOT_FP32 else tl.float8e4nv
    V_DTYPE: tl.constexpr = tl.float32 if DOT_FP32 else (tl.float16 if PV_F16 else tl.bfloat16)
    head_group = tl.program_id(0)
    split = tl.program_id(1)
    b = tl.program_id(2)

    q_start = tl.load(qo_indptr_ptr + b)
    kv_start = tl.load(kv_indptr_ptr + b)
    kv_len = tl.load(kv_indptr_ptr + b + 1) - kv_start
    chunk = tl.cdiv(tl.cdiv(kv_len, num_splits), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, kv_len)

    rows = tl.arange(0, R)
    row_ok = rows < ROWS
    q_idx = tl.where(row_ok, rows // HEADS_PER_PROG, 0)
    head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
    q_row_ptr = q_ptr + (q_start + q_idx)[:, None] * stride_q_tok + head[:, None] * stride_q_head
    d_lat = tl.arange(0, 512)
    q_lat = tl.load(q_row_ptr + d_lat[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)
    q_rope = tl.load(q_row_ptr + 512 + tl.arange(0, 64)[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)

    score_scale = sm_scale * 1.4426950408889634  # base-2 softmax
    if KV_FORMAT == 1:
        kv_scale = tl.load(kv_aux_ptr)
        score_scale = score_scale * kv_scale
    hi_lat, lo_lat, hi_rope, lo_rope, s1, s2 = _fp8_two_terms(q_lat, q_rope)
    c_hi = s1 * score_scale  # [R]: multiplies the hi-term scores of each query row
    c_lo = c_hi * s2
    if Q_TERMS == 2:  # Qcat^T [576, 2R], columns interleaved hi / lo
        qt_lat = tl.trans(_interleave_rows(hi_lat, lo_lat, R, 512)).to(K_DTYPE)
        qt_rope = tl.trans(_interleave_rows(hi_rope, lo_rope, R, 64)).to(K_DTYPE)
    else:
        qt_lat = tl.trans(hi_lat).to(K_DTYPE)
        qt_rope = tl.trans(hi_rope).to(K_DTYPE)

    visible = kv_len - Q_SEQ_LEN + q_idx + 1  # decode-causal, per row
    m_i = tl.full([R], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([R], dtype=tl.float32)
    if PV_SWAP:
        acc = tl.zeros([512, R], dtype=tl.float32)
    else:
        acc = tl.zeros([R, 512], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for n0 in range(start, end, BLOCK_N):
        pos = n0 + offs_n
        a, bb, c, d = _load_tile(kv_ptr, kv_aux_ptr, kv_start + pos, pos < end, stride_kv_tok, stride_sc_tok,
                                 KV_FORMAT, BLOCK_N, V_PATH)
        k_lat, k_rope, v = _k_and_v(a, bb, c, d, KV_FORMAT, BLOCK_N, K_DTYPE, V_DTYPE, USE_PTX, V_PATH)
        st = tl.dot(k_rope, qt_rope, tl.dot(k_lat, qt_lat))  # [BN, 2R] (or [BN, R]), fp32
        if Q_TERMS == 2:
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
        if PV_SWAP:
            acc = acc * alpha[None, :] + tl.dot(tl.trans(v), pt.to(V_DTYPE))
        else:
            acc = acc * alpha[:, None] + tl.dot(tl.trans(pt).to(V_DTYPE), v)
        m_i = m_new

    if PV_SWAP:
        acc = tl.trans(acc)
    if KV_FORMAT == 1:
        acc = acc * kv_scale
    tok_out = q_start + q_idx
    if SINGLE_PASS:
        o = acc / l_i[:, None]
        tl.store(out_ptr + tok_out[:, None] * stride_o_tok + head[:, None] * stride_o_head + d_lat[None, :],
                 _to_bf16(o, DOT_FP32), mask=row_ok[:, None])
    else:
        has = l_i > 0
        o = acc / tl.where(has, l_i, 1.0)[:, None]
        lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
        part_row = (tok_out * NUM_HEADS + head) * num_splits + split
        tl.store(part_o_ptr + part_row[:, None] * 512 + d_lat[None, :], o, mask=row_ok[:, None])
        tl.store(part_lse_ptr + part_row, lse, mask=row_ok)
