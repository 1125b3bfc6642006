// Elementwise ops as one GLSL statement per element: the unary and binary kinds of the op table,
// clamp and the identity cast, with numpy broadcasting by baked index functions. Each formula is
// the interpreter's (interp/kernels/elementwise.cpp), written so that NaN and -0 come out as there.
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"
#include <map>

namespace kiln::vulkan::glsl {

namespace {

using ir::OpKind;

// The value of unary op `op` at `x`, as a GLSL expression ("" when the kind is not unary).
std::string unary_expression(const ir::Op& op) {
  switch (op.kind) {
  case OpKind::neg: return "-x";
  case OpKind::abs: return "k_abs(x)";
  case OpKind::exp: return "k_exp(x, 0.0)";
  case OpKind::log: return "k_log(x)";
  // GLSL leaves sqrt of a negative number undefined: NaN, as IEEE, is written out; sqrt(-0) = -0.
  case OpKind::sqrt: return "(x < 0.0 ? K_NAN : x == 0.0 ? x : sqrt(x))";
  case OpKind::rsqrt: return "(1.0 / (x < 0.0 ? K_NAN : x == 0.0 ? x : sqrt(x)))";
  case OpKind::tanh: return "k_tanh(x)";
  case OpKind::sigmoid: return "k_sigmoid(x)";
  // `x < 0` is false for NaN, which passes through as torch.relu's; -0 stays -0.
  case OpKind::relu: return "(x < 0.0 ? 0.0 : x)";
  case OpKind::gelu:
    return ir::params_of<ir::GeluParams>(op).form == ir::GeluForm::tanh ? "k_gelu_tanh(x)" : "k_gelu_erf(x)";
  case OpKind::silu: return "k_silu(x)";
  case OpKind::erf: return "k_erf(x)";
  case OpKind::sin: return "k_sin_cos(x, false)";
  case OpKind::cos: return "k_sin_cos(x, true)";
  case OpKind::hardsigmoid: return "(k_relu6_of_x_plus_3(x) / 6.0)";
  case OpKind::floor: return "floor(x)";
  case OpKind::ceil: return "ceil(x)";
  case OpKind::round:
    return "roundEven(x)"; // halves to even, as nearbyint
  // torch's (0 < x) - (x < 0): +0 for -0 and for NaN.
  case OpKind::sign: return "(k_isnan(x) ? 0.0 : float(0.0 < x) - float(x < 0.0))";
  case OpKind::hardswish: return "(x * k_relu6_of_x_plus_3(x) / 6.0)";
  case OpKind::leaky_relu:
    return "(x > 0.0 ? x : x * " + float_literal(ir::params_of<ir::LeakyReluParams>(op).negative_slope) + ")";
  case OpKind::elu: return "(x > 0.0 ? x : " + float_literal(ir::params_of<ir::EluParams>(op).alpha) + " * k_expm1(x))";
  case OpKind::softplus: {
    const auto& p = ir::params_of<ir::SoftplusParams>(op);
    return "k_softplus(x, " + float_literal(p.beta) + ", " + float_literal(p.threshold) + ")";
  }
  case OpKind::log1p: return "k_log1p(x)";
  case OpKind::expm1: return "k_expm1(x)";
  case OpKind::cast: return "x"; // f32 to f32: other dtypes were refused
  default: return "";
  }
}

// The value of binary op `op` at a, b ("" when the kind is not binary).
std::string binary_expression(OpKind kind) {
  switch (kind) {
  case OpKind::add: return "a + b";
  case OpKind::sub: return "a - b";
  case OpKind::mul: return "a * b";
  case OpKind::div: return "a / b";
  case OpKind::pow: return "k_pow(a, b)";
  case OpKind::maximum: return "k_nan_max(a, b)";
  case OpKind::minimum: return "k_nan_min(a, b)";
  case OpKind::floor_divide: return "k_floor_divide(a, b)";
  case OpKind::remainder: return "k_remainder(a, b)";
  default: return "";
  }
}

// The elementwise formulas that are more than an expression, in the interpreter's order of steps.
const char* const kElementwiseHelpers = R"(
// relu6(x + 3), hardsigmoid's and hardswish's first steps; NaN falls through.
float k_relu6_of_x_plus_3(float x) {
  precise float t = x + 3.0;
  t = t < 0.0 ? 0.0 : t;
  return t > 6.0 ? 6.0 : t;
}
float k_softplus(float x, float beta, float threshold) {
  precise float z = x * beta;
  precise float y = k_log1p(k_exp(z, 0.0)) / beta;
  return z > threshold ? x : y;
}
// torch's div_floor: exact for representable quotients, the sign of a zero kept.
float k_floor_divide(float a, float b) {
  if (b == 0.0) {
    precise float q = a / b;
    return q;
  }
  float m = k_fmod(a, b);
  precise float div = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) div -= 1.0;
  if (div == 0.0) {
    precise float q = a / b;
    return uintBitsToFloat(floatBitsToUint(q) & 0x80000000u);
  }
  precise float floored = floor(div);
  if (div - floored > 0.5) floored += 1.0;
  return floored;
}
// torch.remainder: the sign of the divisor.
float k_remainder(float a, float b) {
  precise float r = k_fmod(a, b);
  if (r != 0.0 && ((b < 0.0) != (r < 0.0))) r += b;
  return r;
}
)";

// The operand names of elementwise op `op`'s expression and the expression, or an empty name list
// when the kind is not one this file computes.
std::pair<std::vector<std::string>, std::string> formula(const ir::Op& op) {
  if (op.kind == OpKind::clamp) // NaN in any operand gives NaN, lo > hi gives hi
    return {{"x", "lo", "hi"}, "k_nan_min(k_nan_max(x, lo), hi)"};
  if (std::string e = unary_expression(op); !e.empty()) return {{"x"}, std::move(e)};
  if (std::string e = binary_expression(op.kind); !e.empty()) return {{"a", "b"}, std::move(e)};
  return {};
}

// out = expression over the operands, each read at its broadcast index.
OpKernel broadcast_kernel(const ir::Function& graph, const ir::Op& op, const std::vector<std::string>& names,
                          const std::string& expression) {
  const std::vector<int64_t> out = dims_of(graph, op.results[0]);
  std::string declarations = bindings(op) + math_library() + kElementwiseHelpers;
  std::string body;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string index = "index" + std::to_string(i);
    declarations += broadcast_index_function(index, out, dims_of(graph, op.operands[i]));
    body += "    float " + names[i] + " = " + load("in" + std::to_string(i), index + "(i)") + ";\n";
  }
  body += "    precise float y = " + expression + ";\n    " + store("out0", "i", "y");
  return elementwise_dispatch(declarations, body, numel(out), "vulkan.elementwise");
}

} // namespace

KernelOrRefusal elementwise_kernel(const ir::Function& graph, const ir::Op& op) {
  const auto [names, expression] = formula(op);
  if (names.empty()) return unsupported(op);
  return broadcast_kernel(graph, op, names, expression);
}

KernelOrRefusal fused_elementwise_kernel(const ir::Function& graph, std::span<const ir::OpId> ops,
                                         std::span<const ir::ValueId> inputs, std::span<const ir::ValueId> outputs) {
  const std::vector<int64_t> space = dims_of(graph, graph.ops[ops.front()].results.at(0));
  std::string declarations;
  int binding = 0;
  auto buffer = [&](const char* access, const std::string& name) {
    declarations += storage_buffer(binding, access, "K_FLOAT", name);
    ++binding;
  };
  std::map<ir::ValueId, std::string> variable; // what each value is called in the kernel
  std::string body;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string n = std::to_string(i);
    buffer("readonly", "in" + n);
    declarations += broadcast_index_function("index" + n, space, dims_of(graph, inputs[i]));
    body += "    float v" + std::to_string(inputs[i]) + " = " + load("in" + n, "index" + n + "(i)") + ";\n";
    variable[inputs[i]] = "v" + std::to_string(inputs[i]);
  }
  for (size_t j = 0; j < outputs.size(); ++j)
    buffer("writeonly", "out" + std::to_string(j));
  declarations += math_library() + kElementwiseHelpers;
  for (ir::OpId id : ops) {
    const ir::Op& op = graph.ops[id];
    const auto [names, expression] = formula(op);
    if (names.empty() || op.results.size() != 1 || dims_of(graph, op.results[0]) != space)
      return "kiln." + std::string(ir::op_info(op.kind).name) + " does not fuse here";
    // Each op in a block of its own, its operands under the names its formula uses.
    const std::string result = "v" + std::to_string(op.results[0]);
    body += "    float " + result + ";\n    {\n";
    for (size_t k = 0; k < names.size(); ++k) {
      const auto known = variable.find(op.operands[k]);
      if (known == variable.end()) return "an operand of a fused elementwise op is not an input of the region";
      body += "      float " + names[k] + " = " + known->second + ";\n";
    }
    body += "      precise float y = " + expression + ";\n      " + result + " = y;\n    }\n";
    variable[op.results[0]] = result;
  }
  for (size_t j = 0; j < outputs.size(); ++j)
    body += "    " + store("out" + std::to_string(j), "i", variable.at(outputs[j]));
  return elementwise_dispatch(declarations, body, numel(space), "vulkan.fused");
}

} // namespace kiln::vulkan::glsl
