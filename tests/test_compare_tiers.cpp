// debug::compare_tiers finds the op where the tiers part, on the differences
// docs/tier-differences.md lists.
#include "jit/tier/lowering_fault.hpp"
#include "scoped_env.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <string>

using namespace kiln;

namespace {

template <class Fn, class... Specs> auto compiled(Fn fn, const Specs&... specs) {
  return compile(fn, {.session = std::make_shared<Session>(TierPolicy{}, 4)})(specs...);
}

// "file:line" of the line after the call, where the tests below put the op they expect.
std::string next_line(std::source_location loc = std::source_location::current()) {
  const std::string file = loc.file_name();
  return file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(loc.line() + 1) + ":";
}

} // namespace

TEST_CASE("compare_tiers returns nothing where the tiers agree") {
  auto fn = [](Tensor x) { return F::tanh(x * 2.0) + 1.0; };
  const Tensor x = Tensor::randn({7, 17}, 1);
  CHECK_FALSE(debug::compare_tiers(compiled(fn, x.layout()), {x}).has_value());
}

TEST_CASE("compare_tiers names a layer_norm of rows far from zero and its source line") {
  // docs/tier-differences.md: oneDNN's layer normalisation loses the mean's rounding at mean 1e4.
  std::string line;
  auto fn = [&line](Tensor x) {
    Tensor h = x + 1e4;
    line = next_line();
    return F::layer_norm(h, Tensor(), Tensor()) * 2.0;
  };
  const Tensor x = Tensor::randn({4, 256}, 3);
  const auto difference = debug::compare_tiers(compiled(fn, x.layout()), {x});
  REQUIRE(difference.has_value());
  CAPTURE(difference->message());
  CHECK(difference->op.find("kiln.layer_norm at ") == 0);
  CHECK(difference->op.find(line) != std::string::npos);
  CHECK(difference->max_abs_error > 1e-4);
  CHECK(difference->fused_step.empty());
}

TEST_CASE("compare_tiers finds the op inside a fused step where the difference starts") {
  // sin beyond 2^24 inside a fused elementwise kernel, which materialises only the add's result.
  std::string line;
  auto fn = [&line](Tensor x) {
    line = next_line();
    return F::sin(x * 2.0) + 1.0;
  };
  const Tensor x = Tensor::from_vector<float>({0.5f, 3e7f, -1.0f}, {3});
  const auto difference = debug::compare_tiers(compiled(fn, x.layout()), {x});
  REQUIRE(difference.has_value());
  CAPTURE(difference->message());
  CHECK(difference->op.find("kiln.sin at " + line) == 0);
  CHECK(difference->narrowed);
  CHECK(difference->fused_step == "kiln.mul %1, kiln.sin %2, kiln.add %4");
  CHECK(difference->first_index == 1);
  CHECK(std::isnan(difference->jit.data<float>()[1])); // docs/tier-differences.md: NaN beyond 2^24, not a wrong value
  CHECK(difference->message().find("inside a step the JIT fused") != std::string::npos);
}

TEST_CASE("a deliberately wrong JIT lowering is found at exactly its op") {
  // The test-only fault makes the fused kernels compute exp(x) + 0.01; everything else is right.
  std::string line;
  auto fn = [&line](Tensor x) {
    Tensor h = F::tanh(x * 0.5 - 0.25);
    line = next_line();
    Tensor e = F::exp(h);
    return F::sigmoid(e * h) + x;
  };
  const Tensor x = Tensor::randn({7, 17}, 5);
  auto callable = compiled(fn, x.layout());
  CHECK_FALSE(debug::compare_tiers(callable, {x}).has_value());
  jitc::tier::set_lowering_fault(jitc::tier::LoweringFault{ir::OpKind::exp, 0.01f});
  const auto difference = debug::compare_tiers(callable, {x});
  jitc::tier::set_lowering_fault(std::nullopt);
  REQUIRE(difference.has_value());
  CAPTURE(difference->message());
  CHECK(difference->op.find("kiln.exp at " + line) == 0);
  CHECK(difference->narrowed);
  CHECK(difference->max_abs_error == doctest::Approx(0.01).epsilon(1e-3));
  CHECK(difference->first_index == 0);
  CHECK_FALSE(debug::compare_tiers(callable, {x}).has_value()); // cleared: the right kernels again
}

TEST_CASE("compare_tiers finds a cast of an out-of-range float") {
  auto fn = [](Tensor x) { return F::cast(x, DType::i32); };
  const Tensor x = Tensor::from_vector<float>({1.5f, 1e30f}, {2});
  const auto difference = debug::compare_tiers(compiled(fn, x.layout()), {x});
  REQUIRE(difference.has_value());
  CHECK(difference->op.find("kiln.cast at ") == 0);
  CHECK(difference->first_index == 1);
}

TEST_CASE("compare_tiers checks its inputs like a call") {
  auto fn = [](Tensor x) { return x + 1.0; };
  auto callable = compiled(fn, TensorLayout(DType::f32, {"batch", 3}));
  CHECK_THROWS_AS(debug::compare_tiers(callable, {Tensor::randn({2, 4}, 2)}), Error);
}

TEST_CASE("compare_tiers names a relu fused into a matmul that turns NaN into 0") {
  // docs/tier-differences.md: oneDNN's relu post-op computes max(x, 0). Below AVX-512 the JIT
  // leaves the matmul to the interpreter's GEMM unless told otherwise, so oneDNN is forced here.
  ScopedEnv dnnl_matmul("KILN_JIT_MATMUL", "dnnl");
  std::string line;
  auto fn = [&line](Tensor x, Tensor w) {
    Tensor h = F::matmul(x, w);
    line = next_line();
    return F::relu(h);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({1, 2, nan, 4, 5, 6}, {2, 3});
  const Tensor w = Tensor::randn({3, 4}, 9);
  const auto difference = debug::compare_tiers(compiled(fn, x.layout(), w.layout()), {x, w});
  REQUIRE(difference.has_value());
  CAPTURE(difference->message());
  CHECK(difference->op.find("kiln.relu at " + line) == 0);
  CHECK(difference->narrowed);
  CHECK(std::isnan(difference->interp.data<float>()[difference->first_index]));
  CHECK(difference->jit.data<float>()[difference->first_index] == 0.0f);
}

TEST_CASE("compare_tiers finds no difference where the interpreter's GEMM runs the matmul and relu") {
  // The JIT's other matmul path (every CPU below AVX-512 by default) keeps the NaN as the interpreter.
  ScopedEnv interp_matmul("KILN_JIT_MATMUL", "interp");
  auto fn = [](Tensor x, Tensor w) { return F::relu(F::matmul(x, w)); };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({1, 2, nan, 4, 5, 6}, {2, 3});
  const Tensor w = Tensor::randn({3, 4}, 9);
  CHECK_FALSE(debug::compare_tiers(compiled(fn, x.layout(), w.layout()), {x, w}).has_value());
}
