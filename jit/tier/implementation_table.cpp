#include "jit/tier/implementation_table.hpp"
#include "core/environment.hpp"
#include "exec/cpu_features.hpp"
#include "ir/ops.hpp"
#include "jit/tier/lowerings.hpp"
#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::jitc::tier {

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

// The kinds a oneDNN primitive or a rewrite takes before the interpreter; every other op follows
// its class (class_list).
const std::pair<OpKind, const Implementation*> kFirstChoice[] = {
    {OpKind::conv2d, &kDnnlConv2d},
    {OpKind::softmax, &kDnnlSoftmax},
    {OpKind::log_softmax, &kDnnlSoftmax},
    {OpKind::layer_norm, &kDnnlLayerNorm},
    {OpKind::max_pool2d, &kDnnlPool2d},
    {OpKind::avg_pool2d, &kDnnlPool2d},
    {OpKind::transpose, &kTransposedB},
    {OpKind::adaptive_avg_pool2d, &kDnnlAdaptivePool2d},
    {OpKind::conv_transpose2d, &kDnnlDeconv2d},
    {OpKind::scaled_dot_product_attention, &kFusedAttention},
};

std::optional<std::vector<Implementation>> kind_list(ir::OpKind kind) {
  if (kind == OpKind::matmul) return matmul_list();
  for (const auto& [listed, first] : kFirstChoice)
    if (listed == kind) return std::vector<Implementation>{*first, kInterpreter};
  return std::nullopt;
}

// Elementwise ops fuse into xbyak regions (which refuse a kind without an emitter), extensions run
// their own kernel, the rest run the interpreter's. The switch names every class.
std::vector<Implementation> class_list(ir::OpClass cls) {
  using C = ir::OpClass;
  switch (cls) {
  case C::unary:
  case C::binary:
  case C::elementwise_other: return {kXbyakRegion, kInterpreter};
  case C::custom: return {kExtension};
  case C::reduction:
  case C::normalization:
  case C::linalg:
  case C::nn:
  case C::shape:
  case C::creation:
  case C::effect:
  case C::call: return {kInterpreter};
  }
  return {kInterpreter};
}

} // namespace

exec::CpuIsa jit_cpu_isa() {
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) return exec::CpuIsa::avx512_core;
  return exec::cpu_has_avx2_fma() ? exec::CpuIsa::avx2_fma : exec::CpuIsa::baseline;
}

std::vector<Implementation> jit_implementations(ir::OpKind kind) {
  if (auto list = kind_list(kind)) return *list;
  return class_list(ir::op_info(kind).cls);
}

} // namespace kiln::jitc::tier
