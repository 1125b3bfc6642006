// The interpreter's f32 GEMM kernels against a naive double loop, each pair of paths a build has:
// the packed-B micro-kernel this CPU runs (NEON on aarch64, AVX2+FMA on x86-64) and the portable
// Eigen product it falls back to (on aarch64 Eigen's own NEON kernels; on x86-64 its baseline and
// AVX2 builds), at odd sizes and on edge values.
#include "exec/cpu_features.hpp"
#include "interp/kernels/gemm.hpp"
#include "interp/kernels/packed_gemm.hpp"
#include "kiln_config.h"
#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace kiln::interp;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Shape {
  int64_t m, n, k;
};

// Every size of 1, 7, 17 and 1023 in every role: 1023 rows span 72-row blocks, 1023 columns 16-wide
// panels with a 15-wide last one, k = 1023 four 256-deep passes.
const std::vector<Shape> kShapes = {{1, 1, 1},     {7, 7, 7},     {17, 17, 17},  {1, 1023, 17}, {1023, 1, 7},
                                    {7, 17, 1023}, {17, 1023, 7}, {1023, 7, 17}, {1, 17, 1023}, {1023, 17, 1}};

// b [k, n] row-major in packed_gemm.hpp's panel layout.
std::vector<float> pack_b(const std::vector<float>& b, int64_t k, int64_t n) {
  std::vector<float> packed(size_t(packed_b_floats(k, n)), 0.0f);
  for (int64_t panel = 0; panel < packed_panels(n); ++panel)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < kPackedPanelWidth && panel * kPackedPanelWidth + j < n; ++j)
        packed[size_t((panel * k + p) * kPackedPanelWidth + j)] = b[size_t(p * n + panel * kPackedPanelWidth + j)];
  return packed;
}

using GemmPath = void (*)(const float* a, const float* b, float* c, Shape s);

void portable_path(const float* a, const float* b, float* c, Shape s) {
  detail::gemm_f32_baseline(
      GemmF32{.a = a, .b = b, .c = c, .m = s.m, .n = s.n, .k = s.k, .lda = s.k, .ldb = s.n, .ldc = s.n});
}

#if KILN_HAS_AVX2_KERNELS
void eigen_avx2_path(const float* a, const float* b, float* c, Shape s) {
  detail::gemm_f32_avx2(
      GemmF32{.a = a, .b = b, .c = c, .m = s.m, .n = s.n, .k = s.k, .lda = s.k, .ldb = s.n, .ldc = s.n});
}
#endif

#if KILN_HAS_NEON_KERNELS || KILN_HAS_AVX2_KERNELS
void packed_path(const float* a, const float* b, float* c, Shape s) {
  const std::vector<float> packed = pack_b(std::vector<float>(b, b + s.k * s.n), s.k, s.n);
  const PackedGemmF32 g{.a = a,
                        .lda = s.k,
                        .packed_b = packed.data(),
                        .c = c,
                        .ldc = s.n,
                        .k = s.k,
                        .n = s.n,
                        .row_begin = 0,
                        .row_end = s.m,
                        .panel_begin = 0,
                        .panel_end = packed_panels(s.n)};
#if KILN_HAS_NEON_KERNELS
  detail::packed_gemm_f32_neon(g);
#else
  detail::packed_gemm_f32_avx2(g);
#endif
}
#endif

// The paths this build has and this CPU runs, named for failure messages.
std::vector<std::pair<std::string, GemmPath>> paths() {
  std::vector<std::pair<std::string, GemmPath>> all{{"portable (Eigen)", portable_path}};
#if KILN_HAS_AVX2_KERNELS
  if (kiln::exec::cpu_has_avx2_fma()) all.emplace_back("Eigen AVX2", eigen_avx2_path);
#endif
#if KILN_HAS_NEON_KERNELS
  all.emplace_back("packed NEON", packed_path);
#elif KILN_HAS_AVX2_KERNELS
  if (kiln::exec::cpu_has_avx2_fma()) all.emplace_back("packed AVX2", packed_path);
#endif
  if (all.size() == 1) MESSAGE("no packed kernel runs here: only the portable path is checked");
  return all;
}

// Mostly normal values, with some of each edge value finite math must survive: zeros of both signs,
// denormals, and large values (1e15: no product or sum of 1023 products overflows f32).
std::vector<float> finite_values(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 15);
  const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-39f, 1e15f, -1e15f};
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) {
    const int which = pick(rng);
    x = which < 6 ? specials[which] : normal(rng);
  }
  return v;
}

struct Naive {
  std::vector<double> values, magnitudes; // sum of a b, and of |a b|: the scale of f32 rounding
};

Naive naive_gemm(const std::vector<float>& a, const std::vector<float>& b, Shape s) {
  Naive out{std::vector<double>(size_t(s.m * s.n)), std::vector<double>(size_t(s.m * s.n))};
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double term = double(a[size_t(i * s.k + p)]) * double(b[size_t(p * s.n + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      out.values[size_t(i * s.n + j)] = sum;
      out.magnitudes[size_t(i * s.n + j)] = magnitude;
    }
  return out;
}

} // namespace

// f32 sums of k terms in any order (FMA or not, any blocking) stay within k ulps of the terms'
// magnitudes; 1e-6 of the magnitude (about 8 ulps) holds at these sizes with room, and 1e-30
// absolute covers products of denormals, which round to 0 or a denormal.
TEST_CASE("every GEMM path agrees with a naive double loop at odd sizes on finite edge values") {
  std::mt19937 rng(1023);
  for (const Shape& s : kShapes) {
    const std::vector<float> a = finite_values(s.m * s.k, rng), b = finite_values(s.k * s.n, rng);
    const Naive want = naive_gemm(a, b, s);
    for (const auto& [name, path] : paths()) {
      CAPTURE(name);
      INFO("m " << s.m << ", n " << s.n << ", k " << s.k);
      std::vector<float> c(size_t(s.m * s.n), kNaN);
      path(a.data(), b.data(), c.data(), s);
      int64_t bad = 0;
      double worst = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        const double error = std::fabs(double(c[i]) - want.values[i]), allowed = 1e-6 * want.magnitudes[i] + 1e-30;
        bad += !(error <= allowed);
        worst = std::max(worst, want.magnitudes[i] > 0 ? error / want.magnitudes[i] : 0.0);
      }
      CAPTURE(worst);
      CHECK(bad == 0);
    }
  }
}

// IEEE semantics per element: NaN in a row or column makes its results NaN, an infinity times a
// non-zero finite value is that infinity, infinity times zero is NaN. The double loop gets the same
// specials (no finite sum here can overflow), so each path must match it exactly in kind.
TEST_CASE("every GEMM path propagates NaN and infinities as the naive loop does") {
  std::mt19937 rng(17);
  for (const Shape& s : {Shape{7, 17, 1023}, Shape{17, 33, 300}, Shape{1, 1, 1}, Shape{6, 16, 2}}) {
    std::vector<float> a = finite_values(s.m * s.k, rng), b = finite_values(s.k * s.n, rng);
    std::uniform_int_distribution<int64_t> in_a(0, s.m * s.k - 1), in_b(0, s.k * s.n - 1);
    a[size_t(in_a(rng))] = kNaN;
    a[size_t(in_a(rng))] = kInf;
    b[size_t(in_b(rng))] = -kInf;
    if (s.k * s.n > 2) b[size_t(in_b(rng))] = kNaN;
    const Naive want = naive_gemm(a, b, s);
    for (const auto& [name, path] : paths()) {
      CAPTURE(name);
      INFO("m " << s.m << ", n " << s.n << ", k " << s.k);
      std::vector<float> c(size_t(s.m * s.n), 0.0f);
      path(a.data(), b.data(), c.data(), s);
      int64_t bad = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        const double w = want.values[i];
        if (std::isnan(w))
          bad += !std::isnan(c[i]);
        else if (std::isinf(w))
          bad += double(c[i]) != w;
        else
          bad += !(std::fabs(double(c[i]) - w) <= 1e-6 * want.magnitudes[i] + 1e-30);
      }
      CHECK(bad == 0);
    }
  }
}

// gemm_f32 split across the pool's threads, each block packing into its own slice of a plan's
// workspace (GemmF32::workspace): the convolutions' GEMMs of mobilenet_v2 at batch 1 (pointwise
// [out, in] x [in, plane], and the first 3x3 with k = 27), whose last block is narrower than the
// others and which once packed past its slice (NaN at two threads). A canary after the workspace
// catches a total that is too small.
TEST_CASE("a GEMM split across threads stays within its workspace and agrees with the naive loop") {
  std::mt19937 rng(224);
  const std::vector<Shape> shapes = {{32, 12544, 27}, {16, 12544, 32}, {96, 12544, 16}, {24, 3136, 96},
                                     {144, 3136, 24}, {32, 784, 144},  {64, 196, 192},  {96, 196, 384},
                                     {160, 49, 576},  {960, 49, 160},  {1280, 49, 320}, {1023, 17, 1023}};
  for (const Shape& s : shapes) {
    INFO("m " << s.m << ", n " << s.n << ", k " << s.k);
    const std::vector<float> a = finite_values(s.m * s.k, rng), b = finite_values(s.k * s.n, rng);
    GemmF32 gemm{.m = s.m, .n = s.n, .k = s.k, .lda = s.k, .ldb = s.n, .ldc = s.n, .threads = 2};
    const size_t floats = gemm_workspace_bytes(gemm) / sizeof(float);
    std::vector<float> workspace(floats + 64, kNaN);
    std::vector<float> c(size_t(s.m * s.n), kNaN);
    gemm.a = a.data();
    gemm.b = b.data();
    gemm.c = c.data();
    gemm.workspace = floats ? workspace.data() : nullptr;
    gemm_f32(gemm);
    int64_t canary_overwritten = 0;
    for (size_t i = floats; i < workspace.size(); ++i)
      canary_overwritten += !std::isnan(workspace[i]);
    CHECK(canary_overwritten == 0);
    const Naive want = naive_gemm(a, b, s);
    int64_t bad = 0;
    for (size_t i = 0; i < c.size(); ++i)
      bad += !(std::fabs(double(c[i]) - want.values[i]) <= 1e-6 * want.magnitudes[i] + 1e-30);
    CHECK(bad == 0);
  }
}
