#include "vulkan/op_kernels.hpp"
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"

namespace kiln::vulkan {

namespace {

using ir::OpKind;
using Generator = glsl::KernelOrRefusal (*)(const ir::Function&, const ir::Op&);

// The one table from op kind to the generator of its device kernel; null: left to the CPU.
Generator generator_of(OpKind kind) {
  switch (kind) {
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::relu:
  case OpKind::gelu:
  case OpKind::silu:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos:
  case OpKind::hardsigmoid:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
  case OpKind::sign:
  case OpKind::hardswish:
  case OpKind::leaky_relu:
  case OpKind::elu:
  case OpKind::softplus:
  case OpKind::log1p:
  case OpKind::expm1:
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum:
  case OpKind::floor_divide:
  case OpKind::remainder:
  case OpKind::clamp:
  case OpKind::cast: return glsl::elementwise_kernel;
  case OpKind::matmul: return glsl::matmul_kernel;
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min:
  case OpKind::reduce_prod:
  case OpKind::reduce_var:
  case OpKind::reduce_std: return glsl::reduction_kernel;
  case OpKind::softmax:
  case OpKind::log_softmax:
  case OpKind::layer_norm:
  case OpKind::rms_norm:
  case OpKind::batch_norm:
  case OpKind::group_norm: return glsl::normalization_kernel;
  case OpKind::reshape:
  case OpKind::squeeze:
  case OpKind::unsqueeze:
  case OpKind::transpose:
  case OpKind::broadcast_to:
  case OpKind::concat:
  case OpKind::split:
  case OpKind::slice:
  case OpKind::pad:
  case OpKind::tril:
  case OpKind::triu: return glsl::shape_kernel;
  case OpKind::conv2d:
  case OpKind::conv1d:
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d:
  case OpKind::adaptive_avg_pool2d: return glsl::conv_pool_kernel;
  default: return nullptr;
  }
}

} // namespace

std::variant<OpKernel, std::string> op_kernel(const ir::Function& graph, ir::OpId op_id) {
  const ir::Op& op = graph.ops.at(op_id);
  const Generator generator = generator_of(op.kind);
  if (!generator) return glsl::unsupported(op);
  if (std::string why = glsl::common_refusal(graph, op); !why.empty()) return why;
  return generator(graph, op);
}

std::variant<OpKernel, std::string> fused_elementwise_kernel(const ir::Function& graph, std::span<const ir::OpId> ops,
                                                             std::span<const ir::ValueId> inputs,
                                                             std::span<const ir::ValueId> outputs) {
  for (ir::OpId id : ops)
    if (std::string refusal = glsl::common_refusal(graph, graph.ops[id]); !refusal.empty()) return refusal;
  return glsl::fused_elementwise_kernel(graph, ops, inputs, outputs);
}

std::string kernel_source(const OpKernel& kernel, Storage storage) {
  if (storage == Storage::f32) return kernel.glsl;
  // After `#version`, before the prelude that reads it (glsl::prelude).
  const size_t line_end = kernel.glsl.find('\n');
  std::string source = kernel.glsl;
  source.insert(line_end == std::string::npos ? source.size() : line_end + 1, "#define KILN_F16_STORAGE 1\n");
  return source;
}

} // namespace kiln::vulkan
