// torch.Tensor's methods on kiln::Tensor: each equals its F:: twin eagerly and stages the same ops,
// with torch's method semantics where they differ from F:: (flatten from dim 0, max(dim) with
// indices, integer sums in i64). References are the F:: twins and naive loops computed here.
#include "error_message.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <functional>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

using namespace kiln;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

// The op names of a staged graph, in order: `"kiln.relu"(` -> "kiln.relu".
std::vector<std::string> staged_ops(const Unary& fn, const TensorLayout& layout) {
  const std::string text = stage([&](const Tensor& x) { return fn(x); })(layout).to_mlir();
  std::vector<std::string> ops;
  const std::string opening = "\"kiln.";
  for (size_t at = text.find(opening); at != std::string::npos; at = text.find(opening, at + 1)) {
    const size_t close = text.find('"', at + 1);
    if (close != std::string::npos && close + 1 < text.size() && text[close + 1] == '(')
      ops.push_back(text.substr(at + 1, close - at - 1));
  }
  return ops;
}

std::vector<float> values(const Tensor& t) {
  const Tensor f = t.dtype() == DType::f32 ? t : F::cast(t, DType::f32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// The method and its twin agree on a concrete tensor (bit for bit: one kernel) and stage the same ops.
void check_twins(const char* name, const Unary& method, const Unary& twin, const Tensor& x) {
  CAPTURE(name);
  const Tensor a = method(x), b = twin(x);
  CHECK(a.layout() == b.layout());
  CHECK(values(a) == values(b));
  const std::vector<std::string> ops = staged_ops(method, x.layout());
  CHECK(!ops.empty());
  CHECK(ops == staged_ops(twin, x.layout()));
}

Tensor positive(const std::vector<int64_t>& dims) { return Tensor::rand(dims, 7, 0.25f, 4.0f); }

} // namespace

TEST_CASE("the unary methods are their F:: twins, eager and staged") {
  const Tensor x = Tensor::randn({3, 4}, 1);
  const Tensor p = positive({3, 4});
#define TWIN(name, input)                                                                                              \
  check_twins(                                                                                                         \
      #name, [](const Tensor& t) { return t.name(); }, [](const Tensor& t) { return F::name(t); }, input)
  TWIN(relu, x);
  TWIN(sigmoid, x);
  TWIN(tanh, x);
  TWIN(exp, x);
  TWIN(log, p);
  TWIN(sqrt, p);
  TWIN(rsqrt, p);
  TWIN(abs, x);
  TWIN(neg, x);
  TWIN(sin, x);
  TWIN(cos, x);
  TWIN(erf, x);
  TWIN(floor, x);
  TWIN(ceil, x);
  TWIN(round, x);
  TWIN(sign, x);
  TWIN(log1p, p);
  TWIN(expm1, x);
#undef TWIN
  check_twins(
      "softmax", [](const Tensor& t) { return t.softmax(1); }, [](const Tensor& t) { return F::softmax(t, 1); }, x);
  check_twins(
      "log_softmax", [](const Tensor& t) { return t.log_softmax(0); },
      [](const Tensor& t) { return F::log_softmax(t, 0); }, x);
  check_twins(
      "to", [](const Tensor& t) { return t.to(DType::i32); }, [](const Tensor& t) { return F::cast(t, DType::i32); },
      x * 3.0);
  check_twins(
      "pow", [](const Tensor& t) { return t.pow(2); }, [](const Tensor& t) { return F::pow(t, 2); }, x);
  check_twins(
      "clamp", [](const Tensor& t) { return t.clamp(-0.5, 0.5); },
      [](const Tensor& t) { return F::clamp(t, -0.5, 0.5); }, x);
  check_twins(
      "matmul", [](const Tensor& t) { return t.matmul(t.t()); },
      [](const Tensor& t) { return F::matmul(t, F::transpose(t, 0, 1)); }, x);
  check_twins(
      "tril", [](const Tensor& t) { return t.tril(1); }, [](const Tensor& t) { return F::tril(t, 1); }, x);
  check_twins(
      "cumsum", [](const Tensor& t) { return t.cumsum(1); }, [](const Tensor& t) { return F::cumsum(t, 1); }, x);
}

TEST_CASE("lucid's (x @ y.T).relu() reads the same in C++") {
  const Tensor x = Tensor::randn({2, 3}, 2), y = Tensor::randn({4, 3}, 3);
  const Tensor out = F::matmul(x, y.t()).relu();
  REQUIRE(out.dims() == std::vector<int64_t>{2, 4});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < 3; ++k)
        dot += double(x.data<float>()[i * 3 + k]) * y.data<float>()[j * 3 + k];
      CHECK(out.data<float>()[i * 4 + j] == doctest::Approx(std::max(dot, 0.0)).epsilon(1e-6));
    }
}

TEST_CASE("sum and mean reduce every dim, one dim or several, as torch's methods") {
  const Tensor x = Tensor::arange(24).reshape({2, 3, 4});
  CHECK(x.sum().dims().empty());
  CHECK(x.sum().item_as_double() == 276.0);
  CHECK(x.sum(1).dims() == std::vector<int64_t>{2, 4});
  CHECK(x.sum(-1, true).dims() == std::vector<int64_t>{2, 3, 1});
  CHECK(values(x.sum({0, 2})) == values(F::sum(x, {0, 2})));
  CHECK(x.mean(1).item_as_double(0) == doctest::Approx(4.0)); // (0 + 4 + 8) / 3
  // torch sums integers and bools in i64, and refuses the mean of integers.
  const Tensor ints = F::cast(x, DType::i32);
  CHECK(ints.sum().dtype() == DType::i64);
  CHECK(ints.sum().item_as_double() == 276.0);
  CHECK(F::gt(x, F::scalar(11.5)).sum().item_as_double() == 12.0);
  CHECK(ints.prod(0).dtype() == DType::i64);
  CHECK_THROWS_WITH_AS(ints.mean(), doctest::Contains("Tensor.mean at "), Error);
  CHECK_THROWS_WITH_AS(ints.mean(), doctest::Contains("needs a floating-point tensor, got i32"), Error);
}

TEST_CASE("max() is the global maximum; max(dim) gives the values and the first index of each") {
  const Tensor x = Tensor::from_vector<float>({1, 5, 5, -2, 0, -1, 7, 7, 3}, {3, 3});
  CHECK(x.max().dims().empty());
  CHECK(x.max().item_as_double() == 7.0);
  CHECK(x.min().item_as_double() == -2.0);
  auto [values_max, indices_max] = x.max(1);
  CHECK(values(values_max) == std::vector<float>{5, 0, 7});
  CHECK(indices_max.dtype() == DType::i64);
  CHECK(values(indices_max) == std::vector<float>{1, 1, 0});
  auto [values_min, indices_min] = x.min(0, true);
  CHECK(values_min.dims() == std::vector<int64_t>{1, 3});
  CHECK(values(values_min) == std::vector<float>{-2, 0, -1});
  CHECK(values(indices_min) == std::vector<float>{1, 1, 1});
  CHECK(x.argmax().item_as_double() == 6.0); // flat index of the first 7
  CHECK(values(x.amax({0})) == std::vector<float>{7, 7, 5});
  auto [top, top_indices] = x.topk(2, 1);
  CHECK(values(top) == std::vector<float>{5, 5, 0, -1, 7, 7});
  CHECK(values(top_indices) == std::vector<float>{1, 2, 1, 2, 0, 1});
}

TEST_CASE("flatten starts at dim 0 and stops at end_dim, as torch's method") {
  const Tensor x = Tensor::randn({2, 3, 4, 5}, 4);
  CHECK(x.flatten().dims() == std::vector<int64_t>{120});
  CHECK(x.flatten(1).dims() == std::vector<int64_t>{2, 60});
  CHECK(x.flatten(1, 2).dims() == std::vector<int64_t>{2, 12, 5});
  CHECK(x.flatten(-2).dims() == std::vector<int64_t>{2, 3, 20});
  CHECK(values(x.flatten()) == values(x));
  CHECK(Tensor::full({}, 3.0).flatten().dims() == std::vector<int64_t>{1});
  CHECK_THROWS_WITH_AS(x.flatten(2, 1), doctest::Contains("start_dim 2 comes after end_dim 1"), Error);
  CHECK_THROWS_WITH_AS(x.flatten(4), doctest::Contains("dim 4 is out of range for a tensor of 4 dims"), Error);
  // Staged over a symbolic batch, the merged dims are inferred.
  const TensorLayout layout(DType::f32, {"batch", 3, 4});
  const std::string text = stage([](const Tensor& t) { return t.flatten(1); })(layout).to_mlir();
  CHECK(text.find("!kiln.tensor<[batch, 12], f32>") != std::string::npos);
}

TEST_CASE("unsqueeze, squeeze, view, t, mT, split and chunk follow torch") {
  const Tensor x = Tensor::randn({3, 1, 4}, 5);
  CHECK(x.unsqueeze(0).dims() == std::vector<int64_t>{1, 3, 1, 4});
  CHECK(x.unsqueeze(-1).dims() == std::vector<int64_t>{3, 1, 4, 1});
  CHECK(x.squeeze().dims() == std::vector<int64_t>{3, 4});
  CHECK(x.squeeze(1).dims() == std::vector<int64_t>{3, 4});
  CHECK(x.squeeze(0).dims() == std::vector<int64_t>{3, 1, 4}); // not 1: kept, as torch keeps it
  CHECK(x.view({4, 3}).dims() == std::vector<int64_t>{4, 3});
  CHECK(x.mT().dims() == std::vector<int64_t>{3, 4, 1});
  CHECK_THROWS_WITH_AS(x.t(), doctest::Contains("expects a tensor of at most 2 dims"), Error);
  CHECK(Tensor::randn({5}, 1).t().dims() == std::vector<int64_t>{5});
  const std::vector<Tensor> pieces = Tensor::arange(7).split(3);
  REQUIRE(pieces.size() == 3);
  CHECK(values(pieces[2]) == std::vector<float>{6});
  const std::vector<Tensor> chunks = Tensor::arange(7).chunk(2);
  REQUIRE(chunks.size() == 2);
  CHECK(values(chunks[0]) == std::vector<float>{0, 1, 2, 3});
  CHECK(values(chunks[1]) == std::vector<float>{4, 5, 6});
  // Whether torch drops a symbolic dim depends on its size at each call: refused, not guessed.
  const TensorLayout layout(DType::f32, {"batch", 1});
  CHECK_THROWS_WITH_AS(stage([](const Tensor& t) { return t.squeeze(); })(layout),
                       doctest::Contains("dim 0 of [batch, 1] is symbolic"), Error);
  CHECK(stage([](const Tensor& t) { return t.squeeze(1); })(layout).to_mlir().find("kiln.squeeze") !=
        std::string::npos);
}

TEST_CASE("clamp with one bound clamps one side, promoting as torch.clamp") {
  const Tensor x = Tensor::from_vector<float>({-2, 0.5f, 3, NAN}, {4});
  const std::vector<float> low = values(x.clamp(0.0, std::nullopt));
  CHECK(low[0] == 0.0f);
  CHECK(low[2] == 3.0f);
  CHECK(std::isnan(low[3]));
  const std::vector<float> high = values(x.clamp(std::nullopt, 1));
  CHECK(high[0] == -2.0f);
  CHECK(high[2] == 1.0f);
  CHECK(std::isnan(high[3]));
  const Tensor ints = Tensor::from_vector<int32_t>({-3, 4}, {2});
  CHECK(ints.clamp(0, std::nullopt).dtype() == DType::i32);
  CHECK(ints.clamp(0.5, std::nullopt).dtype() == DType::f32);
  CHECK_THROWS_WITH_AS(x.clamp(std::nullopt, std::nullopt), doctest::Contains("needs a min, a max or both"), Error);
}
