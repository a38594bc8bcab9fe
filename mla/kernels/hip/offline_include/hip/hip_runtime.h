// Offline stand-in for <hip/hip_runtime.h>: just enough of HIP's *device* side to compile
// third-party HIP kernels (seed 000's, for the ISA lab) with upstream clang in
// `-x hip --cuda-device-only -nogpuinc -nogpulib` mode, where no ROCm headers exist.
// Device code only; no host API. Our own kernels use ../../mla_compat.h instead.
#pragma once
#include <stdint.h>

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))

struct __hip_offline_uint3 { unsigned x, y, z; };
__device__ __forceinline__ __hip_offline_uint3 __hip_offline_tid() {
  return {__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()};
}
__device__ __forceinline__ __hip_offline_uint3 __hip_offline_bid() {
  return {__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()};
}
#define threadIdx (__hip_offline_tid())
#define blockIdx (__hip_offline_bid())

// __syncthreads(): workgroup release fence, s_barrier, acquire fence (what HIP emits).
__device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// __shfl_xor through ds_bpermute, as HIP implements it (width 64 only here).
__device__ __forceinline__ float __shfl_xor(float v, int mask, int width = 64) {
  (void)width;
  int lane = (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  int r = __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v));
  return __builtin_bit_cast(float, r);
}

// __expf: the hardware exp2 on x * log2(e), as HIP's fast-math __expf lowers.
__device__ __forceinline__ float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
__device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ __forceinline__ int min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int max(int a, int b) { return a > b ? a : b; }

struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
__device__ __forceinline__ uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
