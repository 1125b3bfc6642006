// Compiled with -mavx2 -mfma and called only after a CPU check (see vector_math.cpp).
#define KILN_VECTOR_MATH_BUILD avx2
#include "interp/kernels/vector_math.hpp"
#include "interp/kernels/vector_math_map.inc"

void kiln::interp::vector_math::detail::map_f32_avx2(MapF32 fn, const float* x, float* y, int64_t n) {
  map_f32_impl(fn, x, y, n);
}
