#include "core/checked_arithmetic.hpp"
#include "ir/graph.hpp"
#include "ir/ops.hpp"
#include "ir/specialize.hpp"
#include "ir/text/parser.hpp"
#include "ir/text/printer.hpp"
#include "ir/verify.hpp"
#include "scoped_env.hpp"
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <kiln/error.hpp>
#include <kiln/stage.hpp>
#include <kiln/tensor.hpp>
#include <limits>
#include <optional>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::ir;

namespace {

ValueType tensor_type(DType dtype, Shape shape) { return ValueType{dtype, std::move(shape), false}; }
ValueType buffer_type(DType dtype, Shape shape) { return ValueType{dtype, std::move(shape), true}; }

// Appends ops whose result types come from the op table, as the tracer does.
struct FunctionBuilder {
  Function& fn;

  std::vector<ValueId> results(OpKind kind, std::vector<ValueId> operands, Attrs attrs = {}, SourceLoc loc = {}) {
    std::vector<ValueType> operand_types;
    for (ValueId id : operands)
      operand_types.push_back(fn.type_of(id));
    std::vector<ValueType> types = infer_op(kind, operand_types, attrs, loc);
    return fn.ops[fn.add_op(kind, std::move(operands), types, std::move(attrs), std::move(loc))].results;
  }
  ValueId op(OpKind kind, std::vector<ValueId> operands, Attrs attrs = {}, SourceLoc loc = {}) {
    return results(kind, std::move(operands), std::move(attrs), std::move(loc)).at(0);
  }
  // For ops without inference in the op table: constant_external, call, custom.
  std::vector<ValueId> typed(OpKind kind, std::vector<ValueId> operands, std::vector<ValueType> types, Attrs attrs) {
    return fn.ops[fn.add_op(kind, std::move(operands), types, std::move(attrs))].results;
  }
};

std::string mlir_opt_path() {
  for (const char* candidate : {"/usr/bin/mlir-opt-19", "/usr/lib/llvm-19/bin/mlir-opt"})
    if (std::filesystem::exists(candidate)) return candidate;
  return "";
}

struct ToolRun {
  int status = -1;
  std::string output;
};

ToolRun run_mlir_opt(const std::string& text) {
  static int counter = 0;
  auto path = std::filesystem::temp_directory_path() /
              ("kiln_mlir_text_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".mlir");
  std::ofstream(path) << text;
  std::string command = "'" + mlir_opt_path() + "' --allow-unregistered-dialect '" + path.string() + "' 2>&1";
  ToolRun run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char chunk[4096];
  while (size_t n = fread(chunk, 1, sizeof chunk, pipe))
    run.output.append(chunk, n);
  int wait_status = pclose(pipe);
  run.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  std::filesystem::remove(path);
  return run;
}

// MLIR's own parser and verifier are the independent judge of the text form; CI installs mlir-19-tools.
// Returns mlir-opt's re-printed module, or "" when the tool is absent.
std::string check_mlir_opt_accepts(const std::string& text) {
  if (mlir_opt_path().empty()) {
    MESSAGE("mlir-opt-19 not found: skipping the check that MLIR accepts the printed module");
    return "";
  }
  ToolRun run = run_mlir_opt(text);
  CHECK_MESSAGE(run.status == 0, "mlir-opt rejected:\n" << text << "\n" << run.output);
  return run.output;
}

// Like Attrs equality, but float arrays compare bitwise too, so that NaN elements match themselves.
bool same_attrs(const Attrs& a, const Attrs& b) {
  if (a.items().size() != b.items().size()) return false;
  for (size_t i = 0; i < a.items().size(); ++i) {
    const auto& [name, value] = a.items()[i];
    const Attr& other = b.items()[i].second;
    if (name != b.items()[i].first) return false;
    auto* floats = std::get_if<Attr::Floats>(&value.value);
    auto* other_floats = std::get_if<Attr::Floats>(&other.value);
    if (!floats || !other_floats) {
      if (!attr_equal(value, other)) return false;
      continue;
    }
    if (floats->size() != other_floats->size()) return false;
    for (size_t k = 0; k < floats->size(); ++k)
      if (std::bit_cast<uint64_t>((*floats)[k]) != std::bit_cast<uint64_t>((*other_floats)[k])) return false;
  }
  return true;
}

void check_same_function(const Function& a, const Function& b) {
  CHECK(a.name == b.name);
  CHECK(a.is_private == b.is_private);
  CHECK(a.args == b.args);
  CHECK(a.outputs == b.outputs);
  REQUIRE(a.values.size() == b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    CHECK(a.values[i].type == b.values[i].type);
    CHECK(a.values[i].def_op == b.values[i].def_op);
    CHECK(a.values[i].def_index == b.values[i].def_index);
  }
  REQUIRE(a.ops.size() == b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].kind == b.ops[i].kind);
    CHECK(a.ops[i].operands == b.ops[i].operands);
    CHECK(a.ops[i].results == b.ops[i].results);
    CHECK(same_attrs(a.ops[i].attrs, b.ops[i].attrs));
    CHECK(a.ops[i].loc == b.ops[i].loc);
  }
}

// print -> parse gives the same graph, printing that again gives the same text, and MLIR accepts it.
std::string check_round_trip(const Module& m) {
  std::string printed = print_module(m);
  Module parsed = parse_module(printed, "round_trip.mlir");
  CHECK(parsed.name == m.name);
  REQUIRE(parsed.functions.size() == m.functions.size());
  for (size_t i = 0; i < m.functions.size(); ++i)
    check_same_function(m.functions[i], parsed.functions[i]);
  CHECK(print_module(parsed) == printed);
  return check_mlir_opt_accepts(printed);
}

Tensor f32_tensor(std::vector<float> values, std::vector<int64_t> dims) { return Tensor::from_vector(values, dims); }

// A private @pair(a, b) -> (a + b, a * b), called from the all-ops module.
Function pair_function(const ValueType& type) {
  Function fn;
  fn.name = "pair";
  fn.is_private = true;
  FunctionBuilder b{fn};
  ValueId a = fn.add_arg(type), c = fn.add_arg(type);
  fn.outputs = {b.op(OpKind::add, {a, c}), b.op(OpKind::mul, {a, c})};
  return fn;
}

void add_elementwise_ops(FunctionBuilder& b, ValueId x, ValueId y) {
  ValueId chain = x;
  for (OpKind kind : {OpKind::neg, OpKind::abs, OpKind::exp, OpKind::log, OpKind::sqrt, OpKind::rsqrt, OpKind::tanh,
                      OpKind::sigmoid, OpKind::relu, OpKind::silu, OpKind::erf, OpKind::sin, OpKind::cos})
    chain = b.op(kind, {chain});
  b.op(OpKind::gelu, {chain}, {{"approximate", Attr::of_string("tanh")}});
  for (OpKind kind : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::pow, OpKind::maximum, OpKind::minimum,
                      OpKind::floor_divide, OpKind::remainder})
    b.op(kind, {x, y});
  ValueId less = b.op(OpKind::compare, {x, y}, {{"predicate", Attr::of_string("lt")}});
  b.op(OpKind::where, {less, x, y});
  b.op(OpKind::cast, {x}, {{"dtype", Attr::of_dtype(DType::bf16)}});
  b.op(OpKind::clamp, {x, y, x});
  b.op(OpKind::masked_fill, {x, less}, {{"value", Attr::of_float(-INFINITY)}});
  b.op(OpKind::hardsigmoid, {x});
  for (OpKind kind :
       {OpKind::floor, OpKind::ceil, OpKind::round, OpKind::sign, OpKind::hardswish, OpKind::log1p, OpKind::expm1})
    b.op(kind, {x});
  b.op(OpKind::leaky_relu, {x}, {{"negative_slope", Attr::of_float(0.2)}});
  b.op(OpKind::elu, {x}, {{"alpha", Attr::of_float(0.5)}});
  b.op(OpKind::softplus, {x}, {{"beta", Attr::of_float(2.0)}, {"threshold", Attr::of_float(10.0)}});
}

void add_reduction_ops(FunctionBuilder& b, ValueId x) {
  b.op(OpKind::reduce_sum, {x}, {{"axes", Attr::of_ints({1})}, {"keepdims", Attr::of_bool(false)}});
  b.op(OpKind::reduce_mean, {x}, {{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(true)}});
  ValueId row_max = b.op(OpKind::reduce_max, {x}, {{"axes", Attr::of_ints({-1})}, {"keepdims", Attr::of_bool(true)}});
  b.op(OpKind::squeeze, {row_max}, {{"axes", Attr::of_ints({1})}});
  b.op(OpKind::reduce_min, {x}, {{"axes", Attr::of_ints({0, 1})}, {"keepdims", Attr::of_bool(false)}});
  b.op(OpKind::reduce_prod, {x}, {{"axes", Attr::of_ints({0})}, {"keepdims", Attr::of_bool(false)}});
  b.op(OpKind::reduce_var, {x},
       {{"axes", Attr::of_ints({1})}, {"correction", Attr::of_int(0)}, {"keepdims", Attr::of_bool(true)}});
  b.op(OpKind::reduce_std, {x}, {{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(false)}});
  b.op(OpKind::argmax, {x}, {{"axis", Attr::of_int(1)}, {"keepdims", Attr::of_bool(false)}});
  b.op(OpKind::argmin, {x}, {{"axis", Attr::of_int(-1)}, {"keepdims", Attr::of_bool(true)}});
  b.op(OpKind::cumsum, {x}, {{"axis", Attr::of_int(0)}});
  b.results(OpKind::topk, {x},
            {{"k", Attr::of_int(2)},
             {"axis", Attr::of_int(-1)},
             {"largest", Attr::of_bool(false)},
             {"sorted", Attr::of_bool(true)}});
  b.op(OpKind::softmax, {x}, {{"axis", Attr::of_int(-1)}});
  b.op(OpKind::log_softmax, {x}, {{"axis", Attr::of_int(1)}});
}

void add_normalization_ops(FunctionBuilder& b, ValueId x, ValueId image) {
  ValueId weight = b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(f32_tensor({1, 2, 3, 4}, {4}))}});
  ValueId bias =
      b.op(OpKind::full, {},
           {{"shape", Attr::of_shape({4})}, {"value", Attr::of_float(0.25)}, {"dtype", Attr::of_dtype(DType::f32)}});
  b.op(OpKind::layer_norm, {x, weight, bias}, {{"axis", Attr::of_int(1)}, {"eps", Attr::of_float(1e-5)}});
  b.op(OpKind::rms_norm, {x, weight}, {{"axis", Attr::of_int(-1)}, {"eps", Attr::of_float(1e-6)}});
  b.op(OpKind::batch_norm, {image, weight, bias, weight, bias}, {{"eps", Attr::of_float(1e-3)}});
  b.op(OpKind::group_norm, {image, weight, bias}, {{"groups", Attr::of_int(2)}, {"eps", Attr::of_float(1e-5)}});
}

void add_nn_ops(FunctionBuilder& b, ValueId x, ValueId image) {
  ValueId matrix = b.op(OpKind::constant, {},
                        {{"value", Attr::of_tensor(f32_tensor({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3}))}});
  b.op(OpKind::matmul, {x, matrix});
  ValueId filters = b.typed(OpKind::constant_external, {}, {tensor_type(DType::f32, {8, 2, 3, 3})},
                            {{"name", Attr::of_string("conv.weight")}})[0];
  ValueId conv_bias = b.op(OpKind::arange, {},
                           {{"start", Attr::of_float(0.0)},
                            {"stop", Attr::of_float(8.0)},
                            {"step", Attr::of_float(1.0)},
                            {"dtype", Attr::of_dtype(DType::f32)}});
  b.op(OpKind::conv2d, {image, filters, conv_bias},
       {{"stride", Attr::of_ints({1, 1})},
        {"padding", Attr::of_ints({1, 1})},
        {"dilation", Attr::of_ints({1, 1})},
        {"groups", Attr::of_int(2)}});
  ValueId row_filters = b.typed(OpKind::constant_external, {}, {tensor_type(DType::f32, {4, 2, 5})},
                                {{"name", Attr::of_string("conv1d.weight")}})[0];
  ValueId rows = b.op(OpKind::reshape, {image}, {{"shape", Attr::of_shape({2, 4, 36})}});
  b.op(OpKind::conv1d, {rows, row_filters},
       {{"stride", Attr::of_ints({2})},
        {"padding", Attr::of_ints({1})},
        {"dilation", Attr::of_ints({3})},
        {"groups", Attr::of_int(2)}});
  b.op(OpKind::max_pool2d, {image},
       {{"kernel", Attr::of_ints({2, 2})}, {"stride", Attr::of_ints({2, 2})}, {"padding", Attr::of_ints({0, 0})}});
  b.op(OpKind::avg_pool2d, {image},
       {{"kernel", Attr::of_ints({3, 3})},
        {"stride", Attr::of_ints({1, 1})},
        {"padding", Attr::of_ints({1, 1})},
        {"count_include_pad", Attr::of_bool(false)}});
  b.op(OpKind::adaptive_avg_pool2d, {image}, {{"output_size", Attr::of_ints({4, 1})}});
  ValueId up_filters =
      b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(f32_tensor(std::vector<float>(24, 0.5f), {4, 3, 1, 2}))}});
  b.op(OpKind::conv_transpose2d, {image, up_filters},
       {{"stride", Attr::of_ints({2, 2})},
        {"padding", Attr::of_ints({0, 1})},
        {"dilation", Attr::of_ints({1, 1})},
        {"groups", Attr::of_int(2)},
        {"output_padding", Attr::of_ints({1, 0})}});
  b.op(OpKind::interpolate, {image},
       {{"size", Attr::of_ints({13, 3})},
        {"scales", Attr::of_floats({2.2, 0.5})},
        {"mode", Attr::of_string("bilinear")},
        {"align_corners", Attr::of_bool(false)}});
  b.op(OpKind::scaled_dot_product_attention, {image, image, image},
       {{"is_causal", Attr::of_bool(true)}, {"scale", Attr::of_float(0.125)}});
  ValueId keep = b.op(OpKind::compare, {image, image}, {{"predicate", Attr::of_string("ge")}});
  b.op(OpKind::scaled_dot_product_attention, {image, image, image, keep});
}

void add_shape_ops(FunctionBuilder& b, ValueId x, ValueId y, ValueId image, ValueId indices) {
  b.op(OpKind::reshape, {image}, {{"shape", Attr::of_shape({2, 144})}});
  b.op(OpKind::reshape, {x}, {{"shape", Attr::of_shape({"batch", 2, 2})}});
  b.op(OpKind::transpose, {x}, {{"perm", Attr::of_ints({1, 0})}});
  ValueId row =
      b.op(OpKind::full, {},
           {{"shape", Attr::of_shape({4})}, {"value", Attr::of_float(-1.5)}, {"dtype", Attr::of_dtype(DType::f32)}});
  b.op(OpKind::broadcast_to, {row}, {{"shape", Attr::of_shape({"batch", 4})}});
  b.op(OpKind::concat, {x, y, x}, {{"axis", Attr::of_int(1)}});
  b.op(OpKind::slice, {x},
       {{"starts", Attr::of_ints({0, 1})}, {"ends", Attr::of_ints({INT64_MAX, 4})}, {"steps", Attr::of_ints({1, 2})}});
  b.op(OpKind::unsqueeze, {x}, {{"axes", Attr::of_ints({0})}});
  b.op(OpKind::gather, {x, indices}, {{"axis", Attr::of_int(1)}});
  b.op(OpKind::tril, {image}, {{"diagonal", Attr::of_int(-1)}});
  b.op(OpKind::triu, {x}, {{"diagonal", Attr::of_int(2)}});
  b.op(OpKind::pad, {x}, {{"pads", Attr::of_ints({0, 0, 1, 2})}, {"value", Attr::of_float(-INFINITY)}});
}

// One function that uses every op kind of the op table at least once.
Module all_ops_module() {
  ValueType row_type = tensor_type(DType::f32, {"batch", 4});
  Function fn;
  fn.name = "all_ops";
  FunctionBuilder b{fn};
  ValueId x = fn.add_arg(row_type), y = fn.add_arg(row_type);
  ValueId image = fn.add_arg(tensor_type(DType::f32, {2, 4, 6, 6}));
  ValueId state = fn.add_arg(buffer_type(DType::f32, {"batch", 4}));
  ValueId indices = fn.add_arg(tensor_type(DType::i64, {3}));
  add_elementwise_ops(b, x, y);
  add_reduction_ops(b, x);
  add_normalization_ops(b, x, image);
  add_nn_ops(b, x, image);
  add_shape_ops(b, x, y, image, indices);
  std::vector<ValueId> halves =
      b.results(OpKind::split, {x}, {{"axis", Attr::of_int(1)}, {"sizes", Attr::of_ints({1, 3})}});
  b.results(OpKind::buffer_store, {state, x});
  std::vector<ValueId> pair =
      b.typed(OpKind::call, {x, y}, {row_type, row_type}, {{"callee", Attr::of_string("pair")}});
  ValueId swish = b.typed(OpKind::custom, {pair[1]}, {row_type},
                          {{"op", Attr::of_string("my_ext.swish")}, {"beta", Attr::of_float(1.5)}})[0];
  fn.outputs = {swish, halves[1], pair[0]};
  Module m;
  m.name = "all_ops";
  m.functions = {std::move(fn), pair_function(row_type)};
  return m;
}

// The text without the '^' marker, and "<line>:<col>" of the marker (where the error must point).
std::pair<std::string, std::string> strip_marker(const std::string& marked) {
  size_t at = marked.find('^');
  REQUIRE(at != std::string::npos);
  size_t line_start = marked.rfind('\n', at);
  size_t line = 1 + static_cast<size_t>(std::count(marked.begin(), marked.begin() + at, '\n'));
  size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  return {marked.substr(0, at) + marked.substr(at + 1), std::to_string(line) + ":" + std::to_string(column)};
}

std::string parse_error(const std::string& text) {
  try {
    parse_module(text, "bad.mlir");
  } catch (const Error& error) {
    CHECK(error.kind() == ErrorKind::parse);
    return error.message();
  }
  return "(parsed without error)";
}

// Parses `marked` (a '^' marks where the error is) and checks the whole message.
void check_parse_error(const std::string& marked, const std::string& message) {
  auto [text, position] = strip_marker(marked);
  CHECK(parse_error(text) == "bad.mlir:" + position + ": " + message);
}

const char* const kHeader = "module @m {\n  func.func @f(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {\n";
const char* const kFooter = "    return %0 : !kiln.tensor<[2], f32>\n  }\n}\n";
const char* const kT2 = "!kiln.tensor<[2], f32>";

std::string in_function(const std::string& body) { return kHeader + body + kFooter; }

// The message of the kiln::Error of `kind` that parsing `marked` (without its '^') throws, checked
// to start with the marker's "bad.mlir:<line>:<col>: ".
std::string error_at_marker(const std::string& marked, ErrorKind kind) {
  auto [text, position] = strip_marker(marked);
  try {
    parse_module(text, "bad.mlir");
  } catch (const Error& error) {
    CHECK(error.kind() == kind);
    CHECK_MESSAGE(error.message().starts_with("bad.mlir:" + position + ": "), error.message());
    return error.message();
  }
  return "(parsed without error)";
}

// A module of functions @f0 .. @f<n-1> where each @fi calls the @f<calls[i]> listed (none: -1),
// every call at model.py:<10 + i>:5.
Module calling_module(const std::vector<int>& calls) {
  Module m;
  const ValueType t = tensor_type(DType::f32, {2});
  for (size_t i = 0; i < calls.size(); ++i) {
    Function& fn = m.functions.emplace_back();
    fn.name = "f" + std::to_string(i);
    fn.is_private = i > 0;
    ValueId x = fn.add_arg(t);
    if (calls[i] < 0) {
      fn.outputs = {x};
      continue;
    }
    Attrs callee{{"callee", Attr::of_string("f" + std::to_string(calls[i]))}};
    OpId call = fn.add_op(OpKind::call, {x}, {t}, callee, {"model.py", uint32_t(10 + i), 5});
    fn.outputs = {fn.ops[call].results[0]};
  }
  return m;
}

std::string verify_error(const Module& m) {
  try {
    verify_module(m);
  } catch (const Error& error) {
    CHECK(error.kind() == ErrorKind::unsupported);
    return error.message();
  }
  return "(verified without error)";
}

} // namespace

TEST_CASE("printer writes the documented layer example exactly") {
  ValueType row = tensor_type(DType::f32, {"batch", 2}), weight = tensor_type(DType::f32, {2});
  Function fn;
  fn.name = "layer";
  FunctionBuilder b{fn};
  ValueId x = fn.add_arg(row), buf = fn.add_arg(buffer_type(DType::f32, {2}));
  ValueId w = fn.ops[fn.add_op(OpKind::constant_external, {}, {weight}, {{"name", Attr::of_string("w")}},
                               {"layer.cpp", 12, 40})]
                  .results[0];
  ValueId product = b.op(OpKind::mul, {x, w}, {}, {"layer.cpp", 12, 38});
  std::vector<ValueId> pair = fn.ops[fn.add_op(OpKind::call, {product, product}, {row, row},
                                               {{"callee", Attr::of_string("sub")}}, {"layer.cpp", 13, 3})]
                                  .results;
  b.results(OpKind::buffer_store, {buf, w});
  fn.outputs = {pair[0]};
  Function sub;
  sub.name = "sub";
  sub.is_private = true;
  sub.outputs = {sub.add_arg(row), sub.add_arg(row)};
  Module m;
  m.name = "layer";
  m.functions = {fn, sub};

  const char* expected = R"(module @layer {
  func.func @layer(%arg0: !kiln.tensor<[batch, 2], f32>, %arg1: !kiln.buffer<[2], f32>) -> !kiln.tensor<[batch, 2], f32> {
    %0 = "kiln.constant_external"() {name = "w"} : () -> !kiln.tensor<[2], f32> loc("layer.cpp":12:40)
    %1 = "kiln.mul"(%arg0, %0) : (!kiln.tensor<[batch, 2], f32>, !kiln.tensor<[2], f32>) -> !kiln.tensor<[batch, 2], f32> loc("layer.cpp":12:38)
    %2:2 = func.call @sub(%1, %1) : (!kiln.tensor<[batch, 2], f32>, !kiln.tensor<[batch, 2], f32>) -> (!kiln.tensor<[batch, 2], f32>, !kiln.tensor<[batch, 2], f32>) loc("layer.cpp":13:3)
    "kiln.buffer_store"(%arg1, %0) : (!kiln.buffer<[2], f32>, !kiln.tensor<[2], f32>) -> ()
    return %2#0 : !kiln.tensor<[batch, 2], f32>
  }
  func.func private @sub(%arg0: !kiln.tensor<[batch, 2], f32>, %arg1: !kiln.tensor<[batch, 2], f32>) -> (!kiln.tensor<[batch, 2], f32>, !kiln.tensor<[batch, 2], f32>) {
    return %arg0, %arg1 : !kiln.tensor<[batch, 2], f32>, !kiln.tensor<[batch, 2], f32>
  }
}
)";
  CHECK(print_module(m) == expected);
  check_round_trip(m);
}

TEST_CASE("every op kind round-trips through the text form and mlir-opt accepts it") {
  Module m = all_ops_module();
  std::set<OpKind> used;
  for (const Function& fn : m.functions)
    for (const Op& op : fn.ops)
      used.insert(op.kind);
  CHECK(used.size() == size_t(kNumOpKinds));
  check_round_trip(m);
}

TEST_CASE("multi-result ops print %k:N and their results %k#i") {
  Module m = all_ops_module();
  std::string text = print_module(m);
  CHECK(text.find(":2 = \"kiln.split\"(%arg0) {axis = 1 : i64, sizes = array<i64: 1, 3>}") != std::string::npos);
  CHECK(text.find(":2 = func.call @pair(%arg0, %arg1)") != std::string::npos);
  Module parsed = parse_module(text);
  const Function& entry = parsed.entry();
  const Op& call = entry.ops[entry.values[entry.outputs[2]].def_op];
  CHECK(call.kind == OpKind::call);
  CHECK(call.attrs.get_string("callee") == "pair");
  CHECK(entry.values[entry.outputs[1]].def_index == 1);
  CHECK(entry.ops[entry.values[entry.outputs[1]].def_op].kind == OpKind::split);
}

TEST_CASE("every attribute kind round-trips bit-exactly") {
  Function fn;
  fn.name = "attrs";
  double nan_with_payload = std::bit_cast<double>(uint64_t{0x7FF8000000000123});
  Attrs attrs{{"op", Attr::of_string("attribute_carrier")}, // kiln.custom requires it
              {"a_bool", Attr::of_bool(true)},
              {"b_false", Attr::of_bool(false)},
              {"c_int", Attr::of_int(INT64_MIN)},
              {"d_int", Attr::of_int(INT64_MAX)},
              {"e_float", Attr::of_float(0.1)},
              {"f_tiny", Attr::of_float(5e-324)},
              {"g_huge", Attr::of_float(1e300)},
              {"h_neg_zero", Attr::of_float(-0.0)},
              {"i_inf", Attr::of_float(-INFINITY)},
              {"j_nan", Attr::of_float(nan_with_payload)},
              {"k_string", Attr::of_string("quote \" backslash \\ newline \n tab \t byte \xC3\xA9")},
              {"l_ints", Attr::of_ints({-3, 0, 7})},
              {"m_no_ints", Attr::of_ints({})},
              {"n_floats", Attr::of_floats({1.5, -2.0, 3e-20})},
              {"o_no_floats", Attr::of_floats({})},
              {"p_shape", Attr::of_shape({"batch", 2, -1, 0})},
              {"q_scalar_shape", Attr::of_shape({})},
              {"with space", Attr::of_int(1)}};
  for (int i = 0; i <= int(DType::boolean); ++i)
    attrs.set(std::string("r_dtype_") + dtype_name(DType(i)), Attr::of_dtype(DType(i)));
  fn.add_op(OpKind::custom, {}, {}, attrs);
  fn.add_op(OpKind::custom, {}, {},
            {{"op", Attr::of_string("non_finite")},
             {"values", Attr::of_floats({INFINITY, -INFINITY, nan_with_payload, 0.5})}});
  Module m;
  m.functions = {fn};
  check_round_trip(m);

  Module parsed = parse_module(print_module(m));
  CHECK(std::bit_cast<uint64_t>(parsed.entry().ops[0].attrs.get_float("j_nan")) == 0x7FF8000000000123);
  const Attr::Floats& values = parsed.entry().ops[1].attrs.get_floats("values");
  REQUIRE(values.size() == 4);
  CHECK(values[0] == INFINITY);
  CHECK(values[1] == -INFINITY);
  CHECK(std::bit_cast<uint64_t>(values[2]) == 0x7FF8000000000123);
  CHECK(values[3] == 0.5);
}

TEST_CASE("float attributes print the shortest round-trip decimal with a '.'") {
  Function fn;
  fn.name = "floats";
  fn.add_op(OpKind::custom, {}, {},
            {{"a", Attr::of_float(2.5)},
             {"b", Attr::of_float(100.0)},
             {"c", Attr::of_float(1e300)},
             {"d", Attr::of_float(-0.0)},
             {"e", Attr::of_float(INFINITY)},
             {"f", Attr::of_floats({0.1, std::numeric_limits<double>::quiet_NaN(), 2.0})}});
  Module m;
  m.functions = {fn};
  std::string text = print_module(m);
  CHECK(text.find("{a = 2.5 : f64, b = 100.0 : f64, c = 1.0e+300 : f64, d = -0.0 : f64, "
                  "e = 0x7FF0000000000000 : f64, f = array<f64: 0.1, 0x7FF8000000000000, 2.0>}") != std::string::npos);
  std::string mlir = check_mlir_opt_accepts(text);
  if (!mlir.empty()) CHECK(mlir.find("c = 1.000000e+300 : f64") != std::string::npos);
}

TEST_CASE("tensor constants print their little-endian bytes and MLIR reads the same values") {
  Function fn;
  fn.name = "constants";
  FunctionBuilder b{fn};
  std::vector<bool> bits = {true, false, true, true, false, false, false, false, true, true};
  ValueId flags = b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(Tensor::from_vector(bits, {2, 5}))}});
  ValueId matrix = b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(f32_tensor({1, 2, 3, -4, 0.5, 6}, {2, 3}))}});
  ValueId scalar = b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(Tensor::full({}, 7.0, DType::i32))}});
  ValueId empty = b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(Tensor::zeros({2, 0}, DType::f64))}});
  fn.outputs = {flags, matrix, scalar, empty};
  Module m;
  m.functions = {fn};
  std::string text = print_module(m);
  // Bools pack one bit per element, least significant first: 1011 0000 | 11 -> 0x0D 0x03.
  CHECK(text.find("dense<\"0x0D03\"> : tensor<2x5xi1>") != std::string::npos);
  CHECK(text.find("dense<\"0x0000803F0000004000004040000080C00000003F0000C040\"> : tensor<2x3xf32>") !=
        std::string::npos);
  CHECK(text.find("dense<\"0x07000000\"> : tensor<i32>") != std::string::npos);
  CHECK(text.find("dense<> : tensor<2x0xf64>") != std::string::npos);
  std::string mlir = check_round_trip(m);
  if (!mlir.empty()) {
    CHECK(mlir.find("dense<[[true, false, true, true, false], [false, false, false, true, true]]>") !=
          std::string::npos);
    CHECK(
        mlir.find("dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00], [-4.000000e+00, 5.000000e-01, 6.000000e+00]]>") !=
        std::string::npos);
    CHECK(mlir.find("dense<7> : tensor<i32>") != std::string::npos);
  }
  Module parsed = parse_module(text);
  const Tensor& parsed_flags = parsed.entry().ops[0].attrs.get_tensor("value");
  REQUIRE(parsed_flags.dtype() == DType::boolean);
  for (size_t i = 0; i < bits.size(); ++i)
    CHECK(parsed_flags.item_as_double(int64_t(i)) == (bits[i] ? 1.0 : 0.0));
}

TEST_CASE("constants of every dtype round-trip") {
  Function fn;
  fn.name = "dtypes";
  FunctionBuilder b{fn};
  for (int i = 0; i <= int(DType::boolean); ++i) {
    Tensor values = Tensor::arange(0.0, 3.0, 1.0, DType(i));
    fn.outputs.push_back(b.op(OpKind::constant, {}, {{"value", Attr::of_tensor(values)}}));
    b.op(OpKind::full, {},
         {{"shape", Attr::of_shape({"n", 3})}, {"value", Attr::of_float(1.0)}, {"dtype", Attr::of_dtype(DType(i))}});
  }
  Module m;
  m.functions = {fn};
  check_round_trip(m);
}

TEST_CASE("locations with odd file names are escaped and read back") {
  Function fn;
  fn.name = "f";
  FunctionBuilder b{fn};
  ValueId x = fn.add_arg(tensor_type(DType::f32, {2}));
  ValueId a = b.op(OpKind::neg, {x}, {}, {"dir with space/we\"ird\\name.cpp", 7, 9});
  ValueId c = b.op(OpKind::exp, {a}, {}, {"tab\there\nnewline-\xC3\xA9.cpp", 4294967295u, 1});
  fn.outputs = {b.op(OpKind::abs, {c})};
  Module m;
  m.functions = {fn};
  std::string text = print_module(m);
  CHECK(text.find("loc(\"dir with space/we\\\"ird\\\\name.cpp\":7:9)") != std::string::npos);
  CHECK(text.find("loc(\"tab\\09here\\0Anewline-\\C3\\A9.cpp\":4294967295:1)") != std::string::npos);
  CHECK(text.find("\"kiln.abs\"(%1) : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>\n") != std::string::npos);
  check_round_trip(m);
}

TEST_CASE("names that are not bare identifiers are quoted") {
  Function fn;
  fn.name = "my-fn";
  fn.add_op(OpKind::custom, {}, {}, {{"op", Attr::of_string("x")}, {"odd-name", Attr::of_int(2)}});
  Module m;
  m.name = "model v2";
  m.functions = {fn};
  std::string text = print_module(m);
  CHECK(text.find("module @\"model v2\" {") == 0);
  CHECK(text.find("func.func @\"my-fn\"() -> () {") != std::string::npos);
  CHECK(text.find("{\"odd-name\" = 2 : i64, op = \"x\"}") != std::string::npos);
  check_round_trip(m);
}

TEST_CASE("functions without results and rank-0 and symbolic types round-trip") {
  Function fn;
  fn.name = "store_only";
  FunctionBuilder b{fn};
  ValueId buf = fn.add_arg(buffer_type(DType::i64, {}));
  ValueId value = fn.add_arg(tensor_type(DType::i64, {}));
  fn.add_arg(tensor_type(DType::f16, {"n", "m", 1}));
  b.results(OpKind::buffer_store, {buf, value});
  Module m;
  m.functions = {fn};
  std::string text = print_module(m);
  CHECK(text.find("func.func @store_only(%arg0: !kiln.buffer<[], i64>, %arg1: !kiln.tensor<[], i64>, "
                  "%arg2: !kiln.tensor<[n, m, 1], f16>) -> () {") != std::string::npos);
  CHECK(text.find("    return\n") != std::string::npos);
  check_round_trip(m);
}

TEST_CASE("symbolic dim expressions round-trip in types and attributes, and mlir-opt accepts them") {
  Function fn;
  fn.name = "expressions";
  FunctionBuilder b{fn};
  const Dim batch("batch"), seq("seq");
  ValueId x = fn.add_arg(tensor_type(DType::f32, {batch * 6, (seq + 1) / 2, seq - 1}));
  b.results(OpKind::reshape, {x}, {{"shape", Attr::of_shape({batch * 6 * ((seq + 1) / 2), seq - 1})}});
  Module m;
  m.functions = {fn};
  std::string text = print_module(m);
  CHECK(text.find("!kiln.tensor<[batch*6, (seq+1)/2, seq-1], f32>") != std::string::npos);
  CHECK(text.find("shape = [\"((seq+1)/2)*batch*6\", \"seq-1\"]") != std::string::npos);
  check_round_trip(m);
  // Written by hand with spaces and in another order, it reads as the same canonical dims.
  Module hand = parse_module("module @m {\n  func.func @f(%a: !kiln.tensor<[6 * batch, seq - 1], f32>) -> () {\n"
                             "    return\n  }\n}\n");
  CHECK(hand.entry().arg_types()[0].shape == Shape{batch * 6, seq - 1});
  check_parse_error("module @m {\n  func.func @f(%arg0: !kiln.tensor<[^seq/n], f32>) -> () {\n    return\n  }\n}\n",
                    "bad dim `seq/n`: a dim can only be divided by a positive integer at column 5, expected a size, "
                    "a symbolic name such as batch or an expression such as batch*6");
}

TEST_CASE("parser rebuilds types, privacy, attributes and locations from hand-written text") {
  Module m = parse_module(R"(// a comment before the module
module @hand {  // and after a brace
  func.func @main(%x: !kiln.tensor<[batch, 3], f32>) -> (!kiln.tensor<[batch, 3], f32>, !kiln.tensor<[3, batch], f32>) {
    %t = "kiln.transpose"(%x) {perm = array<i64: 1, 0>} : (!kiln.tensor<[batch, 3], f32>) -> !kiln.tensor<[3, batch], f32> loc("m.py":3:14)
    %r:1 = call @helper(%x) : (!kiln.tensor<[batch, 3], f32>) -> (!kiln.tensor<[batch, 3], f32>)
    func.return %r#0, %t : !kiln.tensor<[batch, 3], f32>, !kiln.tensor<[3, batch], f32>
  }
  func.func private @helper(%a: !kiln.tensor<[batch, 3], f32>) -> !kiln.tensor<[batch, 3], f32> {
    return %a : !kiln.tensor<[batch, 3], f32>
  }
}
)");
  CHECK(m.name == "hand");
  REQUIRE(m.functions.size() == 2);
  const Function& main = m.entry();
  CHECK_FALSE(main.is_private);
  CHECK(m.functions[1].is_private);
  CHECK(main.arg_types() == std::vector<ValueType>{tensor_type(DType::f32, {"batch", 3})});
  REQUIRE(main.ops.size() == 2);
  CHECK(main.ops[0].kind == OpKind::transpose);
  CHECK(main.ops[0].attrs.get_ints("perm") == std::vector<int64_t>{1, 0});
  CHECK(main.ops[0].loc == SourceLoc{"m.py", 3, 14});
  CHECK_FALSE(main.ops[1].loc.known());
  CHECK(main.ops[1].attrs.get_string("callee") == "helper");
  CHECK(main.outputs == std::vector<ValueId>{main.ops[1].results[0], main.ops[0].results[0]});
  CHECK(main.output_types()[1] == tensor_type(DType::f32, {3, "batch"}));
}

TEST_CASE("argument names written in a graph file are kept and printed back; positional ones are not names") {
  const std::string text = R"(module @named {
  func.func @main(%x: !kiln.tensor<[2], f32>, %arg7: !kiln.tensor<[2], f32>, %scale_2: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.mul"(%x, %scale_2) : (!kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    %1 = "kiln.add"(%0, %arg7) : (!kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %1 : !kiln.tensor<[2], f32>
  }
}
)";
  const Module m = parse_module(text);
  CHECK(m.entry().arg_names == std::vector<std::string>{"x", "", "scale_2"});
  const std::string printed = print_module(m);
  CHECK(printed.find("@main(%x: !kiln.tensor<[2], f32>, %arg1: !kiln.tensor<[2], f32>, %scale_2: ") !=
        std::string::npos);
  CHECK(printed.find("\"kiln.mul\"(%x, %scale_2)") != std::string::npos);
  CHECK(print_module(parse_module(printed)) == printed);
  // A numbered name is positional too: %5 and %arg0 print as the argument's own index.
  const Module numbered = parse_module(R"(module @m {
  func.func @main(%5: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    return %5 : !kiln.tensor<[2], f32>
  }
}
)");
  CHECK(numbered.entry().arg_names == std::vector<std::string>{""});
  CHECK(print_module(numbered).find("@main(%arg0: ") != std::string::npos);
}

TEST_CASE("parse errors name line:column and what was expected") {
  const std::string t2 = kT2;
  check_parse_error(
      in_function("    %0 = ^\"kiln.frobnicate\"(%arg0) : (" + t2 + ") -> " + t2 + "\n"),
      "unknown op `kiln.frobnicate`, expected a kiln op such as \"kiln.add\" (calls are written func.call @f)");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(^%7) : (" + t2 + ") -> " + t2 + "\n"),
                    "undefined value `%7`, expected a value defined above");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(%arg0) : (" + t2 + ") -> " + t2 +
                                "\n    ^%0 = \"kiln.neg\"(%0) : (" + t2 + ") -> " + t2 + "\n"),
                    "value `%0` redefined, expected a fresh name");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(%arg0) : (^!kiln.tensor<[3], f32>) -> " + t2 + "\n"),
                    "operand type mismatch: `%arg0` is f32 [2] but is written as f32 [3], expected f32 [2]");
  check_parse_error("module @m {\n  func.func @f(%arg0: !kiln.tensor<[^2x, 3], f32>) -> () {\n    return\n  }\n}\n",
                    "bad dim `2x`, expected a size >= 0 or a symbolic name such as batch");
  check_parse_error("module @m {\n  func.func @f(%arg0: !kiln.tensor<[^-3], f32>) -> () {\n    return\n  }\n}\n",
                    "bad dim `-3`, expected a size >= 0 or a symbolic name such as batch");
  check_parse_error("module @m {\n  func.func @f(%arg0: !kiln.tensor<[2], ^f31>) -> () {\n    return\n  }\n}\n",
                    "bad dtype `f31`, expected a dtype: f32, f64, f16, bf16, i8, i32, i64, ui8 or i1");
  check_parse_error("module @m {\n  func.func @f() -> () {\n    return\n^",
                    "unterminated region: the body of @f is not closed, expected `}`");
  check_parse_error("module @m {\n  func.func @f() -> () {\n    return\n  }\n^",
                    "unterminated region: the module is not closed, expected `}`");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(%arg0) : (" + std::string(kT2) + ") -> " + kT2 + "\n") +
                        "^garbage\n",
                    "trailing text `garbage` after the module, expected end of input");
  check_parse_error("module @m {\n  func.func @f() -> () {\n  ^}\n}\n",
                    "missing `return` at the end of @f, expected `return` before `}`");
}

TEST_CASE("parse errors about results, attributes and calls") {
  const std::string t2 = kT2;
  check_parse_error("module @m {\n  func.func @f(%arg0: " + t2 + ") -> (" + t2 + ", " + t2 +
                        ") {\n    ^return %arg0 : " + t2 + "\n  }\n}\n",
                    "wrong number of results: @f declares 2 but `return` gives 1, expected 2 values");
  check_parse_error(in_function("    %0 = \"kiln.softmax\"(%arg0) {axis = ^1.5 : i64} : (" + t2 + ") -> " + t2 + "\n"),
                    "bad attribute: `1.5` is not a 64-bit integer, expected e.g. 3 : i64");
  check_parse_error(in_function("    %0 = \"kiln.softmax\"(%arg0) {axis = ^@one} : (" + t2 + ") -> " + t2 + "\n"),
                    "bad attribute `@one`, expected true, false, 3 : i64, 2.5 : f64, \"text\", array<i64: ...>, "
                    "array<f64: ...>, [dims], a dtype or dense<...>");
  check_parse_error(in_function("    %0 = func.call ^@nowhere(%arg0) : (" + t2 + ") -> " + t2 + "\n"),
                    "call to unknown function `@nowhere`, expected a func.func of this module");
  check_parse_error(in_function("    ^%0:2 = \"kiln.neg\"(%arg0) : (" + t2 + ") -> " + t2 + "\n"),
                    "result count mismatch: 2 result names for 1 result types, expected `%k = `");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(%arg0) : (" + t2 + ") -> ^!kiln.tensor<[3], f32>\n"),
                    "result type f32 [3] of kiln.neg differs from its inferred type, expected f32 [2]");
  check_parse_error(in_function("    %0 = ^\"kiln.add\"(%arg0) : (" + t2 + ") -> " + t2 + "\n"),
                    "kiln.add with 1 operands, expected 2 operands");
  check_parse_error(in_function("    %0 = \"kiln.neg\"(%arg0) {note = ^\"open} : (" + t2 + ") -> " + t2 + "\n"),
                    "unterminated string, expected '\"'");
  check_parse_error(
      in_function("    %0 = \"kiln.constant\"() {value = ^dense<\"0x0000803F\"> : tensor<2xf32>} : () -> " + t2 + "\n"),
      "dense data has 4 bytes, expected 8 for its tensor type");
  check_parse_error(
      "module @m {\n  func.func @f() -> () {\n    return\n  }\n  func.func ^@f() -> () {\n    return\n  }\n}\n",
      "function `@f` redefined, expected a new function name");
}

TEST_CASE("parse errors from the op table carry the op's inference message") {
  std::string text =
      "module @m {\n  func.func @f(%a: !kiln.tensor<[2, 3], f32>, %b: !kiln.tensor<[4, 5], f32>) -> () {\n"
      "    %0 = \"kiln.matmul\"(%a, %b) : (!kiln.tensor<[2, 3], f32>, !kiln.tensor<[4, 5], f32>) -> "
      "!kiln.tensor<[2, 5], f32> loc(\"model.cpp\":42:17)\n    return\n  }\n}\n";
  std::string message = parse_error(text);
  CHECK(message.starts_with("bad.mlir:3:10: invalid op: kiln.matmul at model.cpp:42:17: inner dims differ"));
  CHECK(message.ends_with(", expected operands and attributes that kiln.matmul accepts"));
}

TEST_CASE("parse errors for multi-result uses and mismatched calls") {
  const std::string t2 = kT2;
  std::string split = "    %s:2 = \"kiln.split\"(%arg0) {axis = 0 : i64, sizes = array<i64: 1, 1>} : (" + t2 +
                      ") -> (!kiln.tensor<[1], f32>, !kiln.tensor<[1], f32>)\n";
  check_parse_error(
      in_function(split + "    %0 = \"kiln.neg\"(^%s) : (!kiln.tensor<[1], f32>) -> !kiln.tensor<[1], f32>\n"),
      "`%s` names 2 results, expected `%s#<index>`");
  check_parse_error(
      in_function(split + "    %0 = \"kiln.neg\"(%s#^2) : (!kiln.tensor<[1], f32>) -> !kiln.tensor<[1], f32>\n"),
      "result index `2` out of range for `%s`, expected an index below 2");
  check_parse_error("module @m {\n  func.func @f(%arg0: " + t2 + ") -> () {\n    func.call ^@g(%arg0) : (" + t2 +
                        ") -> ()\n    return\n  }\n  func.func private @g(%arg0: !kiln.tensor<[3], f32>) -> () {\n"
                        "    return\n  }\n}\n",
                    "call passes (f32 [2]) to `@g`, expected (f32 [3])");
  check_parse_error("module @m {\n  func.func @f(%arg0: " + t2 + ") -> " + t2 + " {\n    return %arg0 : " + t2 +
                        "\n  }\n  func.func @f2(%arg0: " + t2 + ") -> !kiln.tensor<[2], i32> {\n    return %arg0 : ^" +
                        t2 + "\n  }\n}\n",
                    "returned type f32 [2] differs from result 0 of @f2, expected i32 [2]");
}

TEST_CASE("a declared type too large to exist is a shape error naming its dims and line:column") {
  std::string huge = "!kiln.tensor<[4294967296, 4294967296, 16], f32>";
  CHECK(error_at_marker("module @m {\n  func.func @f(%arg0: ^" + huge + ") -> () {\n    return\n  }\n}\n",
                        ErrorKind::shape) ==
        "bad.mlir:2:23: argument `%arg0` of @f: f32 [4294967296, 4294967296, 16] has more elements than int64 counts");
  CHECK(error_at_marker("module @m {\n  func.func @f() -> ^" + huge + " {\n", ErrorKind::shape) ==
        "bad.mlir:2:21: result 0 of @f: f32 [4294967296, 4294967296, 16] has more elements than int64 counts");
  std::string full = in_function("    %0 = \"kiln.full\"() {dtype = f32, shape = [4294967296, 4294967296, 16], value = "
                                 "0.0 : f64} : () -> ^" +
                                 huge + "\n");
  CHECK(error_at_marker(full, ErrorKind::shape)
            .ends_with("result 0 of kiln.full: f32 [4294967296, 4294967296, 16] has more elements than int64 counts"));
  // Through load_staged's path too: parse, then verify.
  CHECK_THROWS_WITH_AS(
      parse_staged("module @m {\n  func.func @f(%a: " + huge + ") -> () {\n    return\n  }\n}\n", "g.mlir"),
      "shape error: g.mlir:2:20: argument `%a` of @f: f32 [4294967296, 4294967296, 16] has more "
      "elements than int64 counts",
      Error);
}

TEST_CASE("sizes that overflow inside an op's inference are shape errors at the op's line:column") {
  std::string pad =
      in_function("    %0 = ^\"kiln.pad\"(%arg0) {pads = array<i64: 1, 9223372036854775807>, value = 0.0 : "
                  "f64} : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>\n");
  CHECK(error_at_marker(pad, ErrorKind::shape)
            .ends_with(": kiln.pad at <unknown>: dim size: 3 + 9223372036854775807 overflows int64"));
  std::string arange =
      in_function("    %0 = ^\"kiln.arange\"() {dtype = f32, start = 0.0 : f64, step = 0.001 : f64, stop "
                  "= 1.0e30 : f64} : () -> !kiln.tensor<[2], f32>\n");
  CHECK(error_at_marker(arange, ErrorKind::shape).find("does not fit in int64") != std::string::npos);
  std::string dense = in_function("    %0 = \"kiln.constant\"() {value = ^dense<\"0x00\"> : "
                                  "tensor<4294967296x4294967296x16xf32>} : () -> !kiln.tensor<[2], f32>\n");
  CHECK(error_at_marker(dense, ErrorKind::shape)
            .ends_with("dense tensor f32 [4294967296, 4294967296, 16] has more elements than int64 counts"));
}

TEST_CASE("KILN_MAX_TENSOR_BYTES makes a 2 KiB tensor type a shape error") {
  ScopedEnv limit("KILN_MAX_TENSOR_BYTES", "1K");
  const std::string ok = "module @m {\n  func.func @f(%a: !kiln.tensor<[256], f32>) -> () {\n    return\n  }\n}\n";
  CHECK(parse_module(ok, "ok.mlir").entry().args.size() == 1);
  CHECK(error_at_marker("module @m {\n  func.func @f(%a: ^!kiln.tensor<[2, 256], f32>) -> () {\n    return\n  }\n}\n",
                        ErrorKind::shape) ==
        "bad.mlir:2:20: argument `%a` of @f: f32 [2, 256] needs 2048 bytes, more than the limit of 1024 bytes "
        "(KILN_MAX_TENSOR_BYTES)");
  Module m = calling_module({-1});
  m.entry().values[0].type = tensor_type(DType::f32, {2, 256});
  CHECK_THROWS_WITH_AS(verify_module(m),
                       "shape error: @f0 argument 0: f32 [2, 256] needs 2048 bytes, more than the limit "
                       "of 1024 bytes (KILN_MAX_TENSOR_BYTES)",
                       Error);
}

TEST_CASE("verify refuses a function that calls itself, naming the callee and the call's line") {
  Module m = calling_module({0});
  CHECK(verify_error(m) ==
        "func.call @f0 at model.py:10:5 in @f0: calls form a cycle @f0 -> @f0; recursion is not supported");
  // Compiling refuses it through the same check.
  std::vector<ValueType> args{tensor_type(DType::f32, {2})};
  CHECK_THROWS_WITH_AS(specialize(m, args), ("unsupported error: " + verify_error(m)).c_str(), Error);
  std::string text = "module @m {\n  func.func @f(%arg0: " + std::string(kT2) + ") -> " + kT2 +
                     " {\n    %0 = func.call ^@f(%arg0) : (" + kT2 + ") -> " + kT2 + "\n    return %0 : " + kT2 +
                     "\n  }\n}\n";
  check_parse_error(text, "call to `@f` in @f: calls form a cycle @f -> @f; recursion is not supported, expected "
                          "calls that kiln can inline: no cycles, nested at most 64 deep");
}

TEST_CASE("verify refuses a cycle of two functions, naming the callee and the call's line") {
  Module m = calling_module({1, 2, 1});
  CHECK(verify_error(m) ==
        "func.call @f1 at model.py:12:5 in @f2: calls form a cycle @f1 -> @f2 -> @f1; recursion is not supported");
  std::string t2 = kT2;
  std::string text = "module @m {\n  func.func @a(%x: " + t2 + ") -> " + t2 + " {\n    %0 = func.call @b(%x) : (" + t2 +
                     ") -> " + t2 + "\n    return %0 : " + t2 + "\n  }\n  func.func private @b(%x: " + t2 + ") -> " +
                     t2 + " {\n    %0 = func.call ^@a(%x) : (" + t2 + ") -> " + t2 + "\n    return %0 : " + t2 +
                     "\n  }\n}\n";
  check_parse_error(text, "call to `@a` in @b: calls form a cycle @a -> @b -> @a; recursion is not supported, expected "
                          "calls that kiln can inline: no cycles, nested at most 64 deep");
}

TEST_CASE("verify refuses calls nested deeper than 64 and accepts shared callees") {
  std::vector<int> chain;
  for (int i = 0; i < 66; ++i)
    chain.push_back(i + 1 < 66 ? i + 1 : -1);
  CHECK(verify_error(calling_module(chain)).ends_with(": calls nest deeper than 64"));
  chain.erase(chain.begin()); // 64 nested calls: @f0 -> ... -> @f64
  for (int& callee : chain)
    callee = callee < 0 ? -1 : callee - 1;
  CHECK_NOTHROW(verify_module(calling_module(chain)));
  CHECK_NOTHROW(verify_module(calling_module({2, 2, -1}))); // a diamond is no cycle
}

TEST_CASE("deeply nested brackets are a parse error, not a stack overflow") {
  const std::string deep(100000, '[');
  check_parse_error("module @m {\n  func.func @f(%arg0: !kiln.tensor<[^" + deep + "], f32>) -> () {\n",
                    "bad dim `[`, "
                    "expected a size >= 0 or a symbolic name such as batch");
  check_parse_error(
      in_function("    %0 = \"kiln.reshape\"(%arg0) {shape = [^" + deep + "} : (" + kT2 + ") -> " + kT2 + "\n"),
      "bad dim `[`, expected a size >= -1 or a quoted symbolic name such as \"batch\"");
}

// Found by the mlir_parser fuzzer: verify_module called it an internal error.
TEST_CASE("a module without functions is a parse error at its closing brace") {
  check_parse_error("module @main {\n^}\n", "the module has no functions, expected a `func.func` (the entry function)");
}

// Found by the mlir_parser fuzzer: a misspelt attribute passed the parser and failed only on the
// first call, as an internal error with no place.
TEST_CASE("an op missing a required attribute is a parse error at the op and a verify error") {
  check_parse_error(in_function("    %0 = ^\"kiln.full\"() {dtype = f32, shape = [2], vlaue = 5.0e-01 : f64} : () -> " +
                                std::string(kT2) + "\n"),
                    "kiln.full with missing attribute 'value' (f64), expected the attributes kiln.full requires");
  check_parse_error(
      in_function("    %0 = ^\"kiln.constant_external\"() {name = 3 : i64} : () -> " + std::string(kT2) + "\n"),
      "kiln.constant_external with attribute 'name' must be string, expected the attributes "
      "kiln.constant_external requires");
  Function fn;
  fn.name = "f";
  fn.add_op(OpKind::full, {}, {ValueType{DType::f32, {2}}}, {{"shape", Attr::of_shape({2})}});
  Module m;
  m.functions = {fn};
  CHECK_THROWS_WITH_AS(verify_module(m), doctest::Contains("missing attribute 'value' (f64)"), Error);
}

TEST_CASE("leaky_relu, elu and softplus parameters default when left out and must be in their domain") {
  const std::string t2 = kT2;
  Module m = parse_module(in_function("    %0 = \"kiln.softplus\"(%arg0) {beta = 2.0 : f64} : (" + t2 + ") -> " + t2 +
                                      "\n    %1 = \"kiln.leaky_relu\"(%0) : (" + t2 + ") -> " + t2 + "\n"));
  REQUIRE(m.entry().ops.size() == 2);
  CHECK(params_of<SoftplusParams>(m.entry().ops[0]) == SoftplusParams{2.0, 20.0});
  CHECK(params_of<LeakyReluParams>(m.entry().ops[1]).negative_slope == 0.01);
  check_parse_error(in_function("    %0 = ^\"kiln.softplus\"(%arg0) {beta = 0.0 : f64} : (" + t2 + ") -> " + t2 + "\n"),
                    "kiln.softplus with softplus beta must not be 0, expected the attributes kiln.softplus requires");
  check_parse_error(in_function("    %0 = ^\"kiln.elu\"(%arg0) {alpha = \"one\"} : (" + t2 + ") -> " + t2 + "\n"),
                    "kiln.elu with attribute 'alpha' must be f64, expected the attributes kiln.elu requires");
}
