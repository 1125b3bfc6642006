// debug::Stepper: op-by-op stepping, breakpoints and watchpoints against what the test computes.
#include "kiln_config.h"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <source_location>
#include <string>
#include <vector>

using namespace kiln;

namespace {

std::string here_plus(int lines, std::source_location loc = std::source_location::current()) {
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line() + lines);
}

template <class Fn> auto compiled(Fn fn, const TensorLayout& layout) {
  return compile(fn, {.session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off}, 4)})(layout);
}

} // namespace

TEST_CASE("stepping runs every op once, in the executor's order, and finishes with the call's outputs") {
  auto fn = [](Tensor x) { return F::exp(x * 2.0) + 1.0; };
  auto callable = compiled(fn, TensorLayout(DType::f32, {3}));
  const Tensor x = Tensor::from_vector<float>({0.0f, 0.5f, -1.0f}, {3});
  debug::Stepper stepper(callable, {x});
  std::vector<std::string> kinds;
  while (!stepper.current().done) {
    kinds.push_back(stepper.current().op);
    CHECK(stepper.step());
  }
  CHECK_FALSE(stepper.step());
  // The executor's order is the graph's: constants where they were traced, then each op.
  CHECK(kinds == std::vector<std::string>{"kiln.constant", "kiln.mul", "kiln.exp", "kiln.constant", "kiln.add"});
  const std::vector<Tensor> outputs = stepper.finish();
  REQUIRE(outputs.size() == 1);
  const Tensor want = callable(x);
  for (int64_t i = 0; i < 3; ++i)
    CHECK(outputs[0].data<float>()[i] == want.data<float>()[i]);
}

TEST_CASE("breakpoints by kind, value and source line stop before their op") {
  std::string exp_line;
  auto fn = [&exp_line](Tensor x) {
    Tensor h = x * 2.0;
    exp_line = here_plus(1);
    Tensor e = F::exp(h);
    return F::tanh(e) + h;
  };
  auto callable = compiled(fn, TensorLayout(DType::f32, {4}));
  const Tensor x = Tensor::randn({4}, 1);
  {
    debug::Stepper by_kind(callable, {x});
    by_kind.break_on_kind("kiln.tanh");
    CHECK(by_kind.continue_());
    CHECK(by_kind.current().op == "kiln.tanh");
    CHECK(by_kind.stop_reason().find("break kiln.tanh: kiln.tanh at ") == 0);
    CHECK_FALSE(by_kind.continue_()); // no other tanh: runs to the end
    CHECK(by_kind.current().done);
  }
  {
    debug::Stepper by_line(callable, {x});
    by_line.break_on_line(exp_line.substr(exp_line.find_last_of('/') + 1));
    CHECK(by_line.continue_());
    CHECK(by_line.current().op == "kiln.exp");
    // The value the exp reads is computed and readable, the exp's is not yet.
    const std::string input = by_line.current().inputs.at(0);
    for (int64_t i = 0; i < 4; ++i)
      CHECK(by_line.value(input).data<float>()[i] == 2.0f * x.data<float>()[i]);
    CHECK_THROWS_AS(by_line.value(by_line.current().results.at(0)), Error);
  }
  {
    debug::Stepper by_value(callable, {x});
    by_value.break_on_kind("kiln.exp");
    REQUIRE(by_value.continue_());
    const std::string e = by_value.current().results.at(0);
    debug::Stepper again(callable, {x});
    again.break_on_value(e);
    CHECK(again.continue_());
    CHECK(again.current().op == "kiln.exp");
  }
}

TEST_CASE("watch inf stops after log(x - 1) on inputs holding 1, naming the op, its line and its input") {
  std::string log_line;
  auto fn = [&log_line](Tensor x) {
    Tensor shifted = x - 1.0;
    log_line = here_plus(1);
    return F::log(shifted) * 3.0;
  };
  auto callable = compiled(fn, TensorLayout(DType::f32, {4}));
  const Tensor x = Tensor::from_vector<float>({2.0f, 1.0f, 3.0f, 1.0f}, {4});
  debug::Stepper stepper(callable, {x});
  stepper.watch_inf();
  REQUIRE(stepper.continue_());
  const std::string& why = stepper.stop_reason();
  CAPTURE(why);
  CHECK(why.find("watch inf: %") == 0);
  CHECK(why.find(" = kiln.log at ") != std::string::npos);
  CHECK(why.find(log_line.substr(log_line.find_last_of('/') + 1) + ":") != std::string::npos);
  CHECK(why.find("produced 2 Inf of 4 values") != std::string::npos);
  CHECK(why.find("its input %") != std::string::npos);
  CHECK(why.find("has min 0") != std::string::npos);
  CHECK(stepper.current().op == "kiln.constant"); // it stands after the log
}

TEST_CASE("watch nan and watch range, and values freed after their last reader unless kept") {
  auto fn = [](Tensor x) { return F::sqrt(x * 2.0) + 1.0; };
  auto callable = compiled(fn, TensorLayout(DType::f32, {3}));
  const Tensor x = Tensor::from_vector<float>({1.0f, -2.0f, 8.0f}, {3});
  debug::Stepper nan_watch(callable, {x});
  nan_watch.watch_nan();
  REQUIRE(nan_watch.continue_());
  CHECK(nan_watch.stop_reason().find("kiln.sqrt") != std::string::npos);
  CHECK(nan_watch.stop_reason().find("produced 1 NaN of 3 values") != std::string::npos);

  // %1 is the mul's result (the constant is %0... as traced): find it by stepping.
  debug::Stepper ranged(callable, {x});
  ranged.step(); // the constant
  const std::string product = ranged.current().results.at(0);
  ranged.watch_range(product, -3.0, 3.0);
  REQUIRE(ranged.continue_());
  CHECK(ranged.stop_reason().find("watch range: " + product + " = kiln.mul") == 0);
  CHECK(ranged.stop_reason().find("left [-3, 3] (min -4, max 16)") != std::string::npos);

  debug::Stepper freed(callable, {x});
  freed.step();
  const std::string mul = freed.current().results.at(0);
  freed.finish();
  CHECK_THROWS_AS(freed.value(mul), Error); // its only reader ran: freed as the arena would reuse it
  debug::Stepper kept(callable, {x});
  kept.step();
  kept.keep(kept.current().results.at(0));
  kept.finish();
  CHECK(kept.value(mul).data<float>()[2] == 16.0f);
  debug::Stepper all(callable, {x}, {.keep_all = true});
  all.finish();
  CHECK(all.value(mul).data<float>()[2] == 16.0f);
  CHECK(std::isnan(all.value("%2").data<float>()[1])); // the sqrt's
}

TEST_CASE("restart runs again from the first op, keeping breakpoints, watchpoints and keeps") {
  auto fn = [](Tensor x) { return F::sqrt(x * 2.0 - 1.0) + 1.0; };
  auto callable = compiled(fn, TensorLayout(DType::f32, {3}));
  const Tensor x = Tensor::from_vector<float>({1.0f, -2.0f, 8.0f}, {3});
  debug::Stepper stepper(callable, {x});
  stepper.watch_nan();
  REQUIRE(stepper.continue_());
  const std::string why = stepper.stop_reason();
  CHECK(why.starts_with("watch nan: %4 = kiln.sqrt at ")); // print: %0 2.0, %1 mul, %2 1.0, %3 sub
  CHECK_THROWS_WITH_AS(stepper.value("%1"), doctest::Contains("freed after its last reader"), Error);
  stepper.keep("%1");
  stepper.break_on_kind("kiln.sub");
  stepper.restart();
  CHECK(stepper.current().index == 0);
  CHECK(stepper.stop_reason().empty());
  REQUIRE(stepper.continue_()); // the breakpoint set before the restart
  CHECK(stepper.stop_reason().starts_with("break kiln.sub: "));
  REQUIRE(stepper.continue_()); // the watchpoint set before it
  CHECK(stepper.stop_reason() == why);
  const Tensor product = stepper.value("%1"); // kept this time
  for (int64_t i = 0; i < 3; ++i)
    CHECK(product.data<float>()[i] == x.data<float>()[i] * 2.0f);
  const std::vector<Tensor> outputs = stepper.finish();
  CHECK(outputs.at(0).data<float>()[2] == doctest::Approx(std::sqrt(15.0) + 1.0));
}

TEST_CASE("the stepper refuses what it cannot understand, naming it") {
  auto callable = compiled([](Tensor x) { return x + 1.0; }, TensorLayout(DType::f32, {2}));
  debug::Stepper stepper(callable, {Tensor::ones({2})});
  CHECK_THROWS_WITH_AS(stepper.break_on_kind("kiln.nope"), doctest::Contains("kiln.nope"), Error);
  CHECK_THROWS_WITH_AS(stepper.break_on_value("12"), doctest::Contains("'12'"), Error);
  CHECK_THROWS_WITH_AS(stepper.break_on_line("model.cpp"), doctest::Contains("file:line"), Error);
  CHECK_THROWS_WITH_AS(stepper.value("%999"), doctest::Contains("%999"), Error);
  CHECK_THROWS_AS(debug::Stepper(callable, {Tensor::ones({3})}), Error); // a signature it was not compiled for
}

TEST_CASE("breakpoints and watchpoints reach inside subgraph bodies") {
  auto body = [](Tensor h) { return F::log(h) * 2.0; };
  auto fn = [&body](Tensor x) { return F::as_subgraph("block", body)(x - 1.0) + 1.0; };
  auto callable = compiled(fn, TensorLayout(DType::f32, {2}));
  const Tensor x = Tensor::from_vector<float>({1.0f, 3.0f}, {2});
  debug::Stepper by_kind(callable, {x});
  by_kind.break_on_kind("kiln.log");
  REQUIRE(by_kind.continue_());
  CHECK(by_kind.current().op == "kiln.log");
  debug::Stepper watching(callable, {x});
  watching.watch_inf();
  REQUIRE(watching.continue_());
  CHECK(watching.stop_reason().find("kiln.log") != std::string::npos);
  CHECK(watching.stop_reason().find("produced 1 Inf of 2 values") != std::string::npos);
}

TEST_CASE("next runs a subgraph call as one step; where gives the call stack with its source lines") {
  std::string block_call, inner_call, log_line;
  auto inner = [&log_line](Tensor h) {
    log_line = here_plus(1);
    return F::log(h) * 3.0;
  };
  auto block = [&](Tensor h) {
    inner_call = here_plus(1);
    Tensor y = F::as_subgraph("inner", inner)(h * 2.0);
    return y - 1.0;
  };
  auto fn = [&](Tensor x) {
    block_call = here_plus(1);
    Tensor b = F::as_subgraph("block", block)(x);
    return F::exp(b);
  };
  auto callable = compiled(fn, TensorLayout(DType::f32, {2}));
  const Tensor x = Tensor::from_vector<float>({0.5f, 2.0f}, {2});
  // Locations name the file without its folder: "test_stepper.cpp:42:17".
  auto at_line = [](const std::string& location, const std::string& file_line) {
    return location.rfind(file_line.substr(file_line.find_last_of('/') + 1) + ":", 0) == 0;
  };
  {
    // The stepper first stands at the call to @block; next runs the whole call.
    debug::Stepper stepper(callable, {x});
    CHECK(stepper.current().op == "func.call");
    CHECK(stepper.current().function == "@main");
    CHECK(stepper.current().mlir.find("= func.call @block(%arg0)") != std::string::npos);
    std::vector<debug::StackFrame> stack = stepper.where();
    REQUIRE(stack.size() == 1);
    CHECK(stack[0].function == "@main");
    CHECK(at_line(stack[0].location, block_call));
    CHECK(stepper.next());
    CHECK(stepper.stop_reason().empty());
    CHECK(stepper.current().op == "kiln.exp");
    CHECK(stepper.current().function == "@main");
    CHECK(stepper.where().size() == 1);
    CHECK(stepper.next()); // a plain op: one step
    CHECK(stepper.current().done);
    CHECK(stepper.where().empty());
    CHECK_FALSE(stepper.next());
  }
  {
    // step goes into both calls; inside @inner the stack has three frames.
    debug::Stepper stepper(callable, {x});
    REQUIRE(stepper.step()); // into @block: no op runs
    CHECK(stepper.current().function == "@block");
    CHECK(stepper.current().op == "kiln.constant");
    CHECK(stepper.where().size() == 2);
    while (stepper.current().op != "func.call")
      REQUIRE(stepper.step());
    CHECK(stepper.current().mlir.find("func.call @inner") != std::string::npos);
    CHECK(at_line(stepper.current().location, inner_call));
    REQUIRE(stepper.step());
    CHECK(stepper.current().op == "kiln.log");
    const std::vector<debug::StackFrame> stack = stepper.where();
    REQUIRE(stack.size() == 3);
    CHECK(at_line(stack[0].location, block_call));
    CHECK(stack[1].function == "@block");
    CHECK(at_line(stack[1].location, inner_call));
    CHECK(stack[2].function == "@inner");
    CHECK(at_line(stack[2].location, log_line));
    // Inside @inner next steps one op; from its last op it returns to @block.
    CHECK(stepper.next());
    CHECK(stepper.current().op == "kiln.constant");
    CHECK(stepper.next());
    CHECK(stepper.current().op == "kiln.mul");
    CHECK(stepper.next());
    CHECK(stepper.current().function == "@block");
    CHECK(stepper.where().size() == 2);
  }
  {
    // next stops at a breakpoint inside the call it runs, as pdb's next does.
    debug::Stepper stepper(callable, {x});
    stepper.break_on_kind("kiln.log");
    CHECK(stepper.next());
    CHECK(stepper.stop_reason().find("break kiln.log") == 0);
    CHECK(stepper.current().op == "kiln.log");
    CHECK(stepper.current().function == "@inner");
    // continue runs the op it stands at first, so the same breakpoint does not stop it again.
    CHECK_FALSE(stepper.continue_());
    CHECK(stepper.current().done);
    const std::vector<Tensor> outputs = stepper.finish();
    const Tensor want = callable(x);
    for (int64_t i = 0; i < 2; ++i)
      CHECK(outputs.at(0).data<float>()[i] == want.data<float>()[i]);
  }
  {
    // A breakpoint at the op a step arrived at does not stop continue before that op runs.
    debug::Stepper stepper(callable, {x});
    while (stepper.current().op != "kiln.log")
      REQUIRE(stepper.step());
    stepper.break_on_kind("kiln.log");
    CHECK_FALSE(stepper.continue_());
  }
}

#if KILN_HAS_JIT
TEST_CASE("on the JIT tier the stepper replays the JIT's values; fused ones say so") {
  // A matmul (oneDNN) whose result the JIT keeps, then exp, sub, log, mul fused into one kernel
  // that writes out only the mul's result.
  auto fn = [](Tensor x) {
    Tensor h = F::matmul(x, F::transpose(x, 0, 1));
    return F::log(F::exp(h) - 1.0) * 0.5;
  };
  auto callable = compiled(fn, TensorLayout(DType::f32, {3, 5}));
  const Tensor x = Tensor::randn({3, 5}, 7);
  debug::Stepper on_jit(callable, {x}, {.tier = "jit"});
  debug::Stepper on_interp(callable, {x});
  for (debug::Stepper* stepper : {&on_jit, &on_interp}) {
    stepper->break_on_kind("kiln.mul");
    stepper->keep("%1"); // the matmul's result
    REQUIRE(stepper->continue_());
    CHECK(stepper->current().op == "kiln.mul");
    CHECK_FALSE(stepper->current().fused);
  }
  // The matmul's result is the JIT's (oneDNN's summation order), within the tiers' tolerance.
  const Tensor jit_h = on_jit.value("%1"), interp_h = on_interp.value("%1");
  for (int64_t i = 0; i < 9; ++i)
    CHECK(jit_h.data<float>()[i] == doctest::Approx(interp_h.data<float>()[i]).epsilon(1e-5));
  // The log's result lives only inside the kernel.
  CHECK(on_jit.current().inputs.at(0) == "%5");
  CHECK_THROWS_WITH_AS(on_jit.value("%5"), doctest::Contains("only inside the JIT kernel"), Error);
  CHECK(on_interp.value("%5").numel() == 9);
  debug::Stepper at_log(callable, {x}, {.tier = "jit"});
  at_log.break_on_kind("kiln.log");
  REQUIRE(at_log.continue_());
  CHECK(at_log.current().fused);
  const std::vector<Tensor> jit_out = on_jit.finish(), interp_out = on_interp.finish();
  for (int64_t i = 0; i < 9; ++i) {
    const float want = interp_out.at(0).data<float>()[i], got = jit_out.at(0).data<float>()[i];
    if (std::isnan(want))
      CHECK(std::isnan(got));
    else
      CHECK(got == doctest::Approx(want).epsilon(1e-4));
  }
  CHECK_THROWS_AS(debug::Stepper(callable, {x}, {.tier = "gpu"}), Error);
}
#endif
