#include "interp/kernels/gemm.hpp"
#include "interp/kernels/cpu_features.hpp"
#include <Eigen/Core>
#define EIGEN_NAMESPACE Eigen
#include "interp/kernels/gemm_eigen.inc"
#include "kiln_config.h"

namespace kiln::interp {

void detail::gemm_f32_baseline(const GemmF32& gemm) { eigen_gemm(gemm); }

void gemm_f32(const GemmF32& gemm) {
#if KILN_HAS_AVX2_KERNELS
  if (cpu_has_avx2_fma()) return detail::gemm_f32_avx2(gemm);
#endif
  detail::gemm_f32_baseline(gemm);
}

} // namespace kiln::interp
