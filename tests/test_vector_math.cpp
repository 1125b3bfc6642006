// The interpreter's f32 exp/tanh/sigmoid/silu/gelu(tanh) (interp/kernels/vector_math.hpp) against
// double-precision libm over dense sweeps, in the baseline build and (where the CPU has it) AVX2.
#include "exec/cpu_features.hpp"
#include "interp/kernels/vector_math.hpp"
#include "kiln_config.h"
#include <cmath>
#include <doctest/doctest.h>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace kiln::interp;
using vector_math::MapF32;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Distance from the double reference in units of the float ulp at the reference (the smallest
// denormal's spacing below FLT_MIN).
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : kInf;
  if (std::isinf(float(want))) return got == float(want) ? 0.0 : kInf; // overflows in float
  const float nearest = std::abs(float(want));
  const double ulp =
      std::max(double(std::nextafter(nearest, kInf) - nearest), double(std::numeric_limits<float>::denorm_min()));
  return std::abs(double(got) - want) / ulp;
}

struct Function {
  const char* name;
  MapF32 kind;
  std::function<double(double)> reference;
  double max_ulp; // the bound measured on the sweep below, rounded up
  // Below this x only a relative 2e-5 holds: gelu(tanh) for x < 0 is about x e^(-2u), and e^ turns
  // the float rounding of 2u (an ulp of 64 is 4e-6) into relative error; at x >= -3, 16 ulp.
  double ulp_from_x = -1e30;
};

std::vector<Function> functions() {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  return {
      {"exp", MapF32::exp, [](double x) { return std::exp(x); }, 1.5},
      {"tanh", MapF32::tanh, [](double x) { return std::tanh(x); }, 2.0},
      {"sigmoid", MapF32::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 3.0},
      {"silu", MapF32::silu, [](double x) { return x / (1.0 + std::exp(-x)); }, 4.0},
      {"gelu_tanh", MapF32::gelu_tanh,
       // 0.5 x (1 + tanh(u)) written as x / (1 + e^-2u): in double, 1 + tanh(u) cancels for x < -5.
       [c](double x) { return x / (1.0 + std::exp(-2.0 * c * (x + 0.044715 * x * x * x))); }, 16.0, -3.0},
      {"erf", MapF32::erf, [](double x) { return std::erf(x); }, 1.5},
      // 0.5 x erfc(-x / sqrt2): 1 + erf(x / sqrt2) without cancelling; NaN at -inf (-inf * 0), as
      // PyTorch's formula gives.
      {"gelu_erf", MapF32::gelu_erf,
       [](double x) { return x == -INFINITY ? NAN : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 6.0},
  };
}

// 2^22 points over [-110, 110] plus 2^20 points over [-1e-3, 1e-3], where tanh's polynomial works.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = 0; i < (1 << 22); ++i)
    x.push_back(-110.0f + 220.0f * float(i) / float(1 << 22));
  for (int i = 0; i < (1 << 20); ++i)
    x.push_back(-1e-3f + 2e-3f * float(i) / float(1 << 20));
  return x;
}

using MapFn = void (*)(MapF32, const float*, float*, int64_t);

std::vector<std::pair<const char*, MapFn>> builds() {
  std::vector<std::pair<const char*, MapFn>> all{{"baseline", vector_math::detail::map_f32_baseline}};
#if KILN_HAS_AVX2_KERNELS
  if (kiln::exec::cpu_has_avx2_fma()) all.emplace_back("avx2", vector_math::detail::map_f32_avx2);
#endif
  return all;
}

// Runs check(map, f) for every build and function, with both named in failure messages.
template <class Check> void for_each_build_and_function(Check check) {
  for (const auto& [build_name, map] : builds())
    for (const Function& f : functions()) {
      const std::string build = build_name, name = f.name;
      CAPTURE(build);
      CAPTURE(name);
      check(build, map, f);
    }
}

} // namespace

TEST_CASE("vector_math stays within its ulp bound of double libm on a dense sweep") {
  const std::vector<float> x = sweep();
  std::vector<float> y(x.size());
  for_each_build_and_function([&](const std::string& build, MapFn map, const Function& f) {
    map(f.kind, x.data(), y.data(), int64_t(x.size()));
    double worst = 0.0;
    float worst_at = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = f.reference(double(x[i]));
      if (std::abs(want) < 1e-36) { // denormal results: see the edge-value test
        CHECK(std::abs(double(y[i]) - want) <= 1e-40);
        continue;
      }
      if (x[i] < f.ulp_from_x) {
        CHECK(std::abs(double(y[i]) - want) <= 2e-5 * std::abs(want));
        continue;
      }
      const double e = ulp_error(y[i], want);
      if (e > worst) worst = e, worst_at = x[i];
    }
    CAPTURE(worst_at);
    MESSAGE(build << " " << f.name << ": max " << worst << " ulp at " << worst_at);
    CHECK(worst <= f.max_ulp);
  });
}

TEST_CASE("vector_math edge values follow libm: NaN, infinities, signed zero, overflow, denormals") {
  const std::vector<float> x{kNaN, kInf, -kInf, 0.0f, -0.0f, 88.7f, 89.0f, 200.0f, -103.0f, -200.0f, 1e-30f, -1e-30f};
  std::vector<float> y(x.size());
  for_each_build_and_function([&](const std::string&, MapFn map, const Function& f) {
    map(f.kind, x.data(), y.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(x[i]);
      const double want = f.reference(double(x[i]));
      if (std::isnan(want)) {
        CHECK(std::isnan(y[i]));
      } else if (std::abs(want) < 1e-36) {
        // Denormal results (and silu / gelu: x times a denormal) are compared absolutely.
        CHECK(std::abs(double(y[i]) - want) <= 1e-40);
      } else {
        CHECK(ulp_error(y[i], want) <= f.max_ulp);
      }
      if (x[i] == 0.0f)
        CHECK(std::signbit(y[i]) == (std::signbit(x[i]) && f.kind != MapF32::exp && f.kind != MapF32::sigmoid));
    }
  });
}

TEST_CASE("vector_math handles every length, including tails shorter than a vector") {
  for (int64_t n : {1, 7, 15, 16, 17, 1023}) {
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
    for (int64_t i = 0; i < n; ++i)
      x[size_t(i)] = float(i) * 0.37f - 3.0f;
    vector_math::map_f32(MapF32::tanh, x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      CHECK(ulp_error(y[size_t(i)], std::tanh(double(x[size_t(i)]))) <= 2.0);
  }
}

// The sweeps above run whole vectors; these lengths end in every part of a vectorised loop (on
// aarch64 the baseline build is GCC's NEON code, on x86-64 SSE2 and AVX2), with edge values spread
// over the lanes.
TEST_CASE("vector_math over odd lengths keeps its bounds in every lane and tail") {
  const std::vector<float> specials{kNaN, kInf, -kInf, 0.0f, -0.0f, 1e-40f, -1e-40f, 88.0f, -100.0f, 3e38f, -3e38f};
  for (int64_t n : {1, 7, 17, 1023}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[size_t(i)] = i % 3 == 0 ? specials[size_t(i / 3) % specials.size()] : -8.0f + 16.0f * float(i) / float(n);
    std::vector<float> y(x.size());
    for_each_build_and_function([&](const std::string&, MapFn map, const Function& f) {
      CAPTURE(n);
      map(f.kind, x.data(), y.data(), n);
      for (size_t i = 0; i < x.size(); ++i) {
        CAPTURE(x[i]);
        const double want = f.reference(double(x[i]));
        if (std::isnan(want))
          CHECK(std::isnan(y[i]));
        else if (std::abs(want) < 1e-36)
          CHECK(std::abs(double(y[i]) - want) <= 1e-40);
        else if (x[i] < f.ulp_from_x)
          CHECK(std::abs(double(y[i]) - want) <= 2e-5 * std::abs(want));
        else
          CHECK(ulp_error(y[i], want) <= f.max_ulp);
      }
    });
  }
}
