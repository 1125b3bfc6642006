// PyTorch's dtype promotion: kiln's result_type against torch.result_type (tests/data), and the
// binary ops applying it eagerly, traced (a kiln.cast in the graph) and on both tiers.
#include "kiln_config.h"
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/dtype_promotion.hpp>
#include <kiln/kiln.hpp>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct ResultTypeRow {
  const char *a_form, *a_dtype, *b_form, *b_dtype, *result;
};
constexpr ResultTypeRow kTorchResultTypes[] = {
#include "data/torch_result_types.inc"
};

PromotionOperand operand(const std::string& form, const std::string& dtype) {
  if (form == "int") return Scalar(3);
  if (form == "float") return Scalar(2.5);
  return Tensor::ones(form == "tensor" ? std::vector<int64_t>{2} : std::vector<int64_t>{}, parse_dtype(dtype));
}

std::vector<float> values(const Tensor& t) {
  const Tensor f = t.cast(DType::f32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

} // namespace

TEST_CASE("result_type equals torch.result_type for every pair of dtypes and operand forms") {
  size_t checked = 0;
  for (const ResultTypeRow& row : kTorchResultTypes) {
    CAPTURE(row.a_form);
    CAPTURE(row.a_dtype);
    CAPTURE(row.b_form);
    CAPTURE(row.b_dtype);
    const PromotionOperand a = operand(row.a_form, row.a_dtype), b = operand(row.b_form, row.b_dtype);
    CHECK(std::string(dtype_name(result_type({a, b}))) == dtype_name(parse_dtype(row.result)));
    ++checked;
  }
  CHECK(checked == 14 * 16);
}

TEST_CASE("binary ops compute in the promoted dtype, eagerly, with the issue's examples") {
  const Tensor i = Tensor::from_vector<int32_t>({1, 2, 3, -3}, {4});
  const Tensor half = i * 0.5;
  CHECK(half.dtype() == DType::f32);
  CHECK(values(half) == std::vector<float>{0.5f, 1.0f, 1.5f, -1.5f});
  CHECK(values(i + 1.5) == std::vector<float>{2.5f, 3.5f, 4.5f, -1.5f});
  CHECK((i + 1).dtype() == DType::i32); // an integer scalar keeps the tensor's integer dtype
  CHECK((Tensor::ones({2}, DType::f16) * 2.5).dtype() == DType::f16);
  CHECK((Tensor::ones({2}, DType::boolean) + 1).dtype() == DType::i64);
  const Tensor f = Tensor::from_vector<float>({0.25f, 0.5f, 1, 2}, {4});
  CHECK(values(i + f) == std::vector<float>{1.25f, 2.5f, 4, -1});
  CHECK((f + Tensor::ones({4}, DType::f64)).dtype() == DType::f64);
  CHECK((f + Tensor::ones({}, DType::f64)).dtype() == DType::f32); // a 0-d tensor does not widen a float
  CHECK((i + Tensor::ones({}, DType::f64)).dtype() == DType::f64); // but a higher category wins
  // True division: integers give f32.
  const Tensor q = i / Tensor::from_vector<int32_t>({2, 2, 2, 2}, {4});
  CHECK(q.dtype() == DType::f32);
  CHECK(values(q) == std::vector<float>{0.5f, 1.0f, 1.5f, -1.5f});
  CHECK(values(i / 2) == std::vector<float>{0.5f, 1.0f, 1.5f, -1.5f});
  CHECK(values(3 / i) == std::vector<float>{3.0f, 1.5f, 1.0f, -1.0f});
  CHECK(F::pow(i, 0.5).dtype() == DType::f32);
  CHECK(F::lt(i, f).dtype() == DType::boolean);
}

TEST_CASE("promotion is explicit in the traced graph, and both tiers agree on it") {
  auto fn = [](const Tensor& x, const Tensor& y) { return x * 0.5 + y; };
  const TensorLayout ints(DType::i32, {4}), floats(DType::f32, {4});
  const std::string mlir = stage(fn)(ints, floats).to_mlir();
  CAPTURE(mlir);
  CHECK(mlir.find("\"kiln.cast\"(%arg0) {dtype = f32} : (!kiln.tensor<[4], i32>) -> !kiln.tensor<[4], f32>") !=
        std::string::npos);
  const Tensor x = Tensor::from_vector<int32_t>({1, 2, 3, -3}, {4});
  const Tensor y = Tensor::from_vector<float>({0, 1, 2, 3}, {4});
  const std::vector<float> want{0.5f, 2.0f, 3.5f, 1.5f};
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto callable =
        compile(fn, {.session = std::make_shared<Session>(TierPolicy{.mode = mode, .async = false}, 4)})(ints, floats);
    const Tensor out = callable(x, y);
    CHECK(out.dtype() == DType::f32);
    CHECK(values(out) == want);
  }
}

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
#include "data/torch_floor_division.inc"

template <class T, size_t N> Tensor tensor_of(const T (&values)[N]) {
  return Tensor::from_vector<T>(std::vector<T>(values, values + N), {int64_t(N)});
}

// Bit-exact against PyTorch, NaN matching NaN and the sign of a zero counted.
template <class T, size_t N> void check_exact(const Tensor& got, const T (&want)[N]) {
  REQUIRE(got.numel() == int64_t(N));
  for (size_t i = 0; i < N; ++i) {
    CAPTURE(i);
    const T g = got.data<T>()[i];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(want[i])) {
        CHECK(std::isnan(g));
        continue;
      }
      CHECK(std::signbit(g) == std::signbit(want[i]));
    }
    CHECK(g == want[i]);
  }
}

} // namespace

TEST_CASE("floor_divide and remainder round as PyTorch does, eagerly and on both tiers") {
  const Tensor a = tensor_of(kFloatA), b = tensor_of(kFloatB), ia = tensor_of(kIntA), ib = tensor_of(kIntB);
  check_exact(F::floor_divide(a, b), kFloatFloorDivide);
  check_exact(F::remainder(a, b), kFloatRemainder);
  check_exact(F::floor_divide(ia, ib), kIntFloorDivide);
  check_exact(F::remainder(ia, ib), kIntRemainder);
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto session = std::make_shared<Session>(TierPolicy{.mode = mode, .async = false}, 8);
    auto both = [](const Tensor& x, const Tensor& y) {
      return std::vector<Tensor>{F::floor_divide(x, y), F::remainder(x, y)};
    };
    auto on_floats = compile(both, {.session = session})(a.layout(), b.layout());
    auto on_ints = compile(both, {.session = session})(ia.layout(), ib.layout());
    check_exact(on_floats(a, b).at(0), kFloatFloorDivide);
    check_exact(on_floats(a, b).at(1), kFloatRemainder);
    check_exact(on_ints(ia, ib).at(0), kIntFloorDivide);
    check_exact(on_ints(ia, ib).at(1), kIntRemainder);
    // In a graph an integer division by zero gives 0 (a kernel cannot stop halfway).
    const Tensor zero = Tensor::from_vector<int32_t>({0, 2}, {2}), seven = Tensor::from_vector<int32_t>({7, 7}, {2});
    auto small = compile(both, {.session = session})(seven.layout(), zero.layout());
    CHECK(small(seven, zero).at(0).data<int32_t>()[0] == 0);
    CHECK(small(seven, zero).at(1).data<int32_t>()[1] == 1);
  }
  // Eagerly it is an error naming the op, as in PyTorch.
  CHECK_THROWS_WITH_AS(
      F::remainder(Tensor::from_vector<int32_t>({7, 7}, {2}), Tensor::from_vector<int32_t>({1, 0}, {2})),
      doctest::Contains("kiln.remainder at test_dtype_promotion.cpp"), Error);
  CHECK_THROWS_WITH_AS(F::floor_divide(Tensor::from_vector<int32_t>({7}, {1}), Tensor::from_vector<int32_t>({0}, {1})),
                       doctest::Contains("integer division by zero (element 0 of the divisor)"), Error);
  // Promotion applies: an i32 floor-divided by an f32 is f32.
  CHECK(F::floor_divide(ia, Tensor::full({1}, 2.5)).dtype() == DType::f32);
}

namespace {

template <class T> std::vector<T> elements(const Tensor& t) {
  REQUIRE(t.dtype() == dtype_of<T>());
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// fn compiled on the interpreter and on the JIT tier (at the first call), called on the inputs.
template <class Fn, class... Inputs> std::vector<Tensor> on_both_tiers(Fn fn, const Inputs&... inputs) {
  std::vector<Tensor> results;
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto session = std::make_shared<Session>(TierPolicy{.mode = mode, .async = false}, 4);
    results.push_back(compile(fn, {.session = session})(inputs.layout()...)(inputs...));
  }
  return results;
}

} // namespace

TEST_CASE("clamp by scalars promotes as torch.clamp does: floating bounds make an integer tensor f32") {
  // Values from torch 1.13: torch.clamp(torch.tensor([1, 2, 3]), 0.5, 2.5) and so on.
  const Tensor i64 = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  CHECK(elements<float>(F::clamp(i64, 0.5, 2.5)) == std::vector<float>{1, 2, 2.5f});
  CHECK(elements<float>(F::clamp(i64, 0.0, 2.0)) == std::vector<float>{1, 2, 2}); // a float bound, integral or not
  CHECK(elements<float>(F::clamp(i64, 0, 2.5)) == std::vector<float>{1, 2, 2.5f});
  CHECK(elements<int64_t>(F::clamp(i64, 0, 2)) == std::vector<int64_t>{1, 2, 2});
  CHECK(F::clamp(i64.cast(DType::i32), 0, 2).dtype() == DType::i32);
  CHECK(elements<float>(F::clamp(i64.cast(DType::i32), 0.5, 2.5)) == std::vector<float>{1, 2, 2.5f});
  CHECK(elements<float>(F::clamp(Tensor::from_vector<bool>({true, false}, {2}), 0.5, 2.5)) ==
        std::vector<float>{1, 0.5f});
  CHECK(F::clamp(i64.cast(DType::f64), 0.5, 2.5).dtype() == DType::f64);
  CHECK(F::clamp(i64.cast(DType::f16), 0.5, 2.5).dtype() == DType::f16);
  // Traced, the graph casts x, and both tiers agree, at an odd size with values around the bounds.
  auto clamped = [](const Tensor& x) { return F::clamp(x, -2.5, 50.25); };
  const std::string mlir = stage(clamped)(TensorLayout(DType::i32, {17})).to_mlir();
  CAPTURE(mlir);
  CHECK(mlir.find("\"kiln.cast\"(%arg0) {dtype = f32}") != std::string::npos);
  std::vector<int32_t> xs(17);
  for (int32_t k = 0; k < 17; ++k)
    xs[size_t(k)] = k * 7 - 20;
  xs[16] = std::numeric_limits<int32_t>::min();
  std::vector<float> want;
  for (int32_t v : xs)
    want.push_back(std::min(std::max(float(v), -2.5f), 50.25f)); // torch: [-2.5, 0, 7, 50.25] for [-5, 0, 7, 100]
  for (const Tensor& out : on_both_tiers(clamped, Tensor::from_vector<int32_t>(xs, {17})))
    CHECK(elements<float>(out) == want);
}

TEST_CASE("pow of integers wraps, truncates negative tensor powers and refuses negative scalar ones, as torch") {
  const Tensor x = Tensor::from_vector<int64_t>({-3, -2, -1, 0, 1, 2, 3}, {7});
  CHECK(elements<int64_t>(F::pow(x, 0)) == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1});
  CHECK(elements<int64_t>(F::pow(x, 3)) == std::vector<int64_t>{-27, -8, -1, 0, 1, 8, 27});
  CHECK_THROWS_WITH_AS(F::pow(x, -1), doctest::Contains("integers to negative integer powers are not allowed"), Error);
  CHECK_THROWS_WITH_AS(F::pow(x.cast(DType::i32), -2), doctest::Contains("i32 to the power -2"), Error);
  CHECK(F::pow(x, 2.0).dtype() == DType::f32);
  // torch.tensor([-1, -1, 0, 5, -7, 1]) ** torch.tensor([-2, -3, 0, 0, -4, -9]): 1 / x ** n truncated.
  const Tensor base = Tensor::from_vector<int64_t>({-1, -1, 0, 5, -7, 1, 0, 2}, {8});
  const Tensor exponent = Tensor::from_vector<int64_t>({-2, -3, 0, 0, -4, -9, -1, -1}, {8});
  CHECK(elements<int64_t>(F::pow(base, exponent)) == std::vector<int64_t>{1, -1, 1, 1, 0, 1, 0, 0});
  // Overflow wraps: torch.tensor([3]) ** 40, torch.tensor([2, 3], dtype=torch.int32) ** 31, and
  // torch.tensor([-7, 3, 11, 0, -1], dtype=torch.int32) ** 13.
  CHECK(elements<int64_t>(F::pow(Tensor::from_vector<int64_t>({3}, {1}), 40)) ==
        std::vector<int64_t>{-6289078614652622815});
  CHECK(elements<int32_t>(F::pow(Tensor::from_vector<int32_t>({2, 3}, {2}), 31)) ==
        std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 1264544299});
  const Tensor odd = Tensor::from_vector<int32_t>({-7, 3, 11, 0, -1}, {5});
  const std::vector<int32_t> odd_to_13{1895237401, 1594323, -234981317, 0, -1};
  CHECK(elements<int32_t>(F::pow(odd, 13)) == odd_to_13);
  // An i32 tensor to an i64 one is i64 (torch.result_type); both tiers run the same kernel.
  const Tensor i32_base = Tensor::from_vector<int32_t>({2, -2, 5, -1, 1, 0, 7}, {7});
  const Tensor i64_exponent = Tensor::from_vector<int64_t>({2, 3, -1, -5, -5, 0, 11}, {7});
  const std::vector<int64_t> want{4, -8, 0, -1, 1, 1, 1977326743};
  for (const Tensor& out :
       on_both_tiers([](const Tensor&a, const Tensor&b) { return F::pow(a, b); }, i32_base, i64_exponent))
    CHECK(elements<int64_t>(out) == want);
  for (const Tensor& out : on_both_tiers([](const Tensor& a) { return F::pow(a, 13); }, odd))
    CHECK(elements<int32_t>(out) == odd_to_13);
}
