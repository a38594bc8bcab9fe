// mla_mxfp4_decode.hip -- absorbed-MLA decode on gfx950 (MI355X) with an MXFP4 KV cache.
//
// NOT RUN HERE: this project has no MI355X. The ISA lab (python -m mla isa --target gfx950)
// compiles every variant of this file with upstream clang and reports registers, LDS,
// occupancy and the instruction mix; correctness on hardware is for a ROCm machine
// (mla.backends.hip_backend checks it against mla.reference before timing).
//
// Design (after the schedule-variant kernel in shared/seeds/000; the code is our own):
//   one workgroup = one (batch element, KV split); NW waves; tiles of BN KV tokens.
//   Q      bf16 -> MXFP4 in registers, once per wave (16 heads x 576 dims, block-32 E8M0 scales).
//   QK     v_mfma_scale_f32_16x16x128_f8f6f4 with both operands FP4 straight from the cache:
//          the packed K rows already have the operand layout, so K never passes through LDS
//          for QK. 576 = 4.5 x 128, so the fifth k-step has its upper half zeroed.
//   V      the same K rows, dims 0..511, converted FP4 -> fp8 (scale applied, exact for
//          block scales within fp8's range) and written to LDS row-major [token][dim].
//   PV     v_mfma_f32_16x16x32_fp8_fp8; V is the B operand and needs 8 consecutive *tokens*
//          per lane for one dim, i.e. a column of the LDS tile: ds_read_b64_tr_b8 reads it
//          transposed in one instruction.
//   P      exp2 in fp32, times 256 (a power of two, so undoing it is exact), fp8 in LDS.
//   out    per split: normalised partial O (fp32) and its log2-sum-exp; mla_lse_reduce merges.
//
// Compile-time knobs (one module per variant; mla/kernels/hip/variants.py names them):
//   MLA_BN        KV tokens per tile: 64 or 128
//   MLA_NW        waves per workgroup (BN/16 must be a multiple of NW)
//   MLA_USE_IGLP  1: __builtin_amdgcn_iglp_opt(1) in the QK region, (0) in the PV region
//   MLA_PREFETCH  1: issue the next tile's K loads before PV (cross-iteration prefetch)
// Supported: 16 query heads, one query token per batch element (q_seq_len 1); the Python
// backend raises ValueError for anything else.
#include "mla_compat.h"

#ifndef MLA_BN
#define MLA_BN 64
#endif
#ifndef MLA_NW
#define MLA_NW 4
#endif
#ifndef MLA_USE_IGLP
#define MLA_USE_IGLP 0
#endif
#ifndef MLA_PREFETCH
#define MLA_PREFETCH 0
#endif

namespace mla {

constexpr int NH = 16;           // query heads (one 16-row MFMA tile)
constexpr int DQK = 576;         // q/k dims
constexpr int DV = 512;          // v dims (= first 512 of the KV row)
constexpr int BN = MLA_BN;
constexpr int NW = MLA_NW;
constexpr int SUB = BN / 16;     // 16-token sub-tiles per tile (one QK MFMA column block each)
constexpr int SUB_W = SUB / NW;  // ... per wave
constexpr int VCOL_W = DV / 16 / NW;  // 16-wide V column blocks per wave (PV)
constexpr int PV_KSTEPS = BN / 32;    // PV MFMA k-steps (32 tokens each)
// fp8 V tile row pitch: 512 + 16 bytes. 16-byte aligned for the ds_write_b128 stores, and the
// extra 4 banks per row spread the 8 rows of one transposed read over 32 distinct banks.
constexpr int KPITCH = DV + 16;
constexpr int PPITCH = BN + 8;   // P tile pitch: 8-byte aligned rows, staggered banks
constexpr float P_SCALE = 256.0f;     // P in [0,1] -> [0,256] uses fp8's normal range
// "Minus infinity" as a finite number, so -ffast-math builds (finite-math-only) stay correct:
// exp2(MLA_NEG_BIG - m) is still exactly 0.
#define MLA_NEG_BIG (-1.0e30f)

static_assert(SUB % NW == 0 && SUB_W >= 1, "BN/16 must be a positive multiple of NW");
static_assert(DV % (16 * NW) == 0, "512 must split into 16-wide column blocks per wave");
static_assert(BN % 32 == 0, "PV k-steps are 32 tokens");

// ---- number formats ------------------------------------------------------------------------

// 8 floats -> 8 E2M1 nibbles (element 2i in the low nibble of byte i), value / scale, RNE.
// The selector is an immediate, hence four spelled-out calls.
MLA_DEV uint32_t pack_fp4x8(const float* x, float scale) {
  uint32_t w = 0;
  w = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(w, x[0], x[1], scale, 0);
  w = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(w, x[2], x[3], scale, 1);
  w = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(w, x[4], x[5], scale, 2);
  w = __builtin_amdgcn_cvt_scalef32_pk_fp4_f32(w, x[6], x[7], scale, 3);
  return w;
}

// 8 E2M1 nibbles * scale -> 8 fp8 e4m3 (OCP) bytes in two dwords. Exact while the scaled
// values stay inside e4m3's range (|x| <= 448, >= 2^-9), true for block scales 2^-7..2^6.
MLA_DEV void fp4x8_to_fp8x8(uint32_t w, float scale, int& lo, int& hi) {
  mla_f32x2 a = __builtin_amdgcn_cvt_scalef32_pk_f32_fp4(w, scale, 0);
  mla_f32x2 b = __builtin_amdgcn_cvt_scalef32_pk_f32_fp4(w, scale, 1);
  mla_f32x2 c = __builtin_amdgcn_cvt_scalef32_pk_f32_fp4(w, scale, 2);
  mla_f32x2 d = __builtin_amdgcn_cvt_scalef32_pk_f32_fp4(w, scale, 3);
  lo = __builtin_amdgcn_cvt_pk_fp8_f32(a[0], a[1], 0, false);
  lo = __builtin_amdgcn_cvt_pk_fp8_f32(b[0], b[1], lo, true);
  hi = __builtin_amdgcn_cvt_pk_fp8_f32(c[0], c[1], 0, false);
  hi = __builtin_amdgcn_cvt_pk_fp8_f32(d[0], d[1], hi, true);
}

// One MXFP4 block of Q: 32 bf16 -> 16 bytes of nibbles + an E8M0 exponent.
// Scale rule ("even", as aiter): round amax's mantissa at its second bit, so amax is bumped to
// the next power of two once it is >= 1.75 * 2^k, then scale = 2^(k - 2). amax / scale < 7,
// and E2M1 rounds everything in [5, 7) to 6: no value is clipped by more than rounding would.
MLA_DEV void quant_q_block(const uint16_t* src, mla_i32x4& packed, int& e8) {
  float x[32];
  const mla_i32x4* v = reinterpret_cast<const mla_i32x4*>(src);  // 4 x 16-byte loads
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    mla_i32x4 u = v[i];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[i * 8 + 2 * k] = mla_bf16_to_f32((uint16_t)(u[k] & 0xFFFF));
      x[i * 8 + 2 * k + 1] = mla_bf16_to_f32((uint16_t)((uint32_t)u[k] >> 16));
    }
  }
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) amax = __builtin_fmaxf(amax, __builtin_fabsf(x[i]));
  const uint32_t rounded = (mla_as_u32(amax) + 0x200000u) & 0x7F800000u;
  int e = rounded ? (int)(rounded >> 23) - 2 : 127;  // all-zero block: scale 1
  e = e < 1 ? 1 : (e > 254 ? 254 : e);
  e8 = e;
  const float scale = mla_e8m0_to_f32((uint32_t)e);
  packed[0] = (int)pack_fp4x8(x + 0, scale);
  packed[1] = (int)pack_fp4x8(x + 8, scale);
  packed[2] = (int)pack_fp4x8(x + 16, scale);
  packed[3] = (int)pack_fp4x8(x + 24, scale);
}

// ---- K tile fragments ----------------------------------------------------------------------
// For one 16-token sub-tile, lane (r = lane & 15, g = lane >> 4) holds token r's dims
// [128 j + 32 g, +32) for k-step j = 0..4: 16 bytes of nibbles and one E8M0 scale each --
// exactly the B-operand layout of the 16x16x128 FP4 MFMA (and its per-lane block scale).
struct KFrag {
  mla_i32x4 nib[5];
  int scale[5];
};

MLA_DEV void load_k_frag(KFrag& f, const uint8_t* __restrict__ kv_nib,
                         const uint8_t* __restrict__ kv_scale, long row, int nib_stride,
                         int scale_stride, int g) {
  const uint8_t* np = kv_nib + row * nib_stride + g * 16;
  const uint8_t* sp = kv_scale + row * scale_stride + g;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f.nib[j] = *reinterpret_cast<const mla_i32x4*>(np + j * 64);
    f.scale[j] = sp[4 * j];
  }
  // dims 512..575 (rope) fill half of the fifth k-step; lanes g >= 2 feed zeros.
  const bool rope = g < 2;
  f.nib[4] = rope ? *reinterpret_cast<const mla_i32x4*>(np + 256) : mla_i32x4{0, 0, 0, 0};
  f.scale[4] = rope ? (int)sp[16] : 127;
}

MLA_DEV mla_i32x8 widen(mla_i32x4 v) { return mla_i32x8{v[0], v[1], v[2], v[3], 0, 0, 0, 0}; }

}  // namespace mla

using namespace mla;

// Split-K partial attention. Grid: (num_splits, batch). Block: 64 * NW threads.
// part_o  (num_splits, total_q, 16, 512) fp32, normalised within the split
// part_lse(num_splits, total_q, 16)      fp32, log2(sum exp2) incl. the running max; -1e30 = empty
extern "C" __global__ __launch_bounds__(64 * MLA_NW) void mla_mxfp4_partial(
    const uint16_t* __restrict__ q, const uint8_t* __restrict__ kv_nib,
    const uint8_t* __restrict__ kv_scale, const int* __restrict__ qo_indptr,
    const int* __restrict__ kv_indptr, float* __restrict__ part_o, float* __restrict__ part_lse,
    int total_q, int num_splits, int nib_stride, int scale_stride, float qk_scale_log2) {
  __shared__ __attribute__((aligned(16))) uint8_t v_tile[BN][KPITCH];  // fp8 V, [token][dim]
  __shared__ __attribute__((aligned(16))) uint8_t p_tile[NH][PPITCH];  // fp8 P, [head][token]
  __shared__ float wave_red[NW][NH];                                  // cross-wave max / sum

  const int split = mla_bid_x(), b = mla_bid_y();
  const int tid = mla_tid(), w = tid >> 6, lane = tid & 63, r = lane & 15, g = lane >> 4;
  const int q_row = qo_indptr[b];
  const int kv_begin = kv_indptr[b], kv_len = kv_indptr[b + 1] - kv_begin;
  // Splits cover whole tiles so only the last tile of a split is ragged.
  const int chunk = ((kv_len + num_splits - 1) / num_splits + BN - 1) / BN * BN;
  const int t_begin = split * chunk;
  const int t_end = __builtin_elementwise_min(kv_len, t_begin + chunk);
  float* po = part_o + ((long)split * total_q + q_row) * NH * DV;
  float* pl = part_lse + ((long)split * total_q + q_row) * NH;

  if (t_begin >= t_end) {  // empty split (short sequence): weight 0 in the reduce
    for (int i = tid; i < NH * DV; i += 64 * NW) po[i] = 0.f;
    if (tid < NH) pl[tid] = MLA_NEG_BIG;
    return;
  }

  // Q -> MXFP4 A-operand fragments: lane (r, g) holds head r, dims [128 j + 32 g, +32).
  // Every wave quantises its own copy (18 KB of L2-resident reads per block): no LDS, no barrier.
  mla_i32x4 qf[5];
  int qsc[5];
  {
    const uint16_t* qh = q + ((long)q_row * NH + r) * DQK + g * 32;
#pragma unroll
    for (int j = 0; j < 4; ++j) quant_q_block(qh + j * 128, qf[j], qsc[j]);
    if (g < 2) {
      quant_q_block(qh + 512, qf[4], qsc[4]);
    } else {
      qf[4] = mla_i32x4{0, 0, 0, 0};
      qsc[4] = 127;
    }
  }

  // Output accumulators: oacc[u][v] = O[head 4g+v][dim (w*VCOL_W+u)*16 + r], scaled by P_SCALE.
  mla_f32x4 oacc[VCOL_W];
#pragma unroll
  for (int u = 0; u < VCOL_W; ++u) oacc[u] = mla_f32x4{0.f, 0.f, 0.f, 0.f};
  float m_run[4], l_part[4];  // running max (block-uniform) and this lane's share of the sum
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    m_run[v] = MLA_NEG_BIG;
    l_part[v] = 0.f;
  }

  KFrag kf[SUB_W];
  // Row of sub-tile t's token r in tile starting at t0; rows past the split are clamped to
  // its last token (a safe address) and masked out of the softmax below.
  auto kv_row = [&](int t0, int t) -> long {
    const int tok = t0 + (w * SUB_W + t) * 16 + r;
    return kv_begin + (long)__builtin_elementwise_min(tok, t_end - 1);
  };
#if MLA_PREFETCH
#pragma unroll
  for (int t = 0; t < SUB_W; ++t)
    load_k_frag(kf[t], kv_nib, kv_scale, kv_row(t_begin, t), nib_stride, scale_stride, g);
#endif

  for (int t0 = t_begin; t0 < t_end; t0 += BN) {
#if !MLA_PREFETCH
#pragma unroll
    for (int t = 0; t < SUB_W; ++t)
      load_k_frag(kf[t], kv_nib, kv_scale, kv_row(t0, t), nib_stride, scale_stride, g);
#endif
    // ---- S = Q K^T: lane (r, g) gets S[head 4g+v][token (w*SUB_W+t)*16 + r] in s[t][v] ----
    mla_f32x4 s[SUB_W];
#pragma unroll
    for (int t = 0; t < SUB_W; ++t) {
      s[t] = mla_f32x4{0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < 5; ++j)  // cbsz = blgp = 4: both operands E2M1
        s[t] = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(
            widen(qf[j]), widen(kf[t].nib[j]), s[t], 4, 4, 0, qsc[j], 0, kf[t].scale[j]);
    }
#if MLA_USE_IGLP
    MLA_IGLP_OPT(1);
#endif
    // ---- tile max per head: 16 lanes by DPP, then across waves through LDS ----
    float m_new[4], alpha[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      float m = MLA_NEG_BIG;
#pragma unroll
      for (int t = 0; t < SUB_W; ++t) {
        const int tok = t0 + (w * SUB_W + t) * 16 + r;
        const float x = tok < t_end ? s[t][v] * qk_scale_log2 : MLA_NEG_BIG;
        s[t][v] = x;
        m = __builtin_fmaxf(m, x);
      }
      m = mla_row16_max(m);
      if (r == 0) wave_red[w][4 * g + v] = m;
    }
    mla_sync();  // (1) maxima visible; every wave is past the previous tile's PV
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      float m = m_run[v];
#pragma unroll
      for (int k = 0; k < NW; ++k) m = __builtin_fmaxf(m, wave_red[k][4 * g + v]);
      m_new[v] = m;  // finite: every tile holds at least one unmasked token
      alpha[v] = mla_exp2(m_run[v] - m);  // 0 on the first tile
      m_run[v] = m;
    }
    // ---- P = exp2(S - m) -> fp8 in LDS; sums stay per lane until the end ----
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      float sum = 0.f;
#pragma unroll
      for (int t = 0; t < SUB_W; ++t) {
        const float p = mla_exp2(s[t][v] - m_new[v]);
        sum += p;
        const int pk = __builtin_amdgcn_cvt_pk_fp8_f32(p * P_SCALE, 0.f, 0, false);
        p_tile[4 * g + v][(w * SUB_W + t) * 16 + r] = (uint8_t)(pk & 0xFF);
      }
      l_part[v] = l_part[v] * alpha[v] + sum;
    }
#pragma unroll
    for (int u = 0; u < VCOL_W; ++u)
#pragma unroll
      for (int v = 0; v < 4; ++v) oacc[u][v] *= alpha[v];
    // ---- V: FP4 -> fp8 rows of the LDS tile (dims 0..511 = k-steps 0..3). Written after
    // barrier (1), so one buffer suffices: no wave can still be reading the previous tile.
#pragma unroll
    for (int t = 0; t < SUB_W; ++t) {
      uint8_t* dst = &v_tile[(w * SUB_W + t) * 16 + r][0];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float sc = mla_e8m0_to_f32((uint32_t)kf[t].scale[j]);
        int o[8];  // 32 fp8 bytes = two 16-byte LDS stores
        fp4x8_to_fp8x8((uint32_t)kf[t].nib[j][0], sc, o[0], o[1]);
        fp4x8_to_fp8x8((uint32_t)kf[t].nib[j][1], sc, o[2], o[3]);
        fp4x8_to_fp8x8((uint32_t)kf[t].nib[j][2], sc, o[4], o[5]);
        fp4x8_to_fp8x8((uint32_t)kf[t].nib[j][3], sc, o[6], o[7]);
        *reinterpret_cast<mla_i32x4*>(dst + j * 128 + g * 32) = mla_i32x4{o[0], o[1], o[2], o[3]};
        *reinterpret_cast<mla_i32x4*>(dst + j * 128 + g * 32 + 16) =
            mla_i32x4{o[4], o[5], o[6], o[7]};
      }
    }
#if MLA_PREFETCH
    // The raw K registers are dead now: refill them with the next tile so the loads fly during
    // barrier (2) and PV. The sched barrier stops the compiler from sinking them below PV.
    if (t0 + BN < t_end) {
#pragma unroll
      for (int t = 0; t < SUB_W; ++t)
        load_k_frag(kf[t], kv_nib, kv_scale, kv_row(t0 + BN, t), nib_stride, scale_stride, g);
    }
    MLA_SCHED_BARRIER();
#endif
    mla_sync();  // (2) P and V tiles complete
    // ---- O += P V: A = P[head r][tokens 32 kt + 8 g, +8], B = V read transposed ----
#pragma unroll
    for (int kt = 0; kt < PV_KSTEPS; ++kt) {
      const long a = *reinterpret_cast<const long*>(&p_tile[r][kt * 32 + g * 8]);
#pragma unroll
      for (int u = 0; u < VCOL_W; ++u) {
        const int c0 = (w * VCOL_W + u) * 16;
        // The 16 lanes of group g read the 8x16-byte block (tokens 32 kt + 8 g .. +8) x
        // (dims c0 .. c0+16): lane r addresses row r/2, bytes 8 (r&1) .. +8, and receives
        // column r, i.e. dim c0 + r of those 8 tokens -- the fp8 MFMA's B layout.
        const mla_i32x2 bv = __builtin_amdgcn_ds_read_tr8_b64_v2i32(
            (mla_lds_i32x2*)(void*)&v_tile[kt * 32 + g * 8 + (r >> 1)][c0 + (r & 1) * 8]);
        oacc[u] = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(
            a, __builtin_bit_cast(long, bv), oacc[u], 0, 0, 0);
      }
    }
#if MLA_USE_IGLP
    MLA_IGLP_OPT(0);
#endif
  }

  // ---- epilogue: total sum per head (lanes, then waves), normalise, write the partial ----
  mla_sync();  // wave_red is reused below
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    const float l = mla_row16_sum(l_part[v]);
    if (r == 0) wave_red[w][4 * g + v] = l;
  }
  mla_sync();
  float inv[4];
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    float l = 0.f;
#pragma unroll
    for (int k = 0; k < NW; ++k) l += wave_red[k][4 * g + v];
    inv[v] = 1.f / (l * P_SCALE);
    if (w == 0 && r == 0) pl[4 * g + v] = m_run[v] + __builtin_log2f(l);
  }
#pragma unroll
  for (int u = 0; u < VCOL_W; ++u)
#pragma unroll
    for (int v = 0; v < 4; ++v)
      po[(4 * g + v) * DV + (w * VCOL_W + u) * 16 + r] = oacc[u][v] * inv[v];
}

// Merge the splits: out[row][h] = sum_s 2^(lse_s - M) O_s / sum_s 2^(lse_s - M).
// Grid: total_q * 16 (one block per query row and head). Block: 128 threads x 4 dims.
extern "C" __global__ __launch_bounds__(128) void mla_lse_reduce(
    const float* __restrict__ part_o, const float* __restrict__ part_lse,
    uint16_t* __restrict__ out, int total_q, int num_splits) {
  const int rh = mla_bid_x(), d = mla_tid() * 4;
  const long stride = (long)total_q * NH;  // one split's worth of (row, head) pairs
  float mx = MLA_NEG_BIG;
  for (int s = 0; s < num_splits; ++s) mx = __builtin_fmaxf(mx, part_lse[s * stride + rh]);
  mla_f32x4 acc = {0.f, 0.f, 0.f, 0.f};
  float den = 0.f;
  for (int s = 0; s < num_splits; ++s) {
    const float wgt = mla_exp2(part_lse[s * stride + rh] - mx);  // empty split: 2^(-1e30) = 0
    const mla_f32x4 o = *reinterpret_cast<const mla_f32x4*>(part_o + (s * stride + rh) * DV + d);
    acc += wgt * o;
    den += wgt;
  }
  const float inv = 1.f / den;
  uint16_t* dst = out + (long)rh * DV + d;
#pragma unroll
  for (int i = 0; i < 4; ++i) dst[i] = mla_f32_to_bf16(acc[i] * inv);
}
