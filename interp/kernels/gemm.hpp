#pragma once
// Deliberately free of kiln and standard-library headers: gemm_avx2.cpp includes it while compiled
// with -mavx2 -mfma, and any inline function it instantiated could be merged into baseline code.
#include <cstddef>
#include <cstdint>

namespace kiln::interp {

// Row-major f32 product c[m, n] = a[m, k] * b[k, n]; b is read as [n, k] (its transpose) when
// b_transposed. Leading dimensions are in elements.
struct GemmF32 {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool b_transposed = false;
  int threads = 1; // threads for this product (1 inside an already parallel loop)
  // gemm_workspace_bytes(*this) bytes, 64-byte aligned, for Eigen's packed blocks (a step's
  // scratch), so that a call allocates nothing; null: Eigen allocates them (planning, eager mode).
  float* workspace = nullptr;
};

// Picks the widest Eigen build this CPU runs (AVX2+FMA on x86-64 where compiled in, else baseline).
// On aarch64 the baseline build is already NEON code: Eigen has its own NEON GEMM kernels.
void gemm_f32(const GemmF32& gemm);
// The workspace gemm_f32 uses for this product (its dims and threads), split across its blocks.
size_t gemm_workspace_bytes(const GemmF32& gemm);

namespace detail {
void gemm_f32_baseline(const GemmF32& gemm);
void gemm_f32_avx2(const GemmF32& gemm);
int64_t gemm_workspace_floats_baseline(const GemmF32& gemm);
int64_t gemm_workspace_floats_avx2(const GemmF32& gemm);
} // namespace detail

} // namespace kiln::interp
