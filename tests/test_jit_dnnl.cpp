// The oneDNN primitive wrappers of the JIT tier, each checked against naive loops written here.
// Tolerance: |got - want| <= 1e-4 * max(1, |want|), references computed in double.
#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/layer_norm.hpp"
#include "jit/dnnl/matmul.hpp"
#include "jit/dnnl/pool2d.hpp"
#include "jit/dnnl/softmax.hpp"
#include "runtime/weight_forms.hpp"
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <exception>
#include <kiln/error.hpp>
#include <limits>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace kiln::jitc::dnnl_ops;
using Dims = std::vector<int64_t>;

constexpr double kTolerance = 1e-4;

int64_t numel(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::vector<float> random_values(int64_t count, uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values)
    v = distribution(generator);
  return values;
}

// Largest |got - want| / max(1, |want|); infinity on a size mismatch or a NaN.
double max_scaled_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    double error = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    if (!(error <= worst)) worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : error;
  }
  return worst;
}

// The key of registry weight `name` at `version` among a session's weight forms.
kiln::runtime::WeightFormKey weight_key(const std::string& name, uint64_t version) {
  return kiln::runtime::weight_key({0, name, version});
}

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

double reference_activation(const PostOp& op, double x) {
  switch (op.activation) {
  case Activation::relu: return std::max(0.0, x);
  case Activation::gelu_erf: return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  case Activation::gelu_tanh:
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  case Activation::tanh: return std::tanh(x);
  case Activation::sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case Activation::silu: return x / (1.0 + std::exp(-x));
  case Activation::hardswish: return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0;
  case Activation::exp: return std::exp(x);
  case Activation::log: return std::log(x);
  case Activation::abs: return std::abs(x);
  case Activation::sqrt: return std::sqrt(x);
  case Activation::square: return x * x;
  case Activation::linear: return op.alpha * x + op.beta;
  case Activation::clip: return std::min(std::max(x, double(op.alpha)), double(op.beta));
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void apply_reference_post_ops(const std::vector<PostOp>& post_ops, const std::vector<std::vector<float>>& residuals,
                              std::vector<double>& values) {
  size_t next_residual = 0;
  for (const PostOp& op : post_ops) {
    if (op.kind == PostOp::Kind::add_residual) {
      const std::vector<float>& residual = residuals.at(next_residual++);
      for (size_t i = 0; i < values.size(); ++i)
        values[i] += residual[i];
      continue;
    }
    for (double& v : values)
      v = reference_activation(op, v);
  }
}

std::vector<const float*> pointers_to(const std::vector<std::vector<float>>& buffers) {
  std::vector<const float*> pointers;
  for (const auto& buffer : buffers)
    pointers.push_back(buffer.data());
  return pointers;
}

struct MatmulCase {
  MatmulParams params;
  std::vector<float> a, b, bias{};
  std::vector<std::vector<float>> residuals{};
};

MatmulCase make_matmul_case(const MatmulParams& params, uint32_t seed) {
  MatmulCase c{.params = params,
               .a = random_values(numel(params.a_dims), seed),
               .b = random_values(numel(params.b_dims), seed + 1)};
  Dims out = matmul_output_dims(params);
  if (params.has_bias) c.bias = random_values(out.back(), seed + 2);
  for (int i = 0; i < residual_count(params.post_ops); ++i) {
    c.residuals.push_back(random_values(numel(out), seed + 3 + uint32_t(i)));
  }
  return c;
}

std::vector<double> reference_matmul(const MatmulCase& c) {
  const MatmulParams& p = c.params;
  size_t rank = std::max(p.a_dims.size(), p.b_dims.size());
  Dims a(rank - p.a_dims.size(), 1), b(rank - p.b_dims.size(), 1);
  a.insert(a.end(), p.a_dims.begin(), p.a_dims.end());
  b.insert(b.end(), p.b_dims.begin(), p.b_dims.end());
  int64_t m = a[rank - 2], k = a[rank - 1];
  int64_t n = p.b_transposed ? b[rank - 2] : b[rank - 1];
  Dims batch(rank - 2);
  for (size_t i = 0; i + 2 < rank; ++i)
    batch[i] = std::max(a[i], b[i]);
  Dims a_strides = row_major_strides(a), b_strides = row_major_strides(b);
  std::vector<double> out;
  for (int64_t flat = 0; flat < numel(batch); ++flat) {
    int64_t a_offset = 0, b_offset = 0, rest = flat;
    for (size_t i = batch.size(); i-- > 0;) {
      int64_t index = rest % batch[i];
      rest /= batch[i];
      if (a[i] != 1) a_offset += index * a_strides[i];
      if (b[i] != 1) b_offset += index * b_strides[i];
    }
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        double sum = p.has_bias ? c.bias[size_t(col)] : 0.0;
        for (int64_t i = 0; i < k; ++i) {
          int64_t b_index = p.b_transposed ? col * k + i : i * n + col;
          sum += double(c.a[size_t(a_offset + row * k + i)]) * c.b[size_t(b_offset + b_index)];
        }
        out.push_back(sum);
      }
    }
  }
  apply_reference_post_ops(p.post_ops, c.residuals, out);
  return out;
}

std::vector<float> run_matmul(const MatmulPrimitive& primitive, const MatmulCase& c) {
  std::vector<float> out(size_t(numel(primitive.output_dims())));
  std::vector<const float*> residuals = pointers_to(c.residuals);
  primitive.execute({.a = c.a.data(),
                     .b = c.b.data(),
                     .bias = c.bias.empty() ? nullptr : c.bias.data(),
                     .residuals = residuals,
                     .out = out.data()});
  return out;
}

double matmul_error(const MatmulParams& params, uint32_t seed) {
  REQUIRE_MESSAGE(!MatmulPrimitive::refuse(params), MatmulPrimitive::refuse(params).value_or(""));
  MatmulCase c = make_matmul_case(params, seed);
  MatmulPrimitive primitive(params);
  return max_scaled_error(run_matmul(primitive, c), reference_matmul(c));
}

TEST_CASE("matmul matches naive loops at odd sizes") {
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {1, 7, 17}, {7, 17, 1}, {17, 7, 7}, {1023, 17, 7}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    CHECK(matmul_error({.a_dims = {m, k}, .b_dims = {k, n}}, uint32_t(m + k + n)) <= kTolerance);
  }
}

TEST_CASE("matmul broadcasts batch dims of either operand") {
  CHECK(matmul_error({.a_dims = {2, 3, 5, 4}, .b_dims = {4, 6}}, 11) <= kTolerance);
  CHECK(matmul_error({.a_dims = {5, 4}, .b_dims = {2, 3, 4, 6}}, 12) <= kTolerance);
  CHECK(matmul_error({.a_dims = {3, 1, 5, 4}, .b_dims = {1, 2, 4, 6}}, 13) <= kTolerance);
  CHECK(matmul_error({.a_dims = {4, 7, 17}, .b_dims = {4, 17, 3}}, 14) <= kTolerance);
  CHECK(matmul_output_dims({.a_dims = {3, 1, 5, 4}, .b_dims = {2, 4, 6}}) == Dims{3, 2, 5, 6});
}

TEST_CASE("matmul reads a transposed B through strides, as Linear's x @ W^T") {
  CHECK(matmul_output_dims({.a_dims = {9, 17}, .b_dims = {7, 17}, .b_transposed = true}) == Dims{9, 7});
  CHECK(matmul_error({.a_dims = {9, 17}, .b_dims = {7, 17}, .b_transposed = true, .has_bias = true}, 21) <= kTolerance);
  CHECK(matmul_error({.a_dims = {2, 5, 17}, .b_dims = {2, 7, 17}, .b_transposed = true}, 22) <= kTolerance);
  CHECK(matmul_error({.a_dims = {2, 5, 17}, .b_dims = {7, 17}, .b_transposed = true}, 23) <= kTolerance);
}

TEST_CASE("matmul applies bias then each activation post-op") {
  std::vector<std::vector<PostOp>> chains;
  for (Activation a :
       {Activation::relu, Activation::gelu_erf, Activation::gelu_tanh, Activation::tanh, Activation::sigmoid,
        Activation::silu, Activation::hardswish, Activation::exp, Activation::abs, Activation::square}) {
    chains.push_back({PostOp::apply(a)});
  }
  chains.push_back({PostOp::linear(-0.5f, 0.25f)});
  chains.push_back({PostOp::clip(-0.3f, 0.6f)});
  // log and sqrt need positive inputs: |x| + 0.5 first.
  for (Activation a : {Activation::log, Activation::sqrt}) {
    chains.push_back({PostOp::apply(Activation::abs), PostOp::linear(1.0f, 0.5f), PostOp::apply(a)});
  }
  for (const auto& chain : chains) {
    CAPTURE(activation_name(chain.back().activation));
    CHECK(matmul_error({.a_dims = {7, 17}, .b_dims = {17, 9}, .has_bias = true, .post_ops = chain}, 31) <= kTolerance);
  }
}

TEST_CASE("matmul adds residual tensors in post-op order") {
  MatmulParams residual_then_relu{.a_dims = {2, 7, 17},
                                  .b_dims = {17, 5},
                                  .has_bias = true,
                                  .post_ops = {PostOp::add_residual(), PostOp::apply(Activation::relu)}};
  CHECK(matmul_error(residual_then_relu, 41) <= kTolerance);
  MatmulParams two_residuals{
      .a_dims = {7, 17},
      .b_dims = {5, 17},
      .b_transposed = true,
      .post_ops = {PostOp::apply(Activation::tanh), PostOp::add_residual(), PostOp::add_residual()}};
  CHECK(matmul_error(two_residuals, 42) <= kTolerance);
}

TEST_CASE("matmul refuses shapes it cannot take and says why") {
  auto inner = MatmulPrimitive::refuse({.a_dims = {3, 4}, .b_dims = {5, 6}});
  REQUIRE(inner);
  CHECK(inner->find("inner dims") != std::string::npos);
  auto batch = MatmulPrimitive::refuse({.a_dims = {2, 3, 4}, .b_dims = {3, 4, 6}});
  REQUIRE(batch);
  CHECK(batch->find("batch dims") != std::string::npos);
  CHECK(MatmulPrimitive::refuse({.a_dims = {4}, .b_dims = {4, 6}}));
  CHECK(MatmulPrimitive::refuse({.a_dims = {0, 4}, .b_dims = {4, 6}}));
  CHECK_THROWS_AS(MatmulPrimitive({.a_dims = {3, 4}, .b_dims = {5, 6}}), kiln::Error);
}

TEST_CASE("matmul with a constant B gives the same results as with B bound at execute") {
  MatmulParams params{.a_dims = {5, 17}, .b_dims = {9, 17}, .b_transposed = true, .has_bias = true};
  MatmulCase c = make_matmul_case(params, 51);
  kiln::runtime::WeightForms forms;
  MatmulPrimitive constant(params, ConstantWeight{c.b.data(), "fc.weight", &forms, weight_key("fc.weight", 1)});
  MatmulCase without_b = c;
  without_b.b.clear(); // the constant primitive must not read B from the arguments
  CHECK(max_scaled_error(run_matmul(constant, without_b), reference_matmul(c)) <= kTolerance);
  MatmulPrimitive private_packing(MatmulParams{.a_dims = {5, 17}, .b_dims = {17, 9}}, ConstantWeight{c.b.data()});
  MatmulCase plain = make_matmul_case({.a_dims = {5, 17}, .b_dims = {17, 9}}, 52);
  plain.b = c.b;
  CHECK(max_scaled_error(run_matmul(private_packing, plain), reference_matmul(plain)) <= kTolerance);
}

TEST_CASE("a constant B is reordered once per (name, version, layout) into the session's weight forms") {
  // oneDNN never prefers a transposed plain layout, so a transposed constant B is always reordered.
  MatmulParams params{.a_dims = {3, 17}, .b_dims = {7, 17}, .b_transposed = true};
  MatmulCase first = make_matmul_case(params, 61);
  kiln::runtime::WeightForms forms;
  MatmulPrimitive one(params, ConstantWeight{first.b.data(), "w", &forms, weight_key("w", 1)});
  MatmulPrimitive two(params, ConstantWeight{first.b.data(), "w", &forms, weight_key("w", 1)});
  CHECK(one.constant_b_data() != first.b.data());
  CHECK(one.constant_b_data() == two.constant_b_data());
  CHECK(forms.forms_made() == 1);
  CHECK(forms.live_forms() == 1);

  MatmulCase second = make_matmul_case(params, 62);
  forms.forget_older("w", 2); // what WeightRegistry::set() of version 2 does
  MatmulPrimitive updated(params, ConstantWeight{second.b.data(), "w", &forms, weight_key("w", 2)});
  CHECK(updated.constant_b_data() != one.constant_b_data());
  CHECK(forms.forms_made() == 2);
  CHECK(forms.live_forms() == 1); // version 1's copy left the cache; `one` and `two` still hold it
  CHECK(max_scaled_error(run_matmul(updated, second), reference_matmul(second)) <= kTolerance);
  CHECK(max_scaled_error(run_matmul(one, first), reference_matmul(first)) <= kTolerance);

  MatmulPrimitive other_name(params, ConstantWeight{first.b.data(), "v", &forms, weight_key("v", 2)});
  MatmulPrimitive unshared(params, ConstantWeight{first.b.data(), "%3"});
  CHECK(other_name.constant_b_data() != updated.constant_b_data());
  CHECK(unshared.constant_b_data() != one.constant_b_data());
  CHECK(forms.forms_made() == 3); // the constant without a key was reordered for its primitive alone
  CHECK(max_scaled_error(run_matmul(unshared, first), reference_matmul(first)) <= kTolerance);
}

struct ConvCase {
  Conv2dParams params;
  std::vector<float> input, weight, bias{};
  std::vector<std::vector<float>> residuals{};
};

ConvCase make_conv_case(const Conv2dParams& params, uint32_t seed) {
  ConvCase c{.params = params,
             .input = random_values(numel(params.input_dims), seed),
             .weight = random_values(numel(params.weight_dims), seed + 1)};
  Dims out = conv2d_output_dims(params);
  if (params.has_bias) c.bias = random_values(out[1], seed + 2);
  for (int i = 0; i < residual_count(params.post_ops); ++i) {
    c.residuals.push_back(random_values(numel(out), seed + 3 + uint32_t(i)));
  }
  return c;
}

std::vector<double> reference_conv2d(const ConvCase& c) {
  const Conv2dParams& p = c.params;
  const Dims& x = p.input_dims;
  const Dims& w = p.weight_dims;
  Dims out = conv2d_output_dims(p);
  int64_t outs_per_group = w[0] / p.groups, ins_per_group = w[1];
  std::vector<double> result;
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t o = 0; o < out[1]; ++o)
      for (int64_t oh = 0; oh < out[2]; ++oh)
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          double sum = p.has_bias ? c.bias[size_t(o)] : 0.0;
          for (int64_t ci = 0; ci < ins_per_group; ++ci) {
            int64_t channel = (o / outs_per_group) * ins_per_group + ci;
            for (int64_t kh = 0; kh < w[2]; ++kh)
              for (int64_t kw = 0; kw < w[3]; ++kw) {
                int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
                int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (ih < 0 || ih >= x[2] || iw < 0 || iw >= x[3]) continue;
                sum += double(c.input[size_t(((n * x[1] + channel) * x[2] + ih) * x[3] + iw)]) *
                       c.weight[size_t(((o * w[1] + ci) * w[2] + kh) * w[3] + kw)];
              }
          }
          result.push_back(sum);
        }
  apply_reference_post_ops(p.post_ops, c.residuals, result);
  return result;
}

std::vector<float> run_conv2d(const Conv2dPrimitive& primitive, const ConvCase& c) {
  std::vector<float> out(size_t(numel(primitive.output_dims())));
  std::vector<const float*> residuals = pointers_to(c.residuals);
  primitive.execute({.input = c.input.data(),
                     .weight = c.weight.data(),
                     .bias = c.bias.empty() ? nullptr : c.bias.data(),
                     .residuals = residuals,
                     .out = out.data()});
  return out;
}

double conv2d_error(const Conv2dParams& params, uint32_t seed) {
  REQUIRE_MESSAGE(!Conv2dPrimitive::refuse(params), Conv2dPrimitive::refuse(params).value_or(""));
  ConvCase c = make_conv_case(params, seed);
  double runtime_weight = max_scaled_error(run_conv2d(Conv2dPrimitive(params), c), reference_conv2d(c));
  kiln::runtime::WeightForms forms;
  Conv2dPrimitive constant(params,
                           ConstantWeight{c.weight.data(), "conv.weight", &forms, weight_key("conv.weight", 1)});
  double constant_weight = max_scaled_error(run_conv2d(constant, c), reference_conv2d(c));
  return std::max(runtime_weight, constant_weight);
}

TEST_CASE("conv2d matches naive loops with stride, padding, dilation and groups") {
  CHECK(conv2d_error({.input_dims = {1, 1, 1, 1}, .weight_dims = {1, 1, 1, 1}}, 71) <= kTolerance);
  CHECK(conv2d_error({.input_dims = {2, 3, 7, 9}, .weight_dims = {4, 3, 3, 3}}, 72) <= kTolerance);
  CHECK(conv2d_error({.input_dims = {2, 3, 17, 7},
                      .weight_dims = {5, 3, 3, 2},
                      .stride = {2, 1},
                      .padding = {1, 2},
                      .has_bias = true},
                     73) <= kTolerance);
  CHECK(conv2d_error({.input_dims = {1, 4, 17, 17},
                      .weight_dims = {6, 2, 3, 3},
                      .stride = {2, 2},
                      .padding = {1, 1},
                      .dilation = {2, 3},
                      .groups = 2,
                      .has_bias = true},
                     74) <= kTolerance);
  // Depthwise: one group per channel.
  CHECK(conv2d_error({.input_dims = {2, 7, 9, 9}, .weight_dims = {7, 1, 3, 3}, .padding = {1, 1}, .groups = 7}, 75) <=
        kTolerance);
  CHECK(conv2d_error({.input_dims = {1, 16, 17, 17}, .weight_dims = {32, 16, 1, 1}, .has_bias = true}, 76) <=
        kTolerance);
}

TEST_CASE("conv2d applies activation and residual post-ops") {
  CHECK(conv2d_error({.input_dims = {2, 3, 7, 7},
                      .weight_dims = {8, 3, 3, 3},
                      .padding = {1, 1},
                      .has_bias = true,
                      .post_ops = {PostOp::apply(Activation::relu)}},
                     81) <= kTolerance);
  CHECK(conv2d_error({.input_dims = {1, 8, 9, 7},
                      .weight_dims = {8, 8, 3, 3},
                      .padding = {1, 1},
                      .has_bias = true,
                      .post_ops = {PostOp::add_residual(), PostOp::apply(Activation::silu)}},
                     82) <= kTolerance);
}

TEST_CASE("a residual added by a convolution with a constant weight keeps its direct implementation") {
  // resnet's second convolution of a block: the residual before the activation is a sum into the
  // result in the convolution's own layout (a plain NCHW addend would make oneDNN take its GEMM
  // convolution) on AVX2 and AVX-512 alike. After the activation (direct on AVX-512 only) and two
  // residuals, is_direct_for tells the lowering; all match the naive loops.
  for (const std::vector<PostOp>& post_ops :
       {std::vector<PostOp>{PostOp::add_residual(), PostOp::apply(Activation::relu)},
        std::vector<PostOp>{PostOp::apply(Activation::relu), PostOp::add_residual()},
        std::vector<PostOp>{PostOp::add_residual(), PostOp::add_residual()}}) {
    const Conv2dParams params{.input_dims = {2, 64, 14, 14},
                              .weight_dims = {64, 64, 3, 3},
                              .padding = {1, 1},
                              .has_bias = true,
                              .post_ops = post_ops};
    CHECK(conv2d_error(params, 83) <= kTolerance);
    const ConvCase c = make_conv_case(params, 84);
    kiln::runtime::WeightForms forms;
    const Conv2dPrimitive conv(params, ConstantWeight{c.weight.data(), "w", &forms, weight_key("w", 1)});
    CAPTURE(conv.implementation());
    CHECK(max_scaled_error(run_conv2d(conv, c), reference_conv2d(c)) <= kTolerance);
    const bool direct = conv.implementation().find("gemm") == std::string::npos &&
                        conv.implementation().find("ref") == std::string::npos;
    CHECK(Conv2dPrimitive::is_direct_for(params) == direct);
    if (post_ops[0].kind == PostOp::Kind::add_residual && residual_count(post_ops) == 1) CHECK(direct);
  }
}

TEST_CASE("conv2d refuses mismatched channels and empty results and says why") {
  auto channels = Conv2dPrimitive::refuse({.input_dims = {1, 4, 5, 5}, .weight_dims = {6, 3, 3, 3}});
  REQUIRE(channels);
  CHECK(channels->find("channels") != std::string::npos);
  auto groups = Conv2dPrimitive::refuse({.input_dims = {1, 4, 5, 5}, .weight_dims = {3, 2, 3, 3}, .groups = 2});
  CHECK(groups);
  auto empty = Conv2dPrimitive::refuse({.input_dims = {1, 1, 2, 2}, .weight_dims = {1, 1, 3, 3}, .stride = {2, 2}});
  REQUIRE(empty);
  CHECK(empty->find("empty") != std::string::npos);
  CHECK(Conv2dPrimitive::refuse({.input_dims = {1, 4, 5}, .weight_dims = {6, 4, 3, 3}}));
}

TEST_CASE("one primitive executed from four threads at once gives the single-thread results") {
  MatmulParams params{.a_dims = {64, 96},
                      .b_dims = {48, 96},
                      .b_transposed = true,
                      .has_bias = true,
                      .post_ops = {PostOp::apply(Activation::gelu_erf), PostOp::add_residual()}};
  kiln::runtime::WeightForms forms;
  MatmulCase shared = make_matmul_case(params, 91);
  MatmulPrimitive matmul(params, ConstantWeight{shared.b.data(), "w", &forms, weight_key("w", 1)});
  Conv2dParams conv_params{.input_dims = {1, 8, 15, 15},
                           .weight_dims = {8, 8, 3, 3},
                           .padding = {1, 1},
                           .has_bias = true,
                           .post_ops = {PostOp::apply(Activation::relu)}};
  ConvCase conv_case = make_conv_case(conv_params, 92);
  Conv2dPrimitive conv(conv_params);

  constexpr int kThreads = 4;
  std::vector<MatmulCase> cases;
  for (int t = 0; t < kThreads; ++t) {
    cases.push_back(make_matmul_case(params, 100 + uint32_t(t)));
    cases.back().b = shared.b;
  }
  std::vector<double> matmul_errors(kThreads), conv_errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& worst_matmul = matmul_errors[size_t(t)];
      auto& worst_conv = conv_errors[size_t(t)];
      try {
        std::vector<double> matmul_want = reference_matmul(cases[size_t(t)]);
        std::vector<double> conv_want = reference_conv2d(conv_case);
        for (int repeat = 0; repeat < 20; ++repeat) {
          worst_matmul = std::max(worst_matmul, max_scaled_error(run_matmul(matmul, cases[size_t(t)]), matmul_want));
          worst_conv = std::max(worst_conv, max_scaled_error(run_conv2d(conv, conv_case), conv_want));
        }
      } catch (const std::exception&) { // reported below as a failed check, not a terminated process
        worst_matmul = worst_conv = std::numeric_limits<double>::infinity();
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(matmul_errors[size_t(t)] <= kTolerance);
    CHECK(conv_errors[size_t(t)] <= kTolerance);
  }
}

std::vector<double> reference_softmax(const std::vector<float>& x, const Dims& dims, int64_t axis, bool log) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < dims.size(); ++i)
    inner *= dims[i];
  int64_t size = dims[size_t(axis)];
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return size_t((o * size + j) * inner + i); };
      double largest = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < size; ++j)
        largest = std::max(largest, double(x[at(j)]));
      double total = 0.0;
      for (int64_t j = 0; j < size; ++j)
        total += std::exp(x[at(j)] - largest);
      for (int64_t j = 0; j < size; ++j) {
        double shifted = x[at(j)] - largest;
        out[at(j)] = log ? shifted - std::log(total) : std::exp(shifted) / total;
      }
    }
  return out;
}

TEST_CASE("softmax and log_softmax match naive loops on every axis") {
  Dims dims{3, 7, 17};
  std::vector<float> x = random_values(numel(dims), 201, -5.0f, 5.0f);
  for (bool log : {false, true}) {
    for (int64_t axis : {0, 1, 2}) {
      CAPTURE(log);
      CAPTURE(axis);
      SoftmaxParams params{.dims = dims, .axis = axis, .log = log};
      REQUIRE(!SoftmaxPrimitive::refuse(params));
      std::vector<float> out(x.size());
      SoftmaxPrimitive(params).execute(x.data(), out.data());
      CHECK(max_scaled_error(out, reference_softmax(x, dims, axis, log)) <= kTolerance);
    }
  }
}

TEST_CASE("softmax runs in place and refuses an axis outside the rank") {
  Dims dims{1, 1023};
  std::vector<float> x = random_values(numel(dims), 202, -5.0f, 5.0f);
  std::vector<double> want = reference_softmax(x, dims, 1, false);
  SoftmaxPrimitive(SoftmaxParams{.dims = dims, .axis = 1}).execute(x.data(), x.data());
  CHECK(max_scaled_error(x, want) <= kTolerance);
  auto reason = SoftmaxPrimitive::refuse({.dims = {3, 4}, .axis = 2});
  REQUIRE(reason);
  CHECK(reason->find("axis") != std::string::npos);
  // Axes come decoded from the graph: a negative one is refused, not counted from the end.
  CHECK_THROWS_AS(SoftmaxPrimitive(SoftmaxParams{.dims = {3, 4}, .axis = -1}), kiln::Error);
}

std::vector<double> reference_layer_norm(const std::vector<float>& x, int64_t size, const float* weight,
                                         const float* bias, double eps) {
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size() / size_t(size); ++row) {
    const float* values = x.data() + row * size_t(size);
    double mean = 0.0, variance = 0.0;
    for (int64_t i = 0; i < size; ++i)
      mean += values[i];
    mean /= double(size);
    for (int64_t i = 0; i < size; ++i)
      variance += (values[i] - mean) * (values[i] - mean);
    variance /= double(size);
    for (int64_t i = 0; i < size; ++i) {
      double y = (values[i] - mean) / std::sqrt(variance + eps);
      if (weight) y *= weight[i];
      if (bias) y += bias[i];
      out[row * size_t(size) + size_t(i)] = y;
    }
  }
  return out;
}

TEST_CASE("layer_norm matches naive loops with and without weight and bias") {
  Dims dims{3, 7, 17};
  std::vector<float> x = random_values(numel(dims), 301, -3.0f, 3.0f);
  for (int64_t axis : {2, 1, 0}) {
    int64_t size = 1;
    for (size_t i = size_t(axis); i < dims.size(); ++i)
      size *= dims[i];
    std::vector<float> weight = random_values(size, 302), bias = random_values(size, 303);
    for (auto [has_weight, has_bias] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
      CAPTURE(axis);
      CAPTURE(has_weight);
      CAPTURE(has_bias);
      LayerNormParams params{.dims = dims, .axis = axis, .has_weight = has_weight, .has_bias = has_bias, .eps = 1e-5f};
      REQUIRE(!LayerNormPrimitive::refuse(params));
      std::vector<float> out(x.size());
      LayerNormPrimitive(params).execute(x.data(), has_weight ? weight.data() : nullptr,
                                         has_bias ? bias.data() : nullptr, out.data());
      std::vector<double> want =
          reference_layer_norm(x, size, has_weight ? weight.data() : nullptr, has_bias ? bias.data() : nullptr, 1e-5);
      CHECK(max_scaled_error(out, want) <= kTolerance);
    }
  }
}

TEST_CASE("layer_norm uses eps and refuses an axis outside the rank") {
  Dims dims{2, 1};
  std::vector<float> x{4.0f, -2.0f}, out(2);
  // One element per row: x - mean is 0, so the result is the bias whatever eps is.
  std::vector<float> weight{3.0f}, bias{0.5f};
  LayerNormPrimitive(LayerNormParams{.dims = dims, .axis = 1, .has_weight = true, .has_bias = true, .eps = 0.25f})
      .execute(x.data(), weight.data(), bias.data(), out.data());
  CHECK(out == std::vector<float>{0.5f, 0.5f});
  std::vector<float> pair{1.0f, 3.0f}, normalised(2);
  // mean 2, variance 1: (x - 2) / sqrt(1 + 3) = -0.5, 0.5.
  LayerNormPrimitive(LayerNormParams{.dims = {1, 2}, .axis = 1, .eps = 3.0f})
      .execute(pair.data(), nullptr, nullptr, normalised.data());
  CHECK(normalised[0] == doctest::Approx(-0.5).epsilon(1e-6));
  CHECK(normalised[1] == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(LayerNormPrimitive::refuse({.dims = {3, 4}, .axis = 2}));
  CHECK(LayerNormPrimitive::refuse({.dims = {}, .axis = 0}));
}

std::vector<double> reference_pool2d(const std::vector<float>& x, const Pool2dParams& p) {
  const Dims& d = p.input_dims;
  Dims out = pool2d_output_dims(p);
  std::vector<double> result;
  for (int64_t nc = 0; nc < d[0] * d[1]; ++nc)
    for (int64_t oh = 0; oh < out[2]; ++oh)
      for (int64_t ow = 0; ow < out[3]; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), total = 0.0;
        int64_t count = 0;
        for (int64_t kh = 0; kh < p.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
            int64_t ih = oh * p.stride[0] - p.padding[0] + kh, iw = ow * p.stride[1] - p.padding[1] + kw;
            if (ih < 0 || ih >= d[2] || iw < 0 || iw >= d[3]) continue;
            double v = x[size_t((nc * d[2] + ih) * d[3] + iw)];
            best = std::max(best, v);
            total += v;
            ++count;
          }
        if (p.kind == PoolKind::max) result.push_back(best);
        if (p.kind == PoolKind::avg_exclude_pad) result.push_back(total / double(count));
        if (p.kind == PoolKind::avg_include_pad) result.push_back(total / double(p.kernel[0] * p.kernel[1]));
      }
  return result;
}

TEST_CASE("pooling matches naive loops for max and both average paddings") {
  std::vector<Pool2dParams> shapes{
      {.input_dims = {1, 1, 1, 1}, .kernel = {1, 1}},
      {.input_dims = {2, 3, 7, 7}, .kernel = {2, 2}, .stride = {2, 2}},
      {.input_dims = {2, 3, 17, 7}, .kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}},
      {.input_dims = {1, 5, 9, 17}, .kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1}},
      {.input_dims = {1, 2, 8, 8}, .kernel = {5, 5}, .stride = {3, 3}, .padding = {2, 2}},
  };
  for (PoolKind kind : {PoolKind::max, PoolKind::avg_include_pad, PoolKind::avg_exclude_pad}) {
    for (Pool2dParams params : shapes) {
      params.kind = kind;
      CAPTURE(int(kind));
      CAPTURE(params.input_dims[2]);
      REQUIRE_MESSAGE(!Pool2dPrimitive::refuse(params), Pool2dPrimitive::refuse(params).value_or(""));
      std::vector<float> x = random_values(numel(params.input_dims), 401);
      Pool2dPrimitive primitive(params);
      std::vector<float> out(size_t(numel(primitive.output_dims())));
      primitive.execute(x.data(), out.data());
      CHECK(max_scaled_error(out, reference_pool2d(x, params)) <= kTolerance);
    }
  }
}

TEST_CASE("pooling refuses padding beyond half the kernel and empty results") {
  auto padding = Pool2dPrimitive::refuse({.input_dims = {1, 1, 5, 5}, .kernel = {2, 2}, .padding = {2, 2}});
  REQUIRE(padding);
  CHECK(padding->find("padding") != std::string::npos);
  CHECK(Pool2dPrimitive::refuse({.input_dims = {1, 1, 2, 2}, .kernel = {3, 3}}));
  CHECK(Pool2dPrimitive::refuse({.input_dims = {1, 2, 2}, .kernel = {1, 1}}));
}

} // namespace
