// Weight identity: which executables and derived forms a weight's name and version select.
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>

using namespace kiln;

TEST_CASE("two callables of one graph, each with its own weight of one name, compute with their own") {
  auto session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
  auto fn = [](Tensor x) { return x * F::constant_external("w", TensorLayout(DType::f32, {2})); };
  auto ones = compile(fn, {.weights = {{"w", Tensor::ones({2})}}, .session = session})(TensorLayout(DType::f32, {2}));
  auto fives =
      compile(fn, {.weights = {{"w", Tensor::full({2}, 5.0)}}, .session = session})(TensorLayout(DType::f32, {2}));
  CHECK(ones(Tensor::ones({2})).data<float>()[0] == 1.0f);
  CHECK(fives(Tensor::ones({2})).data<float>()[0] == 5.0f);
  CHECK(session->totals().signatures_compiled == 2);
}
