#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/engine.hpp"
#include "jit/dnnl/matmul.hpp"
#include "jit/tier/lowerings.hpp"
#include <array>
#include <cstdlib>
#include <kiln/error.hpp>
#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::jit::tier {

namespace {

using dnnl_ops::Activation;
using dnnl_ops::PostOp;

bool is_f32(const GraphRewriter& rw, std::span<const ir::ValueId> values) {
  for (ir::ValueId v : values)
    if (rw.dtype(v) != DType::f32) return false;
  return true;
}

// The data of a constant or weight operand, when it is f32.
std::optional<Tensor> constant_tensor(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  if (!def || rw.dtype(v) != DType::f32) return std::nullopt;
  if (def->kind == ir::OpKind::constant) return def->attrs.get_tensor("value");
  if (def->kind != ir::OpKind::constant_external) return std::nullopt;
  auto found = rw.weights().find(def->attrs.get_string("name"));
  if (found == rw.weights().end()) return std::nullopt;
  return found->second;
}

std::string constant_name(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  return def->kind == ir::OpKind::constant_external ? def->attrs.get_string("name") : "%" + std::to_string(v);
}

std::optional<float> scalar_constant(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  if (!def || def->kind != ir::OpKind::constant || rw.dtype(v) != DType::f32) return std::nullopt;
  const Tensor& value = def->attrs.get_tensor("value");
  if (value.numel() != 1) return std::nullopt;
  return float(value.item_as_double());
}

std::optional<Activation> activation_of(const ir::Op& op) {
  switch (op.kind) {
  case ir::OpKind::relu: return Activation::relu;
  case ir::OpKind::tanh: return Activation::tanh;
  case ir::OpKind::sigmoid: return Activation::sigmoid;
  case ir::OpKind::silu: return Activation::silu;
  case ir::OpKind::gelu: {
    const ir::Attr* approximate = op.attrs.find("approximate");
    const bool tanh_form = approximate && std::get<std::string>(approximate->value) == "tanh";
    return tanh_form ? Activation::gelu_tanh : Activation::gelu_erf;
  }
  default: return std::nullopt;
  }
}

// The single-use ops after a matmul or convolution that its primitive applies in the same pass.
struct Epilogue {
  std::vector<ir::OpId> ops;
  std::optional<ir::ValueId> bias;
  std::vector<ir::ValueId> residuals;
  std::vector<PostOp> post_ops;
  ir::ValueId result = 0;
};

// The other operand of a binary op on `current`, and whether `current` is its first operand.
std::pair<ir::ValueId, bool> other_operand(const ir::Op& op, ir::ValueId current) {
  return op.operands[0] == current ? std::pair{op.operands[1], true} : std::pair{op.operands[0], false};
}

// Folds one more op into the epilogue; false when it does not fit.
bool absorb(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed, Epilogue& epilogue) {
  if (op.results.size() != 1 || rw.dims(op.results[0]) != rw.dims(current) || !is_f32(rw, op.results)) return false;
  if (auto activation = activation_of(op)) {
    epilogue.post_ops.push_back(PostOp::apply(*activation));
    return true;
  }
  if (op.operands.size() != 2 || op.operands[0] == op.operands[1]) return false;
  const auto [other, current_first] = other_operand(op, current);
  if (rw.dtype(other) != DType::f32) return false;
  const std::vector<int64_t> current_dims = rw.dims(current);
  const std::vector<int64_t> other_dims = rw.dims(other);
  const int64_t n = current_dims.back();
  switch (op.kind) {
  case ir::OpKind::add:
    if (bias_allowed && !epilogue.bias && epilogue.post_ops.empty() && !other_dims.empty() && other_dims.back() == n &&
        numel_of(other_dims) == n) {
      epilogue.bias = other;
      return true;
    }
    if (other_dims != current_dims) return false;
    epilogue.residuals.push_back(other);
    epilogue.post_ops.push_back(PostOp::add_residual());
    return true;
  case ir::OpKind::mul:
    if (auto factor = scalar_constant(rw, other)) {
      epilogue.post_ops.push_back(PostOp::linear(*factor, 0.0f));
      return true;
    }
    return false;
  case ir::OpKind::div:
    if (auto divisor = scalar_constant(rw, other); divisor && current_first) {
      epilogue.post_ops.push_back(PostOp::linear(1.0f / *divisor, 0.0f));
      return true;
    }
    return false;
  default: return false;
  }
}

Epilogue collect_epilogue(const GraphRewriter& rw, ir::ValueId start, bool bias_allowed) {
  Epilogue epilogue;
  epilogue.result = start;
  while (auto user = rw.single_user(epilogue.result)) {
    const ir::Op& op = rw.op(*user);
    if (!rw.is_open(*user) || !absorb(rw, op, epilogue.result, bias_allowed, epilogue)) break;
    epilogue.ops.push_back(*user);
    epilogue.result = op.results[0];
  }
  return epilogue;
}

void take_epilogue(GraphRewriter& rw, const Epilogue& epilogue, const std::string& lowering, ir::OpId head) {
  for (ir::OpId id : epilogue.ops)
    rw.take(id, lowering, "fused into op " + std::to_string(head));
}

// The residual operands of a fused op (they come last), gathered without allocating on the call
// path; oneDNN wrappers refuse more than 32 post-ops, so the array always has room.
class ResidualPointers {
public:
  ResidualPointers(std::span<const interp::View> inputs, int count) : count_(size_t(count)) {
    for (size_t i = 0; i < count_; ++i)
      pointers_[i] = inputs[i].as<const float>();
  }
  std::span<const float* const> span() const { return {pointers_.data(), count_}; }

private:
  std::array<const float*, 32> pointers_{};
  size_t count_;
};

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
  const std::vector<int64_t>& perm = transpose.attrs.get_ints("perm");
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
  const char* env = std::getenv("KILN_JIT_MATMUL");
  const std::string choice = env && *env ? env : "auto";
  if (choice == "dnnl") return std::nullopt;
  if (choice == "interp") return "KILN_JIT_MATMUL=interp";
  if (choice != "auto")
    throw Error(ErrorKind::spec, "KILN_JIT_MATMUL: expected dnnl, interp or auto, got '" + choice + "'");
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
  GraphRewriter::CustomOp custom{"jit.matmul", {op.operands[0]}, {epilogue.result}, op.loc, std::move(runner)};
  if (!constant_b) custom.operands.push_back(b.value);
  if (epilogue.bias) custom.operands.push_back(*epilogue.bias);
  custom.operands.insert(custom.operands.end(), epilogue.residuals.begin(), epilogue.residuals.end());
  if (b.folded_transpose && rw.is_deferred(*b.folded_transpose))
    rw.take(*b.folded_transpose, "dnnl.matmul", "read as transposed B by op " + std::to_string(id));
  rw.take(id, "dnnl.matmul", note);
  take_epilogue(rw, epilogue, "dnnl.matmul", id);
  if (epilogue.ops.empty())
    rw.emit_custom(custom);
  else
    rw.emit_custom_at(epilogue.ops.back(), std::move(custom));
  return true;
}

std::array<int64_t, 2> pair_attr(const ir::Op& op, const std::string& name) {
  const std::vector<int64_t>& values = op.attrs.get_ints(name);
  if (values.size() != 2)
    throw Error(ErrorKind::internal, "jit partitioner: attribute '" + name + "' needs two values");
  return {values[0], values[1]};
}

namespace {

// One convolution of a chain, with the epilogue its primitive applies.
struct ConvStage {
  ir::OpId id = 0;
  std::shared_ptr<const dnnl_ops::Conv2dPrimitive> primitive;
  Tensor weight; // the primitive may read a constant weight in place
  bool has_bias = false;
  Epilogue epilogue;
};

// Runs a chain of convolutions, each feeding the next (one convolution is a chain of one). Between
// them the activations stay in the convolutions' own blocked layout, in this thread's chain
// buffers: cnn b8 spent 0.66 ms per call reordering to NCHW and back.
class ConvChainRunner final : public interp::StepRunner {
public:
  explicit ConvChainRunner(std::vector<ConvStage> stages) : stages_(std::move(stages)) {}

  void run(std::span<const interp::View> inputs, std::span<const interp::View> outputs) const override {
    size_t next = 0;
    const float* input = inputs[next++].as<const float>();
    for (size_t i = 0; i < stages_.size(); ++i) {
      const ConvStage& stage = stages_[i];
      const bool last = i + 1 == stages_.size();
      dnnl_ops::Conv2dArgs args;
      args.input = input;
      args.input_in_own_layout = i > 0;
      if (stage.has_bias) args.bias = inputs[next++].as<const float>();
      const auto residual_count = int(stage.epilogue.residuals.size());
      ResidualPointers residuals(inputs.subspan(next), residual_count);
      next += size_t(residual_count);
      args.residuals = residuals.span();
      const auto slot = i % 2 ? dnnl_ops::ThreadBuffer::chain_odd : dnnl_ops::ThreadBuffer::chain_even;
      args.out = last ? outputs[0].as<float>()
                      : static_cast<float*>(dnnl_ops::thread_buffer(slot, stage.primitive->output_bytes()));
      args.output_in_own_layout = !last;
      stage.primitive->execute(args);
      input = args.out;
    }
  }

private:
  std::vector<ConvStage> stages_;
};

// The convolution at `id` with its epilogue, as oneDNN would run it; nullopt (with the refusal
// recorded when `record`) when it cannot.
std::optional<ConvStage> plan_conv_stage(GraphRewriter& rw, ir::OpId id, bool record) {
  const ir::Op& op = rw.op(id);
  auto refuse = [&](const std::string& lowering, const std::string& why) {
    if (record) rw.refuse(id, lowering, why);
    return std::nullopt;
  };
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return refuse("dnnl.conv2d", "not f32");
  const std::optional<Tensor> weight = constant_tensor(rw, op.operands[1]);
  if (!weight) return refuse("dnnl.conv2d", "the weight is not a constant");
  ConvStage stage{id, nullptr, *weight, op.operands.size() > 2, {}};
  dnnl_ops::Conv2dParams params{
      rw.dims(op.operands[0]),   rw.dims(op.operands[1]),    pair_attr(op, "stride"), pair_attr(op, "padding"),
      pair_attr(op, "dilation"), op.attrs.get_int("groups"), stage.has_bias,          {}};
  stage.epilogue = collect_epilogue(rw, op.results[0], false);
  params.post_ops = stage.epilogue.post_ops;
  if (auto why = dnnl_ops::Conv2dPrimitive::refuse(params)) {
    if (record) rw.refuse(id, "dnnl.conv2d with its epilogue", *why);
    stage.epilogue = Epilogue{{}, std::nullopt, {}, {}, op.results[0]};
    params.post_ops.clear();
    if (auto bare_why = dnnl_ops::Conv2dPrimitive::refuse(params)) return refuse("dnnl.conv2d", *bare_why);
  }
  stage.primitive = std::make_shared<const dnnl_ops::Conv2dPrimitive>(
      params, dnnl_ops::ConstantWeight{weight->data<float>(), constant_name(rw, op.operands[1]), 0, nullptr});
  return stage;
}

// The convolution that alone reads `previous`'s result as its input, in the layout `previous`
// writes it.
std::optional<ConvStage> chained_conv(GraphRewriter& rw, const ConvStage& previous) {
  const std::optional<ir::OpId> user = rw.single_user(previous.epilogue.result);
  if (!user || !rw.is_open(*user)) return std::nullopt;
  const ir::Op& op = rw.op(*user);
  if (op.kind != ir::OpKind::conv2d || op.operands[0] != previous.epilogue.result) return std::nullopt;
  std::optional<ConvStage> next = plan_conv_stage(rw, *user, false);
  if (!next || !next->primitive->reads_layout_of(*previous.primitive)) return std::nullopt;
  return next;
}

} // namespace

bool lower_conv2d(GraphRewriter& rw, ir::OpId id) {
  std::optional<ConvStage> first = plan_conv_stage(rw, id, true);
  if (!first) return false;
  std::vector<ConvStage> stages{std::move(*first)};
  while (auto next = chained_conv(rw, stages.back()))
    stages.push_back(std::move(*next));

  const ir::Op& head = rw.op(id);
  GraphRewriter::CustomOp custom{"jit.conv2d", {head.operands[0]}, {stages.back().epilogue.result}, head.loc, nullptr};
  for (size_t i = 0; i < stages.size(); ++i) {
    const ConvStage& stage = stages[i];
    const ir::Op& op = rw.op(stage.id);
    if (stage.has_bias) custom.operands.push_back(op.operands[2]);
    custom.operands.insert(custom.operands.end(), stage.epilogue.residuals.begin(), stage.epilogue.residuals.end());
    std::string note =
        stage.primitive->implementation() + ", constant weight '" + constant_name(rw, op.operands[1]) + "'";
    if (i > 0) note += ", reads op " + std::to_string(stages[i - 1].id) + "'s result in its blocked layout";
    rw.take(stage.id, "dnnl.conv2d", note);
    take_epilogue(rw, stage.epilogue, "dnnl.conv2d", stage.id);
  }
  const ConvStage& last = stages.back();
  const ir::OpId end = last.epilogue.ops.empty() ? last.id : last.epilogue.ops.back();
  custom.runner = std::make_shared<ConvChainRunner>(std::move(stages));
  if (end == id)
    rw.emit_custom(custom);
  else
    rw.emit_custom_at(end, std::move(custom));
  return true;
}

} // namespace kiln::jit::tier
