#include "kiln_config.h"
#include "scoped_env.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <sstream>
#include <string>

using namespace kiln;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string printed(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 16);
}

// x - 1 is 0 where x holds 1, so the log is the first op to produce an Inf.
const int kShiftedLogLine = __LINE__ + 1;
Tensor shifted_log(Tensor x) { return F::log(x - 1.0); }

Tensor ones_and_others() { return Tensor::from_vector<float>({1, 2, 0.5f, 1}, {4}); }

// The message KILN_DEBUG_NANS gives for shifted_log on ones_and_others().
std::string first_non_finite_error(JitMode mode) {
  auto session = session_in(mode);
  auto call = compile(shifted_log, {.session = session})(TensorLayout(DType::f32, {4}));
  try {
    call(ones_and_others());
  } catch (const Error& error) {
    CHECK(error.kind() == ErrorKind::numeric);
    return error.what();
  }
  FAIL("KILN_DEBUG_NANS=1 let a -inf through");
  return "";
}

} // namespace

TEST_CASE("a summary counts NaN and infinities and describes the finite values") {
  const Tensor t = Tensor::from_vector<float>({0.5f, -1.5f, NAN, 4, INFINITY, -INFINITY, 1, 0}, {2, 4});
  const debug::TensorSummary s = debug::summary(t);
  CHECK(s.dims == std::vector<int64_t>{2, 4});
  CHECK(s.dtype == DType::f32);
  CHECK(s.numel == 8);
  CHECK(s.finite == 5);
  CHECK(s.nan == 1);
  CHECK(s.pos_inf == 1);
  CHECK(s.neg_inf == 1);
  CHECK(s.min == -1.5);
  CHECK(s.max == 4);
  // Finite values 0.5 -1.5 4 1 0: mean 4/5, squared deviations 0.09 5.29 10.24 0.04 0.64.
  CHECK(s.mean == doctest::Approx(0.8));
  CHECK(s.std == doctest::Approx(std::sqrt(16.3 / 5)));
  REQUIRE(s.first_values.size() == debug::kSummaryValues);
  CHECK(s.first_values[1] == -1.5);
  CHECK(std::isnan(s.first_values[2]));
  CHECK(s.first_values[5] == -kInf);
  CHECK(debug::to_string(s) ==
        "f32 [2, 4]: min -1.5 max 4 mean 0.8 std 1.81; 1 NaN, 1 +inf, 1 -inf; [0.5, -1.5, nan, 4, inf, -inf, ...]");
  std::ostringstream out;
  out << s;
  CHECK(out.str() == debug::to_string(s));
}

TEST_CASE("a summary of f16 sees the values as stored, overflow to inf included") {
  const Tensor t = Tensor::from_vector<float>({1, 0.1f, 65504, -2, 70000}, {5}).cast(DType::f16);
  const debug::TensorSummary s = debug::summary(t);
  const double tenth = 0.0999755859375; // f16's nearest to 0.1
  CHECK(s.pos_inf == 1);
  CHECK(s.finite == 4);
  CHECK(s.min == -2);
  CHECK(s.max == 65504);
  const double mean = (1 + tenth + 65504 - 2) / 4;
  CHECK(s.mean == doctest::Approx(mean));
  const double squares = (1 - mean) * (1 - mean) + (tenth - mean) * (tenth - mean) + (65504 - mean) * (65504 - mean) +
                         (-2 - mean) * (-2 - mean);
  CHECK(s.std == doctest::Approx(std::sqrt(squares / 4)));
  CHECK(s.first_values[1] == tenth);
  CHECK(debug::to_string(s).ends_with("; 0 NaN, 1 +inf, 0 -inf; [1, 0.1, 65504, -2, inf]"));
}

TEST_CASE("a summary of i32 and bool has no NaN counts and prints integers") {
  const debug::TensorSummary ints = debug::summary(Tensor::from_vector<int32_t>({3, -7, 10, 0}, {4}));
  CHECK(ints.min == -7);
  CHECK(ints.max == 10);
  CHECK(ints.mean == 1.5);
  CHECK(ints.std == doctest::Approx(std::sqrt(149.0 / 4))); // deviations 1.5 -8.5 8.5 -1.5
  CHECK(debug::to_string(ints) == "i32 [4]: min -7 max 10 mean 1.5 std 6.1; [3, -7, 10, 0]");

  const debug::TensorSummary flags = debug::summary(Tensor::from_vector<bool>({true, false, true}, {3}));
  CHECK(flags.mean == doctest::Approx(2.0 / 3));
  CHECK(flags.std == doctest::Approx(std::sqrt(2.0 / 9)));
  CHECK(debug::to_string(flags) == "i1 [3]: min False max True mean 0.667 std 0.471; [True, False, True]");
}

TEST_CASE("a summary of an empty tensor has no finite values") {
  const debug::TensorSummary s = debug::summary(Tensor::zeros({0, 3}));
  CHECK(s.numel == 0);
  CHECK(s.finite == 0);
  CHECK(std::isnan(s.min));
  CHECK(std::isnan(s.std));
  CHECK(s.first_values.empty());
  CHECK(debug::to_string(s) == "f32 [0, 3]: empty");
  const debug::TensorSummary all_nan = debug::summary(Tensor::full({2}, kNaN));
  CHECK(debug::to_string(all_nan) == "f32 [2]: no finite values; 2 NaN, 0 +inf, 0 -inf; [nan, nan]");
}

TEST_CASE("a symbolic tensor has no summary but prints its layout") {
  std::string text;
  auto call = compile([&](Tensor x) {
    CHECK_THROWS_WITH_AS(debug::summary(x),
                         "spec error: debug::summary: the tensor is symbolic (f32 [batch, 2] on cpu:0, a value of "
                         "the graph being traced) and has no values; summarise what the compiled call returns",
                         Error);
    text = printed(x);
    return x * 2.0;
  })(TensorLayout(DType::f32, {"batch", 2}));
  CHECK(text == "tensor(<symbolic f32 [batch, 2]>)");
  CHECK_THROWS_AS(debug::summary(Tensor()), Error);
  CHECK(printed(Tensor()) == "tensor(<undefined>)");
}

TEST_CASE("a small tensor prints whole, numpy's way") {
  CHECK(printed(Tensor::from_vector<float>({0.5f, -1.5f, NAN, 4, 0, 1}, {2, 3})) ==
        "tensor([[0.5, -1.5, nan], [4, 0, 1]], f32)");
  CHECK(printed(Tensor::from_vector<double>({-kInf, kInf, 1e-5, 1.0 / 3}, {4})) ==
        "tensor([-inf, inf, 1e-05, 0.33333333], f64)");
  CHECK(printed(Tensor::from_vector<float>({1.0f / 3, 0.1f}, {2})) == "tensor([0.33333334, 0.1], f32)");
  CHECK(printed(Tensor::from_vector<float>({0.1f, 70000}, {2}).cast(DType::f16)) == "tensor([0.1, inf], f16)");
  CHECK(printed(Tensor::full({}, 2.5)) == "tensor(2.5, f32)");
  CHECK(printed(Tensor::zeros({0})) == "tensor([], f32)");
  CHECK(printed(Tensor::zeros({2, 0})) == "tensor([], shape=[2, 0], f32)");
}

TEST_CASE("integers print without decimals, i64 exactly, bool as True and False") {
  CHECK(printed(Tensor::from_vector<int64_t>({-3, 0, 9007199254740993}, {3})) ==
        "tensor([-3, 0, 9007199254740993], i64)");
  CHECK(printed(Tensor::from_vector<uint8_t>({255, 7}, {1, 2})) == "tensor([[255, 7]], ui8)");
  CHECK(printed(Tensor::from_vector<bool>({true, false}, {2})) == "tensor([True, False], i1)");
}

TEST_CASE("above 1000 values each long dim shows its first and last 3") {
  CHECK(printed(Tensor::arange(1001, DType::i32)) == "tensor([0, 1, 2, ..., 998, 999, 1000], i32)");
  CHECK(printed(Tensor::arange(2000).reshape({2, 1000})) ==
        "tensor([[0, 1, 2, ..., 997, 998, 999], [1000, 1001, 1002, ..., 1997, 1998, 1999]], f32)");
  CHECK(printed(Tensor::arange(1000)).find("...") == std::string::npos);
}

TEST_CASE("KILN_DEBUG_NANS names the interpreter's first op producing NaN or Inf") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", "1");
  const std::string message = first_non_finite_error(JitMode::off);
  MESSAGE(message);
  CHECK(message.starts_with("numeric error: KILN_DEBUG_NANS: %"));
  CHECK(message.find(" = kiln.log at ") != std::string::npos);
  CHECK(message.find("test_debug.cpp:" + std::to_string(kShiftedLogLine) + ":") != std::string::npos);
  CHECK(message.ends_with(" produced 1 NaN and 2 Inf of 4 values"));
}

#if KILN_HAS_JIT
TEST_CASE("KILN_DEBUG_NANS names a JIT step's first op, its size and how to narrow it") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", "1");
  const std::string message = first_non_finite_error(JitMode::always);
  MESSAGE(message);
  CHECK(message.find("test_debug.cpp:" + std::to_string(kShiftedLogLine) + ":") != std::string::npos);
  CHECK(message.find(", the result of a fused step of 2 ops run by xbyak whose first op is kiln.sub at ") !=
        std::string::npos);
  CHECK(message.find(" (KILN_JIT=off runs each op on its own), produced ") != std::string::npos);
  CHECK(message.ends_with(" produced 1 NaN and 2 Inf of 4 values"));
}
#endif

TEST_CASE("without KILN_DEBUG_NANS a -inf is an ordinary result") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", nullptr);
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    auto call = compile(shifted_log, {.session = session_in(mode)})(TensorLayout(DType::f32, {4}));
    const Tensor y = call(ones_and_others());
    CHECK(y.data<float>()[0] == -kInf);
    CHECK(std::isnan(y.data<float>()[2]));
  }
}

TEST_CASE("a bad KILN_DEBUG_NANS is refused when the session is made") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", "maybe");
  CHECK_THROWS_WITH_AS(session_in(JitMode::off),
                       "spec error: environment variable KILN_DEBUG_NANS='maybe': expected a boolean: 1/0, "
                       "true/false, on/off or yes/no",
                       Error);
}
