// The accelerator's op kernels (vulkan/op_kernels.hpp) without a device: every op kind the device
// takes, at odd and broadcast shapes and with each of its parameter forms, gives GLSL that libkiln's
// compiler (vulkan/shader_compiler.hpp: glslang, the SPIRV-Tools validator on) takes, with one binding
// per operand and result and a dispatch within Vulkan's limits; the rest are refused with a reason.
// The numbers are checked on lavapipe against the interpreter by the tier-differential test.
#include "ir/ops.hpp"
#include "vulkan/op_kernels.hpp"
#include "vulkan/shader_compiler.hpp"
#include <doctest/doctest.h>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

using namespace kiln;
using ir::OpKind;

namespace {

// What libkiln's compiler says when `glsl` does not compile to valid SPIR-V for Vulkan 1.1, else "".
std::string spirv_errors(const std::string& glsl) {
  try {
    vulkan::compile_compute_shader(glsl);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// Matches of `pattern` in `text`.
size_t count(const std::string& text, const char* pattern) {
  const std::regex re(pattern);
  return size_t(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

ir::ValueType f32(const std::vector<int64_t>& dims) { return {DType::f32, shape_from_dims(dims)}; }
ir::ValueType of(DType dtype, const std::vector<int64_t>& dims) { return {dtype, shape_from_dims(dims)}; }

// A graph of one op of `kind` over arguments of `operands`, its results inferred.
struct OneOp {
  ir::Function graph;
  ir::OpId op = 0;
};

OneOp one_op(OpKind kind, const std::vector<ir::ValueType>& operands, const ir::OpParams& params = ir::NoParams{}) {
  OneOp g;
  std::vector<ir::ValueId> args;
  for (const ir::ValueType& type : operands)
    args.push_back(g.graph.add_arg(type));
  const ir::Attrs attrs = ir::encode_params(params);
  g.op = g.graph.add_op(kind, args, ir::infer_op(kind, operands, attrs, {}), attrs);
  return g;
}

std::string name_of(OpKind kind) { return std::string(ir::op_info(kind).name); }

// The op's kernel, checked: it compiles, binds each operand and result once, and dispatches within
// the limits Vulkan guarantees.
vulkan::OpKernel require_kernel(OpKind kind, const std::vector<ir::ValueType>& operands,
                                const ir::OpParams& params = ir::NoParams{}) {
  const OneOp g = one_op(kind, operands, params);
  const auto result = vulkan::op_kernel(g.graph, g.op);
  const std::string* refusal = std::get_if<std::string>(&result);
  INFO(name_of(kind));
  REQUIRE_MESSAGE(refusal == nullptr, (refusal ? *refusal : ""));
  const vulkan::OpKernel& kernel = std::get<vulkan::OpKernel>(result);
  const std::string errors = spirv_errors(kernel.glsl);
  CHECK_MESSAGE(errors.empty(), errors << "\n" << kernel.glsl);
  // The same kernel over values stored as f16 (KILN_ACCELERATOR_STORAGE=f16).
  const std::string f16 = vulkan::kernel_source(kernel, vulkan::Storage::f16);
  const std::string f16_errors = spirv_errors(f16);
  CHECK_MESSAGE(f16_errors.empty(), f16_errors << "\n" << f16);
  // Under f16 a raw read would compute in f16 (two of them multiplied, say) and still compile: every
  // float read goes through K_LOAD and every write through K_STORE. Copies move bits unconverted.
  if (kernel.implementation != "vulkan.copy") {
    CHECK_MESSAGE(count(kernel.glsl, R"(\bin\d+\.v\[)") == count(kernel.glsl, R"(K_LOAD\(in\d+\.v\[)"), kernel.glsl);
    CHECK_MESSAGE(count(kernel.glsl, R"(\bout\d+\.v\[[^\]]*\] = )") == count(kernel.glsl, R"(\] = K_STORE\()"),
                  kernel.glsl);
  }
  const size_t bindings = g.graph.ops[g.op].operands.size() + g.graph.ops[g.op].results.size();
  for (size_t b = 0; b <= bindings; ++b)
    CHECK((kernel.glsl.find("binding = " + std::to_string(b) + ")") != std::string::npos) == (b < bindings));
  for (uint32_t groups : kernel.groups)
    CHECK((groups >= 1 && groups <= 65535));
  CHECK(kernel.implementation.rfind("vulkan.", 0) == 0);
  CHECK(kernel.push.empty());
  return kernel;
}

std::string refusal_of(OpKind kind, const std::vector<ir::ValueType>& operands,
                       const ir::OpParams& params = ir::NoParams{}) {
  const OneOp g = one_op(kind, operands, params);
  const auto result = vulkan::op_kernel(g.graph, g.op);
  const std::string* refusal = std::get_if<std::string>(&result);
  return refusal ? *refusal : "";
}

const OpKind kUnary[] = {
    OpKind::neg,     OpKind::abs,  OpKind::exp,   OpKind::log,  OpKind::sqrt,      OpKind::rsqrt, OpKind::tanh,
    OpKind::sigmoid, OpKind::relu, OpKind::silu,  OpKind::erf,  OpKind::sin,       OpKind::cos,   OpKind::hardsigmoid,
    OpKind::floor,   OpKind::ceil, OpKind::round, OpKind::sign, OpKind::hardswish, OpKind::log1p, OpKind::expm1};
const OpKind kBinary[] = {OpKind::add,     OpKind::sub,     OpKind::mul,          OpKind::div,      OpKind::pow,
                          OpKind::maximum, OpKind::minimum, OpKind::floor_divide, OpKind::remainder};

} // namespace

TEST_CASE("every unary op compiles at sizes 1, 7, 17 and 1023") {
  for (OpKind kind : kUnary)
    for (int64_t n : {1, 7, 17, 1023})
      require_kernel(kind, {f32({n})});
}

TEST_CASE("unary ops with parameters compile in each form") {
  require_kernel(OpKind::gelu, {f32({7, 17})}, ir::GeluParams{ir::GeluForm::exact});
  require_kernel(OpKind::gelu, {f32({7, 17})}, ir::GeluParams{ir::GeluForm::tanh});
  require_kernel(OpKind::leaky_relu, {f32({17})}, ir::LeakyReluParams{0.2});
  require_kernel(OpKind::elu, {f32({17})}, ir::EluParams{0.5});
  require_kernel(OpKind::softplus, {f32({17})}, ir::SoftplusParams{2.0, 10.0});
  require_kernel(OpKind::cast, {f32({17})}, ir::CastParams{DType::f32});
}

TEST_CASE("parameters are baked into the source exactly") {
  const vulkan::OpKernel kernel = require_kernel(OpKind::leaky_relu, {f32({17})}, ir::LeakyReluParams{0.2});
  CHECK(kernel.glsl.find("x * 0.200000003") != std::string::npos); // 0.2 rounded to f32, all 9 digits
}

TEST_CASE("binary ops compile with numpy broadcasting: same shape, row, column and scalar") {
  for (OpKind kind : kBinary) {
    require_kernel(kind, {f32({1023}), f32({1023})});
    require_kernel(kind, {f32({7, 17}), f32({17})});
    require_kernel(kind, {f32({7, 1}), f32({7, 17})});
    require_kernel(kind, {f32({7, 17}), f32({})});
    require_kernel(kind, {f32({3, 1, 5}), f32({2, 1})});
  }
  require_kernel(OpKind::clamp, {f32({7, 17}), f32({17}), f32({7, 1})});
}

TEST_CASE("a broadcast operand is read through zero strides, a same-shaped one directly") {
  const vulkan::OpKernel row = require_kernel(OpKind::add, {f32({7, 17}), f32({17})});
  CHECK(row.glsl.find("uint index0(uint i) {\n  return i;\n}") != std::string::npos);
  CHECK(row.glsl.find("(rest % 17u)") != std::string::npos);
  const vulkan::OpKernel scalar = require_kernel(OpKind::mul, {f32({7, 17}), f32({})});
  CHECK(scalar.glsl.find("uint index1(uint i) {\n  return 0u;\n}") != std::string::npos);
}

TEST_CASE("large tensors dispatch at most 65535 workgroups and loop over the rest") {
  const vulkan::OpKernel kernel = require_kernel(OpKind::exp, {f32({1 << 25})});
  CHECK(kernel.groups[0] == 65535);
  CHECK(kernel.glsl.find("i += " + std::to_string(65535 * 256) + "u") != std::string::npos);
  CHECK(require_kernel(OpKind::exp, {f32({1023})}).groups[0] == 4);
}

TEST_CASE("matmul compiles in 2-D, batched and with broadcast batch dims") {
  require_kernel(OpKind::matmul, {f32({7, 17}), f32({17, 23})});
  require_kernel(OpKind::matmul, {f32({1, 1}), f32({1, 1})});
  require_kernel(OpKind::matmul, {f32({2, 7, 17}), f32({17, 1})});
  const vulkan::OpKernel kernel = require_kernel(OpKind::matmul, {f32({3, 1, 33, 5}), f32({2, 5, 40})});
  // One invocation per output element: 6 batches of 33 x 40, in groups of 256.
  CHECK(kernel.groups == std::array<uint32_t, 3>{(6 * 33 * 40 + 255) / 256, 1, 1});
}

TEST_CASE("reductions compile over one axis, several, all, and with keepdims") {
  for (OpKind kind :
       {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max, OpKind::reduce_min, OpKind::reduce_prod})
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {0}, {0, 2}, {0, 1, 2}})
      for (bool keepdims : {false, true})
        require_kernel(kind, {f32({3, 17, 7})}, ir::ReduceParams{axes, keepdims});
  for (OpKind kind : {OpKind::reduce_var, OpKind::reduce_std})
    for (int64_t correction : {0, 1, 17})
      require_kernel(kind, {f32({3, 17, 7})}, ir::VarianceParams{{1}, correction, false});
}

TEST_CASE("normalizations compile with and without their optional operands") {
  for (OpKind kind : {OpKind::softmax, OpKind::log_softmax}) {
    require_kernel(kind, {f32({7, 17})}, ir::AxisParams{1});
    require_kernel(kind, {f32({3, 1023})}, ir::AxisParams{0});
    require_kernel(kind, {f32({1, 1})}, ir::AxisParams{1});
  }
  require_kernel(OpKind::layer_norm, {f32({7, 1023})}, ir::NormParams{1, 1e-5});
  require_kernel(OpKind::layer_norm, {f32({7, 1023}), f32({1023})}, ir::NormParams{1, 1e-5});
  require_kernel(OpKind::layer_norm, {f32({2, 7, 17}), f32({7, 17}), f32({7, 17})}, ir::NormParams{1, 1e-6});
  require_kernel(OpKind::rms_norm, {f32({7, 17})}, ir::NormParams{1, 1e-6});
  require_kernel(OpKind::rms_norm, {f32({7, 17}), f32({17})}, ir::NormParams{1, 1e-6});
  require_kernel(OpKind::batch_norm, {f32({2, 7, 5, 3}), f32({7}), f32({7})}, ir::BatchNormParams{1e-5});
  require_kernel(OpKind::batch_norm, {f32({2, 7, 5, 3}), f32({7}), f32({7}), f32({7}), f32({7})},
                 ir::BatchNormParams{1e-5});
  require_kernel(OpKind::group_norm, {f32({2, 6, 7, 17}), f32({6}), f32({6})}, ir::GroupNormParams{3, 1e-5});
  require_kernel(OpKind::group_norm, {f32({1, 17, 7, 1})}, ir::GroupNormParams{17, 1e-5});
}

TEST_CASE("shape ops compile as bit-exact copies") {
  const vulkan::OpKernel reshape = require_kernel(OpKind::reshape, {f32({7, 17})}, ir::ShapeParams{{17, 7}});
  CHECK(reshape.glsl.find("{ K_BITS v[]; } in0") != std::string::npos); // uint, or uint16_t under f16
  require_kernel(OpKind::squeeze, {f32({1, 17})}, ir::AxesParams{{0}});
  require_kernel(OpKind::unsqueeze, {f32({17})}, ir::AxesParams{{1}});
  require_kernel(OpKind::transpose, {f32({7, 17})}, ir::TransposeParams{{1, 0}});
  require_kernel(OpKind::transpose, {f32({2, 3, 5, 7})}, ir::TransposeParams{{0, 2, 3, 1}});
  require_kernel(OpKind::broadcast_to, {f32({17})}, ir::ShapeParams{{7, 17}});
  require_kernel(OpKind::broadcast_to, {f32({7, 1})}, ir::ShapeParams{{2, 7, 17}});
  require_kernel(OpKind::concat, {f32({7, 17}), f32({7, 1})}, ir::AxisParams{1});
  require_kernel(OpKind::concat, {f32({1, 3}), f32({4, 3}), f32({2, 3})}, ir::AxisParams{0});
  require_kernel(OpKind::split, {f32({7, 17})}, ir::SplitParams{1, {3, 14}});
  require_kernel(OpKind::slice, {f32({7, 17})}, ir::SliceParams{{0, 2}, {7, 15}, {1, 3}});
  require_kernel(OpKind::slice, {f32({7, 17})}, ir::SliceParams{{6, 0}, {7, 17}, {1, 1}});
  require_kernel(OpKind::pad, {f32({7, 17})}, ir::PadParams{{1, 2, 0, 3}, -1.5});
  for (OpKind kind : {OpKind::tril, OpKind::triu})
    for (int64_t diagonal : {int64_t{0}, int64_t{2}, int64_t{-3}, int64_t{1} << 40})
      require_kernel(kind, {f32({2, 7, 17})}, ir::DiagonalParams{diagonal});
}

TEST_CASE("convolutions and pools compile: groups, depthwise, bias, padding, dilation") {
  require_kernel(OpKind::conv2d, {f32({2, 3, 17, 7}), f32({5, 3, 3, 3})}, ir::ConvParams{{2, 1}, {1, 1}, {1, 1}, 1});
  require_kernel(OpKind::conv2d, {f32({1, 6, 9, 9}), f32({6, 1, 3, 3}), f32({6})},
                 ir::ConvParams{{1, 1}, {1, 1}, {2, 2}, 6});
  require_kernel(OpKind::conv2d, {f32({1, 4, 5, 5}), f32({6, 2, 1, 1}), f32({6})},
                 ir::ConvParams{{1, 1}, {0, 0}, {1, 1}, 2});
  require_kernel(OpKind::conv1d, {f32({2, 3, 1023}), f32({4, 3, 5})}, ir::ConvParams{{2}, {1}, {2}, 1});
  require_kernel(OpKind::max_pool2d, {f32({2, 3, 17, 7})}, ir::PoolParams{{3, 3}, {2, 2}, {1, 1}});
  for (bool include_pad : {true, false})
    require_kernel(OpKind::avg_pool2d, {f32({2, 3, 17, 7})},
                   ir::AvgPoolParams{ir::PoolParams{{3, 3}, {2, 2}, {1, 1}}, include_pad});
  for (const ir::Pair& out : {ir::Pair{7, 1}, {17, 7}, {1, 1}, {3, 5}, {5, 17}})
    require_kernel(OpKind::adaptive_avg_pool2d, {f32({2, 3, 14, 7})}, ir::AdaptivePoolParams{out});
}

TEST_CASE("dtypes other than f32 are refused, naming the dtype") {
  CHECK(refusal_of(OpKind::add, {of(DType::f64, {7}), of(DType::f64, {7})}) == "f64 is not supported on the device");
  CHECK(refusal_of(OpKind::neg, {of(DType::i32, {7})}) == "i32 is not supported on the device");
  CHECK(refusal_of(OpKind::matmul, {of(DType::f16, {2, 2}), of(DType::f16, {2, 2})}) ==
        "f16 is not supported on the device");
  CHECK(refusal_of(OpKind::cast, {f32({7})}, ir::CastParams{DType::i64}) == "i64 is not supported on the device");
  CHECK(refusal_of(OpKind::reshape, {of(DType::boolean, {7})}, ir::ShapeParams{{7, 1}}) ==
        "i1 is not supported on the device");
}

TEST_CASE("op kinds the device does not take are refused, naming the op") {
  CHECK(refusal_of(OpKind::topk, {f32({7, 17})}, ir::TopkParams{3, 1, true, true}) ==
        "kiln.topk is not supported on the device");
  CHECK(refusal_of(OpKind::compare, {f32({7}), f32({7})}, ir::CompareParams{ir::ComparePredicate::lt}) ==
        "kiln.compare is not supported on the device");
  CHECK(refusal_of(OpKind::argmax, {f32({7, 17})}, ir::ArgmaxParams{1, false}) ==
        "kiln.argmax is not supported on the device");
  CHECK(refusal_of(OpKind::cumsum, {f32({7, 17})}, ir::AxisParams{1}) == "kiln.cumsum is not supported on the device");
}

TEST_CASE("empty tensors are left to the CPU") {
  CHECK(refusal_of(OpKind::exp, {f32({0, 3})}) == "empty tensors are left to the CPU");
}

TEST_CASE("the SPIR-V check itself fails on GLSL that does not compile") {
  CHECK(!spirv_errors("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared = 1.0; }\n").empty());
}
