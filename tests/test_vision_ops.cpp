// kiln's vision ops against PyTorch's results, checked in as data (tests/data/vision_ops.inc,
// written by tests/data/make_vision_ops.py): eager mode, the interpreter and, where built, the JIT
// tier, on odd sizes (1, 7, 17) and edge values (NaN, +-inf, -0). Then the JIT's own paths against
// the interpreter, and the errors bad shapes and params give.
#include "kiln_config.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct VisionCase {
  const char* op;
  int64_t x_dims[4], w_dims[4], b_dims[4]; // 0 = no such dim / operand
  // adaptive_avg_pool2d: output_size; group_norm: groups; conv_transpose2d: stride, padding,
  // output_padding, groups, dilation; interpolate: the result's size
  int64_t ints[9];
  double reals[2]; // group_norm, instance_norm: eps; interpolate: scale_factor (0: size given)
  const char* mode;
  bool align_corners;
  int64_t out_dims[4];
  const float *x, *w, *b, *want;
};

#include "tests/data/vision_ops.inc"

std::vector<int64_t> dims_of(const int64_t (&dims)[4]) {
  std::vector<int64_t> out;
  for (int64_t d : dims)
    if (d != 0) out.push_back(d);
  return out;
}

Tensor tensor_of(const float* data, const int64_t (&dims)[4]) {
  if (!data) return Tensor();
  const std::vector<int64_t> shape = dims_of(dims);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return Tensor::from_vector(std::vector<float>(data, data + n), shape);
}

Tensor apply(const VisionCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::string op = c.op;
  const int64_t* n = c.ints;
  if (op == "adaptive_avg_pool2d") return F::adaptive_avg_pool2d(x, {n[0], n[1]});
  if (op == "group_norm") return F::group_norm(x, n[0], w, b, c.reals[0]);
  if (op == "instance_norm") return F::instance_norm(x, w, b, c.reals[0]);
  if (op == "conv_transpose2d")
    return F::conv_transpose2d(x, w, b,
                               {.stride = {n[0], n[1]},
                                .padding = {n[2], n[3]},
                                .output_padding = {n[4], n[5]},
                                .groups = n[6],
                                .dilation = {n[7], n[8]}});
  if (op == "interpolate") {
    F::InterpolateOptions options{.mode = c.mode, .align_corners = c.align_corners};
    if (c.reals[0] > 0)
      options.scale_factor = {c.reals[0], c.reals[1]};
    else
      options.size = {n[0], n[1]};
    return F::interpolate(x, options);
  }
  FAIL("no kiln function for " << op);
  return x;
}

// Relative to 1 + |torch|. kiln sums pooling windows, the norms' statistics and the transposed
// convolution in f64 where torch sums in f32 (the norms and the convolution over longer sums, so
// looser); interpolate computes torch's f32 coordinates and blends in torch's order.
double tolerance_of(const VisionCase& c) {
  const std::string op = c.op;
  return op == "adaptive_avg_pool2d" || op == "interpolate" ? 1e-6 : 1e-5;
}

void check_case(const VisionCase& c, const char* where, const Tensor& y) {
  const std::string op = c.op, mode = c.mode, place = where;
  CAPTURE(op);
  CAPTURE(place);
  CAPTURE(c.x_dims[2]);
  CAPTURE(c.x_dims[3]);
  CAPTURE(c.ints[0]);
  CAPTURE(c.ints[1]);
  CAPTURE(c.reals[0]);
  CAPTURE(c.reals[1]);
  CAPTURE(mode);
  CAPTURE(c.align_corners);
  REQUIRE(y.dtype() == DType::f32);
  REQUIRE(y.dims() == dims_of(c.out_dims));
  const double tolerance = tolerance_of(c);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double got = y.data<float>()[i], want = c.want[i];
    const bool same = std::isnan(want)   ? std::isnan(got)
                      : std::isinf(want) ? got == want
                                         : std::fabs(got - want) <= tolerance * (1 + std::fabs(want));
    if (!same && mismatches++ < 3) MESSAGE("element " << i << ": got " << got << ", torch " << want);
  }
  CHECK(mismatches == 0);
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 4);
}

void check_compiled(JitMode mode, const char* where) {
  for (const VisionCase& c : kVisionCases) {
    const Tensor x = tensor_of(c.x, c.x_dims);
    const Tensor w = c.w ? tensor_of(c.w, c.w_dims) : Tensor::zeros({1});
    const Tensor b = c.b ? tensor_of(c.b, c.b_dims) : Tensor::zeros({1});
    const bool has_w = c.w != nullptr, has_b = c.b != nullptr;
    auto fn = [&c, has_w, has_b](Tensor t, Tensor wt, Tensor bt) {
      return apply(c, t, has_w ? wt : Tensor(), has_b ? bt : Tensor());
    };
    check_case(c, where, compile(fn, {.session = session_in(mode)})(x.layout(), w.layout(), b.layout())(x, w, b));
  }
}

} // namespace

TEST_CASE("eager vision ops give PyTorch's results") {
  for (const VisionCase& c : kVisionCases)
    check_case(c, "eager", apply(c, tensor_of(c.x, c.x_dims), tensor_of(c.w, c.w_dims), tensor_of(c.b, c.b_dims)));
}

TEST_CASE("compiled on the interpreter, the vision ops give PyTorch's results") {
  check_compiled(JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, the vision ops give PyTorch's results") { check_compiled(JitMode::always, "jit"); }
#endif

// The JIT's own paths against the interpreter's.
#if KILN_HAS_JIT
namespace {

// Where the tiers differ: NaN must meet NaN, an infinity the same infinity, finite values within
// 1e-5 * (1 + |interp|) (oneDNN sums in another order). Empty when they agree.
std::string first_difference(const Tensor& interp, const Tensor& jit) {
  if (interp.dims() != jit.dims()) return "results differ in dims";
  for (int64_t i = 0; i < interp.numel(); ++i) {
    const double e = interp.data<float>()[i], g = jit.data<float>()[i];
    const bool same = std::isnan(e)   ? std::isnan(g)
                      : std::isinf(e) ? g == e
                                      : std::isfinite(g) && std::fabs(g - e) <= 1e-5 * (1 + std::fabs(e));
    if (!same)
      return "element " + std::to_string(i) + ": interpreter " + std::to_string(e) + ", jit " + std::to_string(g);
  }
  return "";
}

// Random values in [-4, 4], with NaN, +-inf and -0 spread through them when `edges`.
Tensor sample(const std::vector<int64_t>& dims, uint64_t seed, bool edges) {
  Tensor t = Tensor::rand(dims, seed, -4.0f, 4.0f);
  const float values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), -0.0f, 0.0f};
  if (edges)
    for (int64_t i = 0; i < t.numel(); i += 7)
      t.data<float>()[i] = values[size_t(i / 7) % 5];
  return t;
}

// Runs fn on both tiers; returns where they differ and how many ops each JIT lowering took.
template <class Fn, class... Inputs>
std::pair<std::string, std::map<std::string, int>> on_both_tiers(Fn fn, const Inputs&... inputs) {
  const Tensor interp = compile(fn, {.session = session_in(JitMode::off)})(inputs.layout()...)(inputs...);
  auto jit_session = session_in(JitMode::always);
  const Tensor jit = compile(fn, {.session = jit_session})(inputs.layout()...)(inputs...);
  const std::vector<SignatureStats> stats = jit_session->stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].tier == "jit");
  return {first_difference(interp, jit), stats[0].ops_per_lowering};
}

} // namespace
#endif

#if KILN_HAS_JIT
TEST_CASE("adaptive_avg_pool2d runs as oneDNN pooling for uniform windows, else the interpreter's kernel") {
  for (const int64_t h : {1, 7, 17})
    for (const int64_t w : {1, 7, 17})
      for (const bool edges : {false, true}) {
        const Tensor x = sample({2, 3, 2 * h, w}, uint64_t(h * 100 + w), edges);
        for (const std::vector<int64_t>& out : {std::vector<int64_t>{h, w}, {2 * h, 1}, {1, 1}, {3, 5}}) {
          CAPTURE(h);
          CAPTURE(w);
          CAPTURE(out[0]);
          CAPTURE(out[1]);
          const auto [difference, lowerings] =
              on_both_tiers([&](Tensor t) { return F::adaptive_avg_pool2d(t, out); }, x);
          CHECK_MESSAGE(difference.empty(), difference);
          const bool uniform = 2 * h % out[0] == 0 && w % out[1] == 0;
          CHECK(lowerings.count("dnnl.adaptive_avg_pool2d") == (uniform ? 1u : 0u));
        }
      }
}
#endif

TEST_CASE("adaptive_avg_pool2d refuses non-NCHW inputs, empty planes, integers and bad output sizes") {
  const Tensor x = Tensor::randn({1, 2, 5, 5}, 1);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(Tensor::randn({2, 5, 5}, 2), {2, 2}),
                       doctest::Contains("needs an NCHW input"), Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(Tensor::zeros({1, 2, 0, 5}), {2, 2}), doctest::Contains("empty plane"),
                       Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(x, {2, -1}), doctest::Contains("output_size must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(x, {2}), doctest::Contains("output_size needs 2 values"), Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(x, {INT64_MAX / 2, 1}), doctest::Contains("overflows"), Error);
  try {
    F::adaptive_avg_pool2d(Tensor::zeros({1, 2, 5, 5}, DType::i32), {2, 2});
    FAIL("an integer input was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
    CHECK(std::string(e.what()).find("kiln.adaptive_avg_pool2d") != std::string::npos);
  }
}

TEST_CASE("nn::AdaptiveAvgPool2d is F::adaptive_avg_pool2d") {
  nn::AdaptiveAvgPool2d pool({3, 2});
  const Tensor x = Tensor::randn({2, 3, 7, 5}, 3);
  const Tensor got = pool.forward(x), want = F::adaptive_avg_pool2d(x, {3, 2});
  REQUIRE(got.dims() == std::vector<int64_t>{2, 3, 3, 2});
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.data<float>()[i] == want.data<float>()[i]);
  CHECK(pool.state_dict().empty());
}

TEST_CASE("group_norm and instance_norm refuse channels groups do not divide, bad parameters and flat inputs") {
  const Tensor x = Tensor::randn({2, 6, 5}, 4);
  CHECK_THROWS_WITH_AS(F::group_norm(x, 4), doctest::Contains("groups 4 must divide the channels 6"), Error);
  CHECK_THROWS_WITH_AS(F::group_norm(x, 0), doctest::Contains("groups must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(F::group_norm(Tensor::randn({6}, 5), 2), doctest::Contains("needs rank >= 2"), Error);
  CHECK_THROWS_WITH_AS(F::group_norm(x, 3, Tensor::ones({5})), doctest::Contains("weight has shape [5]"), Error);
  CHECK_THROWS_WITH_AS(F::group_norm(x, 3, Tensor(), Tensor::ones({6, 1})), doctest::Contains("has shape [6, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(F::group_norm(Tensor::randn({1, 2, 1}, 11), 2), doctest::Contains("one value per group"), Error);
  CHECK_THROWS_WITH_AS(F::instance_norm(Tensor::randn({2, 6}, 6)), doctest::Contains("needs rank >= 3"), Error);
  CHECK_THROWS_WITH_AS(F::instance_norm(Tensor::randn({2, 6, 1, 1}, 7)), doctest::Contains("one spatial element"),
                       Error);
  try {
    F::group_norm(Tensor::zeros({2, 6, 5}, DType::i32), 3);
    FAIL("an integer input was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
    CHECK(std::string(e.what()).find("kiln.group_norm") != std::string::npos);
  }
}

TEST_CASE("group_norm matches a naive two-pass loop in f64 on large offsets") {
  // A mean of 1e4 with unit spread: a one-pass E[x^2] - E[x]^2 in f32 would lose the variance.
  Tensor x = Tensor::randn({2, 4, 7, 17}, 8);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] += 1e4f;
  const Tensor y = F::group_norm(x.cast(DType::f64), 2).cast(DType::f32);
  const int64_t size = 2 * 7 * 17;
  for (int64_t task = 0; task < 4; ++task) {
    const float* in = x.data<float>() + task * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i)
      mean += in[i];
    mean /= double(size);
    for (int64_t i = 0; i < size; ++i)
      var += (in[i] - mean) * (in[i] - mean);
    const double inv_std = 1 / std::sqrt(var / double(size) + 1e-5);
    for (int64_t i = 0; i < size; ++i)
      CHECK(y.data<float>()[task * size + i] == doctest::Approx((in[i] - mean) * inv_std).epsilon(1e-6));
  }
}

TEST_CASE("nn::GroupNorm and nn::InstanceNorm2d hold torch's parameters and apply F::group_norm") {
  nn::GroupNorm norm(3, 6);
  const auto names = norm.named_parameters();
  REQUIRE(names.size() == 2);
  CHECK(names[0].first == "weight");
  CHECK(names[0].second.dims() == std::vector<int64_t>{6});
  CHECK(names[1].first == "bias");
  CHECK(nn::GroupNorm(3, 6, 1e-5, false).named_parameters().empty());
  CHECK(nn::InstanceNorm2d(4).named_parameters().empty());
  CHECK(nn::InstanceNorm2d(4, 1e-5, true).named_parameters().size() == 2);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(4, 6), doctest::Contains("divisible by num_groups"), Error);
  const Tensor x = Tensor::randn({2, 6, 5, 3}, 9);
  const Tensor got = norm.forward(x), want = F::group_norm(x, 3);
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.data<float>()[i] == want.data<float>()[i]);
  const Tensor instance = nn::InstanceNorm2d(6).forward(x), per_channel = F::group_norm(x, 6);
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(instance.data<float>()[i] == per_channel.data<float>()[i]);
  CHECK_THROWS_WITH_AS(nn::InstanceNorm2d(6).forward(Tensor::randn({6, 5, 3}, 10)),
                       doctest::Contains("expects an NCHW input"), Error);
}

// The definition: input (ih, iw) times weight tap (i, j) adds into output (ih * sh - ph + i * dh,
// iw * sw - pw + j * dw), a scatter (where the kernel gathers).
static Tensor scattered_conv_transpose2d(const Tensor& x, const Tensor& w, const F::ConvTranspose2dOptions& o) {
  const auto& xd = x.dims();
  const auto& wd = w.dims();
  const int64_t groups = o.groups, cin = xd[1], cout = wd[1] * groups, gin = cin / groups, gout = wd[1];
  const int64_t oh =
      (xd[2] - 1) * o.stride[0] - 2 * o.padding[0] + o.dilation[0] * (wd[2] - 1) + o.output_padding[0] + 1;
  const int64_t ow =
      (xd[3] - 1) * o.stride[1] - 2 * o.padding[1] + o.dilation[1] * (wd[3] - 1) + o.output_padding[1] + 1;
  std::vector<double> out(size_t(xd[0] * cout * oh * ow), 0.0);
  for (int64_t n = 0; n < xd[0]; ++n)
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t ih = 0; ih < xd[2]; ++ih)
        for (int64_t iw = 0; iw < xd[3]; ++iw)
          for (int64_t k = 0; k < gout; ++k)
            for (int64_t i = 0; i < wd[2]; ++i)
              for (int64_t j = 0; j < wd[3]; ++j) {
                const int64_t h = ih * o.stride[0] - o.padding[0] + i * o.dilation[0];
                const int64_t v = iw * o.stride[1] - o.padding[1] + j * o.dilation[1];
                if (h < 0 || h >= oh || v < 0 || v >= ow) continue;
                const int64_t oc = c / gin * gout + k;
                out[size_t(((n * cout + oc) * oh + h) * ow + v)] +=
                    double(x.data<float>()[((n * cin + c) * xd[2] + ih) * xd[3] + iw]) *
                    w.data<float>()[((c * gout + k) * wd[2] + i) * wd[3] + j];
              }
  std::vector<float> rounded(out.begin(), out.end());
  return Tensor::from_vector(rounded, {xd[0], cout, oh, ow});
}

TEST_CASE("conv_transpose2d matches a naive scatter loop on odd sizes, strides, groups and dilations") {
  struct Case {
    std::vector<int64_t> x, w;
    F::ConvTranspose2dOptions options;
  };
  const Case cases[] = {
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
      {{2, 3, 7, 17}, {3, 2, 3, 3}, {.stride = {2, 3}, .padding = {1, 2}, .output_padding = {1, 2}}},
      {{1, 6, 17, 7}, {6, 1, 3, 2}, {.stride = {1, 2}, .output_padding = {1, 1}, .groups = 3, .dilation = {2, 1}}},
      {{1, 4, 7, 1}, {4, 3, 1, 7}, {.stride = {3, 1}, .padding = {0, 3}, .groups = 2}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.x[2]);
    CAPTURE(c.w[2]);
    const Tensor x = Tensor::randn(c.x, 11), w = Tensor::randn(c.w, 12);
    const Tensor want = scattered_conv_transpose2d(x, w, c.options);
    for (const JitMode mode : {JitMode::off, JitMode::always}) {
      if (mode == JitMode::always && !KILN_HAS_JIT) continue;
      auto fn = [&c](Tensor t, Tensor k) { return F::conv_transpose2d(t, k, Tensor(), c.options); };
      const Tensor got = compile(fn, {.session = session_in(mode)})(x.layout(), w.layout())(x, w);
      REQUIRE(got.dims() == want.dims());
      for (int64_t i = 0; i < got.numel(); ++i)
        CHECK(got.data<float>()[i] == doctest::Approx(want.data<float>()[i]).epsilon(1e-5).scale(1));
    }
  }
}

TEST_CASE("conv_transpose2d refuses torch's bad output_padding, channel mismatches and empty results") {
  const Tensor x = Tensor::randn({1, 4, 5, 5}, 13), w = Tensor::randn({4, 3, 3, 3}, 14);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor(), {.stride = {2, 2}, .output_padding = {2, 0}}),
                       doctest::Contains("output_padding 2 must be smaller than stride 2 or dilation 1"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, Tensor::randn({3, 3, 3, 3}, 15), Tensor()),
                       doctest::Contains("input channels"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor(), {.groups = 3}), doctest::Contains("groups 3 must divide"),
                       Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor::ones({4})), doctest::Contains("bias has shape [4]"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor(), {.padding = {4, 0}}), doctest::Contains("too small"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor(), {.stride = {0, 1}}),
                       doctest::Contains("stride and dilation must be > 0"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(x, w, Tensor(), {.stride = {INT64_MAX / 2, 1}}),
                       doctest::Contains("overflows"), Error);
}

TEST_CASE("nn::ConvTranspose2d holds torch's weight [in, out / groups, kh, kw] and bias [out]") {
  nn::ConvTranspose2d up(4, 6, {3, 2}, {.stride = {2, 2}, .output_padding = {1, 1}, .groups = 2});
  const auto params = up.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "weight");
  CHECK(params[0].second.dims() == std::vector<int64_t>{4, 3, 3, 2});
  CHECK(params[1].first == "bias");
  CHECK(params[1].second.dims() == std::vector<int64_t>{6});
  // torch's bound 1 / sqrt(fan_in), fan_in = weight.size(1) * kh * kw = 18.
  for (int64_t i = 0; i < params[0].second.numel(); ++i)
    CHECK(std::fabs(params[0].second.data<float>()[i]) <= 1 / std::sqrt(18.0));
  const Tensor x = Tensor::randn({1, 4, 5, 7}, 16);
  const Tensor got = up.forward(x);
  const Tensor want = F::conv_transpose2d(x, params[0].second, params[1].second,
                                          {.stride = {2, 2}, .output_padding = {1, 1}, .groups = 2});
  REQUIRE(got.dims() == std::vector<int64_t>{1, 6, 12, 15});
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.data<float>()[i] == want.data<float>()[i]);
  CHECK(nn::ConvTranspose2d(4, 6, 3, {.bias = false}).named_parameters().size() == 1);
  CHECK_THROWS_WITH_AS(nn::ConvTranspose2d(4, 6, 3, {.groups = 4}), doctest::Contains("divisible by groups"), Error);
}

TEST_CASE("interpolate's nearest mode copies any dtype's elements as bits, -0 included") {
  const Tensor x = Tensor::from_vector(std::vector<int32_t>{1, -2, INT32_MIN, INT32_MAX, 5, 6}, {1, 2, 1, 3});
  const Tensor y = F::interpolate(x, {.size = {2, 5}});
  REQUIRE(y.dtype() == DType::i32);
  // Columns floor(j * 3 / 5) = 0, 0, 1, 1, 2 of each row, both rows from row 0.
  const std::vector<int32_t> want = {1,         1,         -2, -2, INT32_MIN, 1,         1,         -2, -2, INT32_MIN,
                                     INT32_MAX, INT32_MAX, 5,  5,  6,         INT32_MAX, INT32_MAX, 5,  5,  6};
  CHECK(std::vector<int32_t>(y.data<int32_t>(), y.data<int32_t>() + 20) == want);
  const Tensor z = F::interpolate(Tensor::from_vector(std::vector<float>{-0.0f, 1.0f}, {1, 1, 1, 2}), {.size = {1, 4}});
  CHECK(std::signbit(z.data<float>()[0]));
  CHECK(std::signbit(z.data<float>()[1]));
}

TEST_CASE("interpolate refuses both or neither of size and scale_factor, unknown modes and nearest align_corners") {
  const Tensor x = Tensor::randn({1, 2, 5, 5}, 17);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {}), doctest::Contains("exactly one of size and scale_factor"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.size = {2, 2}, .scale_factor = {2, 2}}),
                       doctest::Contains("exactly one of size and scale_factor"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.size = {2, 2}, .mode = "bicubic"}), doctest::Contains("\"bicubic\""), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.size = {2, 2}, .align_corners = true}),
                       doctest::Contains("align_corners needs mode \"bilinear\""), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.size = {0, 2}}), doctest::Contains("size must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.scale_factor = {0.1, 1}}), doctest::Contains("size must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.scale_factor = {1e300, 1}}), doctest::Contains("interpolate output size"),
                       Error);
  CHECK_THROWS_WITH_AS(F::interpolate(x, {.scale_factor = {-2, 1}}), doctest::Contains("finite and > 0"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(Tensor::randn({2, 5, 5}, 18), {.size = {2, 2}}),
                       doctest::Contains("needs an NCHW input"), Error);
  try {
    F::interpolate(Tensor::zeros({1, 2, 5, 5}, DType::i32), {.size = {2, 2}, .mode = "bilinear"});
    FAIL("an integer bilinear input was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
  }
}

TEST_CASE("nn::Upsample is F::interpolate") {
  nn::Upsample up({.scale_factor = {2, 2}, .mode = "bilinear"});
  const Tensor x = Tensor::randn({1, 2, 3, 5}, 19);
  const Tensor got = up.forward(x), want = F::interpolate(x, {.scale_factor = {2, 2}, .mode = "bilinear"});
  REQUIRE(got.dims() == std::vector<int64_t>{1, 2, 6, 10});
  for (int64_t i = 0; i < got.numel(); ++i)
    CHECK(got.data<float>()[i] == want.data<float>()[i]);
}

#if KILN_HAS_JIT
TEST_CASE("conv_transpose2d with a constant weight runs as oneDNN deconvolution, agreeing with the interpreter") {
  struct Case {
    std::vector<int64_t> x, w;
    F::ConvTranspose2dOptions options;
    bool bias;
  };
  const Case cases[] = {
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {}, true},
      {{2, 3, 7, 17}, {3, 2, 3, 3}, {.stride = {2, 3}, .padding = {1, 2}, .output_padding = {1, 2}}, true},
      {{1, 6, 17, 7},
       {6, 1, 3, 2},
       {.stride = {1, 2}, .padding = {1, 1}, .output_padding = {1, 1}, .groups = 3, .dilation = {2, 1}},
       false},
      {{2, 4, 7, 1}, {4, 3, 1, 7}, {.stride = {3, 1}, .padding = {0, 3}, .groups = 2}, true},
  };
  for (const Case& c : cases)
    for (const bool edges : {false, true}) {
      CAPTURE(c.x[2]);
      CAPTURE(edges);
      const Tensor weight = sample(c.w, 21, false), bias = sample({c.w[1] * c.options.groups}, 22, false);
      const bool has_bias = c.bias;
      auto fn = [&c, weight, bias, has_bias](Tensor t) {
        return F::conv_transpose2d(t, F::constant(weight), has_bias ? F::constant(bias) : Tensor(), c.options);
      };
      const auto [difference, lowerings] = on_both_tiers(fn, sample(c.x, 23, edges));
      CHECK_MESSAGE(difference.empty(), difference);
      CHECK(lowerings.count("dnnl.conv_transpose2d") == 1);
    }
}

TEST_CASE("conv_transpose2d keeps the interpreter's kernel for a computed weight or output_padding past padding") {
  const Tensor x = sample({1, 2, 5, 5}, 24, false), w = sample({2, 3, 3, 3}, 25, false);
  const auto [difference, lowerings] =
      on_both_tiers([](Tensor t, Tensor k) { return F::conv_transpose2d(t, k, Tensor()); }, x, w);
  CHECK(difference.empty());
  CHECK(lowerings.count("dnnl.conv_transpose2d") == 0);
  auto padded = [w](Tensor t) {
    return F::conv_transpose2d(t, F::constant(w), Tensor(), {.stride = {2, 2}, .output_padding = {1, 1}});
  };
  const auto [padded_difference, padded_lowerings] = on_both_tiers(padded, x);
  CHECK(padded_difference.empty());
  CHECK(padded_lowerings.count("dnnl.conv_transpose2d") == 0);
}
#endif
