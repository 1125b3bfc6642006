// matmul: [..., m, k] x [..., k, n] with numpy broadcasting of the batch dims: one invocation per
// output element, consecutive invocations on consecutive columns (so their reads of B are
// contiguous), summing in f32 in k order (the interpreter's GEMM blocks its sums, so results agree
// to summation rounding). No shared memory and no barriers: a tiled kernel with barriers ran 10x
// slower on lavapipe, where a workgroup's barrier switches between its invocations.
#include "vulkan/kernels/glsl_kernel.hpp"

namespace kiln::vulkan::glsl {

KernelOrRefusal matmul_kernel(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> a = dims_of(graph, op.operands[0]), b = dims_of(graph, op.operands[1]),
                             out = dims_of(graph, op.results[0]);
  if (a.size() < 2 || b.size() < 2) return "kiln.matmul of a rank-1 operand is not supported on the device";
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const std::vector<int64_t> out_batch(out.begin(), out.end() - 2);
  const auto U = uint_literal;
  std::string declarations = bindings(op);
  declarations += broadcast_index_function("a_matrix", out_batch, {a.begin(), a.end() - 2});
  declarations += broadcast_index_function("b_matrix", out_batch, {b.begin(), b.end() - 2});
  std::string body = "    uint col = i % " + U(n) + ", rest = i / " + U(n) + ";\n";
  body += "    uint row = rest % " + U(m) + ", batch = rest / " + U(m) + ";\n";
  body += "    uint a_at = a_matrix(batch) * " + U(m * k) + " + row * " + U(k) + ";\n";
  body += "    uint b_at = b_matrix(batch) * " + U(k * n) + " + col;\n";
  body += "    float acc = 0.0;\n";
  body += "    for (uint j = 0u; j < " + U(k) +
          "; ++j)\n      acc += K_LOAD(in0.v[a_at + j]) * K_LOAD(in1.v[b_at + j * " + U(n) + "]);\n";
  body += "    " + store("out0", "i", "acc");
  return elementwise_dispatch(declarations, body, numel(out), "vulkan.matmul");
}

} // namespace kiln::vulkan::glsl
