#include "jit/tier/partitioner.hpp"
#include "ir/ops.hpp"
#include "jit/tier/lowerings.hpp"

namespace kiln::jit::tier {

namespace {

// A transpose read only as the B operand of a matmul waits: the matmul may read its input as a
// transposed B instead, and then the transpose never runs.
bool feeds_only_matmul_b(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  if (!swaps_last_two_axes(op)) return false;
  const auto user = rw.single_user(op.results[0]);
  if (!user) return false;
  const ir::Op& matmul = rw.op(*user);
  return matmul.kind == ir::OpKind::matmul && matmul.operands[1] == op.results[0] &&
         matmul.operands[0] != op.results[0];
}

// One table: the lowering that may take each op kind. False leaves the op to the interpreter.
bool lower_op(GraphRewriter& rw, ir::OpId id) {
  switch (rw.op(id).kind) {
  case ir::OpKind::matmul: return lower_matmul(rw, id);
  case ir::OpKind::conv2d: return lower_conv2d(rw, id);
  case ir::OpKind::softmax:
  case ir::OpKind::log_softmax: return lower_softmax(rw, id);
  case ir::OpKind::layer_norm: return lower_layer_norm(rw, id);
  case ir::OpKind::max_pool2d:
  case ir::OpKind::avg_pool2d: return lower_pool2d(rw, id);
  case ir::OpKind::reduce_sum:
  case ir::OpKind::reduce_mean:
  case ir::OpKind::reduce_max:
  case ir::OpKind::reduce_min: return lower_reduction(rw, id);
  case ir::OpKind::transpose:
    if (!feeds_only_matmul_b(rw, id)) return false;
    rw.defer(id);
    return true;
  default: return false;
  }
}

} // namespace

Partition partition_graph(const ir::Function& source, const runtime::WeightMap& weights) {
  GraphRewriter rw(source, weights);
  ir::OpId id = 0;
  while (id < source.ops.size()) {
    // Ops taken by a lowering are skipped; the last op of a fused chain emits the chain's custom op.
    if (rw.emit_scheduled(id) || !rw.is_open(id)) {
      ++id;
      continue;
    }
    if (is_elementwise(source.ops[id].kind)) {
      const ir::OpId next = lower_elementwise_region(rw, id);
      if (next != id) {
        id = next;
        continue;
      }
    }
    if (!lower_op(rw, id)) rw.copy_op(id);
    ++id;
  }
  return rw.finish();
}

} // namespace kiln::jit::tier
