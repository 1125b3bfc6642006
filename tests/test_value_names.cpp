// One name per value: every debugging tool names a value as `kiln print` prints the staged graph,
// "@block %4" inside a subgraph @block, though the tiers run an optimised, inlined copy of it.
#include "captured_stderr.hpp"
#include "kiln_config.h"
#include "scoped_env.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

using namespace kiln;

namespace {

// What `kiln print` shows, read back from its text: per value label, the op making it and its line.
struct PrintedGraph {
  std::map<std::string, std::string> kind; // "@block %1" -> "kiln.sqrt"; a call's results -> "func.call"
  std::map<std::string, std::string> line; // "@block %1" -> its line, without indentation
};

// "block" from "  func.func private @block(...": the function a line opens, if it opens one.
std::optional<std::string> function_opened(const std::string& line) {
  const std::string opening = "  func.func ";
  if (!line.starts_with(opening)) return std::nullopt;
  const size_t at = line.find('@', opening.size());
  const size_t paren = line.find('(', at);
  if (at == std::string::npos || paren == std::string::npos) return std::nullopt;
  return line.substr(at + 1, paren - at - 1);
}

// An op line "    %3:2 = func.call ..." or "    %4 = "kiln.sqrt"(...": its value, result count, kind.
struct OpLine {
  std::string value;
  int results = 1;
  std::string kind;
};

std::optional<OpLine> op_line(const std::string& line) {
  if (!line.starts_with("    %")) return std::nullopt;
  const size_t digits_end = line.find_first_not_of("0123456789", 5);
  if (digits_end == 5 || digits_end == std::string::npos) return std::nullopt;
  OpLine op{line.substr(4, digits_end - 4)};
  size_t rest = digits_end;
  if (line[rest] == ':') {
    const size_t count_end = line.find_first_not_of("0123456789", rest + 1);
    op.results = std::stoi(line.substr(rest + 1, count_end - rest - 1));
    rest = count_end;
  }
  const std::string_view tail = std::string_view(line).substr(rest);
  if (tail.starts_with(" = func.call")) {
    op.kind = "func.call";
    return op;
  }
  if (!tail.starts_with(" = \"kiln.")) return std::nullopt;
  const size_t close = tail.find('"', 4);
  if (close == std::string_view::npos) return std::nullopt;
  op.kind = std::string(tail.substr(4, close - 4));
  return op;
}

PrintedGraph read_printed(const std::string& text) {
  PrintedGraph printed;
  std::istringstream lines(text);
  std::string prefix;
  bool first_function = true;
  for (std::string line; std::getline(lines, line);) {
    if (const auto function = function_opened(line)) {
      prefix = first_function ? "" : "@" + *function + " ";
      first_function = false;
    } else if (const auto op = op_line(line)) {
      for (int i = 0; i < op->results; ++i) {
        const std::string label = prefix + op->value + (op->results > 1 ? "#" + std::to_string(i) : "");
        printed.kind[label] = op->kind;
        printed.line[label] = line.substr(4);
      }
    }
  }
  return printed;
}

// Where h < 2 the sqrt makes NaN: the first NaN is made inside @block.
Tensor block(Tensor h) { return F::sqrt(h - 2.0) * 3.0; }

// The tanh is read by nothing, so the optimiser drops it: the graph that runs numbers its values
// differently from the printed one.
Tensor model(Tensor x) {
  Tensor unused = F::tanh(x);
  Tensor e = F::exp(x);
  return F::log(F::as_subgraph("block", block)(e) + 1.0);
}

const TensorLayout kLayout(DType::f32, {4});

Tensor inputs() { return Tensor::from_vector<float>({-1.0f, 0.0f, 1.0f, 2.0f}, {4}); }

std::shared_ptr<Session> session_in(JitMode mode) { return std::make_shared<Session>(TierPolicy{.mode = mode}, 4); }

auto compiled(JitMode mode = JitMode::off) { return compile(model, {.session = session_in(mode)})(kLayout); }

// The label print gives the one op of this kind (several would make the test ambiguous).
std::string printed_label_of(const PrintedGraph& printed, const std::string& kind) {
  std::string found;
  for (const auto& [label, k] : printed.kind)
    if (k == kind) {
      REQUIRE_MESSAGE(found.empty(), "two ops of kind " << kind);
      found = label;
    }
  REQUIRE_MESSAGE(!found.empty(), "no op of kind " << kind);
  return found;
}

// "<label> = kiln.X at ..." at the start of `text`: that kiln print names that op so.
void check_named_as_printed(const PrintedGraph& printed, const std::string& text) {
  CAPTURE(text);
  const size_t equals = text.find(" = kiln.");
  REQUIRE(equals != std::string::npos);
  const std::string label = text.substr(0, equals);
  const std::string kind = text.substr(equals + 3, text.find(' ', equals + 3) - equals - 3);
  REQUIRE(printed.kind.contains(label));
  CHECK(printed.kind.at(label) == kind);
}

} // namespace

TEST_CASE("the graph prints with a subgraph, and the tanh nobody reads is in it") {
  const std::string text = compiled().staged().to_mlir();
  CAPTURE(text);
  const PrintedGraph printed = read_printed(text);
  CHECK(printed.kind.at("%0") == "kiln.tanh");
  CHECK(printed.kind.at("%1") == "kiln.exp");
  CHECK(printed.kind.at("%2") == "func.call");
  CHECK(printed.kind.at("@block %1") == "kiln.sub");
  CHECK(printed.kind.at("@block %2") == "kiln.sqrt");
}

TEST_CASE("the Stepper names every op it stands at, and its line, as kiln print does") {
  auto callable = compiled();
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  debug::Stepper stepper(callable, {inputs()});
  std::set<std::string> seen;
  for (; !stepper.current().done; stepper.step()) {
    const debug::StepState& at = stepper.current();
    CAPTURE(at.mlir);
    REQUIRE(at.results.size() == 1);
    const std::string& label = at.results[0];
    REQUIRE(printed.kind.contains(label));
    CHECK(printed.kind.at(label) == at.op);
    CHECK(at.mlir == printed.line.at(label));
    CHECK((label.starts_with("@block ") == (at.function == "@block")));
    seen.insert(label);
  }
  // Every printed op but the dropped tanh is stepped through, the call included.
  for (const auto& [label, kind] : printed.kind)
    CHECK_MESSAGE(seen.contains(label) == (label != "%0"), label);
}

TEST_CASE("break, keep and print take a value as kiln print names it, @block %N inside a subgraph") {
  auto callable = compiled();
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  const std::string sqrt = printed_label_of(printed, "kiln.sqrt"), sub = printed_label_of(printed, "kiln.sub");
  REQUIRE(sqrt.starts_with("@block %"));
  debug::Stepper stepper(callable, {inputs()});
  stepper.break_on_value(sqrt);
  stepper.keep("@main %1");                                      // the exp, which the body reads as its argument
  stepper.keep("  " + sub.substr(0, 6) + "   " + sub.substr(7)); // spacing is free
  CHECK(stepper.continue_());
  CHECK(stepper.stop_reason().starts_with("break " + sqrt + ": kiln.sqrt at "));
  CHECK(stepper.current().op == "kiln.sqrt");
  CHECK(stepper.current().results == std::vector<std::string>{sqrt});
  stepper.step();
  // The sub was freed after its last reader, the sqrt, unless kept.
  const Tensor kept = stepper.value(sub);
  for (int64_t i = 0; i < 4; ++i)
    CHECK(kept.data<float>()[i] == doctest::Approx(std::exp(inputs().data<float>()[i]) - 2.0));
  // The call's results and the body's arguments are names of values too: the caller's exp.
  CHECK(stepper.value("@block %arg0").data<float>()[0] == doctest::Approx(std::exp(-1.0)));
  CHECK(stepper.value("@main %1").data<float>()[0] == doctest::Approx(std::exp(-1.0)));
  CHECK_THROWS_WITH_AS(stepper.value("%0"), doctest::Contains("the optimizer folded it into a constant or dropped it"),
                       Error);
  CHECK_THROWS_WITH_AS(stepper.value("@nowhere %1"), doctest::Contains("@block %4 inside a subgraph @block"), Error);
}

TEST_CASE("watch nan and KILN_DEBUG_NANS name the op as kiln print does, inside a subgraph") {
  auto callable = compiled();
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  const std::string sqrt = printed_label_of(printed, "kiln.sqrt");
  debug::Stepper stepper(callable, {inputs()});
  stepper.watch_nan();
  CHECK(stepper.continue_());
  CHECK(stepper.stop_reason().starts_with("watch nan: " + sqrt + " = kiln.sqrt at "));
  check_named_as_printed(printed, stepper.stop_reason().substr(11));

  ScopedEnv debug_nans("KILN_DEBUG_NANS", "1");
  auto checked = compiled();
  const std::string prefix = "numeric error: KILN_DEBUG_NANS: ";
  try {
    checked(inputs());
    FAIL("KILN_DEBUG_NANS let a NaN through");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.starts_with(prefix + sqrt + " = kiln.sqrt at "));
    check_named_as_printed(printed, message.substr(prefix.size()));
  }
}

TEST_CASE("KILN_DEBUG_NANS names log(x) %0, as kiln print does (not by its value id)") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", "1");
  auto callable = compile([](Tensor x) { return F::log(x); }, {.session = session_in(JitMode::off)})(kLayout);
  REQUIRE(callable.staged().to_mlir().find("%0 = \"kiln.log\"(%arg0)") != std::string::npos);
  CHECK_THROWS_WITH_AS(callable(inputs()), doctest::Contains("numeric error: KILN_DEBUG_NANS: %0 = kiln.log at "),
                       Error);
}

TEST_CASE("profile names each step's op as kiln print does") {
  auto callable = compiled();
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  const debug::Profile profile = debug::profile(callable, {inputs()}, 1);
  size_t interp_steps = 0;
  for (const debug::StepProfile& step : profile.steps)
    if (step.tier == "interp") {
      check_named_as_printed(printed, step.op);
      ++interp_steps;
    }
  CHECK(interp_steps == printed.kind.size() - 2); // not the dropped tanh, nor the inlined call
}

#if KILN_HAS_JIT
TEST_CASE("KILN_LOG=jit names each op as kiln print does") {
  auto callable = compiled(JitMode::always);
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  ScopedEnv log("KILN_LOG", "jit");
  CapturedStderr captured;
  callable(inputs());
  std::istringstream lines(captured.text());
  size_t ops = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("[kiln:jit] ")) continue;
    check_named_as_printed(printed, line.substr(11));
    ++ops;
  }
  CHECK(ops == printed.kind.size() - 2);
}

TEST_CASE("compare_tiers names the value that differs as kiln print does, inside a subgraph") {
  // sin past 2^24: the JIT's range reduction and libm's differ.
  auto far_sin = [](Tensor x) { return F::as_subgraph("block", [](Tensor h) { return F::sin(h) + 1.0; })(x * 1.0); };
  auto callable = compile(far_sin, {.session = session_in(JitMode::off)})(TensorLayout(DType::f32, {8}));
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  const auto difference = debug::compare_tiers(callable, {Tensor::full({8}, 3e7)});
  REQUIRE(difference.has_value());
  CHECK(difference->value == printed_label_of(printed, "kiln.sin"));
}
#endif

TEST_CASE("a subgraph called twice: @block %N names its value in each call, the latest one when read") {
  auto twice = [](Tensor x) {
    auto body = F::as_subgraph("block", [](Tensor h) { return F::exp(h) * 2.0; });
    return body(body(x));
  };
  auto callable = compile(twice, {.session = session_in(JitMode::off)})(kLayout);
  const PrintedGraph printed = read_printed(callable.staged().to_mlir());
  const std::string exp = printed_label_of(printed, "kiln.exp");
  debug::Stepper stepper(callable, {inputs()});
  stepper.break_on_value(exp);
  stepper.keep(exp);
  std::vector<Tensor> seen;
  while (stepper.continue_()) {
    CHECK(stepper.current().results == std::vector<std::string>{exp});
    stepper.step();
    seen.push_back(stepper.value(exp));
  }
  REQUIRE(seen.size() == 2);
  for (int64_t i = 0; i < 4; ++i) {
    const double first = std::exp(double(inputs().data<float>()[i]));
    CHECK(seen[0].data<float>()[i] == doctest::Approx(first));
    CHECK(seen[1].data<float>()[i] == doctest::Approx(std::exp(2.0 * first)));
  }
}
