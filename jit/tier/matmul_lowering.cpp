#include "core/environment.hpp"
#include "jit/dnnl/matmul.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"
#include <cstdlib>
#include <kiln/error.hpp>
#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::jit::tier {

namespace {

class MatmulRunner final : public interp::StepRunner {
public:
  MatmulRunner(dnnl_ops::MatmulPrimitive primitive, std::optional<Tensor> constant_b, bool has_bias, int residuals)
      : primitive_(std::move(primitive)), constant_b_(std::move(constant_b)), has_bias_(has_bias),
        residuals_(residuals) {}

  void run(std::span<const interp::View> inputs, std::span<const interp::View> outputs) const override {
    dnnl_ops::MatmulArgs args;
    size_t next = 0;
    args.a = inputs[next++].as<const float>();
    if (!constant_b_) args.b = inputs[next++].as<const float>();
    if (has_bias_) args.bias = inputs[next++].as<const float>();
    ResidualPointers residuals(inputs.subspan(next), residuals_);
    args.residuals = residuals.span();
    args.out = outputs[0].as<float>();
    primitive_.execute(args);
  }

private:
  dnnl_ops::MatmulPrimitive primitive_;
  std::optional<Tensor> constant_b_; // keeps a constant B alive: the primitive may read it in place
  bool has_bias_;
  int residuals_;
};

struct MatmulOperandB {
  ir::ValueId value;
  bool transposed = false;
  std::optional<ir::OpId> folded_transpose; // a transpose used only by this matmul
};

MatmulOperandB matmul_operand_b(const GraphRewriter& rw, ir::ValueId b) {
  const ir::Op* def = rw.producer(b);
  if (!def || def->kind != ir::OpKind::transpose || !swaps_last_two_axes(*def)) return {b};
  const auto def_id = ir::OpId(def - rw.source().ops.data());
  const bool only_use = rw.single_user(b).has_value();
  return {def->operands[0], true, only_use ? std::optional(def_id) : std::nullopt};
}

dnnl_ops::MatmulPrimitive make_matmul(const dnnl_ops::MatmulParams& params, const std::optional<Tensor>& constant_b,
                                      const std::string& name) {
  if (!constant_b) return dnnl_ops::MatmulPrimitive(params);
  return dnnl_ops::MatmulPrimitive(params, dnnl_ops::ConstantWeight{constant_b->data<float>(), name, 0, nullptr});
}

} // namespace

bool swaps_last_two_axes(const ir::Op& transpose) {
  const std::vector<int64_t>& perm = ir::params_of<ir::TransposeParams>(transpose).perm;
  const auto rank = int64_t(perm.size());
  if (rank < 2) return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[size_t(i)] != i) return false;
  return perm[size_t(rank - 2)] == rank - 1 && perm[size_t(rank - 1)] == rank - 2;
}

// KILN_JIT_MATMUL=dnnl|interp|auto. auto takes oneDNN only on AVX-512: oneDNN 2.6's f32 matmul on
// AVX2 (gemm:jit) repacks B on every call, and the interpreter's block-parallel Eigen GEMM with the
// epilogue fused by xbyak measured faster (mlp b64 1.19 vs 1.98 ms, attn b1 1.47 vs 1.83 ms).
std::optional<std::string> matmul_left_to_interpreter() {
  const std::string choice = env::jit_matmul().value_or("auto");
  if (choice == "dnnl") return std::nullopt;
  if (choice == "interp") return "KILN_JIT_MATMUL=interp";
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) return std::nullopt;
  return "no AVX-512: oneDNN 2.6 repacks B every call here; the interpreter's GEMM is faster";
}

bool lower_matmul(GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  if (auto why = matmul_left_to_interpreter()) {
    rw.refuse(id, "dnnl.matmul", *why);
    return false;
  }
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) {
    rw.refuse(id, "dnnl.matmul", "not f32");
    return false;
  }
  const MatmulOperandB b = matmul_operand_b(rw, op.operands[1]);
  const std::optional<Tensor> constant_b = constant_tensor(rw, b.value);
  dnnl_ops::MatmulParams params{rw.dims(op.operands[0]), rw.dims(b.value), b.transposed, false, {}};
  Epilogue epilogue = collect_epilogue(rw, op.results[0], true);
  params.has_bias = epilogue.bias.has_value();
  params.post_ops = epilogue.post_ops;
  if (auto why = dnnl_ops::MatmulPrimitive::refuse(params)) {
    rw.refuse(id, "dnnl.matmul with its epilogue", *why);
    epilogue = Epilogue{{}, std::nullopt, {}, {}, op.results[0]};
    params.has_bias = false;
    params.post_ops.clear();
    if (auto bare_why = dnnl_ops::MatmulPrimitive::refuse(params)) {
      rw.refuse(id, "dnnl.matmul", *bare_why);
      return false;
    }
  }
  const std::string b_name = constant_b ? constant_name(rw, b.value) : "";
  auto primitive = make_matmul(params, constant_b, b_name);
  const std::string note = primitive.implementation() + (b.transposed ? ", B transposed" : "") +
                           (constant_b ? ", constant B '" + b_name + "'" : "");
  auto runner =
      std::make_shared<MatmulRunner>(std::move(primitive), constant_b, params.has_bias, int(epilogue.residuals.size()));
  interp::LoweredStep step{"dnnl.matmul", {op.operands[0]}, {epilogue.result}, id, std::move(runner)};
  if (!constant_b) step.operands.push_back(b.value);
  if (epilogue.bias) step.operands.push_back(*epilogue.bias);
  step.operands.insert(step.operands.end(), epilogue.residuals.begin(), epilogue.residuals.end());
  if (b.folded_transpose && rw.is_deferred(*b.folded_transpose))
    rw.take(*b.folded_transpose, "dnnl.matmul", "read as transposed B by op " + std::to_string(id));
  rw.take(id, "dnnl.matmul", note);
  take_epilogue(rw, epilogue, "dnnl.matmul", id);
  if (epilogue.ops.empty())
    rw.emit_step(std::move(step));
  else
    rw.emit_step_at(epilogue.ops.back(), std::move(step));
  return true;
}

} // namespace kiln::jit::tier
