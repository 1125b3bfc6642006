// PyTorch's dtype promotion: kiln's result_type against torch.result_type (tests/data), and the
// binary ops applying it eagerly, traced (a kiln.cast in the graph) and on both tiers.
#include "kiln_config.h"
#include <doctest/doctest.h>
#include <kiln/dtype_promotion.hpp>
#include <kiln/kiln.hpp>
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
    auto callable = compile(fn, {.session = std::make_shared<Session>(TierPolicy{.mode = mode, .async = false}, 4)})(
        ints, floats);
    const Tensor out = callable(x, y);
    CHECK(out.dtype() == DType::f32);
    CHECK(values(out) == want);
  }
}
