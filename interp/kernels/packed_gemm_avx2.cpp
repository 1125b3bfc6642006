// Compiled with -mavx2 -mfma and called only after a CPU check.
#include "interp/kernels/packed_gemm.hpp"
#include <immintrin.h>

namespace kiln::interp::detail {

#include "interp/kernels/packed_gemm_blocking.inc"

namespace {

// Adds (or writes) one row of a tile to c.
inline void store_row(const Tile& t, int r, __m256 low, __m256 high) {
  float* row = t.c + r * t.ldc;
  if (t.cols == kWidth) {
    if (t.accumulate) {
      low = _mm256_add_ps(low, _mm256_loadu_ps(row));
      high = _mm256_add_ps(high, _mm256_loadu_ps(row + 8));
    }
    _mm256_storeu_ps(row, low);
    _mm256_storeu_ps(row + 8, high);
    return;
  }
  alignas(32) float tile[kWidth];
  _mm256_store_ps(tile, low);
  _mm256_store_ps(tile + 8, high);
  for (int64_t j = 0; j < t.cols; ++j)
    row[j] = t.accumulate ? row[j] + tile[j] : tile[j];
}

// One row of a tile for one k step: broadcast its element of a, multiply-add both halves of b.
inline void multiply_add_row(const float* a, __m256 b_low, __m256 b_high, __m256& low, __m256& high) {
  const __m256 x = _mm256_broadcast_ss(a);
  low = _mm256_fmadd_ps(x, b_low, low);
  high = _mm256_fmadd_ps(x, b_high, high);
}

// The accumulators are named variables, not an array: GCC kept an array on the stack and stored
// it on every k step, which halved the speed.
template <int Rows> void multiply_tile(const Tile& t) {
  __m256 l0 = _mm256_setzero_ps(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0, l4 = l0, h4 = l0,
         l5 = l0, h5 = l0;
  const float* a = t.a;
  for (int64_t p = 0; p < t.depth; ++p, a += kMaxRows) {
    const __m256 bl = _mm256_loadu_ps(t.b + p * kWidth);
    const __m256 bh = _mm256_loadu_ps(t.b + p * kWidth + 8);
    multiply_add_row(a, bl, bh, l0, h0);
    if constexpr (Rows > 1) multiply_add_row(a + 1, bl, bh, l1, h1);
    if constexpr (Rows > 2) multiply_add_row(a + 2, bl, bh, l2, h2);
    if constexpr (Rows > 3) multiply_add_row(a + 3, bl, bh, l3, h3);
    if constexpr (Rows > 4) multiply_add_row(a + 4, bl, bh, l4, h4);
    if constexpr (Rows > 5) multiply_add_row(a + 5, bl, bh, l5, h5);
  }
  store_row(t, 0, l0, h0);
  if constexpr (Rows > 1) store_row(t, 1, l1, h1);
  if constexpr (Rows > 2) store_row(t, 2, l2, h2);
  if constexpr (Rows > 3) store_row(t, 3, l3, h3);
  if constexpr (Rows > 4) store_row(t, 4, l4, h4);
  if constexpr (Rows > 5) store_row(t, 5, l5, h5);
}

void multiply_rows(int rows, const Tile& t) {
  switch (rows) {
  case 1: return multiply_tile<1>(t);
  case 2: return multiply_tile<2>(t);
  case 3: return multiply_tile<3>(t);
  case 4: return multiply_tile<4>(t);
  case 5: return multiply_tile<5>(t);
  default: return multiply_tile<6>(t);
  }
}

} // namespace

void packed_gemm_f32_avx2(const PackedGemmF32& g) { packed_gemm_blocked(g, multiply_rows); }

} // namespace kiln::interp::detail
