// Offline stand-in for <hip/hip_bf16.h>: a bf16 storage type with float conversions
// (exact widening; round-to-nearest-even narrowing). Device side only; see hip_runtime.h.
#pragma once
#include "hip_runtime.h"

struct __hip_bfloat16 {
  uint16_t data;
  __hip_bfloat16() = default;
  __device__ __hip_bfloat16(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    data = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
  __device__ operator float() const { return __builtin_bit_cast(float, (uint32_t)data << 16); }
};
