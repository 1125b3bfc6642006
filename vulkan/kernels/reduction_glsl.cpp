// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_var and reduce_std: one
// invocation per result element, walking its reduced elements through baked strides. The
// interpreter accumulates in double; sums here are compensated (two floats), so they agree to about
// an ulp of the result; max and min propagate NaN as the interpreter's nan_max / nan_min.
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"
#include <algorithm>

namespace kiln::vulkan::glsl {

namespace {

using ir::OpKind;

struct ReducedAxes {
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
};

ReducedAxes split_axes(const std::vector<int64_t>& dims, const std::vector<int64_t>& axes) {
  const std::vector<int64_t> strides = strides_of(dims);
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t axis : axes)
    reduced[size_t(axis)] = true;
  ReducedAxes r;
  for (size_t d = 0; d < dims.size(); ++d) {
    (reduced[d] ? r.reduced_dims : r.kept_dims).push_back(dims[d]);
    (reduced[d] ? r.reduced_strides : r.kept_strides).push_back(strides[d]);
  }
  return r;
}

// The loop over the reduced elements of result i: `step` runs on each `x`, from `base`.
std::string over_reduced(const ReducedAxes& r, const std::string& step) {
  return "    for (uint r = 0u; r < " + uint_literal(numel(r.reduced_dims)) + "; ++r) {\n      uint at = base;\n" +
         strided_offset(r.reduced_dims, r.reduced_strides, "r", "at") + "      float x = K_LOAD(in0.v[at]);\n" + step +
         "    }\n";
}

} // namespace

KernelOrRefusal reduction_kernel(const ir::Function& graph, const ir::Op& op) {
  const std::vector<int64_t> dims = dims_of(graph, op.operands[0]);
  const bool variance = op.kind == OpKind::reduce_var || op.kind == OpKind::reduce_std;
  const ReducedAxes r = split_axes(dims, variance ? ir::params_of<ir::VarianceParams>(op).axes
                                                  : ir::params_of<ir::ReduceParams>(op).axes);
  const std::string count = float_literal(double(numel(r.reduced_dims)));
  std::string body = "    uint base = 0u;\n" + strided_offset(r.kept_dims, r.kept_strides, "i", "base");
  switch (op.kind) {
  case OpKind::reduce_sum:
    body += "    float s = 0.0, c = 0.0;\n" + over_reduced(r, "      k_sum_add(s, c, x);\n");
    body += "    precise float y = k_sum(s, c);\n";
    break;
  case OpKind::reduce_mean:
    // The interpreter sums in double, so the mean of large finite values is finite where their f32
    // sum overflows: then the terms are summed again, each divided by the count first.
    body += "    float s = 0.0, c = 0.0;\n    bool saw_inf = false;\n" +
            over_reduced(r, "      k_sum_add(s, c, x);\n      saw_inf = saw_inf || k_abs(x) == K_INF;\n");
    body += "    precise float y = k_sum(s, c) / " + count + ";\n";
    body += "    if (k_abs(y) == K_INF && !saw_inf) {\n      s = 0.0;\n      c = 0.0;\n" +
            over_reduced(r, "      precise float scaled = x / " + count + ";\n      k_sum_add(s, c, scaled);\n") +
            "      y = k_sum(s, c);\n    }\n";
    break;
  case OpKind::reduce_max:
  case OpKind::reduce_min: {
    const std::string combine = op.kind == OpKind::reduce_max ? "k_nan_max" : "k_nan_min";
    body += "    float y = K_LOAD(in0.v[base]);\n" + over_reduced(r, "      y = " + combine + "(y, x);\n");
    break;
  }
  case OpKind::reduce_prod: body += "    precise float y = 1.0;\n" + over_reduced(r, "      y *= x;\n"); break;
  case OpKind::reduce_var:
  case OpKind::reduce_std: {
    // Two passes, as the interpreter: the mean, then the squared deviations from it.
    const int64_t correction = ir::params_of<ir::VarianceParams>(op).correction;
    const int64_t divisor = std::max<int64_t>(0, numel(r.reduced_dims) - correction);
    body += "    float s = 0.0, c = 0.0;\n" + over_reduced(r, "      k_sum_add(s, c, x);\n");
    body += "    precise float mean = k_sum(s, c) / " + count + ";\n    s = 0.0;\n    c = 0.0;\n";
    body += over_reduced(r, "      precise float d = x - mean;\n      k_sum_add(s, c, d * d);\n");
    body += "    precise float y = k_sum(s, c) / " + float_literal(double(divisor)) + ";\n";
    if (op.kind == OpKind::reduce_std) body += "    y = sqrt(y);\n";
    break;
  }
  default: return unsupported(op);
  }
  body += "    out0.v[i] = K_STORE(y);\n";
  return elementwise_dispatch(bindings(op), body, numel(dims_of(graph, op.results[0])), "vulkan.reduction");
}

} // namespace kiln::vulkan::glsl
