// mla_compat.h -- the few HIP device-side names the MLA kernels use, for two kinds of build.
//
//   * With hipcc and the ROCm headers: <hip/hip_runtime.h> is included and this header only adds
//     the helpers below (not how this repo builds; kept so the file also compiles that way).
//   * With a plain clang (`clang -x hip --cuda-device-only -nogpuinc -nogpulib
//     --offload-arch=gfx950`, no ROCm installed; define MLA_OFFLINE_COMPAT): there are no HIP
//     headers at all, so we spell the CUDA/HIP attributes and the handful of runtime builtins
//     ourselves.  Only what the kernels need; no host API. This is how both the ISA lab and the
//     code objects the hip backend loads are built (mla/kernels/hip/build.py).
//
// The kernel bodies use only the helpers named mla_* below, so both builds compile the same
// code and the offline ISA is the ISA the ROCm build would produce from the same compiler.
#pragma once

#include <stdint.h>

#if defined(MLA_OFFLINE_COMPAT)
// --- offline: attributes that hip_runtime.h would define -----------------------------------
#  define __global__ __attribute__((global))
#  define __device__ __attribute__((device))
#  define __host__ __attribute__((host))
#  define __shared__ __attribute__((shared))
#  define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#else
#  include <hip/hip_runtime.h>
#endif

#define MLA_DEV __device__ __forceinline__
#ifndef __forceinline__
#  define __forceinline__ inline __attribute__((always_inline))
#endif

// Vector types the MFMA builtins take.
typedef int      mla_i32x2 __attribute__((ext_vector_type(2)));
typedef int      mla_i32x4 __attribute__((ext_vector_type(4)));
typedef int      mla_i32x8 __attribute__((ext_vector_type(8)));
typedef float    mla_f32x2 __attribute__((ext_vector_type(2)));
typedef float    mla_f32x4 __attribute__((ext_vector_type(4)));
typedef __attribute__((address_space(3))) mla_i32x2 mla_lds_i32x2;

// --- work-item ids (what threadIdx.x / blockIdx.x lower to) ---------------------------------
MLA_DEV int mla_tid()   { return (int)__builtin_amdgcn_workitem_id_x(); }
MLA_DEV int mla_bid_x() { return (int)__builtin_amdgcn_workgroup_id_x(); }
MLA_DEV int mla_bid_y() { return (int)__builtin_amdgcn_workgroup_id_y(); }

// __syncthreads(): release fence, s_barrier, acquire fence -- the same sequence HIP emits.
MLA_DEV void mla_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// --- scheduling hints, no-ops for a host pass ------------------------------------------------
#if defined(__HIP_DEVICE_COMPILE__) || defined(MLA_OFFLINE_COMPAT)
#  define MLA_IGLP_OPT(mask)  __builtin_amdgcn_iglp_opt(mask)
#  define MLA_SCHED_BARRIER() __builtin_amdgcn_sched_barrier(0)
#else
#  define MLA_IGLP_OPT(mask)  ((void)0)
#  define MLA_SCHED_BARRIER() ((void)0)
#endif

// --- bit casts and number formats ------------------------------------------------------------
MLA_DEV float    mla_as_f32(uint32_t u) { return __builtin_bit_cast(float, u); }
MLA_DEV uint32_t mla_as_u32(float f)    { return __builtin_bit_cast(uint32_t, f); }

// bf16 -> f32 is exact: the bf16 bits are the top half of the f32.
MLA_DEV float mla_bf16_to_f32(uint16_t h) { return mla_as_f32((uint32_t)h << 16); }

// f32 -> bf16, round to nearest even (finite inputs; the kernels never store NaN/Inf on purpose).
MLA_DEV uint16_t mla_f32_to_bf16(float f) {
  uint32_t u = mla_as_u32(f);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

// E8M0 byte -> the power of two it encodes, 2^(e-127), by placing e in the f32 exponent field.
// Differs from the OCP spec only at the ends: e = 0 gives 0.0 (spec: 2^-127) and e = 255 gives
// +Inf (spec: NaN); neither occurs for finite, non-degenerate data.
MLA_DEV float mla_e8m0_to_f32(uint32_t e) { return mla_as_f32((e & 0xFFu) << 23); }

// exp2 on the hardware transcendental unit (v_exp_f32); callers pre-multiply by log2(e).
MLA_DEV float mla_exp2(float x) { return __builtin_amdgcn_exp2f(x); }

// --- reductions across the 16 lanes of one MFMA row group (DPP, no LDS traffic) -------------
// A 16x16 MFMA result puts one column per lane inside each 16-lane row of the wave, so a
// reduction "over the 16 columns" is a reduction inside a DPP row. quad_perm swaps neighbours
// (xor 1, xor 2), row_half_mirror folds lanes 0-3 onto 4-7, row_mirror folds 0-7 onto 8-15;
// after the four steps every lane of the row holds the result.
#define MLA_DPP_QP_XOR1     0xB1   // quad_perm [1,0,3,2]
#define MLA_DPP_QP_XOR2     0x4E   // quad_perm [2,3,0,1]
#define MLA_DPP_ROW_MIRROR  0x140
#define MLA_DPP_ROW_HMIRROR 0x141

#define MLA_DPP_F32(v, ctrl) \
  mla_as_f32((uint32_t)__builtin_amdgcn_update_dpp(0, (int)mla_as_u32(v), (ctrl), 0xF, 0xF, false))

MLA_DEV float mla_row16_max(float v) {
  v = __builtin_fmaxf(v, MLA_DPP_F32(v, MLA_DPP_QP_XOR1));
  v = __builtin_fmaxf(v, MLA_DPP_F32(v, MLA_DPP_QP_XOR2));
  v = __builtin_fmaxf(v, MLA_DPP_F32(v, MLA_DPP_ROW_HMIRROR));
  v = __builtin_fmaxf(v, MLA_DPP_F32(v, MLA_DPP_ROW_MIRROR));
  return v;
}

MLA_DEV float mla_row16_sum(float v) {
  v += MLA_DPP_F32(v, MLA_DPP_QP_XOR1);
  v += MLA_DPP_F32(v, MLA_DPP_QP_XOR2);
  v += MLA_DPP_F32(v, MLA_DPP_ROW_HMIRROR);
  v += MLA_DPP_F32(v, MLA_DPP_ROW_MIRROR);
  return v;
}
