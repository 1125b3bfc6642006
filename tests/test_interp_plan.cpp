#include "core/environment.hpp"
#include "core/tensor_impl.hpp"
#include "exec/implementation_list.hpp"
#include "exec/plan.hpp"
#include "exec/plan_executable.hpp"
#include "exec/step_implementations.hpp"
#include "interp/interpreter_backend.hpp"
#include "interp/packed_matmul.hpp"
#include "ir/ops.hpp"
#include "kiln_config.h"
#include "runtime/executable.hpp"
#include "runtime/tier_set.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <optional>
#include <random>
#include <thread>

using namespace kiln;
using exec::PlanExecutable;
using ir::OpKind;
using ir::ValueId;

namespace {

// Builds a static function by hand; result types come from the op table's inference.
struct GraphBuilder {
  std::shared_ptr<ir::Function> fn = std::make_shared<ir::Function>();

  ValueId arg(const std::vector<int64_t>& dims, bool buffer = false) {
    return fn->add_arg(ir::ValueType{DType::f32, shape_from_dims(dims), buffer});
  }
  std::vector<ValueId> ops(OpKind kind, const std::vector<ValueId>& operands, ir::Attrs attrs = {}) {
    std::vector<ir::ValueType> types;
    for (ValueId v : operands)
      types.push_back(fn->type_of(v));
    std::vector<ir::ValueType> results = ir::infer_op(kind, types, attrs, {});
    ir::OpId id = fn->add_op(kind, operands, results, std::move(attrs));
    return fn->ops[id].results;
  }
  ValueId op(OpKind kind, const std::vector<ValueId>& operands, ir::Attrs attrs = {}) {
    return ops(kind, operands, std::move(attrs)).at(0);
  }
  ValueId constant(const Tensor& value) { return op(OpKind::constant, {}, {{"value", ir::Attr::of_tensor(value)}}); }
  ValueId weight(const std::string& name, const std::vector<int64_t>& dims) {
    ir::ValueType type{DType::f32, shape_from_dims(dims), false};
    ir::OpId id = fn->add_op(OpKind::constant_external, {}, {type}, {{"name", ir::Attr::of_string(name)}});
    return fn->ops[id].results.at(0);
  }
  PlanExecutable build(const runtime::WeightMap& weights = {}) const {
    return {fn, weights, interp::interpreter_backend().steps};
  }
};

std::vector<float> values_of(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.numel());
}

// Distinct, non-trivial values: 0.1 * (i + 1) * sign alternating, offset by `seed`.
Tensor sample(const std::vector<int64_t>& dims, float seed = 0.0f) {
  Tensor t = Tensor::empty(dims);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = seed + 0.1f * float(i + 1) * (i % 2 ? -1.0f : 1.0f);
  return t;
}

void check_close(const Tensor& actual, const std::vector<float>& expected, float tolerance = 1e-5f) {
  REQUIRE(actual.numel() == int64_t(expected.size()));
  std::vector<float> got = values_of(actual);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got[i] - expected[i]) <= tolerance * std::max(1.0f, std::fabs(expected[i])));
  }
}

std::vector<float> map(const std::vector<float>& a, float (*fn)(float)) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = fn(a[i]);
  return out;
}

// Whether matmuls by bound weights run the packed GEMM here (interp/packed_matmul.hpp); meson runs
// the matmul cases twice, once with KILN_PACK_WEIGHTS=0.
bool packs_weights() { return interp::cpu_runs_packed_gemm() && env::pack_weights().value_or(true); }

// Blocks that are live at the same op must not share a byte.
void check_no_conflicts(std::span<const exec::LiveInterval> intervals, const exec::ArenaLayout& layout) {
  for (size_t a = 0; a < intervals.size(); ++a) {
    CHECK(layout.offsets[a] % exec::kArenaAlignment == 0);
    CHECK(layout.offsets[a] + intervals[a].bytes <= layout.peak_bytes);
    for (size_t b = a + 1; b < intervals.size(); ++b) {
      bool live_together = intervals[a].first <= intervals[b].last && intervals[b].first <= intervals[a].last;
      bool share_bytes = layout.offsets[a] < layout.offsets[b] + intervals[b].bytes &&
                         layout.offsets[b] < layout.offsets[a] + intervals[a].bytes;
      if (live_together && intervals[a].bytes && intervals[b].bytes) CHECK_FALSE(share_bytes);
    }
  }
}

} // namespace

TEST_CASE("arena planner shares memory between blocks that are never live together") {
  std::vector<exec::LiveInterval> intervals{{100, 0, 1}, {100, 2, 3}, {100, 4, 5}};
  exec::ArenaLayout layout = exec::plan_arena(intervals);
  CHECK(layout.offsets == std::vector<size_t>{0, 0, 0});
  CHECK(layout.peak_bytes == 128); // 100 rounded up to the 64-byte alignment
}

TEST_CASE("arena planner separates blocks that are live together and aligns them") {
  std::vector<exec::LiveInterval> intervals{{100, 0, 2}, {10, 1, 3}, {64, 2, 2}};
  exec::ArenaLayout layout = exec::plan_arena(intervals);
  check_no_conflicts(intervals, layout);
  CHECK(layout.peak_bytes == 128 + 64 + 64);
}

TEST_CASE("arena planner places a small block into a freed gap (best fit)") {
  // A (256) and B (64) live early; C (128) and D (64) later reuse their space.
  std::vector<exec::LiveInterval> intervals{{256, 0, 1}, {64, 0, 3}, {128, 2, 3}, {64, 2, 3}};
  exec::ArenaLayout layout = exec::plan_arena(intervals);
  check_no_conflicts(intervals, layout);
  CHECK(layout.peak_bytes == 256 + 64);
}

TEST_CASE("arena planner never overlaps live blocks on random interval sets") {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<exec::LiveInterval> intervals;
    size_t live_sum_upper = 0;
    for (int i = 0; i < 30; ++i) {
      int64_t first = int64_t(gen() % 40);
      intervals.push_back({size_t(gen() % 5000), first, first + int64_t(gen() % 10)});
      live_sum_upper += (intervals.back().bytes + 63) / 64 * 64;
    }
    exec::ArenaLayout layout = exec::plan_arena(intervals);
    check_no_conflicts(intervals, layout);
    CHECK(layout.peak_bytes <= live_sum_upper);
  }
}

TEST_CASE("a long chain of same-size elementwise ops needs two arena buffers, not one per op") {
  GraphBuilder g;
  ValueId x = g.arg({256});
  ValueId v = g.op(OpKind::add, {x, x});
  const int chain = 20;
  for (int i = 0; i < chain; ++i)
    v = g.op(OpKind::add, {v, x});
  g.fn->outputs = {g.op(OpKind::neg, {v})};
  PlanExecutable exe = g.build();
  const size_t buffer = 256 * sizeof(float);
  CHECK(exe.arena_bytes() >= 2 * buffer); // an op's input and output are live together
  CHECK(exe.arena_bytes() <= 3 * buffer);

  Tensor input = sample({256});
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{input}, {});
  std::vector<float> expected = values_of(input);
  for (float& e : expected)
    e = -float(chain + 2) * e;
  check_close(out.at(0), expected);
}

TEST_CASE("a plan given a backend without implementation lists is a kiln::Error, not a crash") {
  GraphBuilder g;
  ValueId x = g.arg({4});
  g.fn->outputs = {g.op(OpKind::neg, {x})};
  const exec::StepImplementations none;
  CHECK_THROWS_WITH_AS(exec::ExecutionPlan(g.fn, {}, none), doctest::Contains("has no implementation lists"), Error);
}

TEST_CASE("a chain of add, mul and exp computes exp(x * y + x)") {
  GraphBuilder g;
  ValueId x = g.arg({2, 3});
  ValueId y = g.arg({2, 3});
  g.fn->outputs = {g.op(OpKind::exp, {g.op(OpKind::add, {g.op(OpKind::mul, {x, y}), x})})};
  PlanExecutable exe = g.build();

  Tensor a = sample({2, 3}), b = sample({2, 3}, 0.5f);
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{a, b}, {});
  REQUIRE(out.size() == 1);
  CHECK(out[0].dims() == std::vector<int64_t>{2, 3});
  std::vector<float> va = values_of(a), vb = values_of(b), expected(6);
  for (size_t i = 0; i < 6; ++i)
    expected[i] = std::exp(va[i] * vb[i] + va[i]);
  check_close(out[0], expected);
}

TEST_CASE("a diamond DAG reads a shared value from both branches") {
  GraphBuilder g;
  ValueId x = g.arg({4});
  ValueId top = g.op(OpKind::exp, {x});
  ValueId left = g.op(OpKind::add, {top, top});
  ValueId right = g.op(OpKind::mul, {top, x});
  g.fn->outputs = {g.op(OpKind::sub, {left, right})};
  PlanExecutable exe = g.build();

  Tensor input = sample({4});
  std::vector<float> vx = values_of(input), expected(4);
  for (size_t i = 0; i < 4; ++i)
    expected[i] = 2 * std::exp(vx[i]) - std::exp(vx[i]) * vx[i];
  check_close(exe.run(std::vector<Tensor>{input}, {}).at(0), expected);
}

TEST_CASE("a graph output that is an input comes back as a copy") {
  GraphBuilder g;
  ValueId x = g.arg({3});
  g.fn->outputs = {x, g.op(OpKind::add, {x, x})};
  PlanExecutable exe = g.build();

  Tensor input = sample({3});
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{input}, {});
  REQUIRE(out.size() == 2);
  CHECK(out[0].raw_data() != input.raw_data());
  CHECK(values_of(out[0]) == values_of(input));
  out[0].data<float>()[0] = 42.0f;
  CHECK(input.data<float>()[0] == doctest::Approx(0.1f));
  check_close(out[1], {0.2f, -0.4f, 0.6f});
}

TEST_CASE("a value listed twice among the outputs gives two distinct tensors") {
  GraphBuilder g;
  ValueId x = g.arg({3});
  ValueId y = g.op(OpKind::neg, {x});
  g.fn->outputs = {y, y};
  PlanExecutable exe = g.build();

  std::vector<Tensor> out = exe.run(std::vector<Tensor>{sample({3})}, {});
  REQUIRE(out.size() == 2);
  CHECK(out[0].raw_data() != out[1].raw_data());
  check_close(out[0], {-0.1f, 0.2f, -0.3f});
  check_close(out[1], {-0.1f, 0.2f, -0.3f});
}

TEST_CASE("constants and weights are bound without a copy and copied only into outputs") {
  Tensor constant = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor weight = Tensor::from_vector<float>({10, 20, 30}, {3});
  GraphBuilder g;
  ValueId x = g.arg({3});
  ValueId c = g.constant(constant);
  ValueId w = g.weight("w", {3});
  g.fn->outputs = {g.op(OpKind::add, {g.op(OpKind::mul, {x, w}), c}), c, w};
  PlanExecutable exe = g.build({{"w", weight}});

  std::vector<const void*> bound_data;
  runtime::OpHooks hooks;
  hooks.after = [&](size_t, const ir::Op& op, std::span<const Tensor>, std::span<const Tensor> outputs) {
    if (op.kind == OpKind::constant || op.kind == OpKind::constant_external)
      bound_data.push_back(outputs[0].raw_data());
  };
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{Tensor::ones({3})}, {.hooks = &hooks});
  CHECK(bound_data == std::vector<const void*>{constant.raw_data(), weight.raw_data()});
  check_close(out.at(0), {11, 22, 33});
  CHECK(values_of(out.at(1)) == std::vector<float>{1, 2, 3});
  CHECK(values_of(out.at(2)) == std::vector<float>{10, 20, 30});
  CHECK(out[1].raw_data() != constant.raw_data());
  CHECK(out[2].raw_data() != weight.raw_data());
}

TEST_CASE("buffer_store writes the caller's buffer tensor in place") {
  GraphBuilder g;
  ValueId buffer = g.arg({3}, true);
  ValueId x = g.arg({3});
  ValueId doubled = g.op(OpKind::add, {x, x});
  g.ops(OpKind::buffer_store, {buffer, doubled});
  g.fn->outputs = {doubled};
  PlanExecutable exe = g.build();

  Tensor state = Tensor::zeros({3});
  const void* before = state.raw_data();
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{state, sample({3})}, {});
  CHECK(state.raw_data() == before);
  check_close(state, {0.2f, -0.4f, 0.6f});
  check_close(out.at(0), {0.2f, -0.4f, 0.6f});
}

TEST_CASE("split hands each of its results to its own consumer") {
  GraphBuilder g;
  ValueId x = g.arg({2, 3});
  std::vector<ValueId> parts =
      g.ops(OpKind::split, {x}, {{"axis", ir::Attr::of_int(1)}, {"sizes", ir::Attr::of_ints({1, 2})}});
  REQUIRE(parts.size() == 2);
  g.fn->outputs = {parts[0], g.op(OpKind::neg, {parts[1]})};
  PlanExecutable exe = g.build();

  Tensor input = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{input}, {});
  REQUIRE(out.size() == 2);
  CHECK(out[0].dims() == std::vector<int64_t>{2, 1});
  CHECK(values_of(out[0]) == std::vector<float>{1, 4});
  CHECK(out[1].dims() == std::vector<int64_t>{2, 2});
  CHECK(values_of(out[1]) == std::vector<float>{-2, -3, -5, -6});
}

TEST_CASE("reshape inside the graph reads its input's memory; a reshaped output is fresh") {
  GraphBuilder g;
  ValueId x = g.arg({2, 3});
  ValueId e = g.op(OpKind::exp, {x});
  ValueId inner = g.op(OpKind::reshape, {e}, {{"shape", ir::Attr::of_shape({3, 2})}});
  ValueId sum = g.op(OpKind::add, {inner, inner});
  ValueId outer = g.op(OpKind::reshape, {sum}, {{"shape", ir::Attr::of_shape({6})}});
  g.fn->outputs = {outer};
  PlanExecutable exe = g.build();
  CHECK(exe.plan().values()[inner].storage == exec::Storage::alias);
  CHECK(exe.plan().values()[outer].storage == exec::Storage::output);

  std::vector<std::pair<const void*, const void*>> reshapes; // (input, output) memory
  runtime::OpHooks hooks;
  hooks.after = [&](size_t, const ir::Op& op, std::span<const Tensor> in, std::span<const Tensor> out) {
    if (op.kind == OpKind::reshape) reshapes.emplace_back(in[0].raw_data(), out[0].raw_data());
  };
  Tensor input = sample({2, 3});
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{input}, {.hooks = &hooks});
  REQUIRE(reshapes.size() == 2);
  CHECK(reshapes[0].first == reshapes[0].second);
  CHECK(reshapes[1].first != reshapes[1].second);
  CHECK(out.at(0).dims() == std::vector<int64_t>{6});
  std::vector<float> expected = map(values_of(input), [](float v) { return 2 * std::exp(v); });
  check_close(out[0], expected);
}

// More threads than the pool of call states has slots (8): threads share slots, take states from
// other slots, and drop the states no slot has room for.
TEST_CASE("twenty threads running one executable get identical results") {
  GraphBuilder g;
  ValueId x = g.arg({64});
  ValueId y = g.arg({64});
  ValueId a = g.op(OpKind::mul, {x, y});
  ValueId b = g.op(OpKind::exp, {g.op(OpKind::neg, {a})});
  g.fn->outputs = {g.op(OpKind::add, {g.op(OpKind::sub, {b, x}), y}), a};
  PlanExecutable exe = g.build();

  const int threads = 20, iterations = 150;
  std::vector<std::vector<Tensor>> inputs(threads), reference(threads);
  for (int t = 0; t < threads; ++t) {
    inputs[t] = {sample({64}, float(t) * 0.25f), sample({64}, 1.0f - float(t) * 0.125f)};
    reference[t] = exe.run(inputs[t], {});
  }
  std::vector<int> mismatches(threads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < iterations; ++i) {
        std::vector<Tensor> out = exe.run(inputs[t], {});
        for (size_t k = 0; k < out.size(); ++k)
          if (values_of(out[k]) != values_of(reference[t][k])) ++mismatches[t];
      }
    });
  for (std::thread& w : workers)
    w.join();
  CHECK(mismatches == std::vector<int>(threads, 0));
  // Distinct inputs give distinct results, so a shared arena would have shown up as mismatches.
  CHECK(values_of(reference[0][0]) != values_of(reference[1][0]));
}

TEST_CASE("a caller's arena is checked at every call, also when it starts where the last one did") {
  GraphBuilder g;
  ValueId x = g.arg({256});
  g.fn->outputs = {g.op(OpKind::exp, {g.op(OpKind::neg, {x})})};
  PlanExecutable exe = g.build();
  REQUIRE(exe.arena_bytes() > 0);
  const std::shared_ptr<void> block = detail::allocate_aligned(exe.arena_bytes(), false);
  const std::span<std::byte> memory(static_cast<std::byte*>(block.get()), exe.arena_bytes());
  const std::vector<Tensor> input{sample({256})};
  const std::vector<Tensor> reference = exe.run(input, {});
  std::vector<Tensor> out = exe.run(input, {.arena = memory});
  CHECK(values_of(out[0]) == values_of(reference[0]));
  CHECK_THROWS_WITH_AS(exe.run(input, {.arena = memory.first(exe.arena_bytes() - 64)}),
                       doctest::Contains("needs an arena of"), Error);
  out = exe.run(input, {.arena = memory});
  CHECK(values_of(out[0]) == values_of(reference[0]));
}

TEST_CASE("hooks run once per op, in order, with the op's shapes") {
  GraphBuilder g;
  ValueId x = g.arg({2, 3});
  ValueId w = g.arg({3, 4});
  ValueId m = g.op(OpKind::matmul, {x, w});
  g.fn->outputs = {
      g.op(OpKind::reduce_sum, {m}, {{"axes", ir::Attr::of_ints({1})}, {"keepdims", ir::Attr::of_bool(false)}})};
  PlanExecutable exe = g.build();

  struct Call {
    std::string when;
    size_t index;
    OpKind kind;
    std::vector<std::vector<int64_t>> dims;
  };
  std::vector<Call> calls;
  runtime::OpHooks hooks;
  hooks.before = [&](size_t index, const ir::Op& op, std::span<const Tensor> in) {
    Call call{"before", index, op.kind, {}};
    for (const Tensor& t : in)
      call.dims.push_back(t.dims());
    calls.push_back(call);
  };
  hooks.after = [&](size_t index, const ir::Op& op, std::span<const Tensor> in, std::span<const Tensor> out) {
    Call call{"after", index, op.kind, {}};
    for (const Tensor& t : in)
      call.dims.push_back(t.dims());
    for (const Tensor& t : out)
      call.dims.push_back(t.dims());
    calls.push_back(call);
  };
  Tensor lhs = Tensor::ones({2, 3}), rhs = Tensor::ones({3, 4});
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{lhs, rhs}, {.hooks = &hooks});
  REQUIRE(calls.size() == 4);
  using Dims = std::vector<std::vector<int64_t>>;
  CHECK((calls[0].when == "before" && calls[0].index == 0 && calls[0].kind == OpKind::matmul));
  CHECK(calls[0].dims == Dims{{2, 3}, {3, 4}});
  CHECK((calls[1].when == "after" && calls[1].index == 0));
  CHECK(calls[1].dims == Dims{{2, 3}, {3, 4}, {2, 4}});
  CHECK((calls[2].when == "before" && calls[2].index == 1 && calls[2].kind == OpKind::reduce_sum));
  CHECK((calls[3].when == "after" && calls[3].index == 1));
  CHECK(calls[3].dims == Dims{{2, 4}, {2}});
  check_close(out.at(0), {12, 12});
}

TEST_CASE("preserved keeps an owning copy of every value, arguments included") {
  GraphBuilder g;
  ValueId x = g.arg({3});
  ValueId c = g.constant(Tensor::from_vector<float>({1, 1, 1}, {3}));
  ValueId a = g.op(OpKind::add, {x, c});
  ValueId b = g.op(OpKind::mul, {a, a});
  ValueId d = g.op(OpKind::neg, {b});
  g.fn->outputs = {d};
  PlanExecutable exe = g.build();

  Tensor input = Tensor::from_vector<float>({1, 2, 3}, {3});
  std::vector<Tensor> preserved{Tensor::ones({1})}; // stale contents are replaced
  exe.run(std::vector<Tensor>{input}, {.preserved = &preserved});
  REQUIRE(preserved.size() == g.fn->values.size());
  CHECK(preserved[x].raw_data() != input.raw_data());
  CHECK(values_of(preserved[x]) == std::vector<float>{1, 2, 3});
  CHECK(values_of(preserved[c]) == std::vector<float>{1, 1, 1});
  CHECK(values_of(preserved[a]) == std::vector<float>{2, 3, 4});
  CHECK(values_of(preserved[b]) == std::vector<float>{4, 9, 16});
  CHECK(values_of(preserved[d]) == std::vector<float>{-4, -9, -16});
  // Later calls reuse the arena; preserved copies must not change with it.
  exe.run(std::vector<Tensor>{Tensor::zeros({3})}, {});
  CHECK(values_of(preserved[b]) == std::vector<float>{4, 9, 16});
}

TEST_CASE("the default tier set's interp tier describes its executable") {
  const runtime::ExecutableFactory* factory = runtime::default_tier_set()->interp();
  REQUIRE(factory != nullptr);
  GraphBuilder g;
  ValueId x = g.arg({2});
  g.fn->outputs = {g.op(OpKind::relu, {g.op(OpKind::neg, {x})})};
  std::unique_ptr<runtime::Executable> exe = (*factory)(g.fn, {});
  CHECK(exe->tier() == "interp");
  CHECK(exe->ops_per_lowering() == std::map<std::string, int>{{"interp", 2}});
  CHECK(&exe->graph() == g.fn.get());
  std::vector<Tensor> out = exe->run(std::vector<Tensor>{Tensor::from_vector<float>({-1, 2}, {2})}, {});
  CHECK(values_of(out.at(0)) == std::vector<float>{1, 0});
}

TEST_CASE("the plan refuses graphs the interpreter cannot run, naming the problem") {
  SUBCASE("symbolic dims") {
    auto fn = std::make_shared<ir::Function>();
    fn->name = "f";
    ValueId x = fn->add_arg(ir::ValueType{DType::f32, {"batch", 2}, false});
    fn->outputs = {x};
    CHECK_THROWS_WITH_AS(PlanExecutable(fn, {}, interp::interpreter_backend().steps),
                         doctest::Contains("%arg0 has type f32 [batch, 2]"), Error);
  }
  SUBCASE("a missing weight") {
    GraphBuilder g;
    g.fn->outputs = {g.weight("missing", {2})};
    try {
      g.build();
      FAIL("expected a weight error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::weight);
      CHECK(e.message().find("'missing'") != std::string::npos);
    }
  }
  SUBCASE("a weight of the wrong shape") {
    GraphBuilder g;
    g.fn->outputs = {g.weight("w", {2})};
    CHECK_THROWS_AS(g.build({{"w", Tensor::ones({3})}}), Error);
  }
  SUBCASE("a custom op") {
    GraphBuilder g;
    ValueId x = g.arg({2});
    g.fn->add_op(OpKind::custom, {x}, {g.fn->type_of(x)}, {{"op", ir::Attr::of_string("my_op")}});
    try {
      g.build();
      FAIL("expected an unsupported error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::unsupported);
      CHECK(e.message().find("my_op") != std::string::npos);
    }
  }
}

TEST_CASE("a call with the wrong number of inputs is refused") {
  GraphBuilder g;
  ValueId x = g.arg({2});
  g.fn->outputs = {g.op(OpKind::neg, {x})};
  PlanExecutable exe = g.build();
  CHECK_THROWS_AS(exe.run(std::vector<Tensor>{}, {}), Error);
}

TEST_CASE("eager add of two concrete tensors runs at once through the interpreter") {
  Tensor sum = F::add(Tensor::ones({3}), Tensor::ones({3}));
  REQUIRE(sum.is_concrete());
  CHECK(sum.dims() == std::vector<int64_t>{3});
  CHECK(values_of(sum) == std::vector<float>{2, 2, 2});
}

TEST_CASE("eager mode runs multi-result ops and returns constants as they are") {
  std::vector<Tensor> parts = F::split(Tensor::arange(5), {2, 3}, 0);
  REQUIRE(parts.size() == 2);
  CHECK(values_of(parts[0]) == std::vector<float>{0, 1});
  CHECK(values_of(parts[1]) == std::vector<float>{2, 3, 4});
  Tensor value = Tensor::from_vector<float>({5, 6}, {2});
  CHECK(values_of(F::constant(value)) == std::vector<float>{5, 6});
}

TEST_CASE("ops over weights only run once when the plan is built, not on every call") {
  // y = x @ transpose(w): what F::linear stages. The transpose of the weight becomes a bound value.
  Tensor weight = sample({3, 2}); // [out, in]
  GraphBuilder g;
  ValueId x = g.arg({1, 2});
  ValueId wt = g.op(OpKind::transpose, {g.weight("w", {3, 2})}, {{"perm", ir::Attr::of_ints({1, 0})}});
  g.fn->outputs = {g.op(OpKind::matmul, {x, wt})};
  PlanExecutable exe = g.build({{"w", weight}});

  const auto& steps = exe.plan().steps();
  REQUIRE(steps.size() == 3);
  CHECK(steps[1].op->kind == OpKind::transpose);
  CHECK(steps[1].kind == exec::StepKind::bind);
  // The matmul reads the weight itself (packed, or in place as B transposed): no copy of it.
  CHECK(steps[2].kind == exec::StepKind::runner);
  CHECK(exe.plan().values()[wt].read_through);
  CHECK(!exe.plan().values()[wt].bound.defined());

  runtime::OpHooks hooks;
  std::vector<float> transposed;
  hooks.after = [&](size_t, const ir::Op& op, std::span<const Tensor>, std::span<const Tensor> outputs) {
    if (op.kind == OpKind::transpose) transposed = values_of(outputs[0]);
  };
  Tensor input = Tensor::from_vector<float>({2, -1}, {1, 2});
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> out = exe.run(std::vector<Tensor>{input}, {.hooks = &hooks});
    const std::vector<float> w = values_of(weight);
    // Hooks still see the transposed value, so a debugger steps through it like any op.
    CHECK(transposed == std::vector<float>{w[0], w[2], w[4], w[1], w[3], w[5]});
    check_close(out.at(0), {2 * w[0] - w[1], 2 * w[2] - w[3], 2 * w[4] - w[5]});
  }
}

TEST_CASE("an op over constants whose result is far larger than its inputs still runs per call") {
  GraphBuilder g;
  ValueId x = g.arg({256, 256});
  ValueId c = g.constant(Tensor::from_vector<float>({1}, {1}));
  ValueId wide = g.op(OpKind::broadcast_to, {c}, {{"shape", ir::Attr::of_shape(shape_from_dims({256, 256}))}});
  g.fn->outputs = {g.op(OpKind::add, {x, wide})};
  PlanExecutable exe = g.build();
  CHECK(exe.plan().steps()[1].kind == exec::StepKind::kernel); // 256 KiB from 4 bytes: not held
  std::vector<Tensor> out = exe.run(std::vector<Tensor>{Tensor::zeros({256, 256})}, {});
  CHECK(values_of(out.at(0)) == std::vector<float>(256 * 256, 1.0f));
}

namespace {

Tensor random_normal(const std::vector<int64_t>& dims, std::mt19937& rng) {
  Tensor t = Tensor::empty(dims);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = normal(rng);
  return t;
}

// x [rows, k] times w, where w is [k, n], or [n, k] read transposed: a double-precision loop, and
// for each result the sum of |x||w| its rounding error is proportional to.
struct NaiveProduct {
  std::vector<double> values, magnitudes;
};

NaiveProduct naive_matmul(const Tensor& x, const Tensor& w, int64_t k, int64_t n, bool w_transposed) {
  const int64_t rows = x.numel() / k;
  NaiveProduct product{std::vector<double>(size_t(rows * n)), std::vector<double>(size_t(rows * n))};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const double term =
            double(x.data<float>()[r * k + p]) * double(w.data<float>()[w_transposed ? j * k + p : p * n + j]);
        product.values[size_t(r * n + j)] += term;
        product.magnitudes[size_t(r * n + j)] += std::fabs(term);
      }
  return product;
}

// out = x @ w (w [k, n]) or x @ transpose(w) (w [n, k], what F::linear stages), w a bound weight.
std::unique_ptr<PlanExecutable> weight_matmul(const std::vector<int64_t>& x_dims, const Tensor& w, bool transposed) {
  GraphBuilder g;
  ValueId x = g.arg(x_dims);
  ValueId b = g.weight("w", w.dims());
  if (transposed) b = g.op(OpKind::transpose, {b}, {{"perm", ir::Attr::of_ints({1, 0})}});
  g.fn->outputs = {g.op(OpKind::matmul, {x, b})};
  return std::make_unique<PlanExecutable>(g.fn, runtime::WeightMap{{"w", w}}, interp::interpreter_backend().steps);
}

} // namespace

TEST_CASE("the plan walks each op's implementation list and keeps the walk of every step") {
  GraphBuilder g;
  ValueId x = g.arg({4, 3});
  ValueId y = g.arg({5, 2});
  ValueId by_weight = g.op(OpKind::matmul, {x, g.weight("w", {3, 5})});
  ValueId by_activation = g.op(OpKind::matmul, {by_weight, y});
  ValueId flat = g.op(OpKind::reshape, {by_activation}, {{"shape", ir::Attr::of_shape({8})}});
  g.fn->outputs = {g.op(OpKind::neg, {flat})};
  PlanExecutable exe = g.build({{"w", sample({3, 5})}});

  const std::string no_avx2 = "packed_gemm refused: needs AVX2+FMA (its kernel is AVX2+FMA code); ";
  const std::string read_through_refused = "read_through_gemm refused: B is not a weight's transpose read in place; ";
  std::vector<std::string> walks;
  for (size_t i = 0; i < exe.plan().steps().size(); ++i)
    walks.push_back(exec::walk_to_string(exe.plan().walk(i)));
  CHECK(walks ==
        std::vector<std::string>{
            "bound took it",
            packs_weights() ? "packed_gemm took it" : no_avx2 + read_through_refused + "interp took it",
            (packs_weights() ? "packed_gemm refused: B is computed per call, not a weight or a value of weights; "
                             : no_avx2) +
                read_through_refused + "interp took it",
            "alias took it",
            "interp took it",
        });
}

TEST_CASE("a matmul by a bound weight agrees with a naive loop at odd sizes, packed or not") {
  std::mt19937 rng(7);
  struct Case {
    std::vector<int64_t> x_dims;
    int64_t n;
  };
  // Rows 1..97 (96 and up split rows across threads, fewer split column panels), k across the
  // 256-deep passes, n across the 16-wide panels; a 3-D x multiplies as one [rows, k] matrix.
  const std::vector<Case> cases = {{{1, 1}, 1},      {{1, 7}, 15},      {{7, 17}, 16},    {{6, 256}, 17},
                                   {{17, 257}, 33},  {{2, 5, 300}, 7},  {{97, 64}, 1023}, {{1, 1023}, 1023},
                                   {{12, 513}, 130}, {{100, 1000}, 64}, {{3, 7, 16}, 1}};
  for (const Case& c : cases)
    for (bool transposed : {false, true}) {
      const int64_t k = c.x_dims.back();
      const Tensor w = random_normal(transposed ? std::vector<int64_t>{c.n, k} : std::vector<int64_t>{k, c.n}, rng);
      const Tensor x = random_normal(c.x_dims, rng);
      INFO("x " << shape_to_string(shape_from_dims(c.x_dims)) << ", n " << c.n << (transposed ? ", transposed" : ""));
      auto exe = weight_matmul(c.x_dims, w, transposed);
      // Unpacked, a transposed weight is read in place by read_through_gemm, a plain one by the kernel.
      CHECK(exe->plan().steps().back().kind ==
            (packs_weights() || transposed ? exec::StepKind::runner : exec::StepKind::kernel));
      const Tensor out = exe->run(std::vector<Tensor>{x}, {}).at(0);
      const NaiveProduct want = naive_matmul(x, w, k, c.n, transposed);
      REQUIRE(out.numel() == int64_t(want.values.size()));
      // f32 accumulation in any order: within a few ulps of the sum of the terms' magnitudes.
      int bad = 0;
      for (size_t i = 0; i < want.values.size(); ++i)
        bad += std::fabs(double(out.data<float>()[i]) - want.values[i]) > 1e-6 * want.magnitudes[i] + 1e-30;
      CHECK(bad == 0);
    }
}

TEST_CASE("a packed matmul propagates NaN and infinity to its own row only, and multiplies zeros to zero") {
  std::mt19937 rng(11);
  const Tensor w = random_normal({17, 40}, rng); // [n, k] read transposed: the last panel is 1 column wide
  Tensor x = random_normal({7, 40}, rng);
  float* xs = x.data<float>();
  const float inf = std::numeric_limits<float>::infinity();
  xs[1 * 40 + 3] = std::numeric_limits<float>::quiet_NaN();
  std::fill(xs + 2 * 40, xs + 3 * 40, 0.0f);
  std::fill(xs + 4 * 40, xs + 5 * 40, 0.0f);
  xs[4 * 40 + 5] = inf;
  xs[6 * 40 + 0] = -1e30f;
  auto exe = weight_matmul({7, 40}, w, true);
  const Tensor out = exe->run(std::vector<Tensor>{x}, {}).at(0);
  const float* ys = out.data<float>();
  for (int64_t j = 0; j < 17; ++j) {
    INFO("column " << j);
    CHECK(std::isnan(ys[1 * 17 + j]));
    CHECK(ys[2 * 17 + j] == 0.0f);
    const float w_j5 = w.data<float>()[j * 40 + 5];
    CHECK(ys[4 * 17 + j] == (w_j5 > 0 ? inf : -inf)); // inf times w, plus zeros
    CHECK(std::isfinite(ys[0 * 17 + j]));
    CHECK(std::isfinite(ys[3 * 17 + j]));
    CHECK(std::isfinite(ys[5 * 17 + j]));
    CHECK(std::fabs(ys[6 * 17 + j]) > 1e26f); // -1e30 times w dominates the row's sum
  }
}
