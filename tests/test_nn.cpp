// kiln::nn modules: each layer's eager forward against naive loops, the traced and compiled forward
// against the eager one in both tiers, full names in nested trees, state_dict loading and files.
#include "error_message.hpp"
#include "kiln_config.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <doctest/doctest.h>
#include <filesystem>
#include <functional>
#include <kiln/kiln.hpp>
#include <kiln/nn.hpp>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// Loops below accumulate in double; kiln in f32, so they agree to a few ulps of the sums' size.
constexpr double kTolerance = 1e-5;

Tensor uniform(const std::vector<int64_t>& dims, uint64_t seed, float bound = 1.0f) {
  return Tensor::rand(dims, seed, -bound, bound);
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dims() == b.dims());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.item_as_double(i) - b.item_as_double(i)));
  return worst;
}

// Element `index` (C order) of a concrete tensor of any rank.
double at(const Tensor& t, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t axis = 0; axis < index.size(); ++axis)
    flat = flat * t.dim(int64_t(axis)) + index[axis];
  return t.item_as_double(flat);
}

// Gives every parameter and buffer of the module random values (variances positive), seeded by order.
void randomise(nn::Module& module, uint64_t seed) {
  std::map<std::string, Tensor> state;
  for (const auto& [name, value] : module.state_dict()) {
    const bool variance = name.ends_with("running_var");
    state[name] = variance ? Tensor::rand(value.dims(), seed++, 0.5f, 2.0f) : uniform(value.dims(), seed++);
  }
  module.load_state_dict(state);
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  policy.async = false;
  return std::make_shared<Session>(policy, 16);
}

// The module's forward on `input` traced with a symbolic leading dim, compiled in the interpreter and
// (where linked) the JIT tier, against its eager forward on the same weights.
void check_compiled_matches_eager(nn::Module& module, const Tensor& input) {
  const Tensor eager = module(input);
  Shape shape = input.shape();
  shape[0] = Dim("batch");
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto session = session_in(mode);
    auto forward = [&module](const Tensor& x) { return module(x); };
    auto compiled =
        compile(forward, {.weights = module.state_dict(), .session = session})(TensorLayout(input.dtype(), shape));
    CHECK(max_abs_difference(compiled(input), eager) <= kTolerance);
#if KILN_HAS_JIT
    if (mode == JitMode::always) {
      REQUIRE(session->stats().size() == 1);
      CHECK(session->stats()[0].tier == "jit");
    }
#endif
  }
}

struct TempDir {
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("kiln-test-nn-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

Tensor naive_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t rows = x.dim(0), in = x.dim(1), out = weight.dim(0);
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias.defined() ? bias.item_as_double(o) : 0.0;
      for (int64_t i = 0; i < in; ++i)
        sum += at(x, {r, i}) * at(weight, {o, i});
      y[size_t(r * out + o)] = float(sum);
    }
  return Tensor::from_vector(y, {rows, out});
}

} // namespace

TEST_CASE("Linear computes x Wᵀ + b like a naive loop, with and without bias") {
  for (auto [rows, in, out] : std::vector<std::array<int64_t, 3>>{{1, 7, 17}, {7, 17, 1}, {17, 1, 7}})
    for (bool bias : {true, false}) {
      nn::Linear linear(in, out, bias);
      randomise(linear, 10);
      const Tensor x = uniform({rows, in}, 1);
      CHECK(linear.state_dict().count("bias") == size_t(bias));
      CHECK(max_abs_difference(linear(x), naive_linear(x, linear.tensor("weight"),
                                                       bias ? linear.tensor("bias") : Tensor())) <= kTolerance);
      check_compiled_matches_eager(linear, x);
    }
}

TEST_CASE("Conv2d matches a naive loop with stride, padding, dilation and groups") {
  struct Case {
    int64_t batch, in, out, height, width;
    std::vector<int64_t> kernel;
    nn::Conv2dOptions options;
  };
  const Case cases[] = {
      {1, 3, 5, 7, 7, {3, 3}, {}},
      {2, 4, 6, 7, 17, {3, 2}, {.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}, .groups = 2}},
      {1, 1, 7, 17, 1, {1, 1}, {.bias = false}}};
  for (const Case& c : cases) {
    nn::Conv2d conv(c.in, c.out, c.kernel, c.options);
    randomise(conv, 20);
    const Tensor x = uniform({c.batch, c.in, c.height, c.width}, 2);
    const Tensor y = conv(x);
    const auto& o = c.options;
    const int64_t oh = y.dim(2), ow = y.dim(3), group_in = c.in / o.groups, group_out = c.out / o.groups;
    CHECK(oh == (c.height + 2 * o.padding[0] - o.dilation[0] * (c.kernel[0] - 1) - 1) / o.stride[0] + 1);
    CHECK(ow == (c.width + 2 * o.padding[1] - o.dilation[1] * (c.kernel[1] - 1) - 1) / o.stride[1] + 1);
    double worst = 0;
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oc = 0; oc < c.out; ++oc)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double sum = o.bias ? conv.tensor("bias").item_as_double(oc) : 0.0;
            for (int64_t ic = 0; ic < group_in; ++ic)
              for (int64_t ki = 0; ki < c.kernel[0]; ++ki)
                for (int64_t kj = 0; kj < c.kernel[1]; ++kj) {
                  const int64_t h = i * o.stride[0] - o.padding[0] + ki * o.dilation[0];
                  const int64_t w = j * o.stride[1] - o.padding[1] + kj * o.dilation[1];
                  if (h < 0 || h >= c.height || w < 0 || w >= c.width) continue;
                  sum += at(x, {n, oc / group_out * group_in + ic, h, w}) * at(conv.tensor("weight"), {oc, ic, ki, kj});
                }
            worst = std::max(worst, std::abs(sum - at(y, {n, oc, i, j})));
          }
    CHECK(worst <= kTolerance);
    check_compiled_matches_eager(conv, x);
  }
}

TEST_CASE("Conv1d matches a naive loop with stride, padding, dilation and groups") {
  struct Case {
    int64_t batch, in, out, length, kernel;
    nn::Conv1dOptions options;
  };
  const Case cases[] = {{1, 3, 5, 7, 3, {}},
                        {2, 4, 6, 17, 3, {.stride = 2, .padding = 1, .dilation = 2, .groups = 2}},
                        {1, 1, 7, 1, 1, {.bias = false}}};
  for (const Case& c : cases) {
    nn::Conv1d conv(c.in, c.out, c.kernel, c.options);
    randomise(conv, 30);
    CHECK(conv.tensor("weight").dims() == std::vector<int64_t>{c.out, c.in / c.options.groups, c.kernel});
    CHECK(conv.state_dict().count("bias") == size_t(c.options.bias));
    const Tensor x = uniform({c.batch, c.in, c.length}, 3);
    const Tensor y = conv(x);
    const auto& o = c.options;
    const int64_t lo = y.dim(2), group_in = c.in / o.groups, group_out = c.out / o.groups;
    CHECK(lo == (c.length + 2 * o.padding - o.dilation * (c.kernel - 1) - 1) / o.stride + 1);
    double worst = 0;
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oc = 0; oc < c.out; ++oc)
        for (int64_t t = 0; t < lo; ++t) {
          double sum = o.bias ? conv.tensor("bias").item_as_double(oc) : 0.0;
          for (int64_t ic = 0; ic < group_in; ++ic)
            for (int64_t k = 0; k < c.kernel; ++k) {
              const int64_t i = t * o.stride - o.padding + k * o.dilation;
              if (i >= 0 && i < c.length)
                sum += at(x, {n, oc / group_out * group_in + ic, i}) * at(conv.tensor("weight"), {oc, ic, k});
            }
          worst = std::max(worst, std::abs(sum - at(y, {n, oc, t})));
        }
    CHECK(worst <= kTolerance);
    check_compiled_matches_eager(conv, x);
  }
  CHECK_THROWS_WITH_AS(nn::Conv1d(4, 6, 3, {.groups = 4}),
                       "spec error: Conv1d: in_channels 4 and out_channels 6 must be divisible by groups 4", Error);
  CHECK_THROWS_AS(nn::Conv1d(4, 6, 0), Error);
}

TEST_CASE("MaxPool2d takes each window's maximum, padding excluded") {
  nn::MaxPool2d pool({.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  const Tensor x = uniform({1, 7, 17, 7}, 15);
  const Tensor y = pool(x);
  REQUIRE(y.dims() == std::vector<int64_t>{1, 7, 9, 4});
  double worst = 0;
  for (int64_t c = 0; c < 7; ++c)
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double top = -1e300;
        for (int64_t h = 2 * i - 1; h <= 2 * i + 1; ++h)
          for (int64_t w = 2 * j - 1; w <= 2 * j + 1; ++w)
            if (h >= 0 && h < 17 && w >= 0 && w < 7) top = std::max(top, at(x, {0, c, h, w}));
        worst = std::max(worst, std::abs(top - at(y, {0, c, i, j})));
      }
  CHECK(worst == 0.0);
  check_compiled_matches_eager(pool, x);
}

TEST_CASE("BatchNorm2d normalises with its running statistics and affine") {
  nn::BatchNorm2d norm(7, 1e-3);
  randomise(norm, 30);
  const Tensor x = uniform({2, 7, 1, 17}, 3, 4.0f);
  const Tensor y = norm(x);
  double worst = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 7; ++c)
      for (int64_t w = 0; w < 17; ++w) {
        const double mean = norm.tensor("running_mean").item_as_double(c);
        const double var = norm.tensor("running_var").item_as_double(c);
        const double expected =
            (at(x, {n, c, 0, w}) - mean) / std::sqrt(var + 1e-3) * norm.tensor("weight").item_as_double(c) +
            norm.tensor("bias").item_as_double(c);
        worst = std::max(worst, std::abs(expected - at(y, {n, c, 0, w})));
      }
  CHECK(worst <= kTolerance);
  check_compiled_matches_eager(norm, x);
}

TEST_CASE("BatchNorm2d accepts and drops PyTorch's num_batches_tracked") {
  nn::BatchNorm2d norm(3);
  std::map<std::string, Tensor> state = norm.state_dict();
  CHECK(state.size() == 4);
  CHECK(state.count("num_batches_tracked") == 0);
  state["num_batches_tracked"] = Tensor::from_vector<int64_t>({120}, {});
  norm.load_state_dict(state);
  CHECK(norm.state_dict().count("num_batches_tracked") == 0);
  nn::BatchNorm2d plain(3, 1e-5, false);
  CHECK(plain.named_parameters().empty());
  CHECK(plain.named_buffers().size() == 2);
}

TEST_CASE("LayerNorm and RMSNorm normalise the last axis like a naive loop") {
  for (int64_t width : {1, 7, 17}) {
    const Tensor x = uniform({7, width}, 4, 3.0f);
    nn::LayerNorm layer_norm(width);
    nn::RMSNorm rms_norm(width);
    randomise(layer_norm, 40);
    randomise(rms_norm, 50);
    const Tensor y = layer_norm(x), z = rms_norm(x);
    const double rms_eps = std::numeric_limits<float>::epsilon();
    double worst = 0;
    for (int64_t r = 0; r < 7; ++r) {
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < width; ++i)
        sum += at(x, {r, i}), squares += at(x, {r, i}) * at(x, {r, i});
      const double mean = sum / double(width), variance = squares / double(width) - mean * mean;
      for (int64_t i = 0; i < width; ++i) {
        const double w = layer_norm.tensor("weight").item_as_double(i), b = layer_norm.tensor("bias").item_as_double(i);
        const double normalised = (at(x, {r, i}) - mean) / std::sqrt(variance + 1e-5) * w + b;
        const double rms =
            at(x, {r, i}) / std::sqrt(squares / double(width) + rms_eps) * rms_norm.tensor("weight").item_as_double(i);
        worst = std::max({worst, std::abs(normalised - at(y, {r, i})), std::abs(rms - at(z, {r, i}))});
      }
    }
    CHECK(worst <= 1e-4); // 1/sqrt of a small variance magnifies f32 rounding
    check_compiled_matches_eager(layer_norm, x);
    check_compiled_matches_eager(rms_norm, x);
  }
  CHECK(nn::LayerNorm(5, 1e-5, false).state_dict().empty());
  CHECK(nn::LayerNorm(5, 1e-5, true, false).state_dict().size() == 1);
}

TEST_CASE("LayerNorm normalises several trailing axes together") {
  nn::LayerNorm norm(std::vector<int64_t>{7, 17});
  CHECK(norm.tensor("weight").dims() == std::vector<int64_t>{7, 17});
  randomise(norm, 45);
  const Tensor x = uniform({1, 7, 17}, 16, 3.0f);
  const Tensor y = norm(x);
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < 7 * 17; ++i)
    sum += x.item_as_double(i), squares += x.item_as_double(i) * x.item_as_double(i);
  const double mean = sum / (7 * 17), variance = squares / (7 * 17) - mean * mean;
  double worst = 0;
  for (int64_t i = 0; i < 7 * 17; ++i) {
    const double expected =
        (x.item_as_double(i) - mean) / std::sqrt(variance + 1e-5) * norm.tensor("weight").item_as_double(i) +
        norm.tensor("bias").item_as_double(i);
    worst = std::max(worst, std::abs(expected - y.item_as_double(i)));
  }
  CHECK(worst <= kTolerance);
  check_compiled_matches_eager(norm, x);
  CHECK(message_of([&] {
          norm(uniform({7, 7}, 1));
        }) == "shape error: LayerNorm (the root module): input [7, 7] does not end in normalized_shape [7, 17]");
}

TEST_CASE("Embedding picks the weight's rows by index") {
  nn::Embedding embedding(17, 7);
  const Tensor indices = Tensor::from_vector<int64_t>({16, 0, 3, 3, 9, 1, 7}, {1, 7});
  const Tensor y = embedding(indices);
  REQUIRE(y.dims() == std::vector<int64_t>{1, 7, 7});
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t d = 0; d < 7; ++d)
      CHECK(at(y, {0, i, d}) == at(embedding.tensor("weight"), {int64_t(indices.item_as_double(i)), d}));
  check_compiled_matches_eager(embedding, indices);
}

TEST_CASE("activations match their formulas and Dropout is the identity") {
  const Tensor x = uniform({1, 17}, 5, 8.0f);
  struct Case {
    std::shared_ptr<nn::Module> module;
    std::function<double(double)> expected;
  };
  const Case cases[] = {
      {std::make_shared<nn::ReLU>(), [](double v) { return std::max(v, 0.0); }},
      {std::make_shared<nn::ReLU6>(), [](double v) { return std::clamp(v, 0.0, 6.0); }},
      {std::make_shared<nn::GELU>(), [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {std::make_shared<nn::GELU>("tanh"),
       [](double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }},
      {std::make_shared<nn::SiLU>(), [](double v) { return v / (1.0 + std::exp(-v)); }},
      {std::make_shared<nn::Sigmoid>(), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {std::make_shared<nn::Tanh>(), [](double v) { return std::tanh(v); }},
      {std::make_shared<nn::Hardsigmoid>(), [](double v) { return std::clamp(v + 3.0, 0.0, 6.0) / 6.0; }},
      {std::make_shared<nn::Identity>(), [](double v) { return v; }},
      {std::make_shared<nn::Dropout>(0.3), [](double v) { return v; }},
  };
  for (const Case& c : cases) {
    const Tensor y = (*c.module)(x);
    for (int64_t i = 0; i < 17; ++i)
      CHECK(y.item_as_double(i) == doctest::Approx(c.expected(x.item_as_double(i))).epsilon(1e-5).scale(1e-6));
    check_compiled_matches_eager(*c.module, x);
  }
  CHECK(message_of([] { nn::Dropout(1.5); }) == "spec error: Dropout: probability must be in [0, 1], got 1.500000");
}

namespace {

// torch's attention on [L, N, E] query and [S, N, E] key and value, for batch `n` and output row `l`.
std::vector<double> naive_attention_row(nn::MultiheadAttention& attention, int64_t heads, const Tensor& query,
                                        const Tensor& key, const Tensor& value, int64_t n, int64_t l) {
  const int64_t embed = query.dim(2), seq = key.dim(0), head_dim = embed / heads;
  const Tensor& w = attention.tensor("in_proj_weight");
  const Tensor& b = attention.tensor("in_proj_bias");
  auto project = [&](const Tensor& x, int64_t row, int64_t part) {
    std::vector<double> y(static_cast<size_t>(embed));
    for (int64_t o = 0; o < embed; ++o) {
      y[size_t(o)] = b.item_as_double(part * embed + o);
      for (int64_t i = 0; i < embed; ++i)
        y[size_t(o)] += at(x, {row, n, i}) * at(w, {part * embed + o, i});
    }
    return y;
  };
  const std::vector<double> q = project(query, l, 0);
  std::vector<double> context(size_t(embed), 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<double> scores(static_cast<size_t>(seq));
    double top = -1e300, total = 0;
    for (int64_t s = 0; s < seq; ++s) {
      const std::vector<double> k = project(key, s, 1);
      double dot = 0;
      for (int64_t d = 0; d < head_dim; ++d)
        dot += q[size_t(h * head_dim + d)] * k[size_t(h * head_dim + d)];
      scores[size_t(s)] = dot / std::sqrt(double(head_dim));
      top = std::max(top, scores[size_t(s)]);
    }
    for (double& s : scores)
      total += (s = std::exp(s - top));
    for (int64_t s = 0; s < seq; ++s) {
      const std::vector<double> v = project(value, s, 2);
      for (int64_t d = 0; d < head_dim; ++d)
        context[size_t(h * head_dim + d)] += scores[size_t(s)] / total * v[size_t(h * head_dim + d)];
    }
  }
  std::vector<double> out(static_cast<size_t>(embed));
  for (int64_t o = 0; o < embed; ++o) {
    out[size_t(o)] = attention.state_dict().at("out_proj.bias").item_as_double(o);
    for (int64_t i = 0; i < embed; ++i)
      out[size_t(o)] += context[size_t(i)] * at(attention.state_dict().at("out_proj.weight"), {o, i});
  }
  return out;
}

} // namespace

TEST_CASE("MultiheadAttention matches a naive loop in PyTorch's packed layout, batch first or not") {
  const int64_t embed = 8, heads = 2, target = 7, source = 17, batch = 1;
  for (bool batch_first : {false, true}) {
    nn::MultiheadAttention attention(embed, heads, true, batch_first);
    const std::map<std::string, Tensor> state = attention.state_dict();
    CHECK(state.at("in_proj_weight").dims() == std::vector<int64_t>{3 * embed, embed});
    CHECK(state.at("in_proj_bias").dims() == std::vector<int64_t>{3 * embed});
    CHECK(state.at("out_proj.weight").dims() == std::vector<int64_t>{embed, embed});
    CHECK(state.at("out_proj.bias").dims() == std::vector<int64_t>{embed});
    randomise(attention, 60);
    const Tensor query = uniform({target, batch, embed}, 6), key = uniform({source, batch, embed}, 7);
    const Tensor value = uniform({source, batch, embed}, 8);
    auto arranged = [batch_first](const Tensor& x) { return batch_first ? x.transpose(0, 1).clone() : x; };
    const Tensor y = arranged(attention(arranged(query), arranged(key), arranged(value)));
    REQUIRE(y.dims() == std::vector<int64_t>{target, batch, embed});
    double worst = 0;
    for (int64_t l = 0; l < target; ++l) {
      const std::vector<double> expected = naive_attention_row(attention, heads, query, key, value, 0, l);
      for (int64_t o = 0; o < embed; ++o)
        worst = std::max(worst, std::abs(expected[size_t(o)] - at(y, {l, 0, o})));
    }
    CHECK(worst <= kTolerance);
  }
}

TEST_CASE("MultiheadAttention compiles through forward_inputs and matches its eager forward") {
  nn::MultiheadAttention attention(8, 4, true, true);
  randomise(attention, 70);
  const Tensor query = uniform({7, 1, 8}, 9), memory = uniform({7, 17, 8}, 10);
  const Tensor eager = attention(query, memory, memory);
  const TensorLayout query_layout(DType::f32, {"batch", 1, 8}), memory_layout(DType::f32, {"batch", "seq", 8});
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto forward = [&attention](const std::vector<Tensor>& inputs) { return attention.forward_inputs(inputs); };
    auto compiled = compile(forward, {.weights = attention.state_dict(), .session = session_in(mode)})(
        std::vector<TensorLayout>{query_layout, memory_layout, memory_layout});
    CHECK(max_abs_difference(compiled(std::vector<Tensor>{query, memory, memory}), eager) <= kTolerance);
  }
  CHECK(message_of([&] { attention.forward_inputs({query}); }) ==
        "spec error: the root module takes 3 inputs (query, key, value), got 1 in forward_inputs");
  CHECK(message_of([&] {
          attention(query, uniform({7, 17, 6}, 1), memory);
        }) == "shape error: MultiheadAttention (the root module): key must be [batch, seq, 8], got [7, 17, 6]");
}

namespace {

// encoder.layers.<i>.{fc1,fc2}, encoder.norm, head: each part built before it joins its parent.
struct Block : nn::Module {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(7, 17));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(17, 7, false));
  Tensor forward(const Tensor& x) override { return x + (*fc2)(F::relu((*fc1)(x))); }
};

struct Encoder : nn::Module {
  std::shared_ptr<nn::ModuleList> layers =
      register_module("layers", std::make_shared<nn::ModuleList>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                    std::make_shared<Block>(), std::make_shared<Block>()}));
  std::shared_ptr<nn::LayerNorm> norm = register_module("norm", std::make_shared<nn::LayerNorm>(7));
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i)
      h = (*layers)[i](h);
    return (*norm)(h);
  }
};

struct Model : nn::Module {
  std::shared_ptr<Encoder> encoder = register_module("encoder", std::make_shared<Encoder>());
  std::shared_ptr<nn::Sequential> head =
      register_module("head", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                  std::make_shared<nn::Linear>(7, 3), std::make_shared<nn::GELU>()}));
  Tensor forward(const Tensor& x) override { return (*head)((*encoder)(x)); }
};

} // namespace

TEST_CASE("nested modules name their tensors by the full path, however late they join") {
  Model model;
  std::vector<std::string> names;
  for (const auto& [name, value] : model.named_parameters())
    names.push_back(name);
  CHECK(names == std::vector<std::string>{"encoder.layers.0.fc1.weight", "encoder.layers.0.fc1.bias",
                                          "encoder.layers.0.fc2.weight", "encoder.layers.1.fc1.weight",
                                          "encoder.layers.1.fc1.bias", "encoder.layers.1.fc2.weight",
                                          "encoder.norm.weight", "encoder.norm.bias", "head.0.weight", "head.0.bias"});
  CHECK(model.parameters().size() == names.size());
  CHECK(model.state_dict().size() == names.size());
  CHECK(model.encoder->layers->full_name() == "encoder.layers");
  CHECK((*model.encoder->layers)[1].full_name("x") == "encoder.layers.1.x");
  // A submodule's state_dict keeps the full names its traced graph uses.
  CHECK(model.encoder->norm->state_dict().count("encoder.norm.weight") == 1);
}

TEST_CASE("a submodule that outlives its parent becomes a root") {
  std::shared_ptr<nn::LayerNorm> norm;
  {
    Encoder encoder;
    norm = encoder.norm;
    CHECK(norm->full_name("weight") == "norm.weight");
  }
  CHECK(norm->full_name("weight") == "weight");
}

TEST_CASE("a nested model traced and compiled matches its eager forward, its MLIR naming weights in full") {
  Model model;
  randomise(model, 80);
  check_compiled_matches_eager(model, uniform({17, 7}, 11));
  const std::string text =
      stage([&model](const Tensor& x) { return model(x); })(TensorLayout(DType::f32, {"n", 7})).to_mlir();
  for (const auto& [name, value] : model.state_dict())
    CHECK_MESSAGE(text.find("\"" + name + "\"") != std::string::npos, name);
}

TEST_CASE("Sequential feeds each child's output to the next, as the functional API does") {
  nn::Sequential net{std::make_shared<nn::Linear>(17, 7), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(7, 1)};
  randomise(net, 90);
  const std::map<std::string, Tensor> s = net.state_dict();
  const Tensor x = uniform({7, 17}, 12);
  const Tensor expected =
      F::linear(F::relu(F::linear(x, s.at("0.weight"), s.at("0.bias"))), s.at("2.weight"), s.at("2.bias"));
  CHECK(max_abs_difference(net(x), expected) == 0.0);
  CHECK(net.size() == 3);
  CHECK(message_of([&] { (void)net[3]; }) == "spec error: the root module: index 3 is out of range for 3 modules");
}

TEST_CASE("strict load_state_dict names every missing, unexpected and mis-shaped entry, and loads nothing") {
  Block block;
  std::map<std::string, Tensor> state = block.state_dict();
  const Tensor old_fc1_bias = block.fc1->tensor("bias");
  state.erase("fc2.weight");
  state["fc1.weight"] = Tensor::zeros({7, 17});
  state["fc1.bias"] = Tensor::zeros({17}, DType::f64);
  state["fc3.weight"] = Tensor::zeros({1});
  state["extra"] = Tensor::zeros({1});
  const std::string message = message_of([&] { block.load_state_dict(state); });
  CHECK(message == "weight error: load_state_dict into the root module: missing 'fc2.weight'; unexpected 'extra', "
                   "'fc3.weight'; mis-shaped 'fc1.bias' (expected f32 [17] on cpu:0, got f64 [17] on cpu:0), "
                   "'fc1.weight' (expected f32 [17, 7] on cpu:0, got f32 [7, 17] on cpu:0)");
  CHECK(block.fc1->tensor("bias").same_as(old_fc1_bias));
}

TEST_CASE("non-strict load_state_dict skips missing and unexpected entries, zero-copy") {
  Block block;
  const Tensor fc1_weight = uniform({17, 7}, 13), old_fc2 = block.fc2->tensor("weight");
  block.load_state_dict({{"fc1.weight", fc1_weight}, {"unknown", Tensor::zeros({2})}}, false);
  CHECK(block.fc1->tensor("weight").same_as(fc1_weight));
  CHECK(block.fc2->tensor("weight").same_as(old_fc2));
  CHECK(message_of([&] {
          block.load_state_dict({{"fc1.bias", Tensor::zeros({3})}}, false);
        }) ==
        "weight error: load_state_dict into the root module: mis-shaped 'fc1.bias' (expected f32 [17] on cpu:0, got "
        "f32 [3] on cpu:0)");
}

TEST_CASE("to_safetensors then load_safetensors into a fresh model gives identical outputs") {
  TempDir dir;
  Model trained;
  randomise(trained, 100);
  trained.to_safetensors(dir.file("model.safetensors"));
  Model fresh;
  const Tensor x = uniform({7, 7}, 14);
  CHECK(max_abs_difference(fresh(x), trained(x)) > 0.0);
  fresh.load_safetensors(dir.file("model.safetensors"));
  CHECK(max_abs_difference(fresh(x), trained(x)) == 0.0);
  CHECK(fs::directory_iterator(dir.path) != fs::directory_iterator()); // the file, and no leftovers beside it
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path))
    ++files;
  CHECK(files == 1);
}

TEST_CASE("module mistakes are errors naming the module") {
  nn::ModuleList list;
  CHECK(message_of([&] { list(Tensor::zeros({1})); }) ==
        "unsupported error: the root module has no forward of one input");
  Model model;
  CHECK(message_of([&] { model.encoder->layers->forward(Tensor::zeros({1})); }) ==
        "unsupported error: module 'encoder.layers' has no forward of one input");
  CHECK(message_of([&] { model.encoder->layers->push_back(model.head); }) ==
        "spec error: module 'encoder.layers': submodule '2' is already registered as 'head'");
  CHECK(message_of([&] { model.encoder->tensor("weight"); }) ==
        "weight error: module 'encoder' has no parameter or buffer 'weight'");
  CHECK(message_of([] { nn::Conv2d(4, 6, 3, {.groups = 4}); }) ==
        "spec error: Conv2d: in_channels 4 and out_channels 6 must be divisible by groups 4");
  CHECK(message_of([] { nn::Linear(0, 3); }) == "spec error: Linear: in_features must be positive, got 0");
}
