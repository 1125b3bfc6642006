#include "interp/read_through_matmul.hpp"
#include "exec/threads.hpp"
#include "interp/kernels/gemm.hpp"
#include "ir/ops.hpp"

namespace kiln::interp {

namespace {

class ReadThroughMatmul final : public exec::StepRunner {
public:
  ReadThroughMatmul(Tensor weight, int64_t rows, int64_t k, int64_t n)
      : weight_(std::move(weight)), gemm_{.m = rows,
                                          .n = n,
                                          .k = k,
                                          .lda = k,
                                          .ldb = k,
                                          .ldc = n,
                                          .b_transposed = true,
                                          .threads = exec::num_threads()} {}

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    if (gemm_.m == 0 || gemm_.n == 0) return;
    GemmF32 gemm = gemm_;
    gemm.a = inputs[0].as<const float>();
    gemm.b = weight_.data<float>();
    gemm.c = outputs[0].as<float>();
    gemm.workspace = scratch.empty() ? nullptr : reinterpret_cast<float*>(scratch.data());
    gemm_f32(gemm);
  }
  size_t scratch_bytes() const override { return gemm_workspace_bytes(gemm_); }

private:
  Tensor weight_; // W, [n, k]: held so a mapped file stays mapped
  GemmF32 gemm_;  // the product's shape; pointers set per call
};

const exec::ValuePlan& transpose_source(const ir::Function& fn, ir::ValueId b,
                                        const std::vector<exec::ValuePlan>& values) {
  return values[fn.ops.at(size_t(fn.values[b].def_op)).operands.at(0)];
}

} // namespace

std::optional<std::string> refuse_read_through_matmul(const ir::Op& op, const std::vector<exec::ValuePlan>& values) {
  const exec::ValuePlan &a = values[op.operands.at(0)], &b = values[op.operands.at(1)], &out = values[op.results.at(0)];
  if (!b.read_through) return "B is not a weight's transpose read in place";
  if (a.dtype != DType::f32 || out.dtype != DType::f32) return "not f32";
  if (a.dims.size() < 2 || b.dims.size() != 2) return "A has fewer than two dims";
  const int64_t k = b.dims[0], n = b.dims[1];
  if (k == 0) return "the inner dim is 0";
  if (a.dims.back() != k || out.dims.back() != n || numel_of(out.dims) != numel_of(a.dims) / k * n)
    return "the shapes do not agree (the kernel reports it)";
  return std::nullopt;
}

std::shared_ptr<const exec::StepRunner> make_read_through_matmul(const ir::Function& fn, const ir::Op& op,
                                                                 const std::vector<exec::ValuePlan>& values) {
  if (auto why = refuse_read_through_matmul(op, values))
    throw Error(ErrorKind::internal, ir::op_place(op) + ": read-through matmul of a matmul it refuses: " + *why);
  const exec::ValuePlan &a = values[op.operands[0]], &b = values[op.operands[1]];
  return std::make_shared<ReadThroughMatmul>(transpose_source(fn, op.operands[1], values).bound,
                                             numel_of(a.dims) / b.dims[0], b.dims[0], b.dims[1]);
}

} // namespace kiln::interp
