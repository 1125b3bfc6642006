// Compiled with -mavx2 -mfma and called only after a CPU check.
#include "interp/kernels/packed_gemm.hpp"
#include <immintrin.h>

namespace kiln::interp::detail {

namespace {

constexpr int64_t kWidth = kPackedPanelWidth;
constexpr int kMaxRows = 6;       // 6 x 16 accumulators fill 12 of the 16 ymm registers
constexpr int64_t kDepth = 256;   // k per pass: one panel's slice (16 KiB) stays in L1
constexpr int64_t kRowBlock = 72; // rows per pass: their slice of a stays in L2

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

struct Tile {
  const float* a; // packed: depth steps of kMaxRows floats, one per row
  const float* b; // the panel's slice: depth rows of kWidth floats
  int64_t depth;
  float* c;
  int64_t ldc;
  int64_t cols;    // valid columns of this panel (the last may be narrower)
  bool accumulate; // add to c (a later depth slice) instead of overwriting it
};

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

// Rows [row, row + rows) of a's depth slice, as depth steps of kMaxRows floats: the tile then
// reads a sequentially instead of from six rows lda apart (which share L1 sets when lda is 4 KiB).
void pack_a(const PackedGemmF32& g, int64_t row, int rows, int64_t k0, int64_t depth, float* packed) {
  for (int r = 0; r < rows; ++r) {
    const float* src = g.a + (row + r) * g.lda + k0;
    for (int64_t p = 0; p < depth; ++p)
      packed[p * kMaxRows + r] = src[p];
  }
}

} // namespace

void packed_gemm_f32_avx2(const PackedGemmF32& g) {
  alignas(64) static thread_local float packed_a[kRowBlock * kDepth];
  for (int64_t k0 = 0; k0 < g.k; k0 += kDepth) {
    const int64_t depth = min64(kDepth, g.k - k0);
    for (int64_t block = g.row_begin; block < g.row_end; block += kRowBlock) {
      const int64_t block_end = min64(g.row_end, block + kRowBlock);
      for (int64_t row = block; row < block_end; row += kMaxRows)
        pack_a(g, row, int(min64(kMaxRows, block_end - row)), k0, depth, packed_a + (row - block) * depth);
      for (int64_t panel = g.panel_begin; panel < g.panel_end; ++panel) {
        const int64_t col = panel * kWidth;
        Tile t{nullptr, g.packed_b + (panel * g.k + k0) * kWidth, depth, nullptr, g.ldc, min64(kWidth, g.n - col),
               k0 > 0};
        for (int64_t row = block; row < block_end; row += kMaxRows) {
          t.a = packed_a + (row - block) * depth;
          t.c = g.c + row * g.ldc + col;
          multiply_rows(int(min64(kMaxRows, block_end - row)), t);
        }
      }
    }
  }
}

} // namespace kiln::interp::detail
