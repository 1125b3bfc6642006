#include "exec/plan_executable.hpp"
#include "interp/interpreter_backend.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include "ir/passes/canonicalize.hpp"
#include "ir/passes/common_subexpression_elimination.hpp"
#include "ir/passes/dead_code_elimination.hpp"
#include "ir/passes/default_passes.hpp"
#include "ir/passes/fold_constants.hpp"
#include "ir/specialize.hpp"
#include "ir/text/printer.hpp"
#include "ir/verify.hpp"
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>

using namespace kiln;
using ir::Attr;
using ir::OpKind;
using ir::ValueId;

namespace {

// Builds one function by hand; result types come from the op table's inference.
struct FunctionBuilder {
  ir::Function fn;

  explicit FunctionBuilder(std::string name, bool is_private = false) {
    fn.name = std::move(name);
    fn.is_private = is_private;
  }
  ValueId arg(const Shape& shape, DType dtype = DType::f32, bool buffer = false) {
    return fn.add_arg(ir::ValueType{dtype, shape, buffer});
  }
  std::vector<ValueId> ops(OpKind kind, const std::vector<ValueId>& operands, ir::Attrs attrs = {},
                           ir::SourceLoc loc = {}) {
    std::vector<ir::ValueType> types;
    for (ValueId v : operands)
      types.push_back(fn.type_of(v));
    std::vector<ir::ValueType> results = ir::infer_op(kind, types, attrs, loc);
    ir::OpId id = fn.add_op(kind, operands, results, std::move(attrs), std::move(loc));
    return fn.ops[id].results;
  }
  ValueId op(OpKind kind, const std::vector<ValueId>& operands, ir::Attrs attrs = {}, ir::SourceLoc loc = {}) {
    return ops(kind, operands, std::move(attrs), std::move(loc)).at(0);
  }
  ValueId constant(const Tensor& value) { return op(OpKind::constant, {}, {{"value", Attr::of_tensor(value)}}); }
  ValueId weight(const std::string& name, const std::vector<int64_t>& dims) {
    ir::ValueType type{DType::f32, shape_from_dims(dims), false};
    ir::OpId id = fn.add_op(OpKind::constant_external, {}, {type}, {{"name", Attr::of_string(name)}});
    return fn.ops[id].results.at(0);
  }
  std::vector<ValueId> call(const ir::Function& callee, const std::vector<ValueId>& args) {
    ir::OpId id = fn.add_op(OpKind::call, args, callee.output_types(), {{"callee", Attr::of_string(callee.name)}});
    return fn.ops[id].results;
  }
  ValueId custom(const std::string& name, ValueId operand) {
    ir::OpId id = fn.add_op(OpKind::custom, {operand}, {fn.type_of(operand)}, {{"op", Attr::of_string(name)}});
    return fn.ops[id].results.at(0);
  }
  ir::Function finish(std::vector<ValueId> outputs) {
    fn.outputs = std::move(outputs);
    return std::move(fn);
  }
};

ir::Module module_of(std::vector<ir::Function> functions) {
  ir::Module m;
  m.name = functions.at(0).name;
  m.functions = std::move(functions);
  ir::verify_module(m);
  return m;
}

ir::Module single(FunctionBuilder& b, std::vector<ValueId> outputs) {
  return module_of({b.finish(std::move(outputs))});
}

ir::Module staged_module(const StagedGraph& staged) { return staged.graph(); }

std::vector<std::string> kinds_of(const ir::Function& fn) {
  std::vector<std::string> kinds;
  for (const ir::Op& op : fn.ops)
    kinds.emplace_back(ir::op_info(op.kind).name);
  return kinds;
}

int count_of(const ir::Function& fn, OpKind kind) {
  return int(std::count_if(fn.ops.begin(), fn.ops.end(), [&](const ir::Op& op) { return op.kind == kind; }));
}

void show(const std::string& pass, const ir::Module& before, const ir::Module& after) {
  MESSAGE(pass << "\nbefore:\n" << ir::print_module(before) << "after:\n" << ir::print_module(after));
}

// The op defining v, which must not be an argument.
// The interpreter's eager evaluation: what a session's constant folding runs with.
const ir::EagerEvaluator& eager() { return interp::interpreter_backend().eager; }

const ir::Op& def_of(const ir::Function& fn, ValueId v) {
  int32_t def = fn.values.at(v).def_op;
  REQUIRE(def != ir::kNoOp);
  return fn.ops.at(size_t(def));
}

// Runs the module on the interpreter: symbolic dims bound from the inputs, calls inlined.
std::vector<Tensor> run(const ir::Module& m, const std::vector<Tensor>& inputs,
                        const runtime::WeightMap& weights = {}) {
  std::vector<ir::ValueType> types = m.entry().arg_types();
  REQUIRE(types.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    types[i].shape = inputs[i].shape();
  auto fn = std::make_shared<const ir::Function>(ir::specialize(m, types));
  return exec::PlanExecutable(fn, weights, interp::interpreter_backend().steps).run(inputs, {});
}

std::vector<float> values_of(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.numel());
}

// Distinct, non-trivial values with both signs.
Tensor sample(const std::vector<int64_t>& dims, float offset = 0.0f) {
  Tensor t = Tensor::empty(dims);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = offset + 0.25f * float(i + 1) * (i % 2 ? -1.0f : 1.0f);
  return t;
}

void check_close(const Tensor& actual, const std::vector<float>& expected, float tolerance = 1e-6f) {
  REQUIRE(actual.numel() == int64_t(expected.size()));
  std::vector<float> got = values_of(actual);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    CHECK(std::fabs(got[i] - expected[i]) <= tolerance * std::max(1.0f, std::fabs(expected[i])));
  }
}

// Both modules compute the same outputs for these inputs.
void check_same_results(const ir::Module& before, const ir::Module& after, const std::vector<Tensor>& inputs,
                        const runtime::WeightMap& weights = {}) {
  std::vector<Tensor> expected = run(before, inputs, weights);
  std::vector<Tensor> got = run(after, inputs, weights);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].dims() == expected[i].dims());
    check_close(got[i], values_of(expected[i]));
  }
}

template <class Pass> void check_idempotent(const ir::Module& m, Pass pass) {
  ir::Module once = pass(m);
  ir::Module twice = pass(once);
  CHECK(ir::modules_equal(once, twice));
  CHECK(ir::print_module(once) == ir::print_module(twice));
}

ir::SourceLoc at(uint32_t line) { return ir::SourceLoc{"model.cpp", line, 5}; }

} // namespace

// ---------------------------------------------------------------------------------------------------
// dead_code_elimination

TEST_CASE("dead code elimination drops unused pure ops and keeps what the outputs need") {
  FunctionBuilder b("main");
  ValueId x = b.arg({2, 3});
  ValueId kept = b.op(OpKind::exp, {x});
  ValueId unused = b.op(OpKind::log, {b.op(OpKind::abs, {x})});
  b.op(OpKind::neg, {unused});
  b.weight("unused_weight", {3});
  ir::Module before = single(b, {kept});

  ir::Module after = ir::dead_code_elimination(before);
  show("dead_code_elimination", before, after);
  ir::verify_module(after);
  CHECK(kinds_of(before.entry()).size() == 5);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"exp"});
  CHECK(after.entry().args.size() == 1);
  check_same_results(before, after, {sample({2, 3})}, {{"unused_weight", Tensor::zeros({3})}});
  check_idempotent(before, [](const ir::Module& m) { return ir::dead_code_elimination(m); });
}

TEST_CASE("dead code elimination keeps buffer stores although nothing uses them") {
  FunctionBuilder b("main");
  ValueId buffer = b.arg({4}, DType::f32, true);
  ValueId x = b.arg({4});
  ValueId stored = b.op(OpKind::relu, {x});
  b.ops(OpKind::buffer_store, {buffer, stored});
  b.op(OpKind::tanh, {x});
  ir::Module before = single(b, {});

  ir::Module after = ir::dead_code_elimination(before);
  show("dead_code_elimination", before, after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"relu", "buffer_store"});

  Tensor target = Tensor::zeros({4});
  run(after, {target, Tensor::from_vector<float>({-1.0f, 2.0f, -3.0f, 4.0f}, {4})});
  check_close(target, {0.0f, 2.0f, 0.0f, 4.0f});
}

TEST_CASE("dead code elimination keeps extension ops and calls that store, drops unused private functions") {
  FunctionBuilder pure("pure_helper", true);
  ValueId pure_x = pure.arg({3});
  ir::Function pure_fn = pure.finish({pure.op(OpKind::exp, {pure_x})});

  FunctionBuilder storing("storing_helper", true);
  ValueId storing_x = storing.arg({3});
  ValueId storing_buf = storing.arg({3}, DType::f32, true);
  storing.ops(OpKind::buffer_store, {storing_buf, storing.op(OpKind::sqrt, {storing_x})});
  ir::Function storing_fn = storing.finish({});

  FunctionBuilder entry("main");
  ValueId x = entry.arg({3});
  ValueId buffer = entry.arg({3}, DType::f32, true);
  entry.call(pure_fn, {x});
  entry.call(storing_fn, {x, buffer});
  entry.custom("test.side_effect", x);
  ValueId out = entry.op(OpKind::neg, {x});
  ir::Module before = module_of({entry.finish({out}), pure_fn, storing_fn});

  ir::Module after = ir::dead_code_elimination(before);
  show("dead_code_elimination", before, after);
  ir::verify_module(after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"call", "custom", "neg"});
  CHECK(after.entry().ops[0].attrs.get_string("callee") == "storing_helper");
  REQUIRE(after.functions.size() == 2);
  CHECK(after.functions[1].name == "storing_helper");
  CHECK(after.find("pure_helper") == nullptr);

  // Without the module to look the callee up in, a call may store: it is kept.
  ir::Function alone = ir::dead_code_elimination(before.entry());
  CHECK(count_of(alone, OpKind::call) == 2);
}

TEST_CASE("dead code elimination keeps the source locations of surviving ops") {
  FunctionBuilder b("main");
  ValueId x = b.arg({2});
  b.op(OpKind::sin, {x}, {}, at(3));
  ValueId kept = b.op(OpKind::cos, {x}, {}, at(4));
  ir::Module after = ir::dead_code_elimination(single(b, {kept}));
  REQUIRE(after.entry().ops.size() == 1);
  CHECK(after.entry().ops[0].loc == at(4));
}

// ---------------------------------------------------------------------------------------------------
// common_subexpression_elimination

TEST_CASE("CSE merges identical pure ops, commutative operands included") {
  FunctionBuilder b("main");
  ValueId x = b.arg({"batch", 3});
  ValueId y = b.arg({"batch", 3});
  ValueId e1 = b.op(OpKind::exp, {x});
  ValueId e2 = b.op(OpKind::exp, {x});
  ValueId s1 = b.op(OpKind::add, {e1, y});
  ValueId s2 = b.op(OpKind::add, {y, e2});
  ValueId d1 = b.op(OpKind::sub, {e1, y});
  ValueId d2 = b.op(OpKind::sub, {y, e2}); // sub does not commute: stays
  ir::Module before = single(b, {b.op(OpKind::mul, {s1, s2}), b.op(OpKind::mul, {d1, d2})});

  ir::Module after = ir::common_subexpression_elimination(before);
  show("common_subexpression_elimination", before, after);
  ir::verify_module(after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"exp", "add", "sub", "sub", "mul", "mul"});
  const ir::Op& square = def_of(after.entry(), after.entry().outputs[0]);
  CHECK(square.operands[0] == square.operands[1]);
  check_same_results(before, after, {sample({2, 3}), sample({2, 3}, 0.5f)});
  check_idempotent(before, [](const ir::Module& m) { return ir::common_subexpression_elimination(m); });
}

TEST_CASE("CSE does not merge ops whose attributes differ") {
  FunctionBuilder b("main");
  ValueId x = b.arg({3, 3});
  ValueId exact = b.op(OpKind::gelu, {x}, {{"approximate", Attr::of_string("none")}});
  ValueId approx = b.op(OpKind::gelu, {x}, {{"approximate", Attr::of_string("tanh")}});
  ValueId rows = b.op(OpKind::softmax, {x}, {{"axis", Attr::of_int(0)}});
  ValueId cols = b.op(OpKind::softmax, {x}, {{"axis", Attr::of_int(1)}});
  ValueId cols_again = b.op(OpKind::softmax, {x}, {{"axis", Attr::of_int(1)}});
  ir::Module before = single(b, {exact, approx, rows, cols, cols_again});

  ir::Module after = ir::common_subexpression_elimination(before);
  show("common_subexpression_elimination", before, after);
  CHECK(count_of(after.entry(), OpKind::gelu) == 2);
  CHECK(count_of(after.entry(), OpKind::softmax) == 2);
  CHECK(after.entry().outputs[3] == after.entry().outputs[4]);
  CHECK(after.entry().outputs[2] != after.entry().outputs[3]);
  check_same_results(before, after, {sample({3, 3})});
}

TEST_CASE("CSE merges constants equal by value and weights of the same name") {
  FunctionBuilder b("main");
  ValueId x = b.arg({3});
  ValueId c1 = b.constant(Tensor::from_vector<float>({1, 2, 3}, {3}));
  ValueId c2 = b.constant(Tensor::from_vector<float>({1, 2, 3}, {3}));
  ValueId c3 = b.constant(Tensor::from_vector<float>({1, 2, 4}, {3}));
  ValueId w1 = b.weight("w", {3});
  ValueId w2 = b.weight("w", {3});
  ValueId v = b.weight("v", {3});
  ValueId sum = b.op(OpKind::add, {b.op(OpKind::add, {x, c1}), b.op(OpKind::add, {c2, c3})});
  ValueId weighted = b.op(OpKind::add, {b.op(OpKind::mul, {sum, w1}), b.op(OpKind::mul, {w2, v})});
  ir::Module before = single(b, {weighted});

  ir::Module after = ir::common_subexpression_elimination(before);
  show("common_subexpression_elimination", before, after);
  CHECK(count_of(after.entry(), OpKind::constant) == 2);
  CHECK(count_of(after.entry(), OpKind::constant_external) == 2);
  runtime::WeightMap weights{{"w", sample({3}, 1.0f)}, {"v", sample({3}, -2.0f)}};
  check_same_results(before, after, {sample({3})}, weights);
}

TEST_CASE("CSE never merges buffer stores, extension ops or calls that store") {
  FunctionBuilder storing("store_twice", true);
  ValueId storing_x = storing.arg({2});
  ValueId storing_buf = storing.arg({2}, DType::f32, true);
  storing.ops(OpKind::buffer_store, {storing_buf, storing_x});
  ir::Function storing_fn = storing.finish({});

  FunctionBuilder b("main");
  ValueId x = b.arg({2});
  ValueId buffer = b.arg({2}, DType::f32, true);
  b.ops(OpKind::buffer_store, {buffer, x});
  b.ops(OpKind::buffer_store, {buffer, x});
  ValueId n1 = b.custom("test.noise", x);
  ValueId n2 = b.custom("test.noise", x);
  b.call(storing_fn, {x, buffer});
  b.call(storing_fn, {x, buffer});
  ir::Module before = module_of({b.finish({n1, n2}), storing_fn});

  ir::Module after = ir::common_subexpression_elimination(before);
  show("common_subexpression_elimination", before, after);
  CHECK(count_of(after.entry(), OpKind::buffer_store) == 2);
  CHECK(count_of(after.entry(), OpKind::custom) == 2);
  CHECK(count_of(after.entry(), OpKind::call) == 2);
  CHECK(after.entry().outputs[0] != after.entry().outputs[1]);
}

TEST_CASE("CSE merges calls into pure functions") {
  FunctionBuilder pure("square", true);
  ValueId px = pure.arg({2});
  ir::Function pure_fn = pure.finish({pure.op(OpKind::mul, {px, px})});
  FunctionBuilder b("main");
  ValueId x = b.arg({2});
  ValueId a = b.call(pure_fn, {x}).at(0);
  ValueId c = b.call(pure_fn, {x}).at(0);
  ir::Module before = module_of({b.finish({b.op(OpKind::add, {a, c})}), pure_fn});

  ir::Module after = ir::common_subexpression_elimination(before);
  CHECK(count_of(after.entry(), OpKind::call) == 1);
  check_same_results(before, after, {sample({2})});
}

// ---------------------------------------------------------------------------------------------------
// fold_constants

TEST_CASE("constant folding evaluates ops on constants to the hand-computed values") {
  FunctionBuilder b("main");
  ValueId x = b.arg({3});
  ValueId a = b.constant(Tensor::from_vector<float>({1, 2, 3}, {3}));
  ValueId c = b.constant(Tensor::from_vector<float>({4, 5, 6}, {3}));
  ValueId sum = b.op(OpKind::add, {a, c}, {}, at(10)); // [5, 7, 9]
  ValueId scaled = b.op(OpKind::mul, {sum, sum});      // [25, 49, 81]
  ValueId out = b.op(OpKind::sub, {scaled, x});
  ir::Module before = single(b, {out});

  ir::Module after = ir::dead_code_elimination(ir::fold_constants(before, eager()));
  show("fold_constants (then DCE)", before, after);
  ir::verify_module(after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"constant", "sub"});
  const ir::Op& folded = def_of(after.entry(), def_of(after.entry(), after.entry().outputs[0]).operands[0]);
  REQUIRE(folded.kind == OpKind::constant);
  check_close(folded.attrs.get_tensor("value"), {25.0f, 49.0f, 81.0f}, 0.0f);
  CHECK(folded.loc == ir::SourceLoc{}); // the mul that it replaces had no location

  ir::Function folded_only = ir::fold_constants(before.entry(), eager());
  const ir::Op& folded_sum = folded_only.ops.at(2); // the constant standing for the add
  REQUIRE(folded_sum.kind == OpKind::constant);
  check_close(folded_sum.attrs.get_tensor("value"), {5.0f, 7.0f, 9.0f}, 0.0f);
  CHECK(folded_sum.loc == at(10));
  check_same_results(before, after, {sample({3})});
  check_idempotent(before, [](const ir::Module& m) { return ir::fold_constants(m, eager()); });
}

TEST_CASE("constant folding turns small full and arange ops into constants and folds through them") {
  FunctionBuilder b("main");
  ValueId x = b.arg({4});
  ValueId twos =
      b.op(OpKind::full, {},
           {{"shape", Attr::of_shape({4})}, {"value", Attr::of_float(2.0)}, {"dtype", Attr::of_dtype(DType::f32)}});
  ValueId ramp = b.op(OpKind::arange, {},
                      {{"start", Attr::of_float(0.0)},
                       {"stop", Attr::of_float(4.0)},
                       {"step", Attr::of_float(1.0)},
                       {"dtype", Attr::of_dtype(DType::f32)}});
  ValueId tail = b.ops(OpKind::split, {b.op(OpKind::mul, {twos, ramp})},
                       {{"axis", Attr::of_int(0)}, {"sizes", Attr::of_ints({1, 3})}})
                     .at(1);
  ValueId total = b.op(OpKind::reduce_sum, {tail}, {{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(false)}});
  ValueId out = b.op(OpKind::mul, {x, total});
  ir::Module before = single(b, {out});

  ir::Module after = ir::dead_code_elimination(ir::fold_constants(before, eager()));
  show("fold_constants (then DCE)", before, after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"constant", "mul"});
  const ir::Op& folded = after.entry().ops[0];
  REQUIRE(folded.attrs.get_tensor("value").numel() == 1);
  CHECK(folded.attrs.get_tensor("value").item_as_double() == 12.0); // 2 * (1 + 2 + 3)
  check_same_results(before, after, {sample({4})});
}

TEST_CASE("constant folding evaluates every result of a multi-result op") {
  FunctionBuilder b("main");
  ValueId ramp = b.constant(Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5}));
  std::vector<ValueId> parts =
      b.ops(OpKind::split, {ramp}, {{"axis", Attr::of_int(0)}, {"sizes", Attr::of_ints({2, 3})}});
  ir::Module before = single(b, {parts[1], parts[0]});

  ir::Function after = ir::dead_code_elimination(ir::fold_constants(before.entry(), eager()));
  CHECK(kinds_of(after) == std::vector<std::string>{"constant", "constant"});
  check_close(def_of(after, after.outputs[0]).attrs.get_tensor("value"), {3, 4, 5}, 0.0f);
  check_close(def_of(after, after.outputs[1]).attrs.get_tensor("value"), {1, 2}, 0.0f);
}

TEST_CASE("constant folding leaves results above the size limit and ops on weights alone") {
  FunctionBuilder b("main");
  ValueId one = b.constant(Tensor::full({}, 1.0));
  int64_t rows = ir::kMaxFoldedElements / 128 + 1;
  ValueId wide = b.op(OpKind::broadcast_to, {one}, {{"shape", Attr::of_shape({rows, 128})}});
  ValueId big = b.op(
      OpKind::full, {},
      {{"shape", Attr::of_shape({rows, 128})}, {"value", Attr::of_float(3.0)}, {"dtype", Attr::of_dtype(DType::f32)}});
  ValueId w = b.weight("w", {2});
  ValueId from_weight = b.op(OpKind::exp, {w});
  ir::Module before = single(b, {b.op(OpKind::add, {wide, big}), from_weight});

  ir::Module after = ir::fold_constants(before, eager());
  CHECK(kinds_of(after.entry()) == kinds_of(before.entry()));
  CHECK(ir::modules_equal(after, before));
}

TEST_CASE("constant folding leaves every op as it is when given no eager evaluator") {
  FunctionBuilder b("main");
  ValueId a = b.constant(Tensor::from_vector<float>({1, 2, 3}, {3}));
  ir::Module before = single(b, {b.op(OpKind::add, {a, a})});

  CHECK(ir::modules_equal(ir::fold_constants(before, ir::EagerEvaluator{}), before));
  CHECK(kinds_of(ir::fold_constants(before, eager()).entry()) == std::vector<std::string>{"constant", "constant"});
}

TEST_CASE("constant folding runs each op through the eager evaluator it is given") {
  FunctionBuilder b("main");
  ValueId a = b.constant(Tensor::from_vector<float>({1, 2, 3}, {3}));
  ir::Module before = single(b, {b.op(OpKind::mul, {b.op(OpKind::add, {a, a}), a})});

  std::vector<std::string> evaluated;
  const ir::EagerEvaluator recording = [&](OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                           const std::vector<ir::ValueType>& types, const ir::SourceLoc& loc) {
    evaluated.emplace_back(ir::op_info(kind).name);
    return eager()(kind, attrs, inputs, types, loc);
  };
  ir::Module after = ir::dead_code_elimination(ir::fold_constants(before, recording));
  CHECK(evaluated == std::vector<std::string>{"add", "mul"});
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"constant"});
  check_close(def_of(after.entry(), after.entry().outputs[0]).attrs.get_tensor("value"), {2, 8, 18}, 0.0f);
}

// ---------------------------------------------------------------------------------------------------
// canonicalize

TEST_CASE("canonicalize removes multiplications by 1 and additions of 0 from a traced graph") {
  auto fn = [](Tensor x) { return 0.0 + ((1.0 * (x * 1.0) + 0.0) - 0.0) / 1.0; };
  ir::Module before = staged_module(stage(fn)(TensorLayout(DType::f32, {"batch", 3})));

  ir::Module after = ir::dead_code_elimination(ir::canonicalize(before));
  show("canonicalize (then DCE)", before, after);
  ir::verify_module(after);
  CHECK(count_of(before.entry(), OpKind::mul) == 2);
  CHECK(after.entry().ops.empty());
  CHECK(after.entry().outputs == after.entry().args);
  CHECK(after.entry().output_types() == before.entry().output_types());
  check_same_results(before, after, {sample({2, 3})});
  check_idempotent(before, [](const ir::Module& m) { return ir::canonicalize(m); });
}

TEST_CASE("canonicalize keeps neutral-looking ops that would change the type or the values") {
  FunctionBuilder b("main");
  ValueId x = b.arg({3});
  ValueId widened = b.op(OpKind::add, {x, b.constant(Tensor::zeros({2, 3}))}); // broadcasts to [2, 3]
  ValueId nearly_one = b.op(OpKind::mul, {x, b.constant(Tensor::full({}, 1.0000001))});
  ValueId mixed = b.op(OpKind::mul, {x, b.constant(Tensor::from_vector<float>({1, 1, 2}, {3}))});
  ValueId zero_minus = b.op(OpKind::sub, {b.constant(Tensor::zeros({3})), x}); // -x, not x
  ValueId by_zero = b.op(OpKind::mul, {x, b.constant(Tensor::zeros({}))});
  ValueId twice_cast = b.op(OpKind::cast, {b.op(OpKind::cast, {x}, {{"dtype", Attr::of_dtype(DType::i32)}})},
                            {{"dtype", Attr::of_dtype(DType::f32)}});
  ir::Module before = single(b, {widened, nearly_one, mixed, zero_minus, by_zero, twice_cast});

  ir::Module after = ir::canonicalize(before);
  show("canonicalize", before, after);
  ir::verify_module(after);
  CHECK(ir::modules_equal(after, before));
  CHECK(after.entry().output_types() == before.entry().output_types());
}

TEST_CASE("canonicalize recognises integer splats from constant and full ops") {
  FunctionBuilder b("main");
  ValueId x = b.arg({3}, DType::i32);
  ValueId one = b.constant(Tensor::ones({}, DType::i32));
  ValueId zeros =
      b.op(OpKind::full, {},
           {{"shape", Attr::of_shape({3})}, {"value", Attr::of_float(0.0)}, {"dtype", Attr::of_dtype(DType::i32)}});
  ValueId out = b.op(OpKind::add, {zeros, b.op(OpKind::div, {b.op(OpKind::mul, {one, x}), one})});
  ir::Module before = single(b, {out});

  ir::Module after = ir::dead_code_elimination(ir::canonicalize(before));
  show("canonicalize (then DCE)", before, after);
  CHECK(after.entry().ops.empty());
  CHECK(after.entry().outputs[0] == after.entry().args[0]);
}

TEST_CASE("canonicalize collapses reshape and transpose chains") {
  FunctionBuilder b("main");
  ValueId x = b.arg({2, 3, 4});
  ValueId flat = b.op(OpKind::reshape, {b.op(OpKind::reshape, {x}, {{"shape", Attr::of_shape({6, 4})}})},
                      {{"shape", Attr::of_shape({24})}});
  ValueId same = b.op(OpKind::reshape, {x}, {{"shape", Attr::of_shape({2, 3, 4})}});
  ValueId round_trip = b.op(OpKind::transpose, {b.op(OpKind::transpose, {x}, {{"perm", Attr::of_ints({1, 2, 0})}})},
                            {{"perm", Attr::of_ints({2, 0, 1})}});
  ValueId swapped = b.op(OpKind::transpose, {b.op(OpKind::transpose, {x}, {{"perm", Attr::of_ints({1, 0, 2})}})},
                         {{"perm", Attr::of_ints({0, -1, 1})}});
  ir::Module before = single(b, {flat, same, round_trip, swapped});

  ir::Module after = ir::dead_code_elimination(ir::canonicalize(before));
  show("canonicalize (then DCE)", before, after);
  ir::verify_module(after);
  const ir::Function& fn = after.entry();
  CHECK(kinds_of(fn) == std::vector<std::string>{"reshape", "transpose"});
  CHECK(fn.ops[0].operands[0] == fn.args[0]);
  CHECK(fn.ops[0].attrs.get_shape("shape") == Shape{24});
  CHECK(fn.outputs[1] == fn.args[0]);
  CHECK(fn.outputs[2] == fn.args[0]);
  CHECK(fn.ops[1].operands[0] == fn.args[0]);
  CHECK(fn.ops[1].attrs.get_ints("perm") == std::vector<int64_t>{1, 2, 0});
  CHECK(fn.output_types() == before.entry().output_types());

  // Reference for `swapped` by naive loops: out[i][j][k] = x[k][i][j] (perm {1, 2, 0}).
  Tensor input = sample({2, 3, 4});
  std::vector<float> expected;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 2; ++k)
        expected.push_back(input.data<float>()[(k * 3 + i) * 4 + j]);
  check_close(run(after, {input})[3], expected, 0.0f);
  check_same_results(before, after, {input});
}

TEST_CASE("canonicalize removes casts to the same dtype and double negations") {
  FunctionBuilder b("main");
  ValueId x = b.arg({"n"});
  ValueId same = b.op(OpKind::cast, {x}, {{"dtype", Attr::of_dtype(DType::f32)}});
  ValueId twice = b.op(OpKind::neg, {b.op(OpKind::neg, {same})});
  ValueId thrice = b.op(OpKind::neg, {b.op(OpKind::neg, {b.op(OpKind::neg, {x})})});
  ir::Module before = single(b, {twice, thrice});

  ir::Module after = ir::dead_code_elimination(ir::canonicalize(before));
  show("canonicalize (then DCE)", before, after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"neg"});
  CHECK(after.entry().outputs[0] == after.entry().args[0]);
  CHECK(after.entry().ops[0].operands[0] == after.entry().args[0]);
  check_same_results(before, after, {sample({5})});
  check_idempotent(before, [](const ir::Module& m) { return ir::canonicalize(m); });
}

// ---------------------------------------------------------------------------------------------------
// run_default_passes

TEST_CASE("default passes simplify a traced model to a fixpoint and keep its results and locations") {
  constexpr uint32_t kExpLine = __LINE__ + 4;
  auto model = [](Tensor x) {
    Tensor scale = F::full({3}, 2.0) + F::arange(0.0, 3.0); // folds to [2, 3, 4]
    F::tanh(x);                                             // traced, then never used
    Tensor y = F::exp(x) * scale;
    Tensor z = F::exp(x) * scale; // same as y
    return F::reshape(F::reshape(y + z, {"batch", 3, 1}), {"batch", 3}) * 1.0;
  };
  ir::Module before = staged_module(stage(model)(TensorLayout(DType::f32, {"batch", 3})));

  ir::Module after = ir::run_default_passes(before, eager());
  show("run_default_passes", before, after);
  const ir::Function& fn = after.entry();
  CHECK(kinds_of(fn) == std::vector<std::string>{"constant", "exp", "mul", "add"});
  check_close(fn.ops[0].attrs.get_tensor("value"), {2.0f, 3.0f, 4.0f}, 0.0f);
  CHECK(fn.ops[1].loc.line == kExpLine);
  CHECK(fn.ops[1].loc.file.find("test_passes.cpp") != std::string::npos);
  CHECK(fn.output_types() == before.entry().output_types());
  CHECK(ir::modules_equal(ir::run_default_passes(after, eager()), after));

  Tensor input = sample({2, 3});
  std::vector<float> expected;
  for (int64_t i = 0; i < 6; ++i)
    expected.push_back(2.0f * std::exp(input.data<float>()[i]) * float(2 + i % 3));
  check_close(run(after, {input})[0], expected, 1e-5f);
  check_same_results(before, after, {input});
}

TEST_CASE("default passes keep buffer stores and the subgraphs still called") {
  auto square = F::as_subgraph("square", [](Tensor v) { return v * v; });
  auto cube = F::as_subgraph("cube", [](Tensor v) { return v * v * v; });
  auto program = [&](Tensor buffer, Tensor x) {
    F::buffer_store(buffer, F::relu(x * 1.0));
    cube(x); // traced, then never used
    return F::neg(F::neg(square(x)));
  };
  ir::Module before = staged_module(stage(program)(BufferLayout(DType::f32, {4}), TensorLayout(DType::f32, {4})));

  ir::Module after = ir::run_default_passes(before, eager());
  show("run_default_passes", before, after);
  CHECK(kinds_of(after.entry()) == std::vector<std::string>{"relu", "buffer_store", "call"});
  REQUIRE(after.functions.size() == 2);
  CHECK(after.functions[1].name == "square");
  CHECK(before.find("cube") != nullptr);

  Tensor target = Tensor::zeros({4});
  Tensor x = Tensor::from_vector<float>({-1.0f, 2.0f, -3.0f, 4.0f}, {4});
  std::vector<Tensor> out = run(after, {target, x});
  check_close(target, {0.0f, 2.0f, 0.0f, 4.0f}, 0.0f);
  check_close(out.at(0), {1.0f, 4.0f, 9.0f, 16.0f}, 0.0f);
}

TEST_CASE("default passes refuse an invalid module with the verifier's error") {
  FunctionBuilder b("main");
  ValueId x = b.arg({2});
  ir::Module m = single(b, {b.op(OpKind::exp, {x})});
  m.entry().values[m.entry().ops[0].results[0]].type.shape = {3};
  CHECK_THROWS_AS(ir::run_default_passes(m, eager()), Error);
}
