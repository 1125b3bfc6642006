#include "interp/implementation_table.hpp"
#include "core/environment.hpp"
#include "exec/cpu_features.hpp"
#include "interp/extension_runner.hpp"
#include "interp/kernel_table.hpp"
#include "interp/kernels/kernel_support.hpp"
#include "interp/op_selection.hpp"
#include "interp/packed_matmul.hpp"
#include "interp/read_through_matmul.hpp"
#include "ir/custom_ops.hpp"
#include "kiln_config.h"
#include "kiln_ops.h"
#include <vector>

namespace kiln::interp {

namespace {

using ir::OpKind;

exec::StepChoice run_kernel(const exec::StepQuery& query) {
  return {exec::StepKind::kernel, kernel_for(query.op.kind), nullptr, {}};
}

exec::StepChoice run_buffer_store(const exec::StepQuery&) {
  return {exec::StepKind::buffer_store, nullptr, nullptr, {}};
}

std::vector<ir::ValueType> types_of(const ir::Function& graph, const std::vector<ir::ValueId>& values) {
  std::vector<ir::ValueType> types;
  for (ir::ValueId v : values)
    types.push_back(graph.type_of(v));
  return types;
}

exec::StepChoice run_extension(const exec::StepQuery& query) {
  const ir::Op& op = query.op;
  return {exec::StepKind::runner, nullptr,
          make_extension_runner(op, types_of(query.graph, op.operands), types_of(query.graph, op.results)),
          ir::custom_op_name(op.attrs)};
}

std::optional<std::string> refuse_packed_gemm(const exec::StepQuery& query) {
  return refuse_packed_matmul(query.op, query.values);
}

exec::StepChoice run_packed_gemm(const exec::StepQuery& query) {
  std::shared_ptr<const exec::StepRunner> runner = make_packed_matmul(query.graph, query.op, query.values, query.forms);
  return {exec::StepKind::runner, nullptr, std::move(runner), {}};
}

// Ahead of the kernel: Eigen packs B again on every call, most of the work at small batches
// (packed_matmul.hpp). Its NEON kernel needs nothing beyond aarch64's baseline.
constexpr exec::CpuIsa kPackedIsa = KILN_HAS_NEON_KERNELS ? exec::CpuIsa::baseline : exec::CpuIsa::avx2_fma;
constexpr std::string_view kPackedWhy = KILN_HAS_NEON_KERNELS ? "" : "its kernel is AVX2+FMA code";
constexpr exec::Implementation kPackedGemm{
    {"packed_gemm", kPackedIsa, kPackedWhy}, refuse_packed_gemm, run_packed_gemm};
constexpr exec::Implementation kPackedGemmOff{
    {"packed_gemm", kPackedIsa, kPackedWhy, "KILN_PACK_WEIGHTS=0"}, refuse_packed_gemm, run_packed_gemm};

std::optional<std::string> refuse_read_through_gemm(const exec::StepQuery& query) {
  return refuse_read_through_matmul(query.op, query.values);
}

exec::StepChoice run_read_through_gemm(const exec::StepQuery& query) {
  return {exec::StepKind::runner, nullptr, make_read_through_matmul(query.graph, query.op, query.values), {}};
}

constexpr exec::Implementation kReadThroughGemm{{"read_through_gemm"}, refuse_read_through_gemm, run_read_through_gemm};
constexpr exec::Implementation kKernel{{"interp"}, nullptr, run_kernel};

// Takes every op of a kind -Dops left out, so that planning one fails naming the op and the fix.
exec::StepChoice refuse_unbuilt(const exec::StepQuery& query) { refuse_unbuilt_op(query.op); }

} // namespace

exec::CpuIsa interp_cpu_isa() {
  return KILN_HAS_AVX2_KERNELS && exec::cpu_has_avx2_fma() ? exec::CpuIsa::avx2_fma : exec::CpuIsa::baseline;
}

// Every op with a kernel (kernel_table.cpp's switch names every OpKind, so -Wswitch asks there
// whether a new op has one) runs it; only the ops with more, or other, implementations are named.
std::span<const exec::Implementation> interp_implementations(ir::OpKind kind) {
  static constexpr exec::Implementation kernel_only[] = {kKernel};
  static constexpr exec::Implementation buffer_store[] = {{{"buffer_store"}, nullptr, run_buffer_store}};
  static constexpr exec::Implementation extension[] = {{{"extension"}, nullptr, run_extension}};
  static constexpr exec::Implementation unbuilt[] = {{{"not_built"}, nullptr, refuse_unbuilt}};
  if constexpr (KILN_OP_BUILT_matmul) {
    static constexpr exec::Implementation matmul[] = {kPackedGemm, kReadThroughGemm, kKernel};
    static constexpr exec::Implementation matmul_unpacked[] = {kPackedGemmOff, kReadThroughGemm, kKernel};
    // Read at every plan, so one process can compare both.
    if (kind == OpKind::matmul) return env::pack_weights().value_or(true) ? matmul : matmul_unpacked;
  }
  if (kind == OpKind::buffer_store) return buffer_store;
  if (kind == OpKind::custom) return extension;
  if (kernel_for(kind)) return kernel_only;
  if (!ir::has_trait(kind, ir::kNoKernel)) return unbuilt;
  // Constants and weights are bound when planning, calls inlined before: no list.
  return {};
}

} // namespace kiln::interp
