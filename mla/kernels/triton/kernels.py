"""The Triton MLA decode kernels: flash-decode with online softmax, split-K partials + LSE reduce.

One program handles (head group g, KV split k, batch element b): grid order, head groups fastest.
Its M dimension is the
``Q_SEQ_LEN x HEADS_PER_PROG`` query rows of b (row m = query m // HEADS_PER_PROG, head
g * HEADS_PER_PROG + m % HEADS_PER_PROG), so all queries and heads of a batch element share every
KV tile it loads. Per KV tile of BLOCK_N tokens it

    1. loads the 512 latent dims once (``kv_lat`` [BLOCK_N, 512]) and the 64 rope dims once,
    2. scores = q_lat @ kv_lat^T + q_rope @ kv_rope^T            (K = all 576 dims)
    3. online softmax in base 2 (sm_scale * log2(e) folded into one multiply),
    4. acc += p @ kv_lat                                          (V = the same latent tile),

so each KV byte crosses HBM once. Decode-causal for q_seq_len s: query i sees the first
``kv_len - s + i + 1`` tokens of its batch element.

Known compiler limits (triton 3.6, sm90; enforced by the launcher): MXFP4 with M = 64 rows aborts
in TritonGPUOptimizeDotOperands, so MXFP4 programs take <= 32 rows; MXFP4 with BLOCK_N = 16
computed wrong results on the H200, so MXFP4 tiles are >= 32 tokens.

KV formats (constexpr ``KV_FORMAT``):
    0 bf16   - used as is.
    1 fp8    - e4m3fn converted exactly to bf16; the per-tensor scale is folded into the score
               multiplier and into the final normalisation (no per-element multiply).
    2 mxfp4  - decoded in-kernel on every target (sm90, gfx950, the interpreter): each nibble is
               placed in the exponent/mantissa bits of an fp16 (``sign<<15 | code<<9``), which is
               exactly e2m1 * 2**-14 (the code-0/1 subnormals included), then multiplied by the
               fp32 power of two ``2**(e8m0 - 127 + 14)`` and rounded to the dot dtype (exact).
               ``tl.dot_scaled`` is not used: it scales along a dot's reduction dim, which fits
               QK^T but not PV (there the MX blocks run along the output dim), and decoding the
               latent tile once serves both dots, so one decoded tile costs less than a scaled
               QK plus a separate decode for PV.

Q formats (constexpr ``Q_FORMAT``), quantized in-kernel from the bf16 ``q`` (mirror in torch:
:func:`mla.kernels.triton.qformat.quantize_q_like_kernel`):
    0 bf16   - as is.
    1 fp8    - per (query, head) row: scale = amax(|q_row|) / 448, values = e4m3fn(q / scale);
               the row scale multiplies that row's scores. This is finer than mla.quant's
               per-tensor Q scale (which needs a grid-wide amax pass first); documented, tested
               against its own torch mirror.
    2 mxfp4  - per 32-dim block, exactly :func:`mla.quant.quantize_q_mxfp4` (aiter's "even" scale
               rule, E2M1 round-to-nearest-even, saturating at +-6); value * scale is exact in bf16,
               so the kernel matches ``mla.reference(data, q_format="mxfp4")``.

Variant knobs: ``PREFETCH`` issues the next tile's loads before decoding the current one (a
register double buffer: on sm90 the bf16 tile streams through cp.async into the dots, but fp8 /
MXFP4 tiles, consumed by an elementwise decode, mostly compile to plain loads that stall);
``MX_DECODE=1`` decodes MXFP4 with integer ops straight to bf16 bits (no
conversions or multiplies; needs E8M0 bytes >= 1); ``MX_DECODE=2`` loads int32 words of nibbles and
decodes 8 elements with 5 integer ops + 4 e4m3-pair conversions + 4 fp16x2 multiplies (inline PTX
when ``USE_PTX``, sm90; a portable fp32 path otherwise; fp16 dots; E8M0 in [104, 136] is exact);
for fp8 KV, ``MX_DECODE>=2`` reads int32 words of e4m3 and converts pairs by PTX (4 = pure asm, see
:func:`_decode_fp8_words`); ``DOT_F16=True`` runs the dots in fp16 (fp8 KV
only: e4m3 -> fp16 is one conversion per pair; Q must then fit fp16's range, |q| < 65504).

``DOT_FP32`` casts dot operands to fp32: Triton 3.9's interpreter returns garbage for a bf16
``tl.dot``, so the launcher sets it when ``TRITON_INTERPRET=1``; GPUs use bf16 operands. The same
flag rounds the bf16 output store to nearest even by hand (the interpreter's cast truncates).
"""

from __future__ import annotations

import triton
import triton.language as tl

try:  # grid dependency control, for programmatic dependent launch (sm90+; triton >= 3.4 has it)
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # pragma: no cover - an older triton: the plans never ask for it (launch.pdl_unavailable_reason)
    gdc_launch_dependents = gdc_wait = None

KV_FORMAT_CODE = {"bf16": 0, "fp8": 1, "mxfp4": 2}
Q_FORMAT_CODE = {"bf16": 0, "fp8": 1, "mxfp4": 2}



@triton.jit
def _e2m1_bytes_to_f32(packed, scale_e8m0):
    """packed uint8 [..., 16] (32 nibbles of one MX block, even index low), scale [..., 1] uint8
    -> (low, high) fp32 values, each [..., 16]: element 2i is low[i], element 2i+1 is high[i]."""
    b = packed.to(tl.uint16)
    lo_bits = ((b & 0x8) << 12) | ((b & 0x7) << 9)
    hi_bits = ((b & 0x80) << 8) | ((b & 0x70) << 5)
    # fp16 with the 3-bit code in bits 9..11 equals e2m1 * 2**-14 exactly; undo it with the scale
    factor = ((scale_e8m0.to(tl.int32) + 14) << 23).to(tl.float32, bitcast=True)
    lo = lo_bits.to(tl.float16, bitcast=True).to(tl.float32) * factor
    hi = hi_bits.to(tl.float16, bitcast=True).to(tl.float32) * factor
    return lo, hi


@triton.jit
def _e2m1_code_to_bf16_bits(nibble, exp_bias):
    """4-bit E2M1 code -> bf16 bits of code_value * 2**(e8m0 - 127), integer ops only.
    ``exp_bias = (e8m0 - 1) << 7``. Codes 2..7 are (1 + m/2) * 2**(e - 1): exponent field
    e - 1 + e8m0 = (code << 6) + exp_bias with the mantissa bit landing in bit 6; code 1 (0.5)
    needs its mantissa bit cleared; code 0 is zero."""
    code = nibble & 7
    mag = (code << 6) + exp_bias - (((2 >> code) & 1) << 6)
    mag = tl.where(code == 0, 0, mag)
    return mag | ((nibble & 8) << 12)


@triton.jit
def _e2m1_bytes_to_bf16(packed, scale_e8m0):
    """Like :func:`_e2m1_bytes_to_f32` but straight to bf16 bits (no conversions, no multiply).
    Assumes e8m0 >= 1 (scales >= 2**-126): byte 0 would need a subnormal."""
    b = packed.to(tl.int32)
    exp_bias = (scale_e8m0.to(tl.int32) - 1) << 7
    lo = _e2m1_code_to_bf16_bits(b & 0xF, exp_bias).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    hi = _e2m1_code_to_bf16_bits(b >> 4, exp_bias).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return lo, hi


@triton.jit
def _decode_mx(packed, scale_e8m0, MX_DECODE: tl.constexpr, DOT_DTYPE: tl.constexpr):
    if MX_DECODE == 1:
        lo, hi = _e2m1_bytes_to_bf16(packed, scale_e8m0)
    else:
        lo, hi = _e2m1_bytes_to_f32(packed, scale_e8m0)
    return lo.to(DOT_DTYPE), hi.to(DOT_DTYPE)


# --- MX_DECODE = 2: whole 32-bit words of nibbles, e4m3 bytes by shifts, cvt pairs on sm90 --------
# Placing an E2M1 code (3 bits) at bits 2..4 of an e4m3 byte gives exactly e2m1 * 2**-6 (the
# subnormal codes 0/1 included), so 8 nibbles become 8 e4m3 bytes with 5 integer ops (no LUT), then
# 4 ``cvt.rn.f16x2.e4m3x2`` and 4 ``mul.rn.f16x2`` by the block scale 2**(e8m0 - 121) in fp16.
# Exact while e8m0 is in [104, 136] (every block value 0.5 * 2**-23 .. 6 * 2**9 is an fp16); smaller
# scales round towards 0, larger ones give inf (loud, never silently wrong). Standard-normal KV has
# e8m0 ~ 125..128. The fp16 dots need Q within fp16's range too (as DOT_F16 for fp8).
_MX_WORD_PTX = tl.constexpr("""
{
.reg .b32 lo, hi, t0, t1, p0, p1, p2, p3;
.reg .b16 a0, a1, a2, a3;
shl.b32 t0, $8, 2;
shl.b32 t1, $8, 4;
and.b32 t0, t0, 0x1C1C1C1C;
and.b32 t1, t1, 0x80808080;
or.b32 lo, t0, t1;
shr.u32 t0, $8, 2;
and.b32 t0, t0, 0x1C1C1C1C;
and.b32 t1, $8, 0x80808080;
or.b32 hi, t0, t1;
mov.b32 {a0, a1}, lo;
mov.b32 {a2, a3}, hi;
cvt.rn.f16x2.e4m3x2 p0, a0;
cvt.rn.f16x2.e4m3x2 p1, a1;
cvt.rn.f16x2.e4m3x2 p2, a2;
cvt.rn.f16x2.e4m3x2 p3, a3;
mul.rn.f16x2 p0, p0, $9;
mul.rn.f16x2 p1, p1, $9;
mul.rn.f16x2 p2, p2, $9;
mul.rn.f16x2 p3, p3, $9;
mov.b32 {$0, $2}, p0;
mov.b32 {$4, $6}, p1;
mov.b32 {$1, $3}, p2;
mov.b32 {$5, $7}, p3;
}
""")


# Same decode, results as 4 f16x2 registers of adjacent elements ((e0,e1), (e2,e3), ...): two byte
# permutes interleave the even/odd e4m3 bytes so no 16-bit repacking follows the asm.
_MX_WORD_PAIRS_PTX = tl.constexpr("""
{
.reg .b32 lo, hi, t0, t1, q0, q1;
.reg .b16 a0, a1, a2, a3;
shl.b32 t0, $4, 2;
shl.b32 t1, $4, 4;
and.b32 t0, t0, 0x1C1C1C1C;
and.b32 t1, t1, 0x80808080;
or.b32 lo, t0, t1;
shr.u32 t0, $4, 2;
and.b32 t0, t0, 0x1C1C1C1C;
and.b32 t1, $4, 0x80808080;
or.b32 hi, t0, t1;
prmt.b32 q0, lo, hi, 0x5140;
prmt.b32 q1, lo, hi, 0x7362;
mov.b32 {a0, a1}, q0;
mov.b32 {a2, a3}, q1;
cvt.rn.f16x2.e4m3x2 $0, a0;
cvt.rn.f16x2.e4m3x2 $1, a1;
cvt.rn.f16x2.e4m3x2 $2, a2;
cvt.rn.f16x2.e4m3x2 $3, a3;
mul.rn.f16x2 $0, $0, $5;
mul.rn.f16x2 $1, $1, $5;
mul.rn.f16x2 $2, $2, $5;
mul.rn.f16x2 $3, $3, $5;
}
""")


@triton.jit
def _f16x2_split(x):
    lo = (x & 0xFFFF).to(tl.uint16).to(tl.float16, bitcast=True)
    hi = ((x >> 16) & 0xFFFF).to(tl.uint16).to(tl.float16, bitcast=True)
    return lo, hi


@triton.jit
def _in_scale_range(e, LO: tl.constexpr, HI: tl.constexpr):
    """LO <= e <= HI for int32 e, in one unsigned compare."""
    return (e - LO).to(tl.uint32) <= HI - LO


@triton.jit
def _mx_scale_f16x2_checked(scale_e8m0, LO: tl.constexpr, HI: tl.constexpr):
    """_mx_scale_f16x2 for E8M0 in [LO, HI] (97 <= LO, HI <= 136: fp16 normal or subnormal), 0 for byte 0
    (an all-zero block), two fp16 NaNs (0x7E00) for any other byte: the block's products are all NaN.
    No clamp is needed, so the check costs about what the clamp did (one select per block scale)."""
    tl.static_assert(LO >= 97 and HI <= 136, "the checked fp16 scale covers E8M0 97..136")
    e = scale_e8m0.to(tl.int32)
    ok = _in_scale_range(e, LO, HI)
    if LO >= 107:  # fp16 normals only
        val = (e - 106) << 10
    else:
        val = tl.where(e >= 107, (e - 106) << 10, 1 << (e - 97))
    bits = tl.where(ok, val, tl.where(e == 0, 0, 0x7E00))
    return bits | (bits << 16)


@triton.jit
def _mx_scale_f16x2(scale_e8m0):
    """E8M0 byte -> two copies of the fp16 2**(e - 121) packed in an int32 (e < 97 -> 0, e > 136 -> inf)."""
    e = tl.minimum(scale_e8m0.to(tl.int32), 137)
    bits = tl.where(e >= 107, (e - 106) << 10, tl.where(e >= 97, 1 << (e - 97), 0))
    return bits | (bits << 16)


@triton.jit
def _mx_word_to_8(word, scale_e8m0, USE_PTX: tl.constexpr, DOT_DTYPE: tl.constexpr, MX_PURE: tl.constexpr = True,
                  MX_PAIRS: tl.constexpr = False, SCALE_LO: tl.constexpr = 0, SCALE_HI: tl.constexpr = 255):
    """int32 word (8 nibbles, element i in bits 4i..4i+3) + E8M0 -> 8 tensors, elements 0..7 in order.
    A block whose scale byte lies outside [SCALE_LO, SCALE_HI] (byte 0, an all-zero block, always
    passes) decodes to NaN: the check is on the block scale, not on each element (the compiler may
    repeat it per word holding the scale: gfx950 does); the default range admits every byte and
    compiles to no check."""
    GUARD: tl.constexpr = SCALE_LO > 0 or SCALE_HI < 255
    if USE_PTX and MX_PAIRS:
        sc = _mx_scale_f16x2_checked(scale_e8m0, SCALE_LO, SCALE_HI) if GUARD else _mx_scale_f16x2(scale_e8m0)
        p0, p1, p2, p3 = tl.inline_asm_elementwise(
            _MX_WORD_PAIRS_PTX, "=r,=r,=r,=r,r,r", [word, sc], dtype=(tl.int32,) * 4, is_pure=MX_PURE, pack=1)
        e0, e1 = _f16x2_split(p0)
        e2, e3 = _f16x2_split(p1)
        e4, e5 = _f16x2_split(p2)
        e6, e7 = _f16x2_split(p3)
    elif USE_PTX:
        sc = _mx_scale_f16x2_checked(scale_e8m0, SCALE_LO, SCALE_HI) if GUARD else _mx_scale_f16x2(scale_e8m0)
        e0, e1, e2, e3, e4, e5, e6, e7 = tl.inline_asm_elementwise(
            _MX_WORD_PTX, "=h,=h,=h,=h,=h,=h,=h,=h,r,r", [word, sc],
            dtype=(tl.float16,) * 8, is_pure=MX_PURE, pack=1)
    else:  # portable (interpreter, gfx950): the fp16-bits decode of _e2m1_bytes_to_f32 per nibble
        factor = ((scale_e8m0.to(tl.int32) + 14) << 23).to(tl.float32, bitcast=True)
        if GUARD:
            s32 = scale_e8m0.to(tl.int32)
            scale_ok = _in_scale_range(s32, SCALE_LO, SCALE_HI) | (s32 == 0)
            factor = tl.where(scale_ok, factor, float("nan"))
        e0 = _mx_nibble_f32(word, 0, factor)
        e1 = _mx_nibble_f32(word, 4, factor)
        e2 = _mx_nibble_f32(word, 8, factor)
        e3 = _mx_nibble_f32(word, 12, factor)
        e4 = _mx_nibble_f32(word, 16, factor)
        e5 = _mx_nibble_f32(word, 20, factor)
        e6 = _mx_nibble_f32(word, 24, factor)
        e7 = _mx_nibble_f32(word, 28, factor)
    return (e0.to(DOT_DTYPE), e1.to(DOT_DTYPE), e2.to(DOT_DTYPE), e3.to(DOT_DTYPE),
            e4.to(DOT_DTYPE), e5.to(DOT_DTYPE), e6.to(DOT_DTYPE), e7.to(DOT_DTYPE))


@triton.jit
def _mx_nibble_f32(word, shift: tl.constexpr, factor):
    nib = (word >> shift) & 0xF
    bits = ((nib & 0x8) << 12) | ((nib & 0x7) << 9)
    return bits.to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32) * factor


@triton.jit
def _decode_mx_words(words, scale_e8m0, N_BLK: tl.constexpr, BLOCK_N: tl.constexpr, USE_PTX: tl.constexpr,
                     DOT_DTYPE: tl.constexpr, MX_PAIRS: tl.constexpr = False, SCALE_LO: tl.constexpr = 0,
                     SCALE_HI: tl.constexpr = 255):
    """words int32 [BLOCK_N, N_BLK * 4] (one MX block = 4 words), scales [BLOCK_N, N_BLK, 1]
    -> [BLOCK_N, N_BLK * 32] in DOT_DTYPE, element order kept (NaN blocks: _mx_word_to_8's range)."""
    words = tl.reshape(words, (BLOCK_N, N_BLK, 4))
    e0, e1, e2, e3, e4, e5, e6, e7 = _mx_word_to_8(words, scale_e8m0, USE_PTX, DOT_DTYPE, False, MX_PAIRS,
                                                   SCALE_LO, SCALE_HI)
    # tl.join stacks along a new *last* axis, so the first join pairs elements 4 apart and the
    # last one interleaves even/odd: position 4j + 2k + l holds element 4j + 2k + l
    x = tl.join(tl.join(tl.join(e0, e4), tl.join(e2, e6)), tl.join(tl.join(e1, e5), tl.join(e3, e7)))
    return tl.reshape(x, (BLOCK_N, N_BLK * 32))


# fp8 (e4m3) words: 4 elements per int32, two pair conversions, no scale (it is per tensor).
_FP8_WORD_PTX = tl.constexpr("""
{
.reg .b16 a0, a1;
.reg .b32 p0, p1;
mov.b32 {a0, a1}, $4;
cvt.rn.f16x2.e4m3x2 p0, a0;
cvt.rn.f16x2.e4m3x2 p1, a1;
mov.b32 {$0, $1}, p0;
mov.b32 {$2, $3}, p1;
}
""")


@triton.jit
def _e4m3_byte_f32(word, shift: tl.constexpr):
    """Portable e4m3fn byte -> fp32: the 7 exponent/mantissa bits at fp32 bits 20..26 are the value
    times 2**-120 (normal and subnormal alike); NaN codes are not handled (KV data has none)."""
    byte = (word >> shift) & 0xFF
    bits = ((byte & 0x80) << 24) | ((byte & 0x7F) << 20)
    return bits.to(tl.float32, bitcast=True) * 1.329227995784916e36  # 2**120


@triton.jit
def _decode_fp8_words(words, N_WORDS: tl.constexpr, BLOCK_N: tl.constexpr, USE_PTX: tl.constexpr,
                      DOT_DTYPE: tl.constexpr, PURE: tl.constexpr = False):
    """words int32 [BLOCK_N, N_WORDS] of e4m3 bytes -> [BLOCK_N, 4 * N_WORDS] in DOT_DTYPE (order kept).
    PURE=False marks the asm impure, so Triton converts its result for the two dots instead of
    re-running it per dot layout; PURE=True lets it re-run (2 cvt per 4 elements is cheaper than the
    second shared-memory copy of the tile: fp8 v23 119 -> v32 108 warp-instr/token)."""
    if USE_PTX:
        e0, e1, e2, e3 = tl.inline_asm_elementwise(_FP8_WORD_PTX, "=h,=h,=h,=h,r", [words],
                                                   dtype=(tl.float16,) * 4, is_pure=PURE, pack=1)
    else:
        e0 = _e4m3_byte_f32(words, 0)
        e1 = _e4m3_byte_f32(words, 8)
        e2 = _e4m3_byte_f32(words, 16)
        e3 = _e4m3_byte_f32(words, 24)
    x = tl.join(tl.join(e0.to(DOT_DTYPE), e2.to(DOT_DTYPE)), tl.join(e1.to(DOT_DTYPE), e3.to(DOT_DTYPE)))
    return tl.reshape(x, (BLOCK_N, N_WORDS * 4))


@triton.jit
def _bytes_of_words(w, N_WORDS: tl.constexpr, BLOCK_N: tl.constexpr):
    """int32 [BLOCK_N, N_WORDS] -> its bytes as int32 [BLOCK_N, 4 * N_WORDS], little-endian order."""
    b0 = w & 0xFF
    b1 = (w >> 8) & 0xFF
    b2 = (w >> 16) & 0xFF
    b3 = (w >> 24) & 0xFF
    return tl.reshape(tl.join(tl.join(b0, b2), tl.join(b1, b3)), (BLOCK_N, 4 * N_WORDS))


@triton.jit
def _load_kv_raw(kv_ptr, scales_ptr, tok, tok_mask, stride_kv_tok, stride_sc_tok,
                 KV_FORMAT: tl.constexpr, BLOCK_N: tl.constexpr, MX_DECODE: tl.constexpr = 0):
    """One KV tile as stored, 4 tensors: bf16/fp8 (latent [BLOCK_N, 512], rope [BLOCK_N, 64], -, -);
    MXFP4 (packed latent [BLOCK_N, 16, 16], packed rope [BLOCK_N, 2, 16], scales [BLOCK_N, 16],
    [BLOCK_N, 2]): 288 packed bytes per token = 18 blocks of 16 bytes, 16 latent + 2 rope."""
    if KV_FORMAT == 2 and MX_DECODE >= 2:
        # int32 words: 4 per 16-byte MX block; rows are 288 B (16-byte aligned): 16-byte cp.async
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        # 2-D [BLOCK_N, words] loads: one contiguous run per token, so lanes spread along the words
        # (the decoded tile then keeps the 512 dims fastest and its smem copy takes vector stores)
        m2 = tok_mask[:, None]
        a = tl.load(wrow + tl.arange(0, 64)[None, :], mask=m2, other=0)
        b = tl.load(wrow + 64 + tl.arange(0, 8)[None, :], mask=m2, other=0)
        # E8M0 scales as int32 words too (bytes 0..15 latent, word 4 = bytes 16..19 holds the two rope
        # scales): byte loads of the 24-byte scale rows compiled to plain LDG that stalled every trip;
        # 4-byte words go through cp.async with the tile
        swrow = (scales_ptr + tok[:, None] * stride_sc_tok).to(tl.pointer_type(tl.int32))
        c = tl.load(swrow + tl.arange(0, 4)[None, :], mask=m2, other=0)
        d = tl.load(swrow + 4 + tl.arange(0, 2)[None, :], mask=m2 & (tl.arange(0, 2) < 1)[None, :], other=0)
    elif KV_FORMAT == 1 and MX_DECODE >= 2:  # fp8 as int32 words (4 e4m3 each), lanes along the words
        wrow = (kv_ptr + tok[:, None] * stride_kv_tok).to(tl.pointer_type(tl.int32))
        a = tl.load(wrow + tl.arange(0, 128)[None, :], mask=tok_mask[:, None], other=0)
        b = tl.load(wrow + 128 + tl.arange(0, 16)[None, :], mask=tok_mask[:, None], other=0)
        c = tl.zeros([BLOCK_N, 16], dtype=tl.uint8)
        d = tl.zeros([BLOCK_N, 2], dtype=tl.uint8)
    elif KV_FORMAT == 2:
        blk_lat = tl.arange(0, 16)
        blk_rope = tl.arange(0, 2)
        byte = tl.arange(0, 16)
        row = kv_ptr + tok[:, None, None] * stride_kv_tok
        m3 = tok_mask[:, None, None]
        a = tl.load(row + blk_lat[None, :, None] * 16 + byte[None, None, :], mask=m3, other=0)
        b = tl.load(row + 256 + blk_rope[None, :, None] * 16 + byte[None, None, :], mask=m3, other=0)
        srow = scales_ptr + tok[:, None] * stride_sc_tok
        c = tl.load(srow + blk_lat[None, :], mask=tok_mask[:, None], other=0)
        d = tl.load(srow + 16 + blk_rope[None, :], mask=tok_mask[:, None], other=0)
    else:
        row = kv_ptr + tok[:, None] * stride_kv_tok
        a = tl.load(row + tl.arange(0, 512)[None, :], mask=tok_mask[:, None], other=0.0)
        b = tl.load(row + 512 + tl.arange(0, 64)[None, :], mask=tok_mask[:, None], other=0.0)
        c = tl.zeros([BLOCK_N, 16], dtype=tl.uint8)  # unused placeholders keep one signature
        d = tl.zeros([BLOCK_N, 2], dtype=tl.uint8)
    return a, b, c, d


@triton.jit
def _decode_kv(a, b, c, d, KV_FORMAT: tl.constexpr, BLOCK_N: tl.constexpr, DOT_DTYPE: tl.constexpr,
               MX_DECODE: tl.constexpr, USE_PTX: tl.constexpr = False):
    """Raw tile (see :func:`_load_kv_raw`) -> (latent [BLOCK_N, 512], rope [BLOCK_N, 64]) in DOT_DTYPE."""
    if KV_FORMAT == 2 and MX_DECODE >= 2:
        sc_lat = _bytes_of_words(c, 4, BLOCK_N)  # [BLOCK_N, 16] E8M0 of the latent blocks
        w4, _ = tl.split(d)
        sc_rope = tl.join(w4 & 0xFF, (w4 >> 8) & 0xFF)  # [BLOCK_N, 2]
        lat = _decode_mx_words(a, sc_lat[:, :, None], 16, BLOCK_N, USE_PTX, DOT_DTYPE, MX_DECODE == 3)
        rope = _decode_mx_words(b, sc_rope[:, :, None], 2, BLOCK_N, USE_PTX, DOT_DTYPE, MX_DECODE == 3)
    elif KV_FORMAT == 1 and MX_DECODE >= 2:
        lat = _decode_fp8_words(a, 128, BLOCK_N, USE_PTX, DOT_DTYPE, MX_DECODE == 4)
        rope = _decode_fp8_words(b, 16, BLOCK_N, USE_PTX, DOT_DTYPE, MX_DECODE == 4)
    elif KV_FORMAT == 2:
        lo, hi = _decode_mx(a, c[:, :, None], MX_DECODE, DOT_DTYPE)
        lat = tl.reshape(tl.join(lo, hi), (BLOCK_N, 512))
        lo_r, hi_r = _decode_mx(b, d[:, :, None], MX_DECODE, DOT_DTYPE)
        rope = tl.reshape(tl.join(lo_r, hi_r), (BLOCK_N, 64))
    else:
        lat = a.to(DOT_DTYPE)
        rope = b.to(DOT_DTYPE)
    return lat, rope


@triton.jit
def _round_half_even(x):
    # fp32 add rounds to nearest even; valid for |x| < 2**22 (here |x| <= 12)
    return (x + 12582912.0) - 12582912.0


@triton.jit
def _to_bf16(x, EXACT_RNE: tl.constexpr):
    """fp32 -> bf16, round to nearest even. The GPUs' cast does that; Triton 3.9's interpreter
    truncates, so when interpreting (EXACT_RNE) round the bits first and let it truncate exactly."""
    if EXACT_RNE:
        bits = x.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        x = bits.to(tl.float32, bitcast=True)
    return x.to(tl.bfloat16)


@triton.jit
def _round_to_e4m3(x):
    """fp32 (|x| <= 448) -> nearest e4m3fn value (ties to even), as fp32. Done arithmetically:
    Triton 3.9's interpreter mis-rounds ``.to(tl.float8e4nv)`` across a binade (7.8 -> 4.0)."""
    biased = (x.to(tl.int32, bitcast=True) >> 23) & 0xFF
    quantum = tl.maximum(biased - 3, 127 - 9)  # 3 mantissa bits; subnormal step 2**-9
    step = (quantum << 23).to(tl.float32, bitcast=True)
    inv_step = ((254 - quantum) << 23).to(tl.float32, bitcast=True)
    return tl.minimum(tl.maximum(_round_half_even(x * inv_step) * step, -448.0), 448.0)


@triton.jit
def _quantize_q(q, BLOCK_M: tl.constexpr, DIM: tl.constexpr, Q_FORMAT: tl.constexpr):
    """q fp32 [BLOCK_M, DIM] -> (values fp32 exact in bf16, row scale fp32 [BLOCK_M] or None).
    For fp8 the row scale is returned separately and must multiply the scores."""
    if Q_FORMAT == 2:
        qb = tl.reshape(q, (BLOCK_M, DIM // 32, 32))
        amax = tl.max(tl.abs(qb), axis=2)
        # mla.quant's "even" rule: round amax's mantissa at bit 21, then 2**(floor(log2) - 2),
        # built directly in the fp32 exponent field (amax == 0 -> scale 1, values 0)
        biased = (((amax.to(tl.int32, bitcast=True) + 0x200000) >> 23) & 0xFF) - 2
        e = tl.where(amax > 0, tl.minimum(tl.maximum(biased, 1), 253), 127)
        scale = (e << 23).to(tl.float32, bitcast=True)
        inv_scale = ((254 - e) << 23).to(tl.float32, bitcast=True)
        a = tl.abs(qb * inv_scale[:, :, None])
        r = tl.where(a < 2.0, _round_half_even(a * 2.0) * 0.5,
                     tl.where(a < 4.0, _round_half_even(a), _round_half_even(a * 0.5) * 2.0))
        r = tl.minimum(r, 6.0)
        r = tl.where(qb < 0, -r, r)
        return tl.reshape(r * scale[:, :, None], (BLOCK_M, DIM))
    else:
        return q


@triton.jit
def mla_decode_split_kernel(
    q_ptr, kv_ptr, kv_aux_ptr, qo_indptr_ptr, kv_indptr_ptr,
    part_o_ptr, part_lse_ptr, out_ptr,
    stride_q_tok, stride_q_head, stride_kv_tok, stride_sc_tok, stride_o_tok, stride_o_head,
    sm_scale, num_splits, work_ptr, counter_ptr, chunk_tokens,
    NUM_HEADS: tl.constexpr, Q_SEQ_LEN: tl.constexpr, HEADS_PER_PROG: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SINGLE_PASS: tl.constexpr,
    KV_FORMAT: tl.constexpr, Q_FORMAT: tl.constexpr, DOT_FP32: tl.constexpr,
    DOT_F16: tl.constexpr = False, MX_DECODE: tl.constexpr = 0, PREFETCH: tl.constexpr = False,
    USE_PTX: tl.constexpr = False, WORK_LIST: tl.constexpr = False, FUSED_REDUCE: tl.constexpr = False,
    PARTIAL_BF16: tl.constexpr = False, LAUNCH_DEPENDENTS: tl.constexpr = 0,
):
    """Grid (NUM_HEADS // HEADS_PER_PROG, num_splits, batch). With SINGLE_PASS (num_splits == 1) it
    writes the bf16 output directly; else fp32 partials [total_q, H, num_splits, 512] and base-2 LSE
    [total_q, H, num_splits] for :func:`mla_decode_reduce_kernel`. num_splits is a runtime value so
    a split sweep does not recompile.

    WORK_LIST (the balanced schedule): grid (head groups, work items, 1); item i of ``work_ptr``
    (int32 [items, 3]) is (batch element, split, splits of that element); every split covers
    ``chunk_tokens`` tokens (a multiple of BLOCK_N), so long elements get more splits and each
    program about the same work; ``num_splits`` is then the partial buffer's split stride (the most
    splits any element has). A batch element with one split writes its output directly.

    FUSED_REDUCE: one launch. After its partial, each program bumps the (batch element, head group)
    counter in ``counter_ptr`` (int32, zero between calls) with an acq_rel atomic; the program that
    brings it to the element's split count is the last, merges every split's partial by LSE
    (loads through L2, .cg) and sets the counter back to 0 for the next call. Sequential programs
    (the interpreter) satisfy the same rule. PARTIAL_BF16 stores the partial O in bf16 (half the
    partial traffic; the LSE stays fp32)."""
    if LAUNCH_DEPENDENTS == 1:  # the reduce launched with PDL may start now (its programs wait for this grid)
        gdc_launch_dependents()
    ROWS: tl.constexpr = Q_SEQ_LEN * HEADS_PER_PROG
    DOT_DTYPE: tl.constexpr = tl.float32 if DOT_FP32 else (tl.float16 if DOT_F16 else tl.bfloat16)
    # head groups vary fastest, so programs reading the same KV tiles run side by side (L2 reuse)
    head_group, b, split, splits_b, q_start, kv_start, kv_len, start, end = _program_work(
        qo_indptr_ptr, kv_indptr_ptr, work_ptr, num_splits, chunk_tokens, BLOCK_N, WORK_LIST)

    rows = tl.arange(0, BLOCK_M)
    row_ok = rows < ROWS  # BLOCK_M pads q_seq_len * heads to a power of two
    q_idx = tl.where(row_ok, rows // HEADS_PER_PROG, 0)  # query index within the batch element
    head = head_group * HEADS_PER_PROG + rows % HEADS_PER_PROG
    q_row_ptr = q_ptr + (q_start + q_idx)[:, None] * stride_q_tok + head[:, None] * stride_q_head
    d_lat = tl.arange(0, 512)
    d_rope = tl.arange(0, 64)
    q_lat = tl.load(q_row_ptr + d_lat[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)
    q_rope = tl.load(q_row_ptr + 512 + d_rope[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)

    score_scale = sm_scale * 1.4426950408889634  # base-2 softmax
    if KV_FORMAT == 1:
        kv_scale = tl.load(kv_aux_ptr)
        # a scale the validation would refuse (<= 0, inf, NaN) gives NaN rows, never a silent answer:
        # the call guard does not re-read the scale of inputs it takes for seen ones (mla/validate.py)
        kv_scale = tl.where((kv_scale > 0) & (kv_scale < float("inf")), kv_scale, float("nan"))
        score_scale = score_scale * kv_scale
    if Q_FORMAT == 1:
        # per (query, head) row fp8: values e4m3(q / s), the scale s folds into the row's scores
        amax = tl.maximum(tl.max(tl.abs(q_lat), axis=1), tl.max(tl.abs(q_rope), axis=1))
        q_row_scale = tl.where(amax > 0, amax / 448.0, 1.0)
        q_lat = _round_to_e4m3(q_lat / q_row_scale[:, None])
        q_rope = _round_to_e4m3(q_rope / q_row_scale[:, None])
        row_score_scale = q_row_scale * score_scale
    else:
        q_lat = _quantize_q(q_lat, BLOCK_M, 512, Q_FORMAT)
        q_rope = _quantize_q(q_rope, BLOCK_M, 64, Q_FORMAT)
        row_score_scale = tl.zeros([BLOCK_M], dtype=tl.float32) + score_scale
    q_lat = q_lat.to(DOT_DTYPE)
    q_rope = q_rope.to(DOT_DTYPE)

    # decode-causal: row m sees tokens [0, kv_len - Q_SEQ_LEN + q_idx + 1)
    visible = kv_len - Q_SEQ_LEN + q_idx + 1

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, 512], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    if PREFETCH:  # register double buffer: the next tile's loads fly while this one is decoded
        r0, r1, r2, r3 = _load_kv_raw(kv_ptr, kv_aux_ptr, kv_start + start + offs_n, start + offs_n < end,
                                      stride_kv_tok, stride_sc_tok, KV_FORMAT, BLOCK_N, MX_DECODE)
    for n0 in range(start, end, BLOCK_N):
        pos = n0 + offs_n
        if PREFETCH:
            c0, c1, c2, c3 = r0, r1, r2, r3
            nxt = pos + BLOCK_N
            r0, r1, r2, r3 = _load_kv_raw(kv_ptr, kv_aux_ptr, kv_start + nxt, nxt < end, stride_kv_tok,
                                          stride_sc_tok, KV_FORMAT, BLOCK_N, MX_DECODE)
        else:
            c0, c1, c2, c3 = _load_kv_raw(kv_ptr, kv_aux_ptr, kv_start + pos, pos < end, stride_kv_tok,
                                          stride_sc_tok, KV_FORMAT, BLOCK_N, MX_DECODE)
        lat, rope = _decode_kv(c0, c1, c2, c3, KV_FORMAT, BLOCK_N, DOT_DTYPE, MX_DECODE, USE_PTX)
        s = tl.dot(q_lat, tl.trans(lat)) + tl.dot(q_rope, tl.trans(rope))
        s = s * row_score_scale[:, None]
        s = tl.where(pos[None, :] < visible[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing visible yet
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(DOT_DTYPE), lat)
        m_i = m_new

    if LAUNCH_DEPENDENTS == 2:  # late: the reduce's programs launch while this grid writes its partials
        gdc_launch_dependents()
    if KV_FORMAT == 1:
        acc = acc * kv_scale
    _write_output(acc, m_i, l_i, q_start + q_idx, head, row_ok, b, head_group, split, splits_b, num_splits,
                  part_o_ptr, part_lse_ptr, out_ptr, counter_ptr, stride_o_tok, stride_o_head, NUM_HEADS, BLOCK_M,
                  SINGLE_PASS, DOT_FP32, WORK_LIST, FUSED_REDUCE, PARTIAL_BF16)


@triton.jit
def _program_work(qo_indptr_ptr, kv_indptr_ptr, work_ptr, num_splits, chunk_tokens, BLOCK_N: tl.constexpr,
                  WORK_LIST: tl.constexpr):
    """What this program computes (both generations): (head group, batch element, split, splits of
    that element, its first query row, first KV row, KV length, and the split's token range)."""
    # head groups vary fastest, so programs reading the same KV tiles run side by side (L2 reuse)
    head_group = tl.program_id(0)
    if WORK_LIST:
        item = tl.program_id(1)
        b = tl.load(work_ptr + item * 3)
        split = tl.load(work_ptr + item * 3 + 1)
        splits_b = tl.load(work_ptr + item * 3 + 2)
    else:
        split = tl.program_id(1)
        b = tl.program_id(2)
        splits_b = num_splits
    q_start = tl.load(qo_indptr_ptr + b)
    kv_start = tl.load(kv_indptr_ptr + b)
    kv_len = tl.load(kv_indptr_ptr + b + 1) - kv_start
    # split boundaries, in whole BLOCK_N tiles so every tile but the last is full
    if WORK_LIST:
        chunk = chunk_tokens
    else:
        chunk = tl.cdiv(tl.cdiv(kv_len, num_splits), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, kv_len)
    return head_group, b, split, splits_b, q_start, kv_start, kv_len, start, end


@triton.jit
def _write_output(acc, m_i, l_i, tok_out, head, row_ok, b, head_group, split, splits_b, num_splits, part_o_ptr,
                  part_lse_ptr, out_ptr, counter_ptr, stride_o_tok, stride_o_head, NUM_HEADS: tl.constexpr,
                  BLOCK_M: tl.constexpr, SINGLE_PASS: tl.constexpr, EXACT_RNE: tl.constexpr,
                  WORK_LIST: tl.constexpr, FUSED_REDUCE: tl.constexpr, PARTIAL_BF16: tl.constexpr):
    """The epilogue of both generations: acc [BLOCK_M, 512] (V-scale applied) -> the bf16 output
    (single pass, or a one-split element of the work list) or this split's partial (+ the fused merge)."""
    d_lat = tl.arange(0, 512)
    out_tile = out_ptr + tok_out[:, None] * stride_o_tok + head[:, None] * stride_o_head + d_lat[None, :]
    if SINGLE_PASS:
        o = acc / l_i[:, None]
        tl.store(out_tile, _to_bf16(o, EXACT_RNE), mask=row_ok[:, None])
    elif WORK_LIST:  # (nested ifs, not `WORK_LIST and ...`: a constexpr/tensor `and` is version-fragile)
        if splits_b == 1:  # a short element of a ragged batch: one split, no merge
            o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
            tl.store(out_tile, _to_bf16(o, EXACT_RNE), mask=row_ok[:, None])
        else:
            _store_partial(acc, m_i, l_i, part_o_ptr, part_lse_ptr, counter_ptr + b * tl.num_programs(0) + head_group,
                           (tok_out * NUM_HEADS + head) * num_splits, split, splits_b, out_tile, row_ok, d_lat,
                           BLOCK_M, EXACT_RNE, PARTIAL_BF16, FUSED_REDUCE)
    else:
        _store_partial(acc, m_i, l_i, part_o_ptr, part_lse_ptr, counter_ptr + b * tl.num_programs(0) + head_group,
                       (tok_out * NUM_HEADS + head) * num_splits, split, splits_b, out_tile, row_ok, d_lat,
                       BLOCK_M, EXACT_RNE, PARTIAL_BF16, FUSED_REDUCE)


@triton.jit
def _store_partial(acc, m_i, l_i, part_o_ptr, part_lse_ptr, counter, part_base, split, splits_b, out_tile, row_ok,
                   d_lat, BLOCK_M: tl.constexpr, EXACT_RNE: tl.constexpr, PARTIAL_BF16: tl.constexpr,
                   FUSED_REDUCE: tl.constexpr):
    """One split's partial: O normalised by its own sum, base-2 LSE (-inf where no token was
    visible); with FUSED_REDUCE the last program of the group then merges (:func:`_merge_if_last`)."""
    has = l_i > 0
    o = acc / tl.where(has, l_i, 1.0)[:, None]
    lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
    part_row = part_base + split
    if PARTIAL_BF16:
        tl.store(part_o_ptr + part_row[:, None] * 512 + d_lat[None, :], _to_bf16(o, EXACT_RNE), mask=row_ok[:, None])
    else:
        tl.store(part_o_ptr + part_row[:, None] * 512 + d_lat[None, :], o, mask=row_ok[:, None])
    tl.store(part_lse_ptr + part_row, lse, mask=row_ok)
    if FUSED_REDUCE:
        _merge_if_last(part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_tile, row_ok, BLOCK_M, EXACT_RNE)


@triton.jit
def _merge_if_last(part_o_ptr, part_lse_ptr, counter, part_base, splits_b, out_tile, row_ok,
                   BLOCK_M: tl.constexpr, EXACT_RNE: tl.constexpr):
    """The fused reduce (see the split kernel's FUSED_REDUCE): count this program's partial in;
    if it was the last of its (batch element, head group), combine all ``splits_b`` partials."""
    # every thread's partial stores precede the CTA barrier, the barrier precedes the release
    # half of the atomic: a program that acquires the final count sees every split's partial
    tl.debug_barrier()
    done = tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
    if done == splits_b - 1:
        d = tl.arange(0, 512)
        m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        den = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, 512], dtype=tl.float32)
        for k in range(0, splits_b):
            # .cg: read at L2, where the other SMs' partials are (this SM's L1 may hold none of them)
            lse = tl.load(part_lse_ptr + part_base + k, mask=row_ok, other=float("-inf"), cache_modifier=".cg")
            part = tl.load(part_o_ptr + (part_base + k)[:, None] * 512 + d[None, :], mask=row_ok[:, None],
                           other=0.0, cache_modifier=".cg").to(tl.float32)
            m_new = tl.maximum(m, lse)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # splits with no visible token
            alpha = tl.exp2(m - m_safe)
            w = tl.exp2(lse - m_safe)
            den = den * alpha + w
            acc = acc * alpha[:, None] + w[:, None] * part
            m = m_new
        o = acc / tl.where(den > 0, den, 1.0)[:, None]
        tl.store(out_tile, _to_bf16(o, EXACT_RNE), mask=row_ok[:, None])
        tl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")  # ready for the next call (or graph replay)


@triton.jit
def mla_decode_reduce_kernel(part_o_ptr, part_lse_ptr, out_ptr, stride_o_tok, stride_o_head, num_splits,
                             NUM_HEADS: tl.constexpr, SPLITS_P2: tl.constexpr,
                             HEADS_PER_PROG: tl.constexpr, EXACT_RNE: tl.constexpr,
                             PDL_WAIT: tl.constexpr = False):
    """Grid (total_q, NUM_HEADS // HEADS_PER_PROG): combine the splits' partials by their LSE. PDL_WAIT: launched
    with programmatic dependent launch, so it waits for the split grid (its writes visible) before any load."""
    tok = tl.program_id(0)
    head = tl.program_id(1) * HEADS_PER_PROG + tl.arange(0, HEADS_PER_PROG)
    sp = tl.arange(0, SPLITS_P2)
    d = tl.arange(0, 512)
    sp_mask = sp < num_splits
    row = (tok * NUM_HEADS + head)[:, None] * num_splits + sp[None, :]  # [H, S]
    if PDL_WAIT:
        gdc_wait()
    lse = tl.load(part_lse_ptr + row, mask=sp_mask[None, :], other=float("-inf"))
    m = tl.max(lse, axis=1)  # every (query, head) sees >= 1 token, so m is finite
    w = tl.exp2(lse - m[:, None])
    w = w / tl.sum(w, axis=1)[:, None]
    acc = tl.zeros([HEADS_PER_PROG, 512], dtype=tl.float32)
    for k in range(num_splits):
        wk = tl.sum(tl.where(sp[None, :] == k, w, 0.0), axis=1)
        part = tl.load(part_o_ptr + ((tok * NUM_HEADS + head) * num_splits + k)[:, None] * 512 + d[None, :])
        acc += wk[:, None] * part
    tl.store(out_ptr + tok * stride_o_tok + head[:, None] * stride_o_head + d[None, :], _to_bf16(acc, EXACT_RNE))


@triton.jit
def mla_decode_reduce_tile_kernel(part_o_ptr, part_lse_ptr, out_ptr, stride_o_tok, stride_o_head, num_splits,
                                  NUM_HEADS: tl.constexpr, SPLITS_P2: tl.constexpr, BLOCK_D: tl.constexpr,
                                  EXACT_RNE: tl.constexpr, PDL_WAIT: tl.constexpr = False):
    """Grid (total_q, NUM_HEADS, 512 // BLOCK_D): one (query, head, d-block) per program, every split's
    partial loaded as one [SPLITS_P2, BLOCK_D] tile. The loop reduce above waits one memory latency per
    split (16-64 dependent trips at small batch); this one waits about once. PDL_WAIT as above."""
    tok = tl.program_id(0)
    head = tl.program_id(1)
    d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    sp = tl.arange(0, SPLITS_P2)
    sp_mask = sp < num_splits
    row = (tok * NUM_HEADS + head) * num_splits + sp
    if PDL_WAIT:
        gdc_wait()
    lse = tl.load(part_lse_ptr + row, mask=sp_mask, other=float("-inf"))
    part = tl.load(part_o_ptr + row[:, None] * 512 + d[None, :], mask=sp_mask[:, None], other=0.0)
    m = tl.max(lse, axis=0)  # every (query, head) sees >= 1 token, so m is finite
    w = tl.exp2(lse - m)
    acc = tl.sum(part * w[:, None], axis=0) / tl.sum(w, axis=0)
    tl.store(out_ptr + tok * stride_o_tok + head * stride_o_head + d, _to_bf16(acc, EXACT_RNE))
