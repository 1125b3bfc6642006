// conv1d (torch.nn.functional.conv1d) against a naive loop written here in double: eagerly, on the
// interpreter and, where built, on the JIT tier (oneDNN), on odd sizes, every hyperparameter and
// edge values; then the errors bad inputs give. tests/python/test_conv1d.py checks it against torch.
#include "kiln_config.h"
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

struct Conv1dCase {
  int64_t batch, channels, out_channels, length, kernel, stride, padding, dilation, groups;
  bool bias;
};

std::string describe(const Conv1dCase& c) {
  return "x [" + std::to_string(c.batch) + ", " + std::to_string(c.channels) + ", " + std::to_string(c.length) +
         "], w [" + std::to_string(c.out_channels) + ", " + std::to_string(c.channels / c.groups) + ", " +
         std::to_string(c.kernel) + "], stride " + std::to_string(c.stride) + ", padding " + std::to_string(c.padding) +
         ", dilation " + std::to_string(c.dilation) + ", groups " + std::to_string(c.groups) + (c.bias ? ", bias" : "");
}

int64_t out_length(const Conv1dCase& c) {
  return (c.length + 2 * c.padding - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
}

bool window_fits(const Conv1dCase& c) { return c.length + 2 * c.padding >= c.dilation * (c.kernel - 1) + 1; }

// The expected result and, per element, the sum of the magnitudes of its terms (the scale of the
// rounding a float sum in any order may differ by).
struct Reference {
  std::vector<double> values, magnitudes;
};

// y[n, o, t] = b[o] + sum over the channels c of o's group and j < kernel of
// x[n, c, t * stride - padding + j * dilation] * w[o, c - group start, j], zero outside x.
Reference naive_conv1d(const Conv1dCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t lo = out_length(c), per_group = c.channels / c.groups, out_per_group = c.out_channels / c.groups;
  Reference ref{std::vector<double>(size_t(c.batch * c.out_channels * lo)),
                std::vector<double>(size_t(c.batch * c.out_channels * lo))};
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_channels; ++o)
      for (int64_t t = 0; t < lo; ++t) {
        double sum = c.bias ? double(b.data<float>()[o]) : 0.0, magnitude = std::fabs(sum);
        const int64_t g = o / out_per_group;
        for (int64_t ci = 0; ci < per_group; ++ci)
          for (int64_t j = 0; j < c.kernel; ++j) {
            const int64_t i = t * c.stride - c.padding + j * c.dilation;
            if (i < 0 || i >= c.length) continue;
            const double term = double(x.data<float>()[(n * c.channels + g * per_group + ci) * c.length + i]) *
                                double(w.data<float>()[(o * per_group + ci) * c.kernel + j]);
            sum += term;
            magnitude += std::fabs(term);
          }
        ref.values[size_t((n * c.out_channels + o) * lo + t)] = sum;
        ref.magnitudes[size_t((n * c.out_channels + o) * lo + t)] = magnitude;
      }
  return ref;
}

// Where `got` differs from the reference: NaN must meet NaN, an infinity the same infinity, finite
// values within 1e-5 * (1 + the magnitude of their terms). Empty when they agree.
std::string first_difference(const Reference& want, const Tensor& got) {
  if (got.numel() != int64_t(want.values.size())) return "the result has " + std::to_string(got.numel()) + " elements";
  for (size_t i = 0; i < want.values.size(); ++i) {
    const double e = want.values[i], g = got.data<float>()[i];
    const bool same = std::isnan(e)   ? std::isnan(g)
                      : std::isinf(e) ? g == e
                                      : std::isfinite(g) && std::fabs(g - e) <= 1e-5 * (1 + want.magnitudes[i]);
    if (!same) return "element " + std::to_string(i) + ": want " + std::to_string(e) + ", got " + std::to_string(g);
  }
  return "";
}

// Random values in [-4, 4]; with `edges`, every 7th element one of 0, -0, NaN, +-inf, huge and
// denormal values.
Tensor sample(const std::vector<int64_t>& dims, uint64_t seed, bool edges) {
  Tensor t = Tensor::rand(dims, seed, -4.0f, 4.0f);
  const float values[] = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          1e30f,
                          -1e30f,
                          std::numeric_limits<float>::denorm_min(),
                          -1e-40f};
  if (edges)
    for (int64_t i = 3; i < t.numel(); i += 7)
      t.data<float>()[i] = values[size_t(i / 7) % std::size(values)];
  return t;
}

// Every kernel size, channel count and length the brief names, with strides, paddings, dilations
// and groups cycled through them.
std::vector<Conv1dCase> cases() {
  std::vector<Conv1dCase> out;
  int i = 0;
  for (const int64_t length : {1, 7, 17, 1023})
    for (const int64_t channels : {1, 3})
      for (const int64_t kernel : {1, 3, 5}) {
        const int64_t groups = channels == 3 && i % 2 ? 3 : 1;
        out.push_back({1 + i % 2, channels, groups == 3 ? 6 : 2, length, kernel, 1 + i % 3, i % 3, 1 + (i / 2) % 2,
                       groups, i % 4 != 1});
        ++i;
      }
  return out;
}

struct Operands {
  Tensor x, w, b;
};

Operands operands_of(const Conv1dCase& c, uint64_t seed, bool edges) {
  return {sample({c.batch, c.channels, c.length}, seed, edges),
          sample({c.out_channels, c.channels / c.groups, c.kernel}, seed + 1, false),
          sample({c.out_channels}, seed + 2, false)};
}

F::Conv1dOptions options_of(const Conv1dCase& c) {
  return {.stride = c.stride, .padding = c.padding, .dilation = c.dilation, .groups = c.groups};
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 16);
}

// The convolution with its weight and bias as registry weights, as a model holds them: what the
// JIT tier lowers to oneDNN. Returns the result and how many ops each JIT lowering took.
std::pair<Tensor, std::map<std::string, int>> compiled(const Conv1dCase& c, const Operands& in, JitMode mode) {
  auto fn = [&c, w = in.w.layout(), b = in.b.layout()](Tensor x) {
    const Tensor bias = c.bias ? F::constant_external("b", b) : Tensor();
    return F::conv1d(x, F::constant_external("w", w), bias, options_of(c));
  };
  std::map<std::string, Tensor> weights{{"w", in.w}};
  if (c.bias) weights.emplace("b", in.b);
  auto session = session_in(mode);
  const Tensor y = compile(fn, {.weights = weights, .session = session})(in.x.layout())(in.x);
  const std::vector<SignatureStats> stats = session->stats();
  REQUIRE(stats.size() == 1);
  return {y, stats[0].ops_per_lowering};
}

} // namespace

TEST_CASE("eager conv1d matches a naive loop on odd sizes, every hyperparameter and edge values") {
  uint64_t seed = 1;
  for (const Conv1dCase& c : cases())
    for (const bool edges : {false, true}) {
      CAPTURE(describe(c));
      CAPTURE(edges);
      const Operands in = operands_of(c, seed += 3, edges);
      if (!window_fits(c)) {
        CHECK_THROWS_WITH_AS(F::conv1d(in.x, in.w, c.bias ? in.b : Tensor(), options_of(c)),
                             doctest::Contains("is larger than the padded input"), Error);
        continue;
      }
      const Tensor y = F::conv1d(in.x, in.w, c.bias ? in.b : Tensor(), options_of(c));
      CHECK(y.dims() == std::vector<int64_t>{c.batch, c.out_channels, out_length(c)});
      const std::string difference = first_difference(naive_conv1d(c, in.x, in.w, in.b), y);
      CHECK_MESSAGE(difference.empty(), difference);
    }
}

TEST_CASE("compiled conv1d matches a naive loop on the interpreter and, where built, the JIT tier (oneDNN)") {
  uint64_t seed = 100;
  std::vector<JitMode> modes{JitMode::off};
  if (KILN_HAS_JIT) modes.push_back(JitMode::always);
  for (const Conv1dCase& c : cases()) {
    if (!window_fits(c)) continue;
    for (const bool edges : {false, true})
      for (const JitMode mode : modes) {
        CAPTURE(describe(c));
        CAPTURE(edges);
        CAPTURE(mode == JitMode::off ? "interpreter" : "jit");
        const Operands in = operands_of(c, seed += 3, edges);
        const auto [y, lowerings] = compiled(c, in, mode);
        const std::string difference = first_difference(naive_conv1d(c, in.x, in.w, in.b), y);
        CHECK_MESSAGE(difference.empty(), difference);
        if (mode == JitMode::always) CHECK(lowerings.count("dnnl.conv2d") == 1);
      }
  }
}

TEST_CASE("conv1d computes in f64 and in f16 as conv2d does, and refuses integers and mixed dtypes") {
  const Conv1dCase c{2, 3, 4, 9, 3, 2, 1, 1, 1, true};
  const Operands in = operands_of(c, 7, false);
  const Reference want = naive_conv1d(c, in.x, in.w, in.b);
  const Tensor y64 =
      F::conv1d(F::cast(in.x, DType::f64), F::cast(in.w, DType::f64), F::cast(in.b, DType::f64), options_of(c));
  REQUIRE(y64.dtype() == DType::f64);
  REQUIRE(y64.numel() == int64_t(want.values.size()));
  for (size_t i = 0; i < want.values.size(); ++i)
    CHECK(std::fabs(y64.data<double>()[i] - want.values[i]) <= 1e-12 * (1 + want.magnitudes[i]));
  const Tensor y16 =
      F::conv1d(F::cast(in.x, DType::f16), F::cast(in.w, DType::f16), F::cast(in.b, DType::f16), options_of(c));
  REQUIRE(y16.dtype() == DType::f16);
  // f16 keeps 11 bits: each operand and the result round by 2^-11 of their magnitude.
  const Tensor back = F::cast(y16, DType::f32);
  for (size_t i = 0; i < want.values.size(); ++i)
    CHECK(std::fabs(back.data<float>()[i] - want.values[i]) <= 4e-3 * (1 + want.magnitudes[i]));
  for (const auto& [x, w] :
       {std::pair{F::cast(in.x, DType::i32), F::cast(in.w, DType::i32)}, std::pair{in.x, F::cast(in.w, DType::f64)}}) {
    try {
      F::conv1d(x, w, Tensor());
      FAIL("conv1d accepted " << dtype_name(x.dtype()) << " and " << dtype_name(w.dtype()));
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::dtype);
      CHECK(std::string(e.what()).find("kiln.conv1d") != std::string::npos);
    }
  }
}

TEST_CASE("conv1d refuses bad ranks, channels groups do not divide, a kernel longer than the padded input") {
  const Tensor x = Tensor::randn({2, 4, 7}, 1), w = Tensor::randn({6, 4, 3}, 2);
  const auto refuses = [](auto call, const std::string& message) {
    CAPTURE(message);
    try {
      call();
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK(what.find("kiln.conv1d") != std::string::npos);
      CHECK_MESSAGE(what.find(message) != std::string::npos, what);
    }
  };
  refuses([&] { F::conv1d(Tensor::randn({4, 7}, 3), w, Tensor()); }, "needs [N, C, L] input");
  refuses([&] { F::conv1d(Tensor::randn({2, 4, 1, 7}, 3), w, Tensor()); }, "needs [N, C, L] input");
  refuses([&] { F::conv1d(x, Tensor::randn({6, 4, 1, 3}, 4), Tensor()); }, "[O, C / groups, K] weight");
  refuses(
      [&] {
        F::conv1d(x, Tensor::randn({6, 1, 3}, 5), Tensor(), {.groups = 3});
      },
      "groups 3 must divide input channels 4");
  refuses(
      [&] {
        F::conv1d(x, Tensor::randn({5, 2, 3}, 5), Tensor(), {.groups = 2});
      },
      "must divide input channels 4 and output channels 5");
  refuses([&] { F::conv1d(x, Tensor::randn({6, 3, 3}, 6), Tensor()); }, "expects 3 input channels per group");
  refuses([&] { F::conv1d(x, Tensor::randn({6, 4, 9}, 7), Tensor()); }, "window 9 is larger than the padded input 7");
  refuses([&] { F::conv1d(x, w, Tensor(), {.dilation = 4}); }, "window 9 is larger than the padded input 7");
  refuses([&] { F::conv1d(x, w, Tensor::randn({5}, 8)); }, "bias has shape [5], expected [6]");
  refuses([&] { F::conv1d(x, w, Tensor(), {.stride = 0}); }, "stride and dilation must be > 0, padding >= 0");
  refuses([&] { F::conv1d(x, w, Tensor(), {.padding = -1}); }, "stride and dilation must be > 0, padding >= 0");
  refuses([&] { F::conv1d(x, w, Tensor(), {.groups = 0}); }, "groups 0 must divide");
  refuses([&] { F::conv1d(x, Tensor::randn({6, 4, 0}, 9), Tensor()); }, "kernel size 0 must be > 0");
  // The padding makes room: a window of 9 fits 7 + 2 * 1.
  CHECK(F::conv1d(x, Tensor::randn({6, 4, 9}, 7), Tensor(), {.padding = 1}).dims() == std::vector<int64_t>{2, 6, 1});
}

TEST_CASE("conv1d's printed form reads back: stride, padding and dilation of one value each") {
  auto fn = [](Tensor x, Tensor w) { return F::conv1d(x, w, Tensor(), {.stride = 2, .padding = 1, .dilation = 3}); };
  const std::string text =
      stage(fn)(TensorLayout(DType::f32, {1, 2, 17}), TensorLayout(DType::f32, {4, 2, 3})).to_mlir();
  CAPTURE(text);
  CHECK(text.find("kiln.conv1d") != std::string::npos);
  CHECK(text.find("stride = array<i64: 2>") != std::string::npos);
  CHECK(text.find("dilation = array<i64: 3>") != std::string::npos);
  CHECK(parse_staged(text).to_mlir() == text);
}

#if KILN_HAS_JIT
TEST_CASE("on the JIT tier conv1d takes its bias and relu into one oneDNN convolution and chains into the next") {
  const Conv1dCase c{2, 3, 8, 33, 5, 1, 2, 1, 1, true};
  const Operands in = operands_of(c, 11, true);
  const Tensor w2 = sample({4, 8, 3}, 14, false);
  auto fn = [&](Tensor x) {
    const Tensor h = F::relu(F::conv1d(x, F::constant_external("w", in.w.layout()),
                                       F::constant_external("b", in.b.layout()), {.padding = 2}));
    return F::conv1d(h, F::constant_external("w2", w2.layout()), Tensor(), {.stride = 2});
  };
  const std::map<std::string, Tensor> weights{{"w", in.w}, {"b", in.b}, {"w2", w2}};
  const Tensor interp = compile(fn, {.weights = weights, .session = session_in(JitMode::off)})(in.x.layout())(in.x);
  auto jit_session = session_in(JitMode::always);
  const Tensor jit = compile(fn, {.weights = weights, .session = jit_session})(in.x.layout())(in.x);
  const std::vector<SignatureStats> stats = jit_session->stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].tier == "jit");
  CHECK(stats[0].ops_per_lowering.at("dnnl.conv2d") == 3); // both convolutions and the relu
  REQUIRE(interp.dims() == jit.dims());
  int64_t mismatches = 0;
  for (int64_t i = 0; i < jit.numel(); ++i) {
    const double e = interp.data<float>()[i], g = jit.data<float>()[i];
    // oneDNN's relu post-op maps NaN to 0 (docs/debugging.md); the interpreter keeps NaN.
    if (std::isnan(e)) continue;
    mismatches += std::isinf(e) ? g != e : !(std::fabs(g - e) <= 1e-4 * (1 + std::fabs(e)));
  }
  CHECK(mismatches == 0);
}

TEST_CASE("on the JIT tier a conv1d whose weight is computed in the graph keeps the interpreter's kernel") {
  const Conv1dCase c{1, 3, 2, 17, 3, 1, 1, 1, 1, false};
  const Operands in = operands_of(c, 21, true);
  auto session = session_in(JitMode::always);
  const Tensor y = compile([](Tensor x, Tensor w) { return F::conv1d(x, w, Tensor(), {.padding = 1}); },
                           {.session = session})(in.x.layout(), in.w.layout())(in.x, in.w);
  const std::vector<SignatureStats> stats = session->stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].ops_per_lowering.count("dnnl.conv2d") == 0);
  const std::string difference = first_difference(naive_conv1d(c, in.x, in.w, in.b), y);
  CHECK_MESSAGE(difference.empty(), difference);
}
#endif
