#include "interp/kernels/vector_math.hpp"
#include "exec/cpu_features.hpp"
#include "interp/kernels/vector_math_map.inc"
#include "kiln_config.h"

namespace kiln::interp::vector_math {

void detail::map_f32_baseline(MapF32 fn, const float* x, float* y, int64_t n) { map_f32_impl(fn, x, y, n); }

void map_f32(MapF32 fn, const float* x, float* y, int64_t n) {
#if KILN_HAS_AVX2_KERNELS
  if (exec::cpu_has_avx2_fma()) return detail::map_f32_avx2(fn, x, y, n);
#endif
  detail::map_f32_baseline(fn, x, y, n);
}

} // namespace kiln::interp::vector_math
