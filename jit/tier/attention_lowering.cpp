#include "exec/threads.hpp"
#include "jit/dnnl/matmul.hpp"
#include "jit/dnnl/scratch.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"
#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::jitc::tier {

namespace {

// Query rows per block: the block's scores [rows, S] stay in cache between its two matmuls, and
// the whole [L, S] matrix of a head never exists.
constexpr int64_t kBlockRows = 64;

struct AttentionDims {
  int64_t batches = 0, L = 0, S = 0, E = 0, Ev = 0;
};

// How the mask reaches each score: its dims align right on [batch..., L, S] and broadcast.
struct MaskLayout {
  enum class Kind { none, boolean, additive } kind = Kind::none;
  std::vector<int64_t> batch_offsets; // per flattened batch index
  int64_t row_stride = 0, col_stride = 0;
};

MaskLayout mask_layout(const std::vector<int64_t>& mask_dims, const std::vector<int64_t>& batch_dims, bool boolean) {
  const size_t rank = batch_dims.size() + 2;
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < mask_dims.size(); ++i) {
    const int64_t dim = mask_dims[mask_dims.size() - 1 - i];
    strides[rank - 1 - i] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  MaskLayout layout{
      boolean ? MaskLayout::Kind::boolean : MaskLayout::Kind::additive, {}, strides[rank - 2], strides[rank - 1]};
  int64_t batches = 1;
  for (int64_t d : batch_dims)
    batches *= d;
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b, offset = 0;
    for (size_t d = batch_dims.size(); d-- > 0;) {
      offset += (rest % batch_dims[d]) * strides[d];
      rest /= batch_dims[d];
    }
    layout.batch_offsets.push_back(offset);
  }
  return layout;
}

// One block of query rows: scores = q_blk · kᵀ (oneDNN, k read transposed in place), then scale,
// mask and a max-subtracted softmax in place, then out_blk = scores · v (oneDNN).
struct BlockPrimitives {
  dnnl_ops::MatmulPrimitive scores, weighted;
};

BlockPrimitives block_primitives(const AttentionDims& d, int64_t rows) {
  return {dnnl_ops::MatmulPrimitive(dnnl_ops::MatmulParams{{rows, d.E}, {d.S, d.E}, true}),
          dnnl_ops::MatmulPrimitive(dnnl_ops::MatmulParams{{rows, d.S}, {d.S, d.Ev}})};
}

class AttentionRunner final : public exec::StepRunner {
public:
  AttentionRunner(AttentionDims dims, MaskLayout mask, bool is_causal, float scale)
      : d_(dims), mask_(std::move(mask)), is_causal_(is_causal), scale_(scale),
        full_(block_primitives(dims, std::min(kBlockRows, dims.L))) {
    if (d_.L > kBlockRows && d_.L % kBlockRows) tail_.emplace(block_primitives(d_, d_.L % kBlockRows));
  }

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch_memory) const override {
    dnnl_ops::Scratch scratch(scratch_memory, scratch_bytes());
    auto* scores = static_cast<float*>(scratch.take(scores_bytes()));
    const size_t primitive_bytes = primitive_scratch_bytes();
    const std::span<std::byte> primitive_scratch(static_cast<std::byte*>(scratch.take(primitive_bytes)),
                                                 primitive_bytes);
    const float *q = inputs[0].as<const float>(), *k = inputs[1].as<const float>(), *v = inputs[2].as<const float>();
    const void* mask = inputs.size() == 4 ? inputs[3].data : nullptr;
    float* out = outputs[0].as<float>();
    for (int64_t b = 0; b < d_.batches; ++b) {
      for (int64_t r0 = 0; r0 < d_.L; r0 += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, d_.L - r0);
        const BlockPrimitives& p = rows == std::min(kBlockRows, d_.L) ? full_ : *tail_;
        p.scores.execute({.a = q + (b * d_.L + r0) * d_.E, .b = k + b * d_.S * d_.E, .out = scores}, primitive_scratch);
        exec::parallel_for(rows, exec::worth_parallel(rows * d_.S),
                           [&](int64_t r) { softmax_row(scores + r * d_.S, mask, b, r0 + r); });
        p.weighted.execute({.a = scores, .b = v + b * d_.S * d_.Ev, .out = out + (b * d_.L + r0) * d_.Ev},
                           primitive_scratch);
      }
    }
  }

  size_t scratch_bytes() const override {
    return dnnl_ops::scratch_piece(scores_bytes()) + dnnl_ops::scratch_piece(primitive_scratch_bytes());
  }

private:
  size_t scores_bytes() const { return size_t(std::min(kBlockRows, d_.L) * d_.S) * sizeof(float); }
  size_t primitive_scratch_bytes() const {
    size_t bytes = std::max(full_.scores.scratch_bytes(), full_.weighted.scratch_bytes());
    if (tail_) bytes = std::max({bytes, tail_->scores.scratch_bytes(), tail_->weighted.scratch_bytes()});
    return bytes;
  }

  // Scale, mask, softmax of query row i of batch b, in place. All -inf gives NaN (0 / 0), as torch.
  void softmax_row(float* row, const void* mask, int64_t b, int64_t i) const {
    constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
    const int64_t base = mask ? mask_.batch_offsets[size_t(b)] + i * mask_.row_stride : 0;
    float top = kMinusInf;
    for (int64_t j = 0; j < d_.S; ++j) {
      float s = row[j] * scale_;
      if (is_causal_ && j > i) s = kMinusInf;
      if (mask_.kind == MaskLayout::Kind::boolean)
        s = static_cast<const uint8_t*>(mask)[base + j * mask_.col_stride] ? s : kMinusInf;
      if (mask_.kind == MaskLayout::Kind::additive) s += static_cast<const float*>(mask)[base + j * mask_.col_stride];
      row[j] = s;
      top = std::isnan(s) || s > top ? s : top;
    }
    float total = 0;
    for (int64_t j = 0; j < d_.S; ++j)
      total += row[j] = std::exp(row[j] - top);
    const float inverse = 1.0f / total;
    for (int64_t j = 0; j < d_.S; ++j)
      row[j] *= inverse;
  }

  AttentionDims d_;
  MaskLayout mask_;
  bool is_causal_;
  float scale_;
  BlockPrimitives full_;
  std::optional<BlockPrimitives> tail_;
};

std::optional<std::string> refuse_attention(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  const std::span<const ir::ValueId> qkv(op.operands.data(), 3);
  if (!is_f32(rw, qkv) || !is_f32(rw, op.results)) return "not f32";
  if (op.operands.size() == 4 && rw.dtype(op.operands[3]) != DType::f32 && rw.dtype(op.operands[3]) != DType::boolean)
    return "mask neither f32 nor bool";
  const std::vector<int64_t> q = rw.dims(op.operands[0]), k = rw.dims(op.operands[1]);
  if (q[q.size() - 2] == 0 || k[k.size() - 2] == 0 || q.back() == 0 || rw.dims(op.operands[2]).back() == 0)
    return "an empty L, S, E or Ev";
  return std::nullopt;
}

void lower_attention(GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  const std::vector<int64_t> q = rw.dims(op.operands[0]), k = rw.dims(op.operands[1]), v = rw.dims(op.operands[2]);
  const size_t rank = q.size();
  const std::vector<int64_t> batch_dims(q.begin(), q.end() - 2);
  AttentionDims dims{1, q[rank - 2], k[rank - 2], q[rank - 1], v[rank - 1]};
  for (int64_t b : batch_dims)
    dims.batches *= b;
  const auto& params = ir::params_of<ir::AttentionParams>(op);
  MaskLayout mask;
  if (op.operands.size() == 4)
    mask = mask_layout(rw.dims(op.operands[3]), batch_dims, rw.dtype(op.operands[3]) == DType::boolean);
  const float scale = float(params.scale.value_or(1.0 / std::sqrt(double(dims.E))));
  auto runner = std::make_shared<AttentionRunner>(dims, std::move(mask), params.is_causal, scale);
  const std::string name(kFusedAttention.name);
  rw.take(id, name, "blocks of " + std::to_string(std::min(kBlockRows, dims.L)) + " query rows, oneDNN matmuls");
  rw.emit_step({name, op.operands, op.results, id, std::move(runner)});
}

} // namespace

constexpr ir::OpKind kAttention[] = {ir::OpKind::scaled_dot_product_attention};
const Implementation kFusedAttention{{"fused_attention"}, refuse_attention, lower_attention, kAttention};

} // namespace kiln::jitc::tier
