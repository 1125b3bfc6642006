#include "jit/tier/implementation_table.hpp"
#include "core/environment.hpp"
#include "exec/cpu_features.hpp"
#include "jit/tier/lowerings.hpp"
#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::jit::tier {

namespace {

using ir::OpKind;

void keep_op(GraphRewriter& rw, ir::OpId id) { rw.keep_op(id); }

const Implementation kInterpreter{{"interp"}, nullptr, keep_op};
const Implementation kExtension{{"extension"}, nullptr, keep_op}; // a custom op runs its extension's kernel

// KILN_JIT_MATMUL=dnnl|interp|auto edits the list, never the lowering.
std::vector<Implementation> matmul_list() {
  Implementation dnnl = kDnnlMatmul;
  const std::string choice = env::jit_matmul().value_or("auto");
  if (choice == "interp") dnnl.switched_off = "KILN_JIT_MATMUL=interp";
  if (choice == "dnnl") dnnl.min_isa = exec::CpuIsa::baseline;
  return {dnnl, kInterpreter};
}

} // namespace

exec::CpuIsa jit_cpu_isa() {
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) return exec::CpuIsa::avx512_core;
  return exec::cpu_has_avx2_fma() ? exec::CpuIsa::avx2_fma : exec::CpuIsa::baseline;
}

// The switch names every OpKind, so -Wswitch flags an op added without a list.
std::vector<Implementation> jit_implementations(ir::OpKind kind) {
  switch (kind) {
  case OpKind::matmul: return matmul_list();
  case OpKind::conv2d: return {kDnnlConv2d, kInterpreter};
  case OpKind::softmax:
  case OpKind::log_softmax: return {kDnnlSoftmax, kInterpreter};
  case OpKind::layer_norm: return {kDnnlLayerNorm, kInterpreter};
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d: return {kDnnlPool2d, kInterpreter};
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min: return {kDnnlReduction, kInterpreter};
  case OpKind::transpose: return {kTransposedB, kInterpreter};
  case OpKind::custom: return {kExtension};
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
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum:
  case OpKind::compare:
  case OpKind::where:
  case OpKind::clamp:
  case OpKind::cast: return {kXbyakRegion, kInterpreter};
  case OpKind::argmax:
  case OpKind::rms_norm:
  case OpKind::batch_norm:
  case OpKind::reshape:
  case OpKind::broadcast_to:
  case OpKind::concat:
  case OpKind::split:
  case OpKind::slice:
  case OpKind::squeeze:
  case OpKind::unsqueeze:
  case OpKind::gather:
  case OpKind::pad:
  case OpKind::constant:
  case OpKind::constant_external:
  case OpKind::full:
  case OpKind::arange:
  case OpKind::buffer_store:
  case OpKind::call: return {kInterpreter};
  }
  return {kInterpreter};
}

} // namespace kiln::jit::tier
