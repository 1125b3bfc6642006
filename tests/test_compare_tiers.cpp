// debug::compare_tiers finds the op where the tiers part, on the differences README's table lists.
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
  // README's table: oneDNN's layer normalisation loses the mean's rounding at mean 1e4.
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
  CHECK(difference->fused_before.empty());
}

TEST_CASE("compare_tiers names the ops fused with a differing one") {
  // sin beyond 2^24 inside a fused elementwise kernel: only the kernel's result is materialised.
  auto fn = [](Tensor x) { return F::sin(x * 2.0) + 1.0; };
  const Tensor x = Tensor::from_vector<float>({0.5f, 3e7f, -1.0f}, {3});
  const auto difference = debug::compare_tiers(compiled(fn, x.layout()), {x});
  REQUIRE(difference.has_value());
  CAPTURE(difference->message());
  CHECK(difference->op.find("kiln.add at ") == 0);
  CHECK(difference->fused_before.find("kiln.mul") != std::string::npos);
  CHECK(difference->fused_before.find("kiln.sin") != std::string::npos);
  CHECK(difference->first_index == 1);
  CHECK(difference->message().find("the JIT fused it with") != std::string::npos);
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
