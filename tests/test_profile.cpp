// debug::profile: one entry per step and tier, with what ran it and the bytes it moved.
#include "kiln_config.h"
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <string>

using namespace kiln;

TEST_CASE("profile times every step on each tier and says what ran it") {
  auto fn = [](Tensor a, Tensor b) { return F::relu(F::matmul(a, b)) * 2.0; };
  auto callable = compile(fn, {.session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off}, 4)})(
      TensorLayout(DType::f32, {7, 17}), TensorLayout(DType::f32, {17, 23}));
  const Tensor a = Tensor::randn({7, 17}, 1), b = Tensor::randn({17, 23}, 2);
  const debug::Profile profile = debug::profile(callable, {a, b}, 3);
  int interp_matmuls = 0, jit_steps = 0;
  for (const debug::StepProfile& step : profile.steps) {
    CAPTURE(step.op);
    CHECK(step.ms >= 0.0);
    CHECK_FALSE(step.implementation.empty());
    if (step.tier == "interp" && step.op.find(" = kiln.matmul at ") != std::string::npos) {
      ++interp_matmuls;
      // It reads a and b and writes [7, 23], all f32.
      CHECK(step.bytes == (7 * 17 + 17 * 23 + 7 * 23) * 4);
    }
    if (step.tier == "jit") ++jit_steps;
  }
  CHECK(interp_matmuls == 1);
#if KILN_HAS_JIT
  CHECK(jit_steps > 0);
#else
  CHECK(jit_steps == 0);
#endif
  const std::string table = profile.table();
  CHECK(table.find("kiln.matmul at ") != std::string::npos);
  CHECK_THROWS_AS(debug::profile(callable, {a, b}, 0), Error);
}
