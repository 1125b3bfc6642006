#pragma once
// Like gemm.hpp, free of kiln and standard-library headers: packed_gemm_avx2.cpp includes it while
// compiled with -mavx2 -mfma. The kernels' cache blocking is packed_gemm_blocking.inc.
#include <cstdint>

namespace kiln::interp {

// A product's B operand packed once (a weight): column panels of kPackedPanelWidth floats, each
// panel k rows of kPackedPanelWidth contiguous floats, the last panel padded with zeros. The GEMM
// then streams each panel from cache instead of repacking B on every call, as Eigen does.
inline constexpr int64_t kPackedPanelWidth = 16;

inline int64_t packed_panels(int64_t n) { return (n + kPackedPanelWidth - 1) / kPackedPanelWidth; }
inline int64_t packed_b_floats(int64_t k, int64_t n) { return k * packed_panels(n) * kPackedPanelWidth; }

// c[rows, n] = a[rows, k] * B over rows [row_begin, row_end) and panels [panel_begin, panel_end):
// callers split a product across threads by rows or by panels.
struct PackedGemmF32 {
  const float* a = nullptr;
  int64_t lda = 0;
  const float* packed_b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t k = 0, n = 0;
  int64_t row_begin = 0, row_end = 0;
  int64_t panel_begin = 0, panel_end = 0;
};

namespace detail {
// Needs k > 0; call only where cpu_has_avx2_fma().
void packed_gemm_f32_avx2(const PackedGemmF32& gemm);
// Needs k > 0; built only for aarch64, whose baseline ISA is NEON.
void packed_gemm_f32_neon(const PackedGemmF32& gemm);
} // namespace detail

} // namespace kiln::interp
