// twin_affine.cu -- the CUDA twin's test kernel for mla/kernels/hip/launcher.py (ModuleLauncher on
// the CUDA driver API). Built by clang the way the gfx950 code objects are: device only, no vendor
// headers (python -m mla.kernels.hip.build --twin-ptx -> prebuilt/twin_affine.sm_90.ptx).
// The argument list puts a pointer after an int, so the launcher's table must insert padding;
// blockIdx.y selects a row, so the grid's second dimension is checked too.
#define TWIN_GLOBAL extern "C" __attribute__((global))

// y[row * n + i] = a * x[row * n + i] + b + row
TWIN_GLOBAL void twin_affine(const float* __restrict__ x, int n, float* __restrict__ y, float a, float b) {
  const int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
  const int row = __nvvm_read_ptx_sreg_ctaid_y();
  if (i < n) y[(long)row * n + i] = a * x[(long)row * n + i] + b + (float)row;
}
