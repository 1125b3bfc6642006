// conv2d and conv1d (groups, depthwise, stride, padding, dilation, bias), max_pool2d, avg_pool2d and
// adaptive_avg_pool2d on NCHW: one invocation per output element looping over its window, as the
// interpreter's pools do (interp/kernels/conv_pool.cpp). The interpreter's convolutions are GEMMs,
// so sums agree to f32 summation rounding; the pools' averages are compensated sums.
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"

namespace kiln::vulkan::glsl {

namespace {

using ir::OpKind;

const auto U = uint_literal;

// The sliding window over an [N, C, H, W] input: kernel, stride, padding and dilation per axis.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// "uint n, ch, oh, ow" of output element i of an [N, C, OH, OW] result.
std::string output_coordinates(const std::vector<int64_t>& out) {
  const int64_t oh = out[2], ow = out[3], c = out[1];
  return "    uint ow = i % " + U(ow) + ", oh = (i / " + U(ow) + ") % " + U(oh) + ", ch = (i / " + U(ow * oh) + ") % " +
         U(c) + ", n = i / " + U(ow * oh * c) + ";\n";
}

// Rank-4 dims of a conv1d's [N, C, L] value: [N, C, 1, L].
std::vector<int64_t> as_2d(std::vector<int64_t> dims) {
  if (dims.size() == 3) dims.insert(dims.begin() + 2, 1);
  return dims;
}

KernelOrRefusal convolution(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> x = as_2d(dims_of(graph, op.operands[0])), w = as_2d(dims_of(graph, op.operands[1])),
                             out = as_2d(dims_of(graph, op.results[0]));
  const auto& p = ir::params_of<ir::ConvParams>(op);
  Window win{.kh = w[2], .kw = w[3]};
  if (p.stride.size() == 2) {
    win.sh = p.stride[0], win.ph = p.padding[0], win.dh = p.dilation[0];
    win.sw = p.stride[1], win.pw = p.padding[1], win.dw = p.dilation[1];
  } else {
    win.sw = p.stride[0], win.pw = p.padding[0], win.dw = p.dilation[0];
  }
  const int64_t group_in = w[1], group_out = out[1] / p.groups;
  std::string body = output_coordinates(out);
  body += "    uint c0 = (ch / " + U(group_out) + ") * " + U(group_in) + ";\n    float acc = 0.0;\n";
  body += "    for (uint c = 0u; c < " + U(group_in) + "; ++c)\n";
  body += "      for (uint ky = 0u; ky < " + U(win.kh) + "; ++ky) {\n";
  body += "        int h = int(oh * " + U(win.sh) + " + ky * " + U(win.dh) + ") - " + std::to_string(win.ph) + ";\n";
  body += "        if (h < 0 || h >= " + std::to_string(x[2]) + ") continue;\n";
  body += "        for (uint kx = 0u; kx < " + U(win.kw) + "; ++kx) {\n";
  body += "          int w = int(ow * " + U(win.sw) + " + kx * " + U(win.dw) + ") - " + std::to_string(win.pw) + ";\n";
  body += "          if (w < 0 || w >= " + std::to_string(x[3]) + ") continue;\n";
  body += "          acc += K_LOAD(in0.v[((n * " + U(x[1]) + " + c0 + c) * " + U(x[2]) + " + uint(h)) * " + U(x[3]) +
          " + uint(w)]) * K_LOAD(in1.v[((ch * " + U(group_in) + " + c) * " + U(win.kh) + " + ky) * " + U(win.kw) +
          " + kx]);\n";
  body += "        }\n      }\n";
  if (op.operands.size() > 2) body += "    acc += K_LOAD(in2.v[ch]);\n";
  body += "    out0.v[i] = K_STORE(acc);\n";
  return elementwise_dispatch(bindings(op), body, numel(out), "vulkan.conv");
}

// max_pool2d and avg_pool2d: the window clipped to the input; padding never wins a max, and counts
// in an average only with count_include_pad.
OpKernel pool(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> x = dims_of(graph, op.operands[0]), out = dims_of(graph, op.results[0]);
  const bool average = op.kind == OpKind::avg_pool2d;
  const ir::PoolParams& p = ir::pool_window(op.params);
  std::string body = output_coordinates(out);
  body += "    uint plane = (n * " + U(x[1]) + " + ch) * " + U(x[2] * x[3]) + ";\n";
  body += "    int h0 = int(oh * " + U(p.stride[0]) + ") - " + std::to_string(p.padding[0]) + ", w0 = int(ow * " +
          U(p.stride[1]) + ") - " + std::to_string(p.padding[1]) + ";\n";
  body += "    uint h_begin = uint(max(h0, 0)), h_end = uint(min(h0 + " + std::to_string(p.kernel[0]) + ", " +
          std::to_string(x[2]) + "));\n";
  body += "    uint w_begin = uint(max(w0, 0)), w_end = uint(min(w0 + " + std::to_string(p.kernel[1]) + ", " +
          std::to_string(x[3]) + "));\n";
  body += "    float m = -K_INF, s = 0.0, c = 0.0;\n";
  body += "    for (uint h = h_begin; h < h_end; ++h)\n      for (uint w = w_begin; w < w_end; ++w) {\n";
  body += "        float v = K_LOAD(in0.v[plane + h * " + U(x[3]) + " + w]);\n";
  body += average ? "        k_sum_add(s, c, v);\n" : "        m = k_nan_max(m, v);\n";
  body += "      }\n";
  if (!average) {
    body += "    out0.v[i] = K_STORE(m);\n";
    return elementwise_dispatch(bindings(op), body, numel(out), "vulkan.pool");
  }
  const bool include_pad = ir::params_of<ir::AvgPoolParams>(op).count_include_pad;
  body += include_pad ? "    float count = " + float_literal(double(p.kernel[0] * p.kernel[1])) + ";\n"
                      : "    float count = float((h_end - h_begin) * (w_end - w_begin));\n";
  body += "    precise float y = k_sum(s, c) / count;\n    out0.v[i] = K_STORE(y);\n";
  return elementwise_dispatch(bindings(op), body, numel(out), "vulkan.pool");
}

// adaptive_avg_pool2d: output row i averages input rows floor(i H / oh) up to ceil((i + 1) H / oh).
OpKernel adaptive_pool(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> x = dims_of(graph, op.operands[0]), out = dims_of(graph, op.results[0]);
  std::string body = output_coordinates(out);
  body += "    uint plane = (n * " + U(x[1]) + " + ch) * " + U(x[2] * x[3]) + ";\n";
  body += "    uint h0 = oh * " + U(x[2]) + " / " + U(out[2]) + ", h1 = ((oh + 1u) * " + U(x[2]) + " + " +
          U(out[2] - 1) + ") / " + U(out[2]) + ";\n";
  body += "    uint w0 = ow * " + U(x[3]) + " / " + U(out[3]) + ", w1 = ((ow + 1u) * " + U(x[3]) + " + " +
          U(out[3] - 1) + ") / " + U(out[3]) + ";\n";
  // A plain sum in the interpreter's order: its windows are small, and like the interpreter's double
  // sum it absorbs a small term next to a huge one (1e30) and carries infinities to the result,
  // where a compensated sum would keep the small term or make inf - inf.
  body += "    precise float s = 0.0;\n";
  body += "    for (uint h = h0; h < h1; ++h)\n      for (uint w = w0; w < w1; ++w)\n";
  body += "        s += K_LOAD(in0.v[plane + h * " + U(x[3]) + " + w]);\n";
  body += "    precise float y = s / float((h1 - h0) * (w1 - w0));\n    out0.v[i] = K_STORE(y);\n";
  return elementwise_dispatch(bindings(op), body, numel(out), "vulkan.pool");
}

} // namespace

KernelOrRefusal conv_pool_kernel(const ir::Function& graph, const ir::Op& op) {
  switch (op.kind) {
  case OpKind::conv2d:
  case OpKind::conv1d: return convolution(graph, op);
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d: return pool(graph, op);
  case OpKind::adaptive_avg_pool2d: {
    // The window bounds take (i + 1) * in in 32 bits.
    const std::vector<int64_t> x = dims_of(graph, op.operands[0]), out = dims_of(graph, op.results[0]);
    if (out[2] * x[2] >= (int64_t{1} << 32) || out[3] * x[3] >= (int64_t{1} << 32))
      return "kiln.adaptive_avg_pool2d windows this large are not supported on the device";
    return adaptive_pool(graph, op);
  }
  default: return unsupported(op);
  }
}

} // namespace kiln::vulkan::glsl
