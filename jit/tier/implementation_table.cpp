#include "jit/tier/implementation_table.hpp"
#include "core/environment.hpp"
#include "exec/cpu_features.hpp"
#include "ir/ops.hpp"
#include "jit/tier/lowerings.hpp"
#include <algorithm>
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

// The oneDNN primitives and rewrites taken before the interpreter, each for the kinds it declares
// (Implementation::first_for); every other op follows its class (class_list).
const Implementation* const kFirstChoices[] = {
    &kDnnlConv2d,  &kDnnlSoftmax,        &kDnnlLayerNorm, &kDnnlPool2d,
    &kTransposedB, &kDnnlAdaptivePool2d, &kDnnlDeconv2d,  &kFusedAttention,
};

std::optional<std::vector<Implementation>> kind_list(ir::OpKind kind) {
  if (kind == OpKind::matmul) return matmul_list();
  for (const Implementation* first : kFirstChoices)
    if (std::find(first->first_for.begin(), first->first_for.end(), kind) != first->first_for.end())
      return std::vector<Implementation>{*first, kInterpreter};
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

std::span<const Implementation* const> first_choices() { return kFirstChoices; }

exec::CpuIsa jit_cpu_isa() {
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) return exec::CpuIsa::avx512_core;
  return exec::cpu_has_avx2_fma() ? exec::CpuIsa::avx2_fma : exec::CpuIsa::baseline;
}

std::vector<Implementation> jit_implementations(ir::OpKind kind) {
  if (auto list = kind_list(kind)) return *list;
  return class_list(ir::op_info(kind).cls);
}

} // namespace kiln::jitc::tier
