// kiln's tril, triu, masked_fill, cumsum, argmin, prod, var and std against PyTorch's results,
// checked in as data (tests/data/pytorch_structural.inc, written by
// tests/data/make_pytorch_structural.py): eager mode, the interpreter and, where built, the JIT tier,
// on f32 edge values, finite f32 values and i32 extremes, at sizes 1 and 7.
#include "kiln_config.h"
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct PytorchStructuralRow {
  const char* op;
  const char* dtype; // "f32", "f32 finite" or "i32"
  int64_t rows, cols;
  int64_t param;    // tril/triu's diagonal, cumsum/argmin/prod's axis, var/std's axes (2: both)
  double value;     // masked_fill's value, var/std's correction
  bool mask_is_row; // masked_fill's mask is [1, cols], broadcast over the rows
  int64_t count;    // results
  double want[49];
};

#include "tests/data/pytorch_structural.inc"

Tensor input_of(const PytorchStructuralRow& row) {
  const size_t n = size_t(row.rows * row.cols);
  const std::string dtype = row.dtype;
  if (dtype == "f32")
    return Tensor::from_vector(std::vector<float>(kStructuralFloats, kStructuralFloats + n), {row.rows, row.cols});
  if (dtype == "f32 finite")
    return Tensor::from_vector(std::vector<float>(kStructuralFinite, kStructuralFinite + n), {row.rows, row.cols});
  return Tensor::from_vector(std::vector<int32_t>(kStructuralInts, kStructuralInts + n), {row.rows, row.cols});
}

Tensor mask_of(const PytorchStructuralRow& row) {
  if (row.mask_is_row)
    return Tensor::from_vector(std::vector<bool>(kStructuralMask, kStructuralMask + row.cols), {1, row.cols});
  return Tensor::from_vector(std::vector<bool>(kStructuralMask, kStructuralMask + row.rows * row.cols),
                             {row.rows, row.cols});
}

Tensor apply(const PytorchStructuralRow& row, const Tensor& x, const Tensor& mask) {
  const std::string op = row.op;
  if (op == "tril") return F::tril(x, row.param);
  if (op == "triu") return F::triu(x, row.param);
  if (op == "masked_fill") return F::masked_fill(x, mask, row.value);
  if (op == "cumsum") return F::cumsum(x, row.param);
  if (op == "argmin") return F::argmin(x, row.param);
  if (op == "prod") return F::prod(x, {row.param});
  const std::vector<int64_t> axes = row.param == 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{row.param};
  if (op == "var") return F::var(x, axes, int64_t(row.value));
  if (op == "std") return F::std(x, axes, int64_t(row.value));
  FAIL("no kiln function for " << op);
  return x;
}

double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
  case DType::f32: return t.data<float>()[i];
  case DType::i32: return t.data<int32_t>()[i];
  case DType::i64: return double(t.data<int64_t>()[i]);
  default: FAIL("unexpected result dtype " << dtype_name(t.dtype())); return 0;
  }
}

// The dtype torch gives: cumsum and argmin of an i32 input are i64.
DType want_dtype(const PytorchStructuralRow& row) {
  const std::string op = row.op;
  if (op == "argmin") return DType::i64;
  if (op == "cumsum" && std::string(row.dtype) == "i32") return DType::i64;
  return std::string(row.dtype) == "i32" ? DType::i32 : DType::f32;
}

// prod, var and std are computed in f64 and compared with torch's f64 results rounded to f32.
bool is_rounded(const PytorchStructuralRow& row) {
  const std::string op = row.op;
  return op == "prod" || op == "var" || op == "std";
}

bool matches(bool rounded, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (!rounded || std::isinf(want)) return got == want && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= std::max(1e-6 * std::fabs(want), 0x1p-148);
}

// tril, triu, masked_fill, cumsum and argmin are exact in f32 (cumsum rounds each f64 running sum
// once, as torch does), so results match bit for bit, the sign of zero included; prod, var and std
// within 1e-6 relative. NaN must meet NaN.
void check_row(const PytorchStructuralRow& row, const char* where, const Tensor& y) {
  CAPTURE(row.op);
  CAPTURE(row.dtype);
  CAPTURE(row.rows);
  CAPTURE(row.cols);
  CAPTURE(row.param);
  CAPTURE(row.value);
  CAPTURE(row.mask_is_row);
  CAPTURE(where);
  REQUIRE(y.dtype() == want_dtype(row));
  REQUIRE(y.numel() == row.count);
  for (int64_t i = 0; i < row.count; ++i) {
    CAPTURE(i);
    const double got = value_at(y, i), want = row.want[i];
    CHECK_MESSAGE(matches(is_rounded(row), got, want), "got " << got << ", torch " << want);
  }
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 4);
}

void check_compiled(JitMode mode, const char* where) {
  for (const PytorchStructuralRow& row : kStructuralRows) {
    const Tensor x = input_of(row), mask = mask_of(row);
    auto fn = [&row](Tensor t, Tensor m) { return apply(row, t, m); };
    check_row(row, where, compile(fn, {.session = session_in(mode)})(x.layout(), mask.layout())(x, mask));
  }
}

} // namespace

TEST_CASE("eager tril, triu, masked_fill, cumsum, argmin, prod, var and std give PyTorch's results") {
  for (const PytorchStructuralRow& row : kStructuralRows)
    check_row(row, "eager", apply(row, input_of(row), mask_of(row)));
}

TEST_CASE("the f64 kernels agree with PyTorch's f32 results where f64 changes nothing") {
  // tril, triu, masked_fill and argmin only move or compare values, and prod, var and std compute
  // in f64 anyway, so f64 gives the same values; cumsum rounds its running sums to f32 on the way.
  for (const PytorchStructuralRow& row : kStructuralRows) {
    const std::string op = row.op;
    if (op == "cumsum" || std::string(row.dtype) == "i32") continue;
    const Tensor y = apply(row, input_of(row).cast(DType::f64), mask_of(row));
    check_row(row, "eager f64", y.dtype() == DType::f64 ? y.cast(DType::f32) : y);
  }
}

TEST_CASE("compiled on the interpreter, the ops give PyTorch's results") {
  check_compiled(JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, the ops give PyTorch's results") { check_compiled(JitMode::always, "jit"); }
#endif

TEST_CASE("tril of a vector, a missing axis, a non-bool mask and an integer var are errors naming the op") {
  const Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  CHECK_THROWS_WITH_AS(F::tril(v), doctest::Contains("kiln.tril"), Error);
  CHECK_THROWS_WITH_AS(F::cumsum(v, 1), doctest::Contains("axis 1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(F::argmin(v, -2), doctest::Contains("kiln.argmin"), Error);
  try {
    F::masked_fill(v, v, 0.0);
    FAIL("a float mask was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
    CHECK(std::string(e.what()).find("kiln.masked_fill") != std::string::npos);
  }
  const Tensor column = Tensor::from_vector(std::vector<bool>{true, false, true}, {3, 1});
  CHECK_THROWS_WITH_AS(F::masked_fill(v, column, 0.0), doctest::Contains("does not broadcast"), Error);
  const Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  try {
    F::std(ints);
    FAIL("an integer std was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
    CHECK(std::string(e.what()).find("kiln.reduce_std") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(F::var(v, {0}, -1), doctest::Contains("correction must be >= 0"), Error);
}
