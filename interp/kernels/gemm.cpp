#include "interp/kernels/gemm.hpp"
#include "exec/cpu_features.hpp"
#include "interp/kernels/kernel_support.hpp"
#include <Eigen/Core>
#define EIGEN_NAMESPACE Eigen
#include "interp/kernels/gemm_eigen.inc"
#include "kiln_config.h"

namespace kiln::interp {

void detail::gemm_f32_baseline(const GemmF32& gemm) { eigen_gemm(gemm); }
int64_t detail::gemm_workspace_floats_baseline(const GemmF32& gemm) { return eigen_gemm_workspace_floats(gemm); }

namespace {

void gemm_one_thread(const GemmF32& gemm) {
#if KILN_HAS_AVX2_KERNELS
  if (exec::cpu_has_avx2_fma()) return detail::gemm_f32_avx2(gemm);
#endif
  detail::gemm_f32_baseline(gemm);
}

// The blocking, and so the workspace, depends on the build's register blocks: ask the one that runs.
int64_t workspace_floats_one_thread(const GemmF32& gemm) {
#if KILN_HAS_AVX2_KERNELS
  if (exec::cpu_has_avx2_fma()) return detail::gemm_workspace_floats_avx2(gemm);
#endif
  return detail::gemm_workspace_floats_baseline(gemm);
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

// How gemm_f32 splits a product: `count` blocks of `step` columns (or rows) each, the last shorter.
struct BlockSplit {
  bool columns = false;
  int64_t count = 1, step = 0;
};

BlockSplit block_split(const GemmF32& gemm) {
  const int64_t blocks = std::min<int64_t>(gemm.threads, 64);
  const bool split_columns = gemm.n >= 2 * kBlockAlign;
  const int64_t extent = split_columns ? gemm.n : gemm.m;
  if (blocks <= 1 || extent < 2 * 8 || !exec::worth_parallel(gemm.m * gemm.n * gemm.k)) return {};
  const int64_t align = split_columns ? kBlockAlign : 8;
  const int64_t step = ((extent + blocks - 1) / blocks + align - 1) / align * align; // blocks cover extent
  return {split_columns, blocks, step};
}

GemmF32 block_of(const GemmF32& gemm, const BlockSplit& split, int64_t begin) {
  const int64_t extent = split.columns ? gemm.n : gemm.m, end = std::min(extent, begin + split.step);
  return split.columns ? column_block(gemm, begin, end) : row_block(gemm, begin, end);
}

} // namespace

size_t gemm_workspace_bytes(const GemmF32& gemm) {
  const BlockSplit split = block_split(gemm);
  if (split.count == 1) return size_t(workspace_floats_one_thread(gemm)) * sizeof(float);
  // Every block gets the most any block needs: the blocks are alike but the last, and Eigen's
  // blocking is not monotonic in the sizes (a narrower product may take deeper blocks).
  const int64_t extent = split.columns ? gemm.n : gemm.m;
  const int64_t last_begin = (extent - 1) / split.step * split.step;
  const int64_t per_block = std::max(workspace_floats_one_thread(block_of(gemm, split, 0)),
                                     workspace_floats_one_thread(block_of(gemm, split, last_begin)));
  return size_t(split.count * per_block) * sizeof(float);
}

void gemm_f32(const GemmF32& gemm) {
  const BlockSplit split = block_split(gemm);
  if (split.count == 1) return gemm_one_thread(gemm);
  const int64_t extent = split.columns ? gemm.n : gemm.m;
  const int64_t block_floats = gemm.workspace ? int64_t(gemm_workspace_bytes(gemm) / sizeof(float)) / split.count : 0;
  exec::parallel_for(split.count, true, [&](int64_t block) {
    const int64_t begin = std::min(extent, block * split.step);
    if (begin >= extent) return;
    GemmF32 part = block_of(gemm, split, begin);
    if (gemm.workspace) part.workspace = gemm.workspace + block * block_floats;
    gemm_one_thread(part);
  });
}

} // namespace kiln::interp
