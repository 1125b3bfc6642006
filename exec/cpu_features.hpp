#pragma once

namespace kiln::exec {

// Whether this CPU runs the kernels built with -mavx2 -mfma (gemm_avx2.cpp, vector_math_avx2.cpp).
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
#else
  return false;
#endif
}

} // namespace kiln::exec
