// softmax, log_softmax, layer_norm, rms_norm, batch_norm and group_norm, in the interpreter's steps
// (interp/kernels/normalization.cpp, reduction.cpp): max-subtracted softmax, two-pass mean and
// variance. The interpreter keeps its statistics in double; here they are compensated f32 sums.
// One invocation per row (softmax: per column along the axis), looping over it.
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"

namespace kiln::vulkan::glsl {

namespace {

using ir::OpKind;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= dims[d];
  return n;
}

// x viewed as [outer, size, inner] around the op's axis; one invocation per (outer, inner) column.
OpKernel softmax(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const size_t axis = size_t(ir::params_of<ir::AxisParams>(op).axis);
  const int64_t outer = product(dims, 0, axis), size = dims[axis], inner = product(dims, axis + 1, dims.size());
  const auto U = uint_literal;
  const std::string loop = "    for (uint b = 0u; b < " + U(size) + "; ++b) {\n      uint at = base + b * " + U(inner) +
                           ";\n      float x = K_LOAD(in0.v[at]);\n";
  std::string body = "    uint base = (i / " + U(inner) + ") * " + U(size * inner) + " + i % " + U(inner) + ";\n";
  body += "    float m = K_LOAD(in0.v[base]);\n" + loop + "      m = k_nan_max(m, x);\n    }\n";
  body += "    float s = 0.0, c = 0.0;\n" + loop + "      k_sum_add(s, c, k_exp(x - m, 0.0));\n    }\n";
  if (op.kind == OpKind::softmax)
    body += "    precise float scale = 1.0 / k_sum(s, c);\n" + loop +
            "      precise float y = k_exp(x - m, 0.0) * scale;\n      out0.v[at] = K_STORE(y);\n    }\n";
  else
    body += "    float log_sum = k_log(k_sum(s, c));\n" + loop +
            "      precise float y = (x - m) - log_sum;\n      out0.v[at] = K_STORE(y);\n    }\n";
  return elementwise_dispatch(bindings(op) + math_library(), body, outer * inner, "vulkan.softmax");
}

// The statements that leave `mean` and `inv_std` (1 / sqrt(biased variance + eps)) of the `count`
// elements at in0.v[base + f], f < count.
std::string mean_and_inv_std(int64_t count, double eps) {
  const std::string n = uint_literal(count), c = float_literal(double(count));
  std::string s = "    float s = 0.0, c = 0.0;\n    for (uint f = 0u; f < " + n + "; ++f)\n";
  s += "      k_sum_add(s, c, K_LOAD(in0.v[base + f]));\n    precise float mean = k_sum(s, c) / " + c + ";\n";
  s += "    s = 0.0;\n    c = 0.0;\n    for (uint f = 0u; f < " + n + "; ++f) {\n";
  s += "      precise float d = K_LOAD(in0.v[base + f]) - mean;\n      k_sum_add(s, c, d * d);\n    }\n";
  s += "    precise float inv_std = 1.0 / sqrt(k_sum(s, c) / " + c + " + " + float_literal(eps) + ");\n";
  return s;
}

// layer_norm(x[, weight[, bias]]) and rms_norm(x[, weight]) over the dims from the op's axis on.
OpKernel row_norm(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const auto& p = ir::params_of<ir::NormParams>(op);
  const int64_t features = product(dims, size_t(p.axis), dims.size()), rows = numel(dims) / features;
  const std::string n = uint_literal(features);
  const bool weight = op.operands.size() > 1, bias = op.operands.size() > 2;
  std::string body = "    uint base = i * " + n + ";\n";
  if (op.kind == OpKind::layer_norm) {
    body += mean_and_inv_std(features, p.eps);
    body += "    for (uint f = 0u; f < " + n +
            "; ++f) {\n      precise float y = (K_LOAD(in0.v[base + f]) - mean) * inv_std;\n";
  } else {
    body += "    float s = 0.0, c = 0.0;\n    for (uint f = 0u; f < " + n + "; ++f) {\n";
    body += "      float x = K_LOAD(in0.v[base + f]);\n      k_sum_add(s, c, x * x);\n    }\n";
    body += "    precise float inv_rms = 1.0 / sqrt(k_sum(s, c) / " + float_literal(double(features)) + " + " +
            float_literal(p.eps) + ");\n";
    body += "    for (uint f = 0u; f < " + n + "; ++f) {\n      precise float y = K_LOAD(in0.v[base + f]) * inv_rms;\n";
  }
  if (weight) body += "      y *= K_LOAD(in1.v[f]);\n";
  if (bias) body += "      y += K_LOAD(in2.v[f]);\n";
  body += "      out0.v[base + f] = K_STORE(y);\n    }\n";
  return elementwise_dispatch(bindings(op), body, rows,
                              op.kind == OpKind::layer_norm ? "vulkan.layer_norm" : "vulkan.rms_norm");
}

// batch_norm(x, mean, var[, weight, bias]) {eps}: per element, channel axis 1.
OpKernel batch_norm(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const int64_t channels = dims.size() > 1 ? dims[1] : 1, plane = product(dims, 2, dims.size());
  const double eps = ir::params_of<ir::BatchNormParams>(op).eps;
  std::string body = "    uint ch = (i / " + uint_literal(plane) + ") % " + uint_literal(channels) + ";\n";
  body += "    precise float scale = " + std::string(op.operands.size() > 3 ? "K_LOAD(in3.v[ch])" : "1.0") +
          " / sqrt(K_LOAD(in2.v[ch]) + " + float_literal(eps) + ");\n";
  body += "    precise float shift = " + std::string(op.operands.size() > 4 ? "K_LOAD(in4.v[ch])" : "0.0") +
          " - K_LOAD(in1.v[ch]) * scale;\n";
  body += "    precise float y = K_LOAD(in0.v[i]) * scale + shift;\n    out0.v[i] = K_STORE(y);\n";
  return elementwise_dispatch(bindings(op), body, numel(dims), "vulkan.batch_norm");
}

// group_norm(x[, weight, bias]) {groups, eps}: one invocation per (sample, group).
KernelOrRefusal group_norm(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const auto& p = ir::params_of<ir::GroupNormParams>(op);
  if (dims.size() < 2 || dims[1] % p.groups != 0) return "kiln.group_norm's channels do not split into its groups";
  const int64_t group_channels = dims[1] / p.groups, plane = product(dims, 2, dims.size());
  const int64_t size = group_channels * plane;
  std::string body = "    uint base = i * " + uint_literal(size) + ";\n" + mean_and_inv_std(size, p.eps);
  body += "    uint first_channel = (i % " + uint_literal(p.groups) + ") * " + uint_literal(group_channels) + ";\n";
  body += "    for (uint f = 0u; f < " + uint_literal(size) + "; ++f) {\n";
  body += "      uint ch = first_channel + f / " + uint_literal(plane) + ";\n";
  body += "      precise float y = (K_LOAD(in0.v[base + f]) - mean) * inv_std;\n";
  if (op.operands.size() > 1) body += "      y *= K_LOAD(in1.v[ch]);\n";
  if (op.operands.size() > 2) body += "      y += K_LOAD(in2.v[ch]);\n";
  body += "      out0.v[base + f] = K_STORE(y);\n    }\n";
  return elementwise_dispatch(bindings(op), body, dims[0] * p.groups, "vulkan.group_norm");
}

} // namespace

KernelOrRefusal normalization_kernel(const ir::Function& graph, const ir::Op& op) {
  switch (op.kind) {
  case OpKind::softmax:
  case OpKind::log_softmax: return softmax(graph, op);
  case OpKind::layer_norm:
  case OpKind::rms_norm: return row_norm(graph, op);
  case OpKind::batch_norm: return batch_norm(graph, op);
  case OpKind::group_norm: return group_norm(graph, op);
  default: return unsupported(op);
  }
}

} // namespace kiln::vulkan::glsl
