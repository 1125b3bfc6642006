#include "ir/text/value_labels.hpp"
#include "jit/dnnl/matmul.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"

namespace kiln::jitc::tier {

namespace {

class MatmulRunner final : public exec::StepRunner {
public:
  MatmulRunner(dnnl_ops::MatmulPrimitive primitive, std::optional<Tensor> constant_b, bool has_bias, int residuals)
      : primitive_(std::move(primitive)), constant_b_(std::move(constant_b)), has_bias_(has_bias),
        residuals_(residuals) {}

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    dnnl_ops::MatmulArgs args;
    size_t next = 0;
    args.a = inputs[next++].as<const float>();
    if (!constant_b_) args.b = inputs[next++].as<const float>();
    if (has_bias_) args.bias = inputs[next++].as<const float>();
    ResidualPointers residuals(inputs.subspan(next), residuals_);
    args.residuals = residuals.span();
    args.out = outputs[0].as<float>();
    primitive_.execute(args, scratch);
  }
  size_t scratch_bytes() const override { return primitive_.scratch_bytes(); }

private:
  dnnl_ops::MatmulPrimitive primitive_;
  std::optional<Tensor> constant_b_; // keeps a constant B alive: the primitive may read it in place
  bool has_bias_;
  int residuals_;
};

struct MatmulOperandB {
  ir::ValueId value = 0;
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

dnnl_ops::MatmulPrimitive make_matmul(const GraphRewriter& rw, const dnnl_ops::MatmulParams& params,
                                      const MatmulOperandB& b, const std::optional<Tensor>& constant_b) {
  if (!constant_b) return dnnl_ops::MatmulPrimitive(params);
  return dnnl_ops::MatmulPrimitive(params, constant_weight(rw, b.value, *constant_b));
}

// oneDNN's matmul for the op, with as much of its epilogue as the primitive takes.
struct MatmulPlan {
  MatmulOperandB b;
  std::optional<Tensor> constant_b;
  dnnl_ops::MatmulParams params;
  Epilogue epilogue;
  std::optional<std::string> epilogue_refusal; // why the epilogue stays out
};

Planned<MatmulPlan> plan_matmul(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return "not f32";
  MatmulPlan plan;
  plan.b = matmul_operand_b(rw, op.operands[1]);
  plan.constant_b = constant_tensor(rw, plan.b.value);
  plan.params = {rw.dims(op.operands[0]), rw.dims(plan.b.value), plan.b.transposed, false, {}};
  plan.epilogue = collect_epilogue(rw, op.results[0], true);
  plan.params.has_bias = plan.epilogue.bias.has_value();
  plan.params.post_ops = plan.epilogue.post_ops;
  if (auto why = dnnl_ops::MatmulPrimitive::refuse(plan.params)) {
    if (plan.epilogue.ops.empty()) return *why;
    plan.epilogue_refusal = *why;
    plan.epilogue = Epilogue{{}, std::nullopt, {}, {}, op.results[0]};
    plan.params.has_bias = false;
    plan.params.post_ops.clear();
    if (auto bare_why = dnnl_ops::MatmulPrimitive::refuse(plan.params)) return *bare_why;
  }
  return plan;
}

std::optional<std::string> refuse_matmul(const GraphRewriter& rw, ir::OpId id) {
  return refusal_of(plan_matmul(rw, id));
}

void lower_matmul(GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  const MatmulPlan plan = std::get<MatmulPlan>(plan_matmul(rw, id));
  const std::string b_name = plan.constant_b ? constant_name(rw, plan.b.value) : "";
  auto primitive = make_matmul(rw, plan.params, plan.b, plan.constant_b);
  std::string note = primitive.implementation() + (plan.b.transposed ? ", B transposed" : "") +
                     (plan.constant_b ? ", constant B '" + b_name + "'" : "");
  if (plan.epilogue_refusal) note += ", not its epilogue: " + *plan.epilogue_refusal;
  auto runner = std::make_shared<MatmulRunner>(std::move(primitive), plan.constant_b, plan.params.has_bias,
                                               int(plan.epilogue.residuals.size()));
  const std::string name(kDnnlMatmul.name);
  exec::LoweredStep step{name, {op.operands[0]}, {plan.epilogue.result}, id, std::move(runner)};
  if (!plan.constant_b) step.operands.push_back(plan.b.value);
  if (plan.epilogue.bias) step.operands.push_back(*plan.epilogue.bias);
  step.operands.insert(step.operands.end(), plan.epilogue.residuals.begin(), plan.epilogue.residuals.end());
  if (plan.b.folded_transpose && rw.is_deferred(*plan.b.folded_transpose))
    rw.take(*plan.b.folded_transpose, name, "read as transposed B by " + ir::op_name(rw.source(), id));
  rw.take(id, name, note);
  take_epilogue(rw, plan.epilogue, name, id);
  if (plan.epilogue.ops.empty())
    rw.emit_step(std::move(step));
  else
    rw.emit_step_at(plan.epilogue.ops.back(), std::move(step));
}

// A transpose read only as the B operand of a matmul waits: the matmul may read its input as a
// transposed B instead, and then the transpose never runs.
std::optional<std::string> refuse_transposed_b(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  if (!swaps_last_two_axes(op)) return "it does not swap the last two axes";
  const auto user = rw.single_user(op.results[0]);
  const ir::Op* matmul = user ? &rw.op(*user) : nullptr;
  if (!matmul || matmul->kind != ir::OpKind::matmul || matmul->operands[1] != op.results[0] ||
      matmul->operands[0] == op.results[0])
    return "its result is not read only as the B of one matmul";
  return std::nullopt;
}

void lower_transposed_b(GraphRewriter& rw, ir::OpId id) { rw.defer(id); }

} // namespace

// oneDNN 2.6's f32 matmul on AVX2 (gemm:jit) repacks B on every call, and the interpreter's
// block-parallel GEMM with the epilogue fused by xbyak measured faster there (mlp b64 1.19 vs
// 1.98 ms, attn b1 1.47 vs 1.83 ms): below AVX-512 the matmul goes on down the list.
const Implementation kDnnlMatmul{
    {"dnnl.matmul", exec::CpuIsa::avx512_core, "oneDNN 2.6 repacks B every call below it; the interpreter is faster"},
    refuse_matmul,
    lower_matmul};

constexpr ir::OpKind kTranspose[] = {ir::OpKind::transpose};
const Implementation kTransposedB{{"transposed_b"}, refuse_transposed_b, lower_transposed_b, kTranspose};

bool swaps_last_two_axes(const ir::Op& transpose) {
  const std::vector<int64_t>& perm = ir::params_of<ir::TransposeParams>(transpose).perm;
  const auto rank = int64_t(perm.size());
  if (rank < 2) return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[size_t(i)] != i) return false;
  return perm[size_t(rank - 2)] == rank - 1 && perm[size_t(rank - 1)] == rank - 2;
}

} // namespace kiln::jitc::tier
