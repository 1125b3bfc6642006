// kiln's rounding and activation ops against PyTorch's results, checked in as data
// (tests/data/pytorch_unary.inc, written by tests/data/make_pytorch_unary.py): eager mode, the
// interpreter and, where built, the JIT tier, each on the same f32 edge values.
#include "kiln_config.h"
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct PytorchUnaryRow {
  const char* op;
  double p0, p1; // negative_slope, alpha, or beta and threshold
  float want[42];
};

#include "tests/data/pytorch_unary.inc"

constexpr size_t kCount = std::size(kPytorchInputs);
static_assert(kCount == std::size(PytorchUnaryRow{}.want), "one result per input");

Tensor apply(const PytorchUnaryRow& row, const Tensor& x) {
  const std::string op = row.op;
  if (op == "floor") return F::floor(x);
  if (op == "ceil") return F::ceil(x);
  if (op == "round") return F::round(x);
  if (op == "sign") return F::sign(x);
  if (op == "hardswish") return F::hardswish(x);
  if (op == "leaky_relu") return F::leaky_relu(x, row.p0);
  if (op == "elu") return F::elu(x, row.p0);
  if (op == "softplus") return F::softplus(x, row.p0, row.p1);
  if (op == "log1p") return F::log1p(x);
  if (op == "expm1") return F::expm1(x);
  FAIL("no kiln function for " << op);
  return x;
}

// Rounding ops, sign, hardswish and leaky_relu are exact steps in f32, so they must match bit for
// bit (the sign of zero included); the others within 1e-6 relative, or two subnormal steps
// (2^-148) where the result is that small. NaN must meet NaN, an infinity the same infinity.
bool is_exact(const std::string& op) {
  return op == "floor" || op == "ceil" || op == "round" || op == "sign" || op == "hardswish" || op == "leaky_relu";
}

bool matches(bool exact, double got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  if (exact) return got == want && std::signbit(got) == std::signbit(want);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= std::max(1e-6 * std::fabs(want), 0x1p-148);
}

template <class Values> void check_row(const PytorchUnaryRow& row, const char* where, bool exact, Values got) {
  const std::string op = row.op;
  CAPTURE(op);
  CAPTURE(row.p0);
  CAPTURE(row.p1);
  CAPTURE(where);
  for (size_t i = 0; i < kCount; ++i) {
    CAPTURE(kPytorchInputs[i]);
    CHECK_MESSAGE(matches(exact, got(i), row.want[i]), "got " << got(i) << ", torch " << row.want[i]);
  }
}

Tensor inputs() {
  return Tensor::from_vector(std::vector<float>(std::begin(kPytorchInputs), std::end(kPytorchInputs)),
                             {int64_t(kCount)});
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 4);
}

void check_compiled(const PytorchUnaryRow& row, JitMode mode, const char* where) {
  const Tensor x = inputs();
  auto fn = [&row](Tensor t) { return apply(row, t); };
  const Tensor y = compile(fn, {.session = session_in(mode)})(x.layout())(x);
  check_row(row, where, is_exact(row.op), [&](size_t i) { return double(y.data<float>()[i]); });
}

} // namespace

TEST_CASE("eager rounding and activation ops give PyTorch's f32 results") {
  for (const PytorchUnaryRow& row : kPytorchRows) {
    const Tensor y = apply(row, inputs());
    REQUIRE(y.dtype() == DType::f32);
    check_row(row, "eager", is_exact(row.op), [&](size_t i) { return double(y.data<float>()[i]); });
  }
}

TEST_CASE("the f64 kernels agree with PyTorch's results rounded to f32") {
  for (const PytorchUnaryRow& row : kPytorchRows) {
    const Tensor y = apply(row, inputs().cast(DType::f64));
    REQUIRE(y.dtype() == DType::f64);
    // Rounded to f32 as the reference was; the steps of hardswish and leaky_relu round differently
    // in f64, so only the rounding ops and sign stay exact.
    const std::string op = row.op;
    const bool exact = is_exact(op) && op != "hardswish" && op != "leaky_relu";
    check_row(row, "eager f64", exact, [&](size_t i) { return double(float(y.data<double>()[i])); });
  }
}

TEST_CASE("compiled on the interpreter, the ops give PyTorch's f32 results") {
  for (const PytorchUnaryRow& row : kPytorchRows)
    check_compiled(row, JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, the ops give PyTorch's f32 results") {
  for (const PytorchUnaryRow& row : kPytorchRows)
    check_compiled(row, JitMode::always, "jit");
}
#endif

TEST_CASE("softplus refuses beta 0 and the parameters must be finite, naming the op") {
  const Tensor x = inputs();
  CHECK_THROWS_WITH_AS(F::softplus(x, 0.0), doctest::Contains("kiln.softplus"), Error);
  CHECK_THROWS_WITH_AS(F::elu(x, INFINITY), doctest::Contains("kiln.elu"), Error);
  CHECK_THROWS_WITH_AS(F::leaky_relu(x, NAN), doctest::Contains("kiln.leaky_relu"), Error);
}
