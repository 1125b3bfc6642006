// The tier set is a value a session is given: what it compiles with, and what its constant folding
// evaluates with, are the set's, not process-wide hooks.
#include "exec/plan_executable.hpp"
#include "interp/interpreter_backend.hpp"
#include "interp/interpreter_tier.hpp"
#include "ir/ops.hpp"
#include "kiln_config.h"
#include "runtime/tier_set.hpp"
#include <atomic>
#include <doctest/doctest.h>
#include <kiln/compile.hpp>
#include <kiln/debug.hpp>
#include <kiln/functional.hpp>
#include <map>
#include <set>

using namespace kiln;

namespace {

// The interpreter tier, counting the executables it builds.
runtime::Tier counting_interpreter(std::shared_ptr<std::atomic<int>> built) {
  runtime::Tier tier = interp::interpreter_tier(interp::interpreter_backend());
  tier.make_executable = [make = tier.make_executable, built](std::shared_ptr<const ir::Function> graph,
                                                              const runtime::WeightMap& weights) {
    ++*built;
    return make(std::move(graph), weights);
  };
  return tier;
}

} // namespace

TEST_CASE("the default tier set holds every tier this build links") {
  const std::shared_ptr<const runtime::TierSet> tiers = runtime::default_tier_set();
  CHECK(tiers == runtime::default_tier_set()); // built once
  std::vector<std::string> linked{"interp"};
  if (KILN_HAS_JIT) linked.push_back("jit");
  if (KILN_HAS_VULKAN) linked.push_back("accelerator");
  CHECK(tiers->names() == linked);
  CHECK(tiers->interp() != nullptr);
  CHECK((tiers->jit() != nullptr) == bool(KILN_HAS_JIT));
  CHECK((tiers->find("accelerator") != nullptr) == bool(KILN_HAS_VULKAN)); // present even where no device is
  CHECK(bool(tiers->eager()));
  CHECK(Session(TierPolicy{JitMode::off}).tiers().names() == linked); // a session given no set uses it
}

TEST_CASE("a tier set refuses two tiers of one name") {
  const exec::TierBackend& interpreter = interp::interpreter_backend();
  std::vector<runtime::Tier> twice{interp::interpreter_tier(interpreter), interp::interpreter_tier(interpreter)};
  CHECK_THROWS_WITH_AS(runtime::TierSet(std::move(twice), interpreter.eager),
                       "internal error: tier set: two tiers are named 'interp'", Error);
}

TEST_CASE("a session compiles and folds constants with the tier set it is given") {
  auto built = std::make_shared<std::atomic<int>>(0);
  std::set<std::string> folded;
  const ir::EagerEvaluator& interpreter = interp::interpreter_backend().eager;
  ir::EagerEvaluator recording = [&](ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                     const std::vector<ir::ValueType>& types, const ir::SourceLoc& loc) {
    folded.emplace(ir::op_info(kind).name);
    return interpreter(kind, attrs, inputs, types, loc);
  };
  std::vector<runtime::Tier> only_interp{counting_interpreter(built)};
  auto tiers = std::make_shared<const runtime::TierSet>(std::move(only_interp), recording);
  // Promotions compile on the calling thread: the set has no JIT tier to promote to.
  auto session = std::make_shared<Session>(TierPolicy{JitMode::always, 2, false}, 0, tiers);
  CHECK(&session->tiers() == tiers.get());

  auto f = compile([](Tensor x) { return x + F::arange(0, 3); }, {.session = session})(TensorLayout(DType::f32, {3}));
  CHECK(folded == std::set<std::string>{"arange"}); // folded at compile time, through the set's evaluator
  const Tensor y = f(Tensor::ones({3}));
  CHECK(std::vector<float>(y.data<float>(), y.data<float>() + 3) == std::vector<float>{1, 2, 3});
  f(Tensor::ones({3}));
  CHECK(built->load() == 1); // one signature, built by the set's interpreter
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.tier == "interp");
  CHECK(stats.jit_error == "the JIT tier is not linked into this build");
}

namespace {

// A tier named "accelerator" that runs the interpreter's plan: it stands in for a device so that
// what is tested is the promotion machinery's naming, not a device.
runtime::Tier stand_in_accelerator() {
  runtime::Tier tier;
  tier.name = "accelerator";
  tier.make_executable = [](std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights) {
    return std::make_unique<exec::PlanExecutable>(std::move(graph), weights, interp::interpreter_backend().steps,
                                                  exec::ExecutableOptions{.tier = "accelerator"});
  };
  return tier;
}

} // namespace

TEST_CASE("a policy promotes to the tier it names: stats, last_tier and compare_tiers say which") {
  const exec::TierBackend& interpreter = interp::interpreter_backend();
  std::vector<runtime::Tier> list{interp::interpreter_tier(interpreter), stand_in_accelerator()};
  auto tiers = std::make_shared<const runtime::TierSet>(std::move(list), interpreter.eager);
  TierPolicy policy{JitMode::automatic, 1, false};
  policy.promote_to = "accelerator";
  auto session = std::make_shared<Session>(policy, 0, tiers);
  auto f = compile([](Tensor x) { return F::relu(x) * 2.0; }, {.session = session})(TensorLayout(DType::f32, {5}));
  const Tensor x = Tensor::from_vector<float>({-1, 0, 1, 2, -3}, {5});
  f(x);
  CHECK(f.core()->last_tier() == "interp");
  const Tensor y = f(x); // the second call promotes (promote_after 1, on this thread) and runs promoted
  CHECK(std::vector<float>(y.data<float>(), y.data<float>() + 5) == std::vector<float>{0, 0, 2, 4, 0});
  CHECK(f.core()->last_tier() == "accelerator");
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.tier == "accelerator");
  CHECK(stats.calls_per_tier == std::map<std::string, uint64_t>{{"interp", 1}, {"accelerator", 1}});
  CHECK(stats.jit_error.empty());
  CHECK(!debug::compare_tiers(f, {x})); // by default against the tier the callable promotes to
  CHECK_THROWS_WITH_AS(debug::compare_tiers(f, {x}, 1e-4, "gpu"),
                       "spec error: debug::compare_tiers: no tier 'gpu' to compare (jit or accelerator)", Error);
  debug::Stepper stepper(f, {x}, {.tier = "accelerator"});
  CHECK(stepper.finish().at(0).data<float>()[3] == 4.0f);
}

TEST_CASE("a policy promoting to a tier the session's set lacks stays on the interpreter and says why") {
  const exec::TierBackend& interpreter = interp::interpreter_backend();
  std::vector<runtime::Tier> only_interp{interp::interpreter_tier(interpreter)};
  auto tiers = std::make_shared<const runtime::TierSet>(std::move(only_interp), interpreter.eager);
  TierPolicy policy{JitMode::always, 0, false};
  policy.promote_to = "accelerator";
  auto session = std::make_shared<Session>(policy, 0, tiers);
  auto f = compile([](Tensor x) { return x + 1.0; }, {.session = session})(TensorLayout(DType::f32, {2}));
  CHECK(f(Tensor::zeros({2})).data<float>()[1] == 1.0f);
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.tier == "interp");
  CHECK(stats.jit_error == "the accelerator tier is not linked into this build (-Dvulkan=disabled)");
  CHECK_THROWS_WITH_AS(debug::compare_tiers(f, {Tensor::zeros({2})}), doctest::Contains("no accelerator tier"), Error);
  CHECK_THROWS_WITH_AS(debug::Stepper(f, {Tensor::zeros({2})}, {.tier = "accelerator"}),
                       doctest::Contains("no accelerator tier"), Error);
}
