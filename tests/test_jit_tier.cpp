#include "captured_stderr.hpp"
#include "exec/threads.hpp"
#include "interp/implementation_table.hpp"
#include "interp/interpreter_backend.hpp"
#include "ir/ops.hpp"
#include "jit/tier/implementation_table.hpp"
#include "jit/tier/jit_executable.hpp"
#include "jit/tier/warm_up.hpp"
#include "scoped_env.hpp"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>

using namespace kiln;

namespace {

// Both tiers must agree within kTolerance * (1 + |interp|): the JIT's elementwise kernels use
// polynomial approximations and oneDNN sums in another order.
constexpr double kTolerance = 1e-4;

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 16);
}

// Counts elements where jit and interp disagree: NaN must meet NaN, infinities the same infinity,
// finite values within the tolerance.
int64_t count_mismatches(const Tensor& interp, const Tensor& jit) {
  REQUIRE(interp.dims() == jit.dims());
  int64_t mismatches = 0;
  const float* expected = interp.data<float>();
  const float* got = jit.data<float>();
  for (int64_t i = 0; i < interp.numel(); ++i) {
    const double e = expected[i];
    const double g = got[i];
    bool agree = std::isnan(e)   ? std::isnan(g)
                 : std::isinf(e) ? g == e
                                 : std::abs(g - e) <= kTolerance * (1 + std::abs(e));
    if (!agree && mismatches++ == 0) MESSAGE("first mismatch at " << i << ": interp " << e << ", jit " << g);
  }
  return mismatches;
}

struct TierComparison {
  Tensor interp;
  Tensor jit;
  std::string jit_tier;
  std::map<std::string, int> ops_per_lowering;
};

// Compiles fn once per tier for the inputs' layouts, calls both once and reads the JIT's statistics.
template <class Fn, class... Inputs>
TierComparison run_both_tiers(Fn fn, const std::map<std::string, Tensor>& weights, const Inputs&... inputs) {
  auto interp_session = session_in(JitMode::off);
  auto jit_session = session_in(JitMode::always);
  auto on_interp = compile(fn, {.weights = weights, .session = interp_session})(inputs.layout()...);
  auto on_jit = compile(fn, {.weights = weights, .session = jit_session})(inputs.layout()...);
  TierComparison comparison{on_interp(inputs...), on_jit(inputs...), "", {}};
  const std::vector<SignatureStats> stats = jit_session->stats();
  REQUIRE(stats.size() == 1);
  if (!stats[0].jit_error.empty()) MESSAGE("jit promotion failed: " << stats[0].jit_error);
  comparison.jit_tier = stats[0].tier;
  comparison.ops_per_lowering = stats[0].ops_per_lowering;
  return comparison;
}

void check_agreement(const TierComparison& comparison, const std::string& lowering, int expected_ops) {
  CHECK(comparison.jit_tier == "jit");
  auto found = comparison.ops_per_lowering.find(lowering);
  CHECK(found != comparison.ops_per_lowering.end());
  if (found != comparison.ops_per_lowering.end()) CHECK(found->second == expected_ops);
  CHECK(count_mismatches(comparison.interp, comparison.jit) == 0);
}

Tensor with_edge_values(Tensor x) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges{0.0f, -0.0f, 1e30f, -1e30f, std::nanf(""), inf, -inf, 88.0f, -88.0f};
  float* data = x.data<float>();
  for (size_t i = 0; i < edges.size() && int64_t(i) < x.numel(); ++i)
    data[i] = edges[i];
  return x;
}

Tensor mlp(const Tensor& x) {
  Tensor w1 = F::constant_external("fc1.weight", TensorLayout(DType::f32, {32, 16}));
  Tensor b1 = F::constant_external("fc1.bias", TensorLayout(DType::f32, {32}));
  Tensor w2 = F::constant_external("fc2.weight", TensorLayout(DType::f32, {8, 32}));
  Tensor b2 = F::constant_external("fc2.bias", TensorLayout(DType::f32, {8}));
  return F::linear(F::gelu(F::linear(x, w1, b1)), w2, b2);
}

std::map<std::string, Tensor> mlp_weights() {
  return {{"fc1.weight", Tensor::randn({32, 16}, 1)},
          {"fc1.bias", Tensor::randn({32}, 2)},
          {"fc2.weight", Tensor::randn({8, 32}, 3)},
          {"fc2.bias", Tensor::randn({8}, 4)}};
}

} // namespace

// Each lowering declares the kinds whose lists it heads (Implementation::first_for); a kind claimed by
// two would silently take the first.
TEST_CASE("every kind a lowering declares is headed by it alone, the interpreter after it") {
  std::map<ir::OpKind, int> claims;
  for (const jitc::tier::Implementation* first : jitc::tier::first_choices())
    for (ir::OpKind kind : first->first_for) {
      CAPTURE(ir::op_info(kind).name);
      ++claims[kind];
      const std::vector<jitc::tier::Implementation> list = jitc::tier::jit_implementations(kind);
      REQUIRE(list.size() == 2);
      CHECK(list[0].name == first->name);
      CHECK(list[1].name == "interp");
    }
  CHECK(claims.size() >= 10);
  for (const auto& [kind, count] : claims)
    CHECK(count == 1);
}

TEST_CASE("a Linear+GELU+Linear MLP runs as two fused oneDNN matmuls and matches the interpreter") {
  ScopedEnv dnnl_matmul("KILN_JIT_MATMUL", "dnnl"); // auto leaves matmul to the interpreter on AVX2
  for (int64_t batch : {1, 7, 17}) {
    CAPTURE(batch);
    // Per layer: the weight transpose, the matmul, the bias add; the GELU joins the first layer.
    check_agreement(run_both_tiers(mlp, mlp_weights(), Tensor::randn({batch, 16}, 10 + uint64_t(batch))), "dnnl.matmul",
                    7);
  }
}

TEST_CASE("an elementwise chain becomes one xbyak kernel, edge values included") {
  auto chain = [](Tensor x) { return F::tanh(x * 1.5 + 0.25) * F::sigmoid(x) - x * 0.1; };
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 1}, {7, 17}, {64, 1023}}) {
    CAPTURE(dims.back());
    Tensor x = with_edge_values(Tensor::rand(dims, 21, -4.0f, 4.0f));
    // mul, add, tanh, sigmoid, mul, mul, sub
    check_agreement(run_both_tiers(chain, {}, x), "xbyak", 7);
  }
}

// The runner hands a kernel up to 16 inputs from the stack; a region reading more takes them from
// a list.
TEST_CASE("an elementwise region reading 21 arguments matches the interpreter, small and large") {
  auto weighted_sum = [](const Tensor& x, const auto&... terms) {
    Tensor sum = x;
    float weight = 2.0f;
    ((sum = sum + terms * weight++), ...);
    return sum;
  };
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 1}, {7, 17}, {64, 1023}}) {
    CAPTURE(dims.back());
    std::array<Tensor, 20> terms;
    for (size_t k = 0; k < terms.size(); ++k)
      terms[k] = Tensor::randn(dims, 100 + int(k));
    const Tensor x = with_edge_values(Tensor::randn(dims, 99));
    std::apply([&](const auto&... t) { check_agreement(run_both_tiers(weighted_sum, {}, x, t...), "xbyak", 40); },
               terms);
  }
}

TEST_CASE("row, column and scalar operands broadcast inside one elementwise kernel") {
  auto broadcasting = [](Tensor x, Tensor row, Tensor column, Tensor scalar) {
    return F::maximum(x * row + column, scalar) - F::exp(column);
  };
  Tensor x = Tensor::randn({7, 17}, 31);
  Tensor row = Tensor::randn({17}, 32);
  Tensor column = Tensor::randn({7, 1}, 33);
  Tensor scalar = Tensor::full({1}, 0.1);
  check_agreement(run_both_tiers(broadcasting, {}, x, row, column, scalar), "xbyak", 5);
}

TEST_CASE("softmax and log_softmax run as oneDNN softmax") {
  Tensor x = Tensor::randn({4, 33}, 41);
  check_agreement(run_both_tiers([](Tensor t) { return F::softmax(t, -1); }, {}, x), "dnnl.softmax", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::log_softmax(t, 0); }, {}, x), "dnnl.softmax", 1);
}

TEST_CASE("layer_norm with weight and bias runs as oneDNN layer normalisation") {
  auto norm = [](Tensor t) {
    return F::layer_norm(t, F::constant_external("ln.weight", TensorLayout(DType::f32, {33})),
                         F::constant_external("ln.bias", TensorLayout(DType::f32, {33})), 1e-5, -1);
  };
  std::map<std::string, Tensor> weights{{"ln.weight", Tensor::randn({33}, 51)}, {"ln.bias", Tensor::randn({33}, 52)}};
  check_agreement(run_both_tiers(norm, weights, Tensor::randn({5, 33}, 53)), "dnnl.layer_norm", 1);
}

TEST_CASE("max and average pooling run as oneDNN pooling") {
  Tensor x = Tensor::randn({2, 3, 9, 9}, 61);
  const F::Pool2dOptions padded{{3, 3}, {2, 2}, {1, 1}, false};
  const F::Pool2dOptions counting_pad{{3, 3}, {2, 2}, {1, 1}, true};
  check_agreement(run_both_tiers([&](Tensor t) { return F::max_pool2d(t, padded); }, {}, x), "dnnl.pool2d", 1);
  check_agreement(run_both_tiers([&](Tensor t) { return F::avg_pool2d(t, padded); }, {}, x), "dnnl.pool2d", 1);
  check_agreement(run_both_tiers([&](Tensor t) { return F::avg_pool2d(t, counting_pad); }, {}, x), "dnnl.pool2d", 1);
}

// oneDNN 2.6 reduces trailing axes only in its JIT kernel; over other axes it runs its reference
// loops, 40-130x slower than the interpreter's passes, and its max and min drop NaN.
TEST_CASE("reductions over any axes keep the interpreter's kernels on the JIT tier") {
  Tensor x = with_edge_values(Tensor::randn({3, 5, 7}, 71));
  check_agreement(run_both_tiers([](Tensor t) { return F::sum(t, {1}); }, {}, x), "interp", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::mean(t, {0, 2}, true); }, {}, x), "interp", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::max(t, {0}); }, {}, x), "interp", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::min(t, {0, 1}); }, {}, x), "interp", 1);
  Tensor y = Tensor::randn({4, 6, 5, 5}, 72);
  check_agreement(run_both_tiers([](Tensor t) { return F::mean(t, {2, 3}, true); }, {}, y), "interp", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::max(t); }, {}, y), "interp", 1);
  check_agreement(run_both_tiers([](Tensor t) { return F::sum(t, {-1}); }, {}, y), "interp", 1);
}

TEST_CASE("conv2d with a constant weight absorbs its bias and the following relu") {
  auto conv = [](Tensor t) {
    Tensor w = F::constant_external("conv.weight", TensorLayout(DType::f32, {8, 3, 3, 3}));
    Tensor b = F::constant_external("conv.bias", TensorLayout(DType::f32, {8}));
    return F::relu(F::conv2d(t, w, b, {.stride = {1, 1}, .padding = {1, 1}}));
  };
  std::map<std::string, Tensor> weights{{"conv.weight", Tensor::randn({8, 3, 3, 3}, 81)},
                                        {"conv.bias", Tensor::randn({8}, 82)}};
  check_agreement(run_both_tiers(conv, weights, Tensor::randn({2, 3, 10, 10}, 83)), "dnnl.conv2d", 2);
}

namespace {

Tensor conv_layer(const Tensor& x, const std::string& name, int64_t in, int64_t out, int64_t stride) {
  Tensor w = F::constant_external(name + ".weight", TensorLayout(DType::f32, {out, in, 3, 3}));
  Tensor b = F::constant_external(name + ".bias", TensorLayout(DType::f32, {out}));
  return F::conv2d(x, w, b, {.stride = {stride, stride}, .padding = {1, 1}});
}

// Normal weights over sqrt(fan in), as PyTorch initialises them, so activations stay near 1
// through the stack instead of growing until sums cancel beyond the tolerance.
Tensor conv_weight(std::vector<int64_t> dims, uint64_t seed) {
  Tensor w = Tensor::randn(dims, seed);
  const float scale = 1.0f / std::sqrt(float(dims[1] * dims[2] * dims[3]));
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] *= scale;
  return w;
}

std::map<std::string, Tensor> conv_stack_weights() {
  return {{"c1.weight", conv_weight({8, 3, 3, 3}, 91)},   {"c1.bias", Tensor::randn({8}, 92)},
          {"c2.weight", conv_weight({16, 8, 3, 3}, 93)},  {"c2.bias", Tensor::randn({16}, 94)},
          {"c3.weight", conv_weight({16, 16, 3, 3}, 95)}, {"c3.bias", Tensor::randn({16}, 96)}};
}

// Signed zeros, large and tiny values in the input (larger ones would make sums cancel beyond the
// tolerance). No NaN or infinity: a relu fused into oneDNN maps
// NaN to 0 (see the test below), and infinities of both signs meeting in a window make one.
Tensor with_finite_edge_values(Tensor x) {
  const std::vector<float> edges{0.0f, -0.0f, 100.0f, -100.0f, 1e-30f};
  for (size_t i = 0; i < edges.size() && int64_t(i * 97) < x.numel(); ++i)
    x.data<float>()[i * 97] = edges[i];
  return x;
}

} // namespace

TEST_CASE("consecutive convolutions hand each other blocked activations and match the interpreter") {
  // conv relu -> conv (stride 2) relu -> conv + residual: one chain; odd spatial sizes (17 -> 9).
  // A batch of twice the threads runs in one slice per thread; an odd batch of 3 (with 2 or more
  // threads) and a batch of 1 run whole.
  auto stack = [](Tensor x, Tensor residual) {
    Tensor h = F::relu(conv_layer(x, "c1", 3, 8, 1));
    h = F::relu(conv_layer(h, "c2", 8, 16, 2));
    return conv_layer(h, "c3", 16, 16, 1) + residual;
  };
  for (int64_t batch : {int64_t(1), int64_t(3), int64_t(2 * exec::num_threads())}) {
    CAPTURE(batch);
    const Tensor x = with_finite_edge_values(Tensor::randn({batch, 3, 17, 17}, 97));
    const Tensor residual = Tensor::randn({batch, 16, 9, 9}, 98);
    auto jit_session = session_in(JitMode::always);
    auto on_jit =
        compile(stack, {.weights = conv_stack_weights(), .session = jit_session})(x.layout(), residual.layout());
    auto on_interp = compile(stack, {.weights = conv_stack_weights(), .session = session_in(JitMode::off)})(
        x.layout(), residual.layout());
    const Tensor want = on_interp(x, residual);
    CHECK(count_mismatches(want, on_jit(x, residual)) == 0);
    const std::vector<SignatureStats> stats = jit_session->stats();
    REQUIRE(stats.size() == 1);
    CHECK(stats[0].tier == "jit");
    CHECK(stats[0].ops_per_lowering.at("dnnl.conv2d") == 6); // three convolutions, two relus, the add
    // Chained, the first two results live in the step's scratch, in the convolutions' layout; the
    // arena holds that scratch too (the first result alone is 8*17*17 floats per image), so
    // arena_bytes is the call's peak.
    CHECK(stats[0].arena_bytes >= size_t(batch * 8 * 17 * 17 * 4));
  }
}

namespace {

// A batch_norm over `channels` with torchvision's parameter names and statistics that are not the
// identity, so that folding them into the convolution changes its weight and bias.
Tensor batch_norm_layer(const Tensor& x, const std::string& name, int64_t channels) {
  const TensorLayout per_channel(DType::f32, {channels});
  return F::batch_norm(x, F::constant_external(name + ".running_mean", per_channel),
                       F::constant_external(name + ".running_var", per_channel),
                       F::constant_external(name + ".weight", per_channel),
                       F::constant_external(name + ".bias", per_channel));
}

void add_batch_norm_weights(std::map<std::string, Tensor>& weights, const std::string& name, int64_t channels,
                            uint64_t seed) {
  weights[name + ".running_mean"] = Tensor::rand({channels}, seed, -0.5f, 0.5f);
  weights[name + ".running_var"] = Tensor::rand({channels}, seed + 1, 0.25f, 2.0f);
  weights[name + ".weight"] = Tensor::rand({channels}, seed + 2, 0.5f, 1.5f);
  weights[name + ".bias"] = Tensor::rand({channels}, seed + 3, -0.5f, 0.5f);
}

} // namespace

TEST_CASE("a batch_norm after a convolution folds into its weight and bias, residual blocks included") {
  // resnet's basic block: conv (no bias) bn relu, conv (with bias here) bn, + x, relu.
  auto block = [](Tensor x) {
    Tensor w1 = F::constant_external("c1.weight", TensorLayout(DType::f32, {8, 8, 3, 3}));
    Tensor h = F::relu(batch_norm_layer(F::conv2d(x, w1, Tensor(), {.padding = {1, 1}}), "bn1", 8));
    h = batch_norm_layer(conv_layer(h, "c2", 8, 8, 1), "bn2", 8);
    return F::relu(h + x);
  };
  std::map<std::string, Tensor> weights{{"c1.weight", conv_weight({8, 8, 3, 3}, 110)},
                                        {"c2.weight", conv_weight({8, 8, 3, 3}, 111)},
                                        {"c2.bias", Tensor::randn({8}, 112)}};
  add_batch_norm_weights(weights, "bn1", 8, 120);
  add_batch_norm_weights(weights, "bn2", 8, 130);
  for (int64_t batch : {int64_t(1), int64_t(2 * exec::num_threads())}) {
    CAPTURE(batch);
    const Tensor x = with_finite_edge_values(Tensor::randn({batch, 8, 11, 11}, 113));
    // conv, bn, relu, conv, bn, add, relu: the batch_norms are in the convolutions, no op is left.
    check_agreement(run_both_tiers(block, weights, x), "dnnl.conv2d", 7);
  }
  // The residual after the activation: fused where the convolution stays direct with it (AVX-512),
  // else added by the next kernel (AVX2); the same numbers either way.
  auto relu_then_add = [](Tensor x) {
    Tensor w1 = F::constant_external("c1.weight", TensorLayout(DType::f32, {8, 8, 3, 3}));
    return F::relu(F::conv2d(x, w1, Tensor(), {.padding = {1, 1}})) + x;
  };
  const TierComparison late = run_both_tiers(relu_then_add, weights, Tensor::randn({2, 8, 11, 11}, 116));
  CHECK(late.ops_per_lowering.at("dnnl.conv2d") >= 2);
  CHECK(count_mismatches(late.interp, late.jit) == 0);
  // A batch_norm whose statistics are computed in the graph is not folded.
  auto computed = [](Tensor x, Tensor mean) {
    Tensor w1 = F::constant_external("c1.weight", TensorLayout(DType::f32, {8, 8, 3, 3}));
    Tensor ones = F::constant_external("bn1.running_var", TensorLayout(DType::f32, {8}));
    return F::batch_norm(F::conv2d(x, w1, Tensor(), {.padding = {1, 1}}), mean * 2.0, ones, Tensor(), Tensor());
  };
  const Tensor x = Tensor::randn({1, 8, 5, 5}, 114), mean = Tensor::randn({8}, 115);
  const TierComparison both = run_both_tiers(computed, weights, x, mean);
  CHECK(both.ops_per_lowering.at("dnnl.conv2d") == 1);
  CHECK(count_mismatches(both.interp, both.jit) == 0);
}

namespace {

// conv (3x3, padding 1) -> batch_norm(eps) -> relu with weights named as torchvision's.
struct FoldCase {
  int64_t in, out, size, groups;
  double eps;
  float var_low, var_high; // running_var is uniform in [var_low, var_high)
  bool affine, conv_bias;
};

std::map<std::string, Tensor> fold_case_weights(const FoldCase& c, uint64_t seed) {
  std::map<std::string, Tensor> weights{{"c.weight", conv_weight({c.out, c.in / c.groups, 3, 3}, seed)},
                                        {"bn.running_mean", Tensor::rand({c.out}, seed + 1, -0.5f, 0.5f)},
                                        {"bn.running_var", Tensor::rand({c.out}, seed + 2, c.var_low, c.var_high)}};
  if (c.conv_bias) weights["c.bias"] = Tensor::randn({c.out}, seed + 3);
  if (c.affine) {
    weights["bn.weight"] = Tensor::rand({c.out}, seed + 4, -1.5f, 1.5f); // negative gammas flip the relu
    weights["bn.bias"] = Tensor::rand({c.out}, seed + 5, -0.5f, 0.5f);
  }
  return weights;
}

auto fold_case_graph(const FoldCase& c) {
  return [c](Tensor x) {
    const TensorLayout per_channel(DType::f32, {c.out});
    Tensor w = F::constant_external("c.weight", TensorLayout(DType::f32, {c.out, c.in / c.groups, 3, 3}));
    Tensor b = c.conv_bias ? F::constant_external("c.bias", per_channel) : Tensor();
    Tensor h = F::conv2d(x, w, b, {.padding = {1, 1}, .groups = c.groups});
    Tensor gamma = c.affine ? F::constant_external("bn.weight", per_channel) : Tensor();
    Tensor beta = c.affine ? F::constant_external("bn.bias", per_channel) : Tensor();
    return F::relu(F::batch_norm(h, F::constant_external("bn.running_mean", per_channel),
                                 F::constant_external("bn.running_var", per_channel), gamma, beta, c.eps));
  };
}

} // namespace

TEST_CASE("a folded batch_norm matches the interpreter at odd sizes, any eps and variances near 0") {
  const std::vector<FoldCase> cases{
      {1, 1, 1, 1, 1e-5, 0.25f, 2.0f, true, false},   // one channel, one pixel
      {3, 7, 7, 1, 1e-5, 0.0f, 1e-7f, true, true},    // variances near 0: scales near 1/sqrt(eps)
      {7, 17, 17, 1, 0.0, 1e-6f, 1e-4f, true, false}, // eps 0
      {17, 1, 7, 1, 1.0, 0.25f, 2.0f, false, true},   // a large eps, no affine
      {7, 7, 17, 7, 1e-3, 0.0f, 0.1f, true, false},   // depthwise
  };
  uint64_t seed = 400;
  for (const FoldCase& c : cases) {
    CAPTURE(c.in);
    CAPTURE(c.out);
    CAPTURE(c.size);
    CAPTURE(c.eps);
    seed += 10;
    for (int64_t batch : {int64_t(1), int64_t(3)}) {
      const Tensor x = with_finite_edge_values(Tensor::randn({batch, c.in, c.size, c.size}, seed + 7));
      const TierComparison both = run_both_tiers(fold_case_graph(c), fold_case_weights(c, seed), x);
      check_agreement(both, "dnnl.conv2d", 3); // conv, batch_norm and relu in one primitive
    }
  }
}

TEST_CASE("a batch_norm whose scale is not finite or whose statistics are embedded constants") {
  // var + eps == 0 in one channel: the interpreter's +-inf and NaN stay as they are, unfolded.
  const FoldCase zero{3, 7, 5, 1, 0.0, 0.25f, 2.0f, true, false};
  std::map<std::string, Tensor> weights = fold_case_weights(zero, 500);
  weights["bn.running_var"].data<float>()[3] = 0.0f;
  auto bare = [](Tensor x) {
    const TensorLayout per_channel(DType::f32, {7});
    Tensor w = F::constant_external("c.weight", TensorLayout(DType::f32, {7, 3, 3, 3}));
    return F::batch_norm(F::conv2d(x, w, Tensor(), {.padding = {1, 1}}),
                         F::constant_external("bn.running_mean", per_channel),
                         F::constant_external("bn.running_var", per_channel), Tensor(), Tensor(), 0.0);
  };
  const Tensor x = Tensor::randn({2, 3, 5, 5}, 501);
  const TierComparison unfolded = run_both_tiers(bare, weights, x);
  CHECK(unfolded.ops_per_lowering.at("dnnl.conv2d") == 1); // the convolution alone
  CHECK(count_mismatches(unfolded.interp, unfolded.jit) == 0);
  // Statistics embedded in the graph (F::constant) fold like weights.
  const Tensor mean = Tensor::rand({7}, 502, -0.5f, 0.5f), var = Tensor::rand({7}, 503, 0.0f, 1e-3f);
  auto embedded = [&](Tensor x) {
    Tensor w = F::constant_external("c.weight", TensorLayout(DType::f32, {7, 3, 3, 3}));
    return F::relu(F::batch_norm(F::conv2d(x, w, Tensor(), {.padding = {1, 1}}), F::constant(mean), F::constant(var),
                                 Tensor(), Tensor()));
  };
  check_agreement(run_both_tiers(embedded, weights, x), "dnnl.conv2d", 3);
}

TEST_CASE("residual blocks with a downsample run as one graph of convolutions in their own layouts") {
  // Two of resnet's basic blocks, the second with a strided 1x1 downsample whose result is the
  // residual of the block's second convolution: the downsample joins the graph before it.
  auto conv = [](const Tensor& x, const std::string& name, int64_t in, int64_t out, int64_t k, int64_t stride) {
    Tensor w = F::constant_external(name + ".weight", TensorLayout(DType::f32, {out, in, k, k}));
    return F::conv2d(x, w, Tensor(), {.stride = {stride, stride}, .padding = {k / 2, k / 2}});
  };
  auto blocks = [&](Tensor x) {
    Tensor h = F::relu(batch_norm_layer(conv(x, "a1", 8, 8, 3, 1), "bna1", 8));
    Tensor y = F::relu(batch_norm_layer(conv(h, "a2", 8, 8, 3, 1), "bna2", 8) + x);
    h = F::relu(batch_norm_layer(conv(y, "b1", 8, 16, 3, 2), "bnb1", 16));
    Tensor down = batch_norm_layer(conv(y, "down", 8, 16, 1, 2), "bndown", 16);
    return F::relu(batch_norm_layer(conv(h, "b2", 16, 16, 3, 1), "bnb2", 16) + down);
  };
  std::map<std::string, Tensor> weights{{"a1.weight", conv_weight({8, 8, 3, 3}, 140)},
                                        {"a2.weight", conv_weight({8, 8, 3, 3}, 141)},
                                        {"b1.weight", conv_weight({16, 8, 3, 3}, 142)},
                                        {"down.weight", conv_weight({16, 8, 1, 1}, 143)},
                                        {"b2.weight", conv_weight({16, 16, 3, 3}, 144)}};
  uint64_t seed = 150;
  for (auto [name, channels] : {std::pair{"bna1", 8}, {"bna2", 8}, {"bnb1", 16}, {"bndown", 16}, {"bnb2", 16}})
    add_batch_norm_weights(weights, name, channels, seed += 4);
  for (int64_t batch : {int64_t(1), int64_t(2 * exec::num_threads())}) {
    CAPTURE(batch);
    const Tensor x = with_finite_edge_values(Tensor::randn({batch, 8, 13, 13}, 145));
    check_agreement(run_both_tiers(blocks, weights, x), "dnnl.conv2d", 16); // every op of both blocks
  }
  // The first block's result also leaves the graph: it cannot stay in the convolutions' layout,
  // so the graph ends there and the second block is a graph of its own; the numbers agree.
  auto both_results = [&](Tensor x) {
    Tensor h = F::relu(batch_norm_layer(conv(x, "a1", 8, 8, 3, 1), "bna1", 8));
    Tensor y = F::relu(batch_norm_layer(conv(h, "a2", 8, 8, 3, 1), "bna2", 8) + x);
    return std::make_tuple(y, F::relu(batch_norm_layer(conv(y, "b1", 8, 16, 3, 2), "bnb1", 16)));
  };
  const Tensor x = Tensor::randn({1, 8, 13, 13}, 146);
  auto interp = compile(both_results, {.weights = weights, .session = session_in(JitMode::off)})(x.layout())(x);
  auto jit = compile(both_results, {.weights = weights, .session = session_in(JitMode::always)})(x.layout())(x);
  CHECK(count_mismatches(std::get<0>(interp), std::get<0>(jit)) == 0);
  CHECK(count_mismatches(std::get<1>(interp), std::get<1>(jit)) == 0);
}

TEST_CASE("a convolution result read twice is not chained and both readers see it in NCHW") {
  auto branches = [](Tensor x) {
    Tensor h = F::relu(conv_layer(x, "c1", 3, 8, 1));
    return F::sigmoid(conv_layer(h, "c2", 8, 16, 2)) * F::mean(h, {1, 2, 3}, true);
  };
  check_agreement(
      run_both_tiers(branches, conv_stack_weights(), with_finite_edge_values(Tensor::randn({1, 3, 11, 11}, 99))),
      "dnnl.conv2d", 4); // both convolutions, the relu and the sigmoid
}

TEST_CASE("a NaN reaching a relu fused into a convolution becomes 0 on the JIT tier, as in ONNX Runtime") {
  // oneDNN's relu post-op is max(x, 0), which returns 0 for NaN (ONNX Runtime's MLAS does the
  // same); the interpreter's relu keeps NaN, as PyTorch does. This pins the one known difference.
  auto conv_relu = [](Tensor x) { return F::relu(conv_layer(x, "c1", 3, 8, 1)); };
  Tensor x = Tensor::randn({1, 3, 5, 5}, 100);
  x.data<float>()[12] = std::nanf(""); // the centre pixel of channel 0: every output reads it
  const TierComparison both = run_both_tiers(conv_relu, conv_stack_weights(), x);
  CHECK(both.jit_tier == "jit");
  for (int64_t c = 0; c < 8; ++c) {
    const int64_t centre = c * 25 + 12;
    CHECK(std::isnan(both.interp.data<float>()[centre]));
    CHECK(both.jit.data<float>()[centre] == 0.0f);
  }
}

TEST_CASE("clamp fuses into an elementwise kernel with tensor bounds and into a convolution as relu6") {
  auto clamped = [](Tensor x, Tensor lo, Tensor hi) { return F::clamp(x * 2.0, lo, hi) + 1.0; };
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(1023)}) {
    CAPTURE(cols);
    Tensor x = with_edge_values(Tensor::rand({7, cols}, 41, -4.0f, 4.0f));
    Tensor lo = Tensor::rand({cols}, 42, -2.0f, 0.0f), hi = Tensor::rand({7, 1}, 43, -1.0f, 2.0f);
    lo.data<float>()[0] = std::nanf("");                                 // a NaN bound gives NaN on both tiers
    check_agreement(run_both_tiers(clamped, {}, x, lo, hi), "xbyak", 3); // mul, clamp, add
  }
  auto conv_relu6 = [](Tensor x) { return F::clamp(conv_layer(x, "c1", 3, 8, 1), 0.0, 6.0); };
  Tensor x = with_finite_edge_values(Tensor::randn({2, 3, 9, 9}, 44));
  for (int64_t i = 0; i < x.numel(); i += 5)
    x.data<float>()[i] *= 8.0f; // enough large activations that 6 clips
  check_agreement(run_both_tiers(conv_relu6, conv_stack_weights(), x), "dnnl.conv2d", 2); // conv, clamp
}

TEST_CASE("relu then minimum with a constant is one clip post-op after a convolution") {
  auto relu6 = [](Tensor x) { return F::minimum(F::relu(conv_layer(x, "c1", 3, 8, 1)), F::full({}, 6.0)); };
  Tensor x = with_finite_edge_values(Tensor::randn({2, 3, 9, 9}, 45));
  for (int64_t i = 0; i < x.numel(); i += 5)
    x.data<float>()[i] *= 8.0f; // enough large activations that 6 clips
  check_agreement(run_both_tiers(relu6, conv_stack_weights(), x), "dnnl.conv2d", 3); // conv, relu, minimum
  // Without the relu first, a minimum stays out: a clip would turn NaN into its lower bound.
  auto bare_minimum = [](Tensor x) { return F::minimum(conv_layer(x, "c1", 3, 8, 1), F::full({}, 6.0)); };
  const TierComparison both = run_both_tiers(bare_minimum, conv_stack_weights(), x);
  CHECK(both.ops_per_lowering.at("dnnl.conv2d") == 1);
  CHECK(count_mismatches(both.interp, both.jit) == 0);
}

TEST_CASE("a NaN reaching a clamp fused into a convolution becomes the lower bound on the JIT tier") {
  // oneDNN's clip post-op has relu's difference (see above): the interpreter keeps NaN, as PyTorch.
  auto conv_relu6 = [](Tensor x) { return F::clamp(conv_layer(x, "c1", 3, 8, 1), 0.5, 6.0); };
  Tensor x = Tensor::randn({1, 3, 5, 5}, 100);
  x.data<float>()[12] = std::nanf("");
  const TierComparison both = run_both_tiers(conv_relu6, conv_stack_weights(), x);
  CHECK(both.jit_tier == "jit");
  CHECK(both.ops_per_lowering.at("dnnl.conv2d") == 2);
  for (int64_t c = 0; c < 8; ++c) {
    const int64_t centre = c * 25 + 12;
    CHECK(std::isnan(both.interp.data<float>()[centre]));
    CHECK(both.jit.data<float>()[centre] == 0.5f);
  }
}

TEST_CASE("hardsigmoid fuses into an elementwise kernel and into a convolution as post-ops") {
  auto gate = [](Tensor x) { return F::hardsigmoid(x * 2.0) * x; };
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(1023)}) {
    CAPTURE(cols);
    check_agreement(run_both_tiers(gate, {}, with_edge_values(Tensor::rand({7, cols}, 51, -4.0f, 4.0f))), "xbyak",
                    3); // mul, hardsigmoid, mul
  }
  auto conv_gate = [](Tensor x) { return F::hardsigmoid(conv_layer(x, "c1", 3, 8, 1)); };
  Tensor x = with_finite_edge_values(Tensor::randn({2, 3, 9, 9}, 52));
  check_agreement(run_both_tiers(conv_gate, conv_stack_weights(), x), "dnnl.conv2d", 2); // conv, hardsigmoid
  // The post-ops clip (x + 3) to [0, 6], so a NaN becomes 0 there, as with clamp
  // (docs/tier-differences.md).
  x.data<float>()[12] = std::nanf("");
  const TierComparison both = run_both_tiers(conv_gate, conv_stack_weights(), x);
  CHECK(std::isnan(both.interp.data<float>()[12]));
  CHECK(both.jit.data<float>()[12] == 0.0f);
}

TEST_CASE("hardswish after a convolution is oneDNN's hardswish post-op, NaN kept") {
  auto conv_swish = [](Tensor x) { return F::hardswish(conv_layer(x, "c1", 3, 8, 1)); };
  Tensor x = with_finite_edge_values(Tensor::randn({2, 3, 9, 9}, 53));
  const TierComparison fused = run_both_tiers(conv_swish, conv_stack_weights(), x);
  check_agreement(fused, "dnnl.conv2d", 2); // conv, hardswish
  // The post-op itself, on the JIT's own convolution: torch's steps within 1e-5.
  const Tensor conv =
      run_both_tiers([](Tensor t) { return conv_layer(t, "c1", 3, 8, 1); }, conv_stack_weights(), x).jit;
  for (int64_t i = 0; i < conv.numel(); ++i) {
    const float v = conv.data<float>()[i];
    const float want = v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    CHECK(std::fabs(fused.jit.data<float>()[i] - want) <= 1e-5f * std::max(std::fabs(want), 1e-2f));
  }
  // oneDNN's max(x + 3, 0) drops the NaN, but the product with x brings it back, as torch's does.
  x.data<float>()[12] = std::nanf("");
  const TierComparison both = run_both_tiers(conv_swish, conv_stack_weights(), x);
  for (int64_t i = 0; i < both.interp.numel(); ++i) {
    CAPTURE(i);
    CHECK(std::isnan(both.interp.data<float>()[i]) == std::isnan(both.jit.data<float>()[i]));
  }
  CHECK(std::isnan(both.jit.data<float>()[12]));
}

TEST_CASE("attention reads the transposed keys as a transposed B without running the transpose") {
  auto attention = [](Tensor q, Tensor k, Tensor v) {
    return F::matmul(F::softmax(F::matmul(q, F::transpose(k, -1, -2)) * 0.35, -1), v);
  };
  ScopedEnv dnnl_matmul("KILN_JIT_MATMUL", "dnnl");
  TierComparison comparison = run_both_tiers(attention, {}, Tensor::randn({2, 5, 8}, 91), Tensor::randn({2, 7, 8}, 92),
                                             Tensor::randn({2, 7, 8}, 93));
  // transpose + matmul + scale, then the second matmul
  check_agreement(comparison, "dnnl.matmul", 4);
  CHECK(comparison.ops_per_lowering["dnnl.softmax"] == 1);
}

TEST_CASE("with KILN_JIT_MATMUL=interp the MLP's matmuls keep the interpreter GEMM and xbyak fuses the epilogue") {
  ScopedEnv interp_matmul("KILN_JIT_MATMUL", "interp");
  for (int64_t batch : {1, 7, 17}) {
    CAPTURE(batch);
    TierComparison comparison = run_both_tiers(mlp, mlp_weights(), Tensor::randn({batch, 16}, 20 + uint64_t(batch)));
    CHECK(comparison.ops_per_lowering.count("dnnl.matmul") == 0);
    // bias add + GELU after the first matmul, bias add after the second
    check_agreement(comparison, "xbyak", 3);
  }
}

TEST_CASE("an unknown KILN_JIT_MATMUL is refused when the session is made, not later on the compile thread") {
  ScopedEnv bad("KILN_JIT_MATMUL", "fast");
  CHECK_THROWS_WITH_AS(session_in(JitMode::always),
                       "spec error: environment variable KILN_JIT_MATMUL='fast': expected auto, dnnl or interp", Error);
}

TEST_CASE("a gather in the middle stays in the interpreter while its neighbours are lowered") {
  auto mixed = [](Tensor x, Tensor indices) { return F::tanh(F::gather(F::relu(x * 2.0 + 1.0), indices, 0)); };
  Tensor indices = Tensor::from_vector<int64_t>({3, 0, 5, 3}, {4});
  TierComparison comparison = run_both_tiers(mixed, {}, Tensor::randn({6, 16}, 101), indices);
  check_agreement(comparison, "xbyak", 4);
  CHECK(comparison.ops_per_lowering["interp"] >= 1);
}

namespace {

// Four threads call one JIT callable 25 times each; every result must match the interpreter's.
template <class Fn> void check_concurrent_calls(Fn fn, const std::map<std::string, Tensor>& weights, const Tensor& x) {
  const Tensor reference = compile(fn, {.weights = weights, .session = session_in(JitMode::off)})(x.layout())(x);
  auto jit_session = session_in(JitMode::always);
  auto on_jit = compile(fn, {.weights = weights, .session = jit_session})(x.layout());
  std::vector<int64_t> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int call = 0; call < 25; ++call) {
        const Tensor out = on_jit(x);
        const float* expected = reference.data<float>();
        const float* got = out.data<float>();
        for (int64_t i = 0; i < out.numel(); ++i)
          if (std::abs(got[i] - expected[i]) > kTolerance * (1 + std::abs(expected[i]))) ++mismatches[t];
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  CHECK(jit_session->stats().at(0).tier == "jit");
  CHECK(mismatches == std::vector<int64_t>(4, 0));
}

} // namespace

TEST_CASE("four threads call one JIT callable at once and all get the interpreter's result") {
  check_concurrent_calls(mlp, mlp_weights(), Tensor::randn({17, 16}, 111));
}

TEST_CASE("four threads call one convolution chain at once, its batch split across threads") {
  // Each caller's chain buffers and each OpenMP worker's are their own.
  auto stack = [](Tensor x) {
    Tensor h = F::relu(conv_layer(x, "c1", 3, 8, 1));
    return F::relu(conv_layer(h, "c2", 8, 16, 2));
  };
  check_concurrent_calls(stack, conv_stack_weights(), Tensor::randn({2 * exec::num_threads(), 3, 13, 13}, 112));
}

// The warm-up swallows its failures (it is best effort at session creation), so a graph that stopped
// parsing or compiling would silently bring back the crash at exit: check that it compiles.
TEST_CASE("the JIT warm-up graph parses and compiles through the JIT tier") {
  const runtime::ExecutableFactory* jit = runtime::default_tier_set()->jit();
  REQUIRE(jit != nullptr);
  bool compiled = false;
  std::string failure;
  jitc::tier::warm_up([&](std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights) {
    try {
      auto executable = (*jit)(std::move(graph), weights);
      compiled = executable->ops_per_lowering().size() > 1; // lowered, not all left to the interpreter
      return executable;
    } catch (const std::exception& e) {
      failure = e.what();
      throw;
    }
  });
  CHECK_MESSAGE(compiled, failure);
}

TEST_CASE("the JIT tier plans the ops it leaves on the interpreter backend its factory is given") {
  auto graph = std::make_shared<const ir::Function>(
      stage([](Tensor x) { return F::relu(x) + 1.0; })(TensorLayout(DType::f32, {8})).graph().entry());
  const exec::TierBackend no_lists;
  const runtime::Tier without = jitc::tier::jit_tier(no_lists);
  CHECK(without.name == "jit");
  CHECK_THROWS_WITH_AS(without.make_executable(graph, {}), doctest::Contains("has no implementation lists"), Error);
  const runtime::Tier with = jitc::tier::jit_tier(interp::interpreter_backend());
  const std::vector<Tensor> out =
      with.make_executable(graph, {})->run(std::vector<Tensor>{Tensor::full({8}, -2.0)}, {});
  CHECK(out.at(0).data<float>()[7] == 1.0f);
}

namespace {

// The walk of the first op of `kind` in the staged graph of fn, compiled by the JIT tier as if on `cpu`.
template <class Fn, class... Layouts>
std::string jit_walk(Fn fn, const runtime::WeightMap& weights, ir::OpKind kind, exec::CpuIsa cpu,
                     const Layouts&... layouts) {
  auto graph = std::make_shared<const ir::Function>(stage(fn)(layouts...).graph().entry());
  const jitc::tier::JitBuild build =
      jitc::tier::build_jit_executable(graph, weights, cpu, interp::interpreter_backend().steps);
  for (size_t id = 0; id < graph->ops.size(); ++id)
    if (graph->ops[id].kind == kind) return exec::walk_to_string(build.walks.at(id));
  FAIL("no op of that kind");
  return "";
}

Tensor matmul_by_weight(const Tensor& x) {
  return F::matmul(x, F::constant_external("w", TensorLayout(DType::f32, {16, 8})));
}

// How the interpreter's list ends the walk of a matmul by a weight on this CPU.
std::string interpreter_matmul_walk() {
  if (interp::interp_cpu_isa() >= exec::CpuIsa::avx2_fma) return "packed_gemm took it";
  return "packed_gemm refused: needs AVX2+FMA (its kernel is AVX2+FMA code); interp took it";
}

} // namespace

TEST_CASE("a matmul walks oneDNN's matmul, then the interpreter's list, as KILN_JIT_MATMUL says") {
  const runtime::WeightMap weights{{"w", Tensor::randn({16, 8}, 121)}};
  const TensorLayout x(DType::f32, {4, 16});
  const std::string on_avx2 = "dnnl.matmul refused: needs AVX-512 (oneDNN 2.6 repacks B every call below it; the "
                              "interpreter is faster); " +
                              interpreter_matmul_walk();
  SUBCASE("auto") {
    ScopedEnv unset("KILN_JIT_MATMUL", nullptr);
    CHECK(jit_walk(matmul_by_weight, weights, ir::OpKind::matmul, exec::CpuIsa::avx2_fma, x) == on_avx2);
    const std::string on_avx512 = jit_walk(matmul_by_weight, weights, ir::OpKind::matmul, exec::CpuIsa::avx512_core, x);
    CHECK(on_avx512.starts_with("dnnl.matmul took it ("));
    CHECK(on_avx512.ends_with(", constant B 'w')"));
  }
  SUBCASE("interp") {
    ScopedEnv interp_matmul("KILN_JIT_MATMUL", "interp");
    CHECK(jit_walk(matmul_by_weight, weights, ir::OpKind::matmul, exec::CpuIsa::avx512_core, x) ==
          "dnnl.matmul refused: KILN_JIT_MATMUL=interp; " + interpreter_matmul_walk());
  }
  SUBCASE("dnnl") {
    ScopedEnv dnnl_matmul("KILN_JIT_MATMUL", "dnnl");
    CHECK(jit_walk(matmul_by_weight, weights, ir::OpKind::matmul, exec::CpuIsa::avx2_fma, x)
              .starts_with("dnnl.matmul took it ("));
  }
}

TEST_CASE("a reduction walks straight to the interpreter over a middle axis as over the last") {
  const TensorLayout x(DType::f32, {3, 5, 7});
  const auto cpu = jitc::tier::jit_cpu_isa();
  CHECK(jit_walk([](Tensor t) { return F::sum(t, {1}); }, {}, ir::OpKind::reduce_sum, cpu, x) == "interp took it");
  CHECK(jit_walk([](Tensor t) { return F::max(t, {-1}); }, {}, ir::OpKind::reduce_max, cpu, x) == "interp took it");
}

TEST_CASE("an elementwise chain walks to one xbyak region; an f64 one on to the interpreter") {
  auto chain = [](Tensor t) { return F::tanh(t * 1.5 + 0.25); };
  const auto cpu = jitc::tier::jit_cpu_isa();
  const std::string head = jit_walk(chain, {}, ir::OpKind::mul, cpu, TensorLayout(DType::f32, {7, 17}));
  CHECK(head.starts_with("xbyak took it ("));
  CHECK(head.ends_with(", region of 3 ops over [7, 17])"));
  CHECK(jit_walk(chain, {}, ir::OpKind::tanh, cpu, TensorLayout(DType::f32, {7, 17}))
            .starts_with("xbyak took it (fused into %"));
  const std::string f64 = jit_walk(chain, {}, ir::OpKind::mul, cpu, TensorLayout(DType::f64, {7, 17}));
  CHECK(f64.starts_with("xbyak refused: "));
  CHECK(f64.find("f64") != std::string::npos);
  CHECK(f64.ends_with("; interp took it"));
}

TEST_CASE("KILN_LOG=jit prints each op's walk down both tiers' lists") {
  ScopedEnv log("KILN_LOG", "jit");
  ScopedEnv interp_matmul("KILN_JIT_MATMUL", "interp");
  CapturedStderr captured;
  run_both_tiers(mlp, mlp_weights(), Tensor::randn({4, 16}, 122));
  const std::string text = captured.text();
  CHECK(text.find("kiln.matmul at ") != std::string::npos);
  CHECK(text.find(": dnnl.matmul refused: KILN_JIT_MATMUL=interp; " + interpreter_matmul_walk() + "\n") !=
        std::string::npos);
  CHECK(text.find(" kiln.add at ") != std::string::npos);
  CHECK(text.find(": xbyak took it (") != std::string::npos);
}

TEST_CASE("mobilenet_v2's inverted residual runs as one graph and KILN_LOG=jit names each implementation") {
  // expand 1x1 + bn + relu6, depthwise 3x3 + bn + relu6, project 1x1 + bn, + x.
  auto conv = [](const Tensor& x, const std::string& name, int64_t in, int64_t out, int64_t k, int64_t groups) {
    Tensor w = F::constant_external(name + ".weight", TensorLayout(DType::f32, {out, in / groups, k, k}));
    return F::conv2d(x, w, Tensor(), {.padding = {k / 2, k / 2}, .groups = groups});
  };
  auto block = [&](Tensor x) {
    Tensor h = F::clamp(batch_norm_layer(conv(x, "expand", 8, 48, 1, 1), "bn0", 48), 0.0, 6.0);
    h = F::clamp(batch_norm_layer(conv(h, "dw", 48, 48, 3, 48), "bn1", 48), 0.0, 6.0);
    return x + batch_norm_layer(conv(h, "project", 48, 8, 1, 1), "bn2", 8);
  };
  std::map<std::string, Tensor> weights{{"expand.weight", conv_weight({48, 8, 1, 1}, 160)},
                                        {"dw.weight", conv_weight({48, 1, 3, 3}, 161)},
                                        {"project.weight", conv_weight({8, 48, 1, 1}, 162)}};
  add_batch_norm_weights(weights, "bn0", 48, 163);
  add_batch_norm_weights(weights, "bn1", 48, 167);
  add_batch_norm_weights(weights, "bn2", 8, 171);
  ScopedEnv log("KILN_LOG", "jit");
  CapturedStderr captured;
  const Tensor x = with_finite_edge_values(Tensor::randn({2 * exec::num_threads(), 8, 14, 14}, 175));
  check_agreement(run_both_tiers(block, weights, x), "dnnl.conv2d", 9); // 3 convs, 3 bns, 2 clamps, the add
  const std::string text = captured.text();
  CAPTURE(text);
  CHECK(text.find("constant weight 'dw.weight', batch_norm %") != std::string::npos);
  CHECK(text.find("reads %") != std::string::npos);
  CHECK(text.find("gemm") == std::string::npos); // no convolution fell back to oneDNN's GEMM one
  CHECK(text.find(":ref") == std::string::npos);
}

TEST_CASE("an activation repeated after a convolution stays out of its post-ops") {
  // oneDNN 2.6 would give the second linear the first one's factor (x / 4 instead of x).
  auto twice_linear = [](Tensor x) { return F::relu(conv_layer(x, "c1", 3, 8, 1) * 0.5) * 2.0; };
  auto twice_clip = [](Tensor x) { return F::clamp(F::clamp(conv_layer(x, "c1", 3, 8, 1), -1.0, 6.0), 0.0, 4.0); };
  Tensor x = with_finite_edge_values(Tensor::randn({2, 3, 9, 9}, 53));
  check_agreement(run_both_tiers(twice_linear, conv_stack_weights(), x), "dnnl.conv2d", 3); // conv, mul, relu
  check_agreement(run_both_tiers(twice_clip, conv_stack_weights(), x), "dnnl.conv2d", 2);   // conv, clamp
}
