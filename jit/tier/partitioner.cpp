#include "jit/tier/partitioner.hpp"
#include "ir/text/value_labels.hpp"
#include "jit/tier/graph_rewriter.hpp"
#include "jit/tier/implementation_table.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::tier {

Partition partition_graph(const ir::Function& source, const runtime::WeightMap& weights, exec::CpuIsa cpu) {
  GraphRewriter rw(source, weights);
  for (ir::OpId id = 0; id < source.ops.size(); ++id) {
    // The last op of a fused chain places the chain's step; ops taken by a step are decided already.
    rw.emit_scheduled(id);
    if (!rw.is_open(id)) continue;
    const std::vector<Implementation> list = jit_implementations(source.ops[id].kind);
    exec::ImplementationWalk walk;
    const Implementation* taker = exec::walk_implementations(
        std::span<const Implementation>(list), cpu,
        [&](const Implementation& entry) { return entry.refuse ? entry.refuse(rw, id) : std::nullopt; }, walk);
    if (!taker)
      throw Error(ErrorKind::internal, "jit partitioner: " + ir::op_name(source, id) + ": " +
                                           exec::walk_to_string(walk) + ", and no entry after them");
    rw.record_walk(id, std::move(walk));
    taker->create(rw, id);
  }
  return rw.finish();
}

} // namespace kiln::jitc::tier
