#include "interp/kernels/gemm.hpp"
#include "exec/cpu_features.hpp"
#include "interp/kernels/kernel_support.hpp"
#include <Eigen/Core>
#define EIGEN_NAMESPACE Eigen
#include "interp/kernels/gemm_eigen.inc"
#include "kiln_config.h"

namespace kiln::interp {

void detail::gemm_f32_baseline(const GemmF32& gemm) { eigen_gemm(gemm); }

namespace {

void gemm_one_thread(const GemmF32& gemm) {
#if KILN_HAS_AVX2_KERNELS
  if (exec::cpu_has_avx2_fma()) return detail::gemm_f32_avx2(gemm);
#endif
  detail::gemm_f32_baseline(gemm);
}

// Column blocks are multiples of this (a few of Eigen's register-block widths); rows split only
// when the product is too narrow to split its columns.
constexpr int64_t kBlockAlign = 64;

GemmF32 column_block(GemmF32 g, int64_t begin, int64_t end) {
  g.b += g.b_transposed ? begin * g.ldb : begin;
  g.c += begin;
  g.n = end - begin;
  return g;
}

GemmF32 row_block(GemmF32 g, int64_t begin, int64_t end) {
  g.a += begin * g.lda;
  g.c += begin * g.ldc;
  g.m = end - begin;
  return g;
}

} // namespace

void gemm_f32(const GemmF32& gemm) {
  const int64_t blocks = std::min<int64_t>(gemm.threads, 64);
  const bool split_columns = gemm.n >= 2 * kBlockAlign;
  const int64_t extent = split_columns ? gemm.n : gemm.m;
  if (blocks <= 1 || extent < 2 * 8 || !exec::worth_parallel(gemm.m * gemm.n * gemm.k)) return gemm_one_thread(gemm);
  const int64_t align = split_columns ? kBlockAlign : 8;
  const int64_t step = ((extent + blocks - 1) / blocks + align - 1) / align * align; // blocks cover extent
  exec::parallel_for(blocks, true, [&](int64_t block) {
    const int64_t begin = std::min(extent, block * step), end = std::min(extent, begin + step);
    if (begin < end) gemm_one_thread(split_columns ? column_block(gemm, begin, end) : row_block(gemm, begin, end));
  });
}

} // namespace kiln::interp
