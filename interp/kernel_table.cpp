#include "interp/kernel_table.hpp"
#include "interp/kernels/kernels.hpp"

namespace kiln::interp {

// The switch names every OpKind, so -Wswitch flags an op added without a kernel decision.
exec::Kernel kernel_for(ir::OpKind kind) {
  using ir::OpKind;
  switch (kind) {
  case OpKind::neg: return neg;
  case OpKind::abs: return abs;
  case OpKind::exp: return exp;
  case OpKind::log: return log;
  case OpKind::sqrt: return sqrt;
  case OpKind::rsqrt: return rsqrt;
  case OpKind::tanh: return tanh;
  case OpKind::sigmoid: return sigmoid;
  case OpKind::relu: return relu;
  case OpKind::gelu: return gelu;
  case OpKind::silu: return silu;
  case OpKind::erf: return erf;
  case OpKind::sin: return sin;
  case OpKind::cos: return cos;
  case OpKind::add: return add;
  case OpKind::sub: return sub;
  case OpKind::mul: return mul;
  case OpKind::div: return div;
  case OpKind::pow: return pow;
  case OpKind::maximum: return maximum;
  case OpKind::minimum: return minimum;
  case OpKind::compare: return compare;
  case OpKind::where: return where;
  case OpKind::cast: return cast;
  case OpKind::clamp: return clamp;
  case OpKind::reduce_sum: return reduce_sum;
  case OpKind::reduce_mean: return reduce_mean;
  case OpKind::reduce_max: return reduce_max;
  case OpKind::reduce_min: return reduce_min;
  case OpKind::argmax: return argmax;
  case OpKind::softmax: return softmax;
  case OpKind::log_softmax: return log_softmax;
  case OpKind::layer_norm: return layer_norm;
  case OpKind::rms_norm: return rms_norm;
  case OpKind::batch_norm: return batch_norm;
  case OpKind::matmul: return matmul;
  case OpKind::conv2d: return conv2d;
  case OpKind::max_pool2d: return max_pool2d;
  case OpKind::avg_pool2d: return avg_pool2d;
  case OpKind::reshape: return reshape;
  case OpKind::transpose: return transpose;
  case OpKind::broadcast_to: return broadcast_to;
  case OpKind::concat: return concat;
  case OpKind::split: return split;
  case OpKind::slice: return slice;
  case OpKind::squeeze: return squeeze;
  case OpKind::unsqueeze: return unsqueeze;
  case OpKind::gather: return gather;
  case OpKind::pad: return pad;
  case OpKind::full: return full;
  case OpKind::arange: return arange;
  // The plan executor runs these itself: they read the registry, write buffers or call bodies.
  case OpKind::constant:
  case OpKind::constant_external:
  case OpKind::buffer_store:
  case OpKind::call:
  case OpKind::custom: return nullptr;
  }
  return nullptr;
}

size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs) {
  if (op.kind == ir::OpKind::conv2d) return conv2d_scratch_bytes(exec::KernelArgs{op, inputs, outputs});
  return 0;
}

} // namespace kiln::interp
