#pragma once
// The f32 max and min over rows of reduction.cpp on aarch64, in NEON: GCC vectorises the portable
// lane loop of reduce_rows for sums (fcvtl, fadd v.2d) but leaves it scalar for nan_max/nan_min,
// whose NaN selects it does not if-convert there (checked with -fopt-info-vec and objdump).
// Included by reduction.cpp only where __aarch64__ is defined.
#include "exec/threads.hpp"
#include "interp/kernels/element.hpp"
#include <arm_neon.h>
#include <cstdint>

namespace kiln::interp::neon {

// FMAX/FMIN and their across-vector forms FMAXV/FMINV return NaN when an operand is NaN, as
// nan_max/nan_min do, so lane order cannot change which NaN-free value wins or whether NaN does.
// They order -0 below +0, where nan_max keeps the first of two equal values (in reduce_rows' lane
// order, not the row's): a row of zeros of both signs gives +0 (max) and -0 (min) here.
template <bool Max> inline float32x4_t extremum(float32x4_t a, float32x4_t b) {
  if constexpr (Max)
    return vmaxq_f32(a, b);
  else
    return vminq_f32(a, b);
}

template <bool Max> float row_extremum(const float* row, int64_t n) {
  constexpr int64_t kStep = 16; // four q registers of independent lanes per step
  int64_t m = 0;
  float acc;
  if (n >= kStep) {
    float32x4_t a0 = vld1q_f32(row), a1 = vld1q_f32(row + 4), a2 = vld1q_f32(row + 8), a3 = vld1q_f32(row + 12);
    for (m = kStep; m + kStep <= n; m += kStep) {
      a0 = extremum<Max>(a0, vld1q_f32(row + m));
      a1 = extremum<Max>(a1, vld1q_f32(row + m + 4));
      a2 = extremum<Max>(a2, vld1q_f32(row + m + 8));
      a3 = extremum<Max>(a3, vld1q_f32(row + m + 12));
    }
    const float32x4_t all = extremum<Max>(extremum<Max>(a0, a1), extremum<Max>(a2, a3));
    acc = Max ? vmaxvq_f32(all) : vminvq_f32(all);
  } else {
    acc = row[0];
    m = 1;
  }
  for (; m < n; ++m)
    acc = Max ? nan_max(acc, row[m]) : nan_min(acc, row[m]);
  return acc;
}

// out[o] = max (or min) of x[o * middle, (o + 1) * middle), for middle >= 1; exact in any order.
template <bool Max> void row_extrema(const float* x, int64_t outer, int64_t middle, double* out) {
  exec::parallel_for(outer, exec::worth_parallel(outer * middle),
                     [&](int64_t o) { out[o] = double(row_extremum<Max>(x + o * middle, middle)); });
}

} // namespace kiln::interp::neon
