// mla_mxfp4_torch.hip -- PyTorch bindings for the gfx950 MXFP4 MLA decode (ROCm builds only).
//
// Built by mla.kernels.hip.build.load_variant() through torch.utils.cpp_extension.load with
// -DMLA_BN=... -DMLA_NW=... -DMLA_USE_IGLP=... -DMLA_PREFETCH=... --offload-arch=gfx950.
// NOT RUN HERE (no MI355X in this project); the offline ISA lab compiles only the device code.
#include <torch/extension.h>
#include <ATen/hip/HIPContext.h>

#include "mla_mxfp4_decode.hip"

// Launch split-K partials then the LSE merge on the current stream. Shapes are checked in
// Python (mla/backends/hip_backend.py); here only what would corrupt memory is re-checked.
void mla_mxfp4_decode(torch::Tensor q, torch::Tensor kv_nib, torch::Tensor kv_scale,
                      torch::Tensor qo_indptr, torch::Tensor kv_indptr, torch::Tensor part_o,
                      torch::Tensor part_lse, torch::Tensor out, int64_t num_splits,
                      double qk_scale_log2) {
  TORCH_CHECK(q.is_contiguous() && q.size(1) == mla::NH && q.size(2) == mla::DQK, "q layout");
  TORCH_CHECK(kv_nib.stride(0) % 16 == 0, "MXFP4 row stride must be a multiple of 16 bytes");
  const int total_q = (int)q.size(0), batch = (int)kv_indptr.numel() - 1;
  TORCH_CHECK(part_o.size(0) >= num_splits && part_lse.size(0) >= num_splits, "split buffers");
  hipStream_t stream = at::hip::getCurrentHIPStreamMasqueradingAsCUDA().stream();
  hipLaunchKernelGGL(mla_mxfp4_partial, dim3((unsigned)num_splits, (unsigned)batch),
                     dim3(64 * MLA_NW), 0, stream,
                     reinterpret_cast<const uint16_t*>(q.data_ptr()), kv_nib.data_ptr<uint8_t>(),
                     kv_scale.data_ptr<uint8_t>(), qo_indptr.data_ptr<int>(),
                     kv_indptr.data_ptr<int>(), part_o.data_ptr<float>(),
                     part_lse.data_ptr<float>(), total_q, (int)num_splits,
                     (int)kv_nib.stride(0), (int)kv_scale.stride(0), (float)qk_scale_log2);
  hipLaunchKernelGGL(mla_lse_reduce, dim3((unsigned)(total_q * mla::NH)), dim3(128), 0, stream,
                     part_o.data_ptr<float>(), part_lse.data_ptr<float>(),
                     reinterpret_cast<uint16_t*>(out.data_ptr()), total_q, (int)num_splits);
}

// Registers, LDS and scratch of the compiled partial kernel, as the runtime reports them.
std::vector<int64_t> mla_mxfp4_kernel_attributes() {
  hipFuncAttributes a;
  TORCH_CHECK(hipFuncGetAttributes(&a, reinterpret_cast<const void*>(mla_mxfp4_partial)) ==
                  hipSuccess, "hipFuncGetAttributes failed");
  return {a.numRegs, (int64_t)a.sharedSizeBytes, (int64_t)a.localSizeBytes};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("decode", &mla_mxfp4_decode, "MXFP4 MLA decode: split-K partials + LSE reduce");
  m.def("kernel_attributes", &mla_mxfp4_kernel_attributes, "[numRegs, LDS bytes, scratch bytes]");
}
