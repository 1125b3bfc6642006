// matmul: [..., m, k] x [..., k, n] with numpy broadcasting of the batch dims, as a 16x16 tiled
// kernel through shared memory: one workgroup per output tile, looping over tiles and batches
// beyond a dispatch's limits. Sums in f32 in k order (the interpreter's GEMM blocks its sums, so
// results agree to summation rounding).
#include "vulkan/kernels/glsl_kernel.hpp"
#include <algorithm>

namespace kiln::vulkan::glsl {

namespace {

constexpr int64_t kTile = 16;

uint32_t capped_groups(int64_t count) { return uint32_t(std::min<int64_t>(count, kMaxGroups)); }

} // namespace

KernelOrRefusal matmul_kernel(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> a = dims_of(graph, op.operands[0]), b = dims_of(graph, op.operands[1]),
                             out = dims_of(graph, op.results[0]);
  if (a.size() < 2 || b.size() < 2) return "kiln.matmul of a rank-1 operand is not supported on the device";
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const std::vector<int64_t> out_batch(out.begin(), out.end() - 2);
  const int64_t batches = numel(out_batch), tiles_m = (m + kTile - 1) / kTile, tiles_n = (n + kTile - 1) / kTile;
  const auto U = uint_literal;

  std::string s = prelude(kTile, kTile) + bindings(op);
  s += broadcast_index_function("a_matrix", out_batch, {a.begin(), a.end() - 2});
  s += broadcast_index_function("b_matrix", out_batch, {b.begin(), b.end() - 2});
  s += "shared float tile_a[16][16];\nshared float tile_b[16][16];\n";
  s += "void main() {\n  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;\n";
  s += "  for (uint batch = gl_WorkGroupID.z; batch < " + U(batches) + "; batch += gl_NumWorkGroups.z) {\n";
  s += "    uint a_base = a_matrix(batch) * " + U(m * k) + ", b_base = b_matrix(batch) * " + U(k * n) +
       ", out_base = batch * " + U(m * n) + ";\n";
  s += "    for (uint tm = gl_WorkGroupID.y; tm < " + U(tiles_m) + "; tm += gl_NumWorkGroups.y) {\n";
  s += "      for (uint tn = gl_WorkGroupID.x; tn < " + U(tiles_n) + "; tn += gl_NumWorkGroups.x) {\n";
  s += "        uint row = tm * 16u + ty, col = tn * 16u + tx;\n";
  s += "        float acc = 0.0;\n";
  s += "        for (uint k0 = 0u; k0 < " + U(k) + "; k0 += 16u) {\n";
  // Past the edges both tiles hold 0, so the padded products add 0 * 0.
  s += "          tile_a[ty][tx] = row < " + U(m) + " && k0 + tx < " + U(k) + " ? in0.v[a_base + row * " + U(k) +
       " + k0 + tx] : 0.0;\n";
  s += "          tile_b[ty][tx] = k0 + ty < " + U(k) + " && col < " + U(n) + " ? in1.v[b_base + (k0 + ty) * " + U(n) +
       " + col] : 0.0;\n";
  s += "          barrier();\n";
  s += "          for (uint j = 0u; j < 16u; ++j)\n            acc += tile_a[ty][j] * tile_b[j][tx];\n";
  s += "          barrier();\n        }\n";
  s += "        if (row < " + U(m) + " && col < " + U(n) + ") out0.v[out_base + row * " + U(n) + " + col] = acc;\n";
  s += "      }\n    }\n  }\n}\n";

  OpKernel kernel;
  kernel.glsl = std::move(s);
  kernel.groups = {capped_groups(tiles_n), capped_groups(tiles_m), capped_groups(batches)};
  kernel.implementation = "vulkan.matmul";
  return kernel;
}

} // namespace kiln::vulkan::glsl
