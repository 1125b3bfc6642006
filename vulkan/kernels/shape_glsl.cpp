// The shape ops as copies through K_BITS buffers (uint, uint16_t under f16 storage), so every bit
// (NaN payloads, -0, denormals on a
// device that flushes them in arithmetic) arrives as the interpreter's memcpy leaves it: reshape,
// squeeze, unsqueeze, transpose, broadcast_to, slice, concat, split, pad (constant) and tril/triu.
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"
#include <algorithm>

namespace kiln::vulkan::glsl {

namespace {

using ir::OpKind;

const auto U = uint_literal;

OpKernel copy_kernel(const ir::Op& op, const std::string& declarations, const std::string& body, int64_t count) {
  return elementwise_dispatch(bindings(op, "K_BITS") + declarations, body, count, "vulkan.copy");
}

// out[i] = in[offset of i], the offset a strided walk of the result's dims from `base`.
OpKernel gather_kernel(const ir::Function& graph, const ir::Op& op, const std::vector<int64_t>& strides, int64_t base) {
  const std::vector<int64_t> out = dims_of(graph, op.results[0]);
  const std::string body =
      "    uint at = " + U(base) + ";\n" + strided_offset(out, strides, "i", "at") + "    out0.v[i] = in0.v[at];\n";
  return copy_kernel(op, "", body, numel(out));
}

OpKernel transpose(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> in_strides = strides_of(dims_of(graph, op.operands[0]));
  std::vector<int64_t> strides;
  for (int64_t axis : ir::params_of<ir::TransposeParams>(op).perm)
    strides.push_back(in_strides[size_t(axis)]);
  return gather_kernel(graph, op, strides, 0);
}

OpKernel slice(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> in_strides = strides_of(dims_of(graph, op.operands[0]));
  const auto& p = ir::params_of<ir::SliceParams>(op);
  const std::vector<int64_t> starts = static_dims(p.starts);
  std::vector<int64_t> strides(in_strides.size());
  int64_t base = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    strides[d] = in_strides[d] * p.steps[d];
    base += starts[d] * in_strides[d];
  }
  return gather_kernel(graph, op, strides, base);
}

OpKernel broadcast_to(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> out = dims_of(graph, op.results[0]);
  return copy_kernel(op, broadcast_index_function("index0", out, dims_of(graph, op.operands[0])),
                     "    out0.v[i] = in0.v[index0(i)];\n", numel(out));
}

// concat and split: `whole` (the concat's result, the split's operand) is [outer, axis, inner]; its
// piece k covers [start_k, start_k + size_k) of the axis. Element i of the whole is copied from
// (concat) or to (split) its piece.
OpKernel pieces(const ir::Function& graph, const ir::Op& op, int64_t axis) {
  const bool concat = op.kind == OpKind::concat;
  const std::vector<int64_t> whole = dims_of(graph, concat ? op.results[0] : op.operands[0]);
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < whole.size(); ++d)
    inner *= whole[d];
  const int64_t extent = whole[size_t(axis)];
  std::string body = "    uint a = (i / " + U(inner) + ") % " + U(extent) + ", o = i / " + U(inner * extent) +
                     ", j = i % " + U(inner) + ";\n";
  const std::vector<ir::ValueId>& parts = concat ? op.operands : op.results;
  int64_t start = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const int64_t size = dims_of(graph, parts[k])[size_t(axis)];
    const std::string at = "(o * " + U(size) + " + a - " + U(start) + ") * " + U(inner) + " + j";
    const std::string name = (concat ? "in" : "out") + std::to_string(k);
    body += std::string(k == 0 ? "    " : "    else ") + "if (a < " + U(start + size) + ") " +
            (concat ? "out0.v[i] = " + name + ".v[" + at + "];\n" : name + ".v[" + at + "] = in0.v[i];\n");
    start += size;
  }
  return copy_kernel(op, "", body, numel(whole));
}

// Constant padding: the result's element i is x's where it lies inside, else the value.
OpKernel pad(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> in = dims_of(graph, op.operands[0]), out = dims_of(graph, op.results[0]);
  const auto& p = ir::params_of<ir::PadParams>(op);
  const std::vector<int64_t> in_strides = strides_of(in);
  std::string body = "    uint rest = i, at = 0u;\n    bool inside = true;\n";
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t lo = p.pads[2 * d];
    body += "    {\n      uint c = rest % " + U(out[d]) + ";\n      rest /= " + U(out[d]) + ";\n";
    body += "      inside = inside && c >= " + U(lo) + " && c < " + U(lo + in[d]) + ";\n";
    body += "      at += (c - " + U(lo) + ") * " + U(in_strides[d]) + ";\n    }\n";
  }
  body += "    out0.v[i] = inside ? in0.v[at] : " + fill_literal(p.value) + ";\n";
  return copy_kernel(op, "", body, numel(out));
}

// tril / triu: element (row, col) of each matrix is kept where col - row <= (>=) diagonal, else +0.
OpKernel triangle(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  // Offsets lie in [1 - rows, cols - 1]: a diagonal beyond keeps all or nothing, and fits an int.
  const int64_t diagonal = std::clamp(ir::params_of<ir::DiagonalParams>(op).diagonal, -rows, cols);
  const std::string kept = op.kind == OpKind::tril ? " <= " : " >= ";
  std::string body = "    int offset = int(i % " + U(cols) + ") - int((i / " + U(cols) + ") % " + U(rows) + ");\n";
  body += "    out0.v[i] = offset" + kept + "(" + std::to_string(diagonal) + ") ? in0.v[i] : K_FILL(0u, 0u);\n";
  return copy_kernel(op, "", body, numel(dims));
}

} // namespace

KernelOrRefusal shape_kernel(const ir::Function& graph, const ir::Op& op) {
  switch (op.kind) {
  case OpKind::reshape:
  case OpKind::squeeze:
  case OpKind::unsqueeze:
    return copy_kernel(op, "", "    out0.v[i] = in0.v[i];\n", numel(dims_of(graph, op.results[0])));
  case OpKind::transpose: return transpose(graph, op);
  case OpKind::broadcast_to: return broadcast_to(graph, op);
  case OpKind::slice: return slice(graph, op);
  case OpKind::concat: return pieces(graph, op, ir::params_of<ir::AxisParams>(op).axis);
  case OpKind::split: return pieces(graph, op, ir::params_of<ir::SplitParams>(op).axis);
  case OpKind::pad: return pad(graph, op);
  case OpKind::tril:
  case OpKind::triu:
    if (dims_of(graph, op.operands[0]).size() < 2)
      return "kiln." + std::string(ir::op_info(op.kind).name) + " needs rank >= 2";
    return triangle(graph, op);
  default: return unsupported(op);
  }
}

} // namespace kiln::vulkan::glsl
