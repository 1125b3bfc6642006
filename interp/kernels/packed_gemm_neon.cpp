// NEON is aarch64's baseline ISA: this is built only there (meson's neon_kernels_enabled) and
// called without a CPU check. The same packed-B layout and blocking as the AVX2 kernel, with a
// panel row as four q registers.
#include "interp/kernels/packed_gemm.hpp"
#include <arm_neon.h>

namespace kiln::interp::detail {

#include "interp/kernels/packed_gemm_blocking.inc"

namespace {

// One row of a tile: 6 rows take 24 of the 32 q registers, the panel row 4 and a's six values 2.
struct RowSum {
  float32x4_t c0, c1, c2, c3;
};

struct PanelRow {
  float32x4_t b0, b1, b2, b3;
};

inline RowSum zero_row() {
  const float32x4_t z = vdupq_n_f32(0.0f);
  return {z, z, z, z};
}

// Adds (or writes) one row of a tile to c.
inline void store_row(const Tile& t, int r, RowSum s) {
  float* row = t.c + r * t.ldc;
  if (t.cols == kWidth) {
    if (t.accumulate) {
      s.c0 = vaddq_f32(s.c0, vld1q_f32(row));
      s.c1 = vaddq_f32(s.c1, vld1q_f32(row + 4));
      s.c2 = vaddq_f32(s.c2, vld1q_f32(row + 8));
      s.c3 = vaddq_f32(s.c3, vld1q_f32(row + 12));
    }
    vst1q_f32(row, s.c0);
    vst1q_f32(row + 4, s.c1);
    vst1q_f32(row + 8, s.c2);
    vst1q_f32(row + 12, s.c3);
    return;
  }
  float tile[kWidth];
  vst1q_f32(tile, s.c0);
  vst1q_f32(tile + 4, s.c1);
  vst1q_f32(tile + 8, s.c2);
  vst1q_f32(tile + 12, s.c3);
  for (int64_t j = 0; j < t.cols; ++j)
    row[j] = t.accumulate ? row[j] + tile[j] : tile[j];
}

// One row for one k step: its element of a is lane Lane of `a` (fmla v.4s, v.4s, v.s[Lane]).
template <int Lane> inline void multiply_add(RowSum& s, const PanelRow& b, float32x4_t a) {
  s.c0 = vfmaq_laneq_f32(s.c0, b.b0, a, Lane);
  s.c1 = vfmaq_laneq_f32(s.c1, b.b1, a, Lane);
  s.c2 = vfmaq_laneq_f32(s.c2, b.b2, a, Lane);
  s.c3 = vfmaq_laneq_f32(s.c3, b.b3, a, Lane);
}

template <int Lane> inline void multiply_add(RowSum& s, const PanelRow& b, float32x2_t a) {
  s.c0 = vfmaq_lane_f32(s.c0, b.b0, a, Lane);
  s.c1 = vfmaq_lane_f32(s.c1, b.b1, a, Lane);
  s.c2 = vfmaq_lane_f32(s.c2, b.b2, a, Lane);
  s.c3 = vfmaq_lane_f32(s.c3, b.b3, a, Lane);
}

// Reading a's four (and two) values of a step whole is safe for fewer rows: pack_a's buffer holds
// kMaxRows floats per step, and lanes past `Rows` are never used.
template <int Rows> void multiply_tile(const Tile& t) {
  RowSum s0 = zero_row(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0;
  const float* a = t.a;
  for (int64_t p = 0; p < t.depth; ++p, a += kMaxRows) {
    const float* b = t.b + p * kWidth;
    const PanelRow panel{vld1q_f32(b), vld1q_f32(b + 4), vld1q_f32(b + 8), vld1q_f32(b + 12)};
    const float32x4_t a0123 = vld1q_f32(a);
    multiply_add<0>(s0, panel, a0123);
    if constexpr (Rows > 1) multiply_add<1>(s1, panel, a0123);
    if constexpr (Rows > 2) multiply_add<2>(s2, panel, a0123);
    if constexpr (Rows > 3) multiply_add<3>(s3, panel, a0123);
    if constexpr (Rows > 4) {
      const float32x2_t a45 = vld1_f32(a + 4);
      multiply_add<0>(s4, panel, a45);
      if constexpr (Rows > 5) multiply_add<1>(s5, panel, a45);
    }
  }
  store_row(t, 0, s0);
  if constexpr (Rows > 1) store_row(t, 1, s1);
  if constexpr (Rows > 2) store_row(t, 2, s2);
  if constexpr (Rows > 3) store_row(t, 3, s3);
  if constexpr (Rows > 4) store_row(t, 4, s4);
  if constexpr (Rows > 5) store_row(t, 5, s5);
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

void packed_gemm_f32_neon(const PackedGemmF32& g) { packed_gemm_blocked(g, multiply_rows); }

} // namespace kiln::interp::detail
