// Compiled with -mavx2 -mfma and called only after a CPU check. Eigen's namespace is renamed so
// none of its (inline, weak) symbols can be merged with the baseline build's.
#define Eigen kiln_eigen_avx2
#include <Eigen/Core>
#undef Eigen
#define EIGEN_NAMESPACE kiln_eigen_avx2
#include "interp/kernels/gemm.hpp"
#include "interp/kernels/gemm_eigen.inc"

void kiln::interp::detail::gemm_f32_avx2(const GemmF32& gemm) { eigen_gemm(gemm); }
int64_t kiln::interp::detail::gemm_workspace_floats_avx2(const GemmF32& gemm) {
  return eigen_gemm_workspace_floats(gemm);
}
