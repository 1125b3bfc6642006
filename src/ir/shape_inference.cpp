#include "ir/shape_inference.hpp"
#include "core/checked_arithmetic.hpp"
#include "core/dim_expr.hpp"
#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::ir {

namespace {

using dim_expr::dim_of;
using dim_expr::Poly;
using dim_expr::poly_of;

std::string str(const Shape& s) { return shape_to_string(s); }
std::string str(const ValueType& t) { return std::string(dtype_name(t.dtype)) + " " + str(t.shape); }

ValueType tensor_of(DType dtype, Shape shape) { return ValueType{dtype, std::move(shape), false}; }

void require_same_dtype(infer::In in, size_t a, size_t b) {
  if (in[a].dtype != in[b].dtype)
    throw InferError(std::string("operand dtypes differ: ") + dtype_name(in[a].dtype) + " and " +
                         dtype_name(in[b].dtype),
                     ErrorKind::dtype);
}

int64_t static_size(const Dim& d, const char* what) {
  if (d.is_symbolic()) throw InferError(std::string(what) + " must be static, got symbolic '" + d.name() + "'");
  return d.size();
}

// ceil(extent / step) without forming extent + step - 1, which overflows for a huge step.
int64_t ceil_length(int64_t extent, int64_t step) { return extent == 0 ? 0 : 1 + (extent - 1) / step; }

bool has_division(const Poly& p) {
  for (const dim_expr::Term& t : p.terms())
    for (const dim_expr::Atom& a : t.atoms)
      if (a.numerator) return true;
  return false;
}

} // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, Dim(1));
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) {
      out[i] = *db;
      continue;
    }
    if (!db || *da == *db) {
      out[i] = *da;
      continue;
    }
    if (da->is_static() && da->size() == 1) {
      out[i] = *db;
      continue;
    }
    if (db->is_static() && db->size() == 1) {
      out[i] = *da;
      continue;
    }
    throw InferError("shapes " + str(a) + " and " + str(b) + " do not broadcast (dim " + std::to_string(i) + ": " +
                     da->to_string() + " vs " + db->to_string() + ")");
  }
  return out;
}

namespace infer {

Types unary(In in, const OpParams&) { return {tensor_of(in[0].dtype, in[0].shape)}; }

Types broadcast(In in, const OpParams&) {
  Shape shape = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    require_same_dtype(in, 0, i);
    shape = broadcast_shapes(shape, in[i].shape);
  }
  return {tensor_of(in[0].dtype, shape)};
}

Types compare(In in, const OpParams&) {
  require_same_dtype(in, 0, 1);
  return {tensor_of(DType::boolean, broadcast_shapes(in[0].shape, in[1].shape))};
}

Types where(In in, const OpParams&) {
  if (in[0].dtype != DType::boolean)
    throw InferError(std::string("condition must be i1 (bool), got ") + dtype_name(in[0].dtype), ErrorKind::dtype);
  require_same_dtype(in, 1, 2);
  return {tensor_of(in[1].dtype, broadcast_shapes(in[0].shape, broadcast_shapes(in[1].shape, in[2].shape)))};
}

Types cast(In in, const OpParams& params) { return {tensor_of(std::get<CastParams>(params).dtype, in[0].shape)}; }

Types masked_fill(In in, const OpParams&) {
  if (in[1].dtype != DType::boolean)
    throw InferError(std::string("mask must be i1 (bool), got ") + dtype_name(in[1].dtype), ErrorKind::dtype);
  if (broadcast_shapes(in[0].shape, in[1].shape) != in[0].shape)
    throw InferError("mask " + str(in[1].shape) + " does not broadcast to x's shape " + str(in[0].shape));
  return {tensor_of(in[0].dtype, in[0].shape)};
}

Types reduce(In in, const OpParams& params) {
  const auto& p = std::get<ReduceParams>(params);
  Shape out;
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    if (!std::binary_search(p.axes.begin(), p.axes.end(), i))
      out.push_back(in[0].shape[size_t(i)]);
    else if (p.keepdims)
      out.push_back(Dim(1));
  }
  return {tensor_of(in[0].dtype, out)};
}

Types variance(In in, const OpParams& params) {
  if (!dtype_is_float(in[0].dtype)) throw InferError("needs a floating-point input", ErrorKind::dtype);
  const auto& p = std::get<VarianceParams>(params);
  return reduce(in, ReduceParams{p.axes, p.keepdims});
}

Types argmax(In in, const OpParams& params) {
  const auto& [axis, keepdims] = std::get<ArgmaxParams>(params);
  Shape out;
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    if (i != axis)
      out.push_back(in[0].shape[size_t(i)]);
    else if (keepdims)
      out.push_back(Dim(1));
  }
  return {tensor_of(DType::i64, out)};
}

Types softmax(In in, const OpParams&) {
  if (!dtype_is_float(in[0].dtype)) throw InferError("needs a floating-point input", ErrorKind::dtype);
  return {tensor_of(in[0].dtype, in[0].shape)};
}

Types cumsum(In in, const OpParams&) {
  return {tensor_of(dtype_is_float(in[0].dtype) ? in[0].dtype : DType::i64, in[0].shape)};
}

Types layer_norm(In in, const OpParams& params) {
  const int64_t axis = std::get<NormParams>(params).axis;
  Shape normalized(in[0].shape.begin() + axis, in[0].shape.end());
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != normalized)
      throw InferError("parameter " + std::to_string(i) + " has shape " + str(in[i].shape) + ", expected " +
                       str(normalized) + " (the normalised dims of " + str(in[0].shape) + ")");
    require_same_dtype(in, 0, i);
  }
  return {tensor_of(in[0].dtype, in[0].shape)};
}

Types batch_norm(In in, const OpParams&) {
  if (in[0].rank() < 2) throw InferError("input " + str(in[0].shape) + " needs rank >= 2 (N, C, ...)");
  if (in.size() == 4) throw InferError("weight and bias come together (got 4 operands)");
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != Shape{in[0].shape[1]})
      throw InferError("parameter " + std::to_string(i) + " has shape " + str(in[i].shape) + ", expected [" +
                       in[0].shape[1].to_string() + "]");
    require_same_dtype(in, 0, i);
  }
  return {tensor_of(in[0].dtype, in[0].shape)};
}

Types matmul(In in, const OpParams&) {
  const Shape &a = in[0].shape, &b = in[1].shape;
  if (a.size() < 2 || b.size() < 2) throw InferError("operands need rank >= 2: " + str(a) + " x " + str(b));
  require_same_dtype(in, 0, 1);
  if (!(a.back() == b[b.size() - 2])) throw InferError("inner dims differ: " + str(a) + " x " + str(b));
  Shape batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return {tensor_of(in[0].dtype, batch)};
}

// The dilated window's extent, dilation * (kernel - 1) + 1, after checking the window's parameters.
int64_t window_span(int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  if (stride <= 0 || dilation <= 0 || pad < 0) throw InferError("stride and dilation must be > 0, padding >= 0");
  if (kernel <= 0) throw InferError("kernel size " + std::to_string(kernel) + " must be > 0");
  return checked_add(checked_mul(dilation, kernel - 1, "dilated window"), 1, "dilated window");
}

int64_t window_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = window_span(kernel, stride, pad, dilation);
  const int64_t padded = checked_add(size, checked_mul(2, pad, "padding"), "padded input");
  if (padded < span)
    throw InferError("window " + std::to_string(span) + " is larger than the padded input " + std::to_string(padded));
  return (padded - span) / stride + 1;
}

// A symbolic input size gives (size + 2 * pad - span) / stride + 1; that the window fits is checked
// when specialize knows the size.
Dim window_dim(const Dim& size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  if (size.is_static()) return Dim(window_output(size.size(), kernel, stride, pad, dilation));
  const int64_t span = window_span(kernel, stride, pad, dilation);
  return (size + Dim(checked_mul(2, pad, "padding")) - Dim(span)) / Dim(stride) + Dim(1);
}

// How a convolution's input and weight are laid out, for messages.
std::string conv_layouts(int spatial_rank) {
  if (spatial_rank == 2) return "NCHW input and OIHW weight";
  if (spatial_rank == 1) return "[N, C, L] input and [O, C / groups, K] weight";
  return "[N, C, " + std::to_string(spatial_rank) + " spatial dims] input and a weight of its rank";
}

Types conv_of_rank(In in, const OpParams& params, int spatial_rank) {
  const Shape &x = in[0].shape, &w = in[1].shape;
  const size_t rank = size_t(spatial_rank) + 2;
  if (x.size() != rank || w.size() != rank)
    throw InferError("needs " + conv_layouts(spatial_rank) + ", got " + str(x) + " and " + str(w));
  require_same_dtype(in, 0, 1);
  const auto& [stride, pad, dil, groups] = std::get<ConvParams>(params);
  int64_t c = static_size(x[1], "input channels"), o = static_size(w[0], "output channels");
  if (groups <= 0 || c % groups || o % groups)
    throw InferError("groups " + std::to_string(groups) + " must divide input channels " + std::to_string(c) +
                     " and output channels " + std::to_string(o));
  if (static_size(w[1], "weight input channels") != c / groups)
    throw InferError("weight " + str(w) + " expects " + w[1].to_string() + " input channels per group, input " +
                     str(x) + " has " + std::to_string(c / groups));
  if (in.size() == 3 && in[2].shape != Shape{w[0]})
    throw InferError("bias has shape " + str(in[2].shape) + ", expected [" + std::to_string(o) + "]");
  Shape result{x[0], w[0]};
  for (size_t axis = 0; axis < size_t(spatial_rank); ++axis) {
    const std::string kernel_name = spatial_rank == 1   ? "kernel size"
                                    : spatial_rank == 2 ? (axis == 0 ? "kernel height" : "kernel width")
                                                        : "kernel dim " + std::to_string(axis);
    result.push_back(
        window_dim(x[2 + axis], static_size(w[2 + axis], kernel_name.c_str()), stride[axis], pad[axis], dil[axis]));
  }
  return {tensor_of(in[0].dtype, result)};
}

Types pool2d(In in, const OpParams& params) {
  const Shape& x = in[0].shape;
  if (x.size() != 4) throw InferError("needs an NCHW input, got " + str(x));
  const auto& [kernel, stride, pad] = pool_window(params);
  if (kernel[0] <= 0 || kernel[1] <= 0) throw InferError("kernel sizes must be > 0");
  // pad > kernel / 2, not 2 * pad > kernel: a huge pad must not overflow on the way to being refused.
  if (pad[0] > kernel[0] / 2 || pad[1] > kernel[1] / 2) throw InferError("padding must be at most half the kernel");
  Dim h = window_dim(x[2], kernel[0], stride[0], pad[0], 1);
  Dim w = window_dim(x[3], kernel[1], stride[1], pad[1], 1);
  return {tensor_of(in[0].dtype, {x[0], x[1], h, w})};
}

// torch refuses an empty plane; the kernel forms i * H for each output row i, checked here once.
Types adaptive_pool2d(In in, const OpParams& params) {
  const Shape& x = in[0].shape;
  if (x.size() != 4) throw InferError("needs an NCHW input, got " + str(x));
  if (!dtype_is_float(in[0].dtype)) throw InferError("needs a floating-point input", ErrorKind::dtype);
  const Pair& size = std::get<AdaptivePoolParams>(params).output_size;
  const int64_t h = static_size(x[2], "input height"), w = static_size(x[3], "input width");
  if (h == 0 || w == 0) throw InferError("input " + str(x) + " has an empty plane");
  checked_mul(size[0], h, "adaptive_avg_pool2d output height * input height");
  checked_mul(size[1], w, "adaptive_avg_pool2d output width * input width");
  return {tensor_of(in[0].dtype, {x[0], x[1], size[0], size[1]})};
}

Types group_norm(In in, const OpParams& params) {
  const Shape& x = in[0].shape;
  if (x.size() < 2) throw InferError("input " + str(x) + " needs rank >= 2 (N, C, ...)");
  if (!dtype_is_float(in[0].dtype)) throw InferError("needs a floating-point input", ErrorKind::dtype);
  if (in.size() == 2) throw InferError("weight and bias come together (got 2 operands)");
  const int64_t groups = std::get<GroupNormParams>(params).groups;
  const int64_t c = static_size(x[1], "channels");
  if (c % groups != 0)
    throw InferError("groups " + std::to_string(groups) + " must divide the channels " + std::to_string(c) +
                     " of input " + str(x));
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != Shape{x[1]})
      throw InferError(std::string(i == 1 ? "weight" : "bias") + " has shape " + str(in[i].shape) + ", expected [" +
                       std::to_string(c) + "]");
    require_same_dtype(in, 0, i);
  }
  return {tensor_of(in[0].dtype, x)};
}

// torch's transposed-convolution size (H - 1) * stride - 2 * pad + dilation * (kernel - 1) +
// output_padding + 1, checked against overflow; it must be positive.
int64_t transposed_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                          int64_t output_padding) {
  if (stride <= 0 || dilation <= 0 || pad < 0 || output_padding < 0)
    throw InferError("stride and dilation must be > 0, padding and output_padding >= 0");
  if (kernel <= 0) throw InferError("kernel size " + std::to_string(kernel) + " must be > 0");
  if (output_padding >= stride && output_padding >= dilation)
    throw InferError("output_padding " + std::to_string(output_padding) + " must be smaller than stride " +
                     std::to_string(stride) + " or dilation " + std::to_string(dilation));
  if (size <= 0) throw InferError("input spatial size " + std::to_string(size) + " must be > 0");
  const char* what = "conv_transpose2d output size";
  const int64_t spread = checked_mul(size - 1, stride, what);
  const int64_t span = checked_mul(dilation, kernel - 1, what);
  const int64_t out = checked_add(checked_sub(checked_add(spread, span, what), checked_mul(2, pad, what), what),
                                  output_padding + 1, what);
  if (out <= 0)
    throw InferError("output size " + std::to_string(out) + " is too small (padding " + std::to_string(pad) + ")");
  return out;
}

Types conv_transpose2d(In in, const OpParams& params) {
  const Shape &x = in[0].shape, &w = in[1].shape;
  if (x.size() != 4 || w.size() != 4)
    throw InferError("needs NCHW input and [C, O / groups, kh, kw] weight, got " + str(x) + " and " + str(w));
  require_same_dtype(in, 0, 1);
  if (!dtype_is_float(in[0].dtype)) throw InferError("needs a floating-point input", ErrorKind::dtype);
  const auto& [conv, output_padding] = std::get<ConvTransposeParams>(params);
  const auto& [stride, pad, dil, groups] = conv;
  const int64_t c = static_size(x[1], "input channels");
  if (static_size(w[0], "weight input channels") != c)
    throw InferError("weight " + str(w) + " expects " + w[0].to_string() + " input channels, input " + str(x) +
                     " has " + std::to_string(c));
  if (groups <= 0 || c % groups)
    throw InferError("groups " + std::to_string(groups) + " must divide input channels " + std::to_string(c));
  const int64_t o = checked_mul(static_size(w[1], "weight output channels"), groups, "output channels");
  if (in.size() == 3) {
    if (in[2].shape != Shape{o})
      throw InferError("bias has shape " + str(in[2].shape) + ", expected [" + std::to_string(o) + "]");
    require_same_dtype(in, 0, 2);
  }
  const int64_t h = transposed_output(static_size(x[2], "input height"), static_size(w[2], "kernel height"), stride[0],
                                      pad[0], dil[0], output_padding[0]);
  const int64_t wd = transposed_output(static_size(x[3], "input width"), static_size(w[3], "kernel width"), stride[1],
                                       pad[1], dil[1], output_padding[1]);
  return {tensor_of(in[0].dtype, {x[0], o, h, wd})};
}

Types interpolate(In in, const OpParams& params) {
  const Shape& x = in[0].shape;
  if (x.size() != 4) throw InferError("needs an NCHW input, got " + str(x));
  const auto& p = std::get<InterpolateParams>(params);
  if (p.mode == InterpolateMode::bilinear && !dtype_is_float(in[0].dtype))
    throw InferError("bilinear needs a floating-point input", ErrorKind::dtype);
  if (static_size(x[2], "input height") == 0 || static_size(x[3], "input width") == 0)
    throw InferError("input " + str(x) + " has an empty plane");
  return {tensor_of(in[0].dtype, {x[0], x[1], p.size[0], p.size[1]})};
}

Shape resolve_reshape(const Shape& input, const Shape& target) {
  Poly total = Poly::constant(1), known = Poly::constant(1);
  for (const Dim& d : input)
    total = total * poly_of(d);
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].is_static() && target[i].size() == -1) {
      if (inferred >= 0) throw InferError("reshape target " + str(target) + " has more than one -1");
      inferred = int(i);
    } else {
      known = known * poly_of(target[i]);
    }
  }
  auto cannot = [&](const std::string& why) {
    return InferError("cannot reshape " + str(input) + " to " + str(target) + ": " + why);
  };
  if (inferred < 0) {
    // With a floor division in either count, equal sizes need not be equal polynomials (n and
    // (n/2)*2 for even n): the call's sizes decide, as specialize infers the reshape again.
    if (!(total == known) && !has_division(total) && !has_division(known)) throw cannot("element counts differ");
    return target;
  }
  Shape out = target;
  if (std::optional<Poly> quotient = exact_quotient(total, known)) {
    out[size_t(inferred)] = dim_of(*quotient);
    return out;
  }
  std::optional<int64_t> divisor = known.constant_value();
  if (!divisor || *divisor <= 0 || total.constant_value())
    throw cannot(known.to_string() + " does not divide the element count" +
                 (total.constant_value() ? "" : " " + total.to_string()));
  // batch*6 into rows of 4: a whole number only for even batch, which the call's sizes confirm.
  out[size_t(inferred)] = dim_of(floordiv(total, *divisor));
  return out;
}

Types reshape(In in, const OpParams& params) {
  const Shape& target = std::get<ShapeParams>(params).shape;
  for (const Dim& d : target)
    if (d.is_static() && d.size() < 0) throw InferError("reshape attribute must be fully inferred, got " + str(target));
  return {tensor_of(in[0].dtype, resolve_reshape(in[0].shape, target))};
}

Types transpose(In in, const OpParams& params) {
  Shape out;
  for (int64_t axis : std::get<TransposeParams>(params).perm)
    out.push_back(in[0].shape[size_t(axis)]);
  return {tensor_of(in[0].dtype, out)};
}

Types broadcast_to(In in, const OpParams& params) {
  const Shape& target = std::get<ShapeParams>(params).shape;
  Shape out = broadcast_shapes(in[0].shape, target);
  if (out != target) throw InferError("cannot broadcast " + str(in[0].shape) + " to " + str(target));
  return {tensor_of(in[0].dtype, out)};
}

Types concat(In in, const OpParams& params) {
  const int64_t axis = std::get<AxisParams>(params).axis;
  Shape out = in[0].shape;
  for (size_t i = 0; i < in.size(); ++i) {
    require_same_dtype(in, 0, i);
    if (in[i].rank() != in[0].rank())
      throw InferError("operand " + std::to_string(i) + " has rank " + std::to_string(in[i].rank()) + ", expected " +
                       std::to_string(in[0].rank()));
    for (int64_t d = 0; d < in[0].rank(); ++d)
      if (d != axis && !(in[i].shape[size_t(d)] == out[size_t(d)]))
        throw InferError("operand " + std::to_string(i) + " " + str(in[i].shape) + " differs from " + str(out) +
                         " outside axis " + std::to_string(axis));
  }
  Dim sum(0);
  for (const ValueType& t : in)
    sum = sum + t.shape[size_t(axis)];
  out[size_t(axis)] = sum;
  return {tensor_of(in[0].dtype, out)};
}

Types split(In in, const OpParams& params) {
  const auto& [axis, sizes] = std::get<SplitParams>(params);
  const Dim& size = in[0].shape[size_t(axis)];
  int64_t sum = 0;
  Types out;
  for (int64_t s : sizes) {
    if (s < 0) throw InferError("split size " + std::to_string(s) + " is negative");
    sum = checked_add(sum, s, "split sizes");
    Shape part = in[0].shape;
    part[size_t(axis)] = Dim(s);
    out.push_back(tensor_of(in[0].dtype, part));
  }
  if (!(Dim(sum) == size))
    throw InferError("split sizes add up to " + std::to_string(sum) + ", axis has " + size.to_string());
  return out;
}

// A symbolic axis or bound cannot be clamped: the length assumes start <= end <= the axis, which
// specialize checks against the call's sizes.
Dim slice_length(const Dim& axis, const Dim& start, const Dim& end, int64_t step) {
  if (axis.is_static() && start.is_static() && end.is_static()) {
    int64_t s = std::clamp<int64_t>(start.size(), 0, axis.size()), e = std::clamp<int64_t>(end.size(), s, axis.size());
    return Dim(ceil_length(e - s, step));
  }
  const Dim stop = end.is_static() && end.size() == INT64_MAX ? axis : end;
  return (stop - start + Dim(step - 1)) / Dim(step);
}

Types slice(In in, const OpParams& params) {
  const auto& [starts, ends, steps] = std::get<SliceParams>(params);
  size_t rank = size_t(in[0].rank());
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    throw InferError("starts/ends/steps need one entry per axis (rank " + std::to_string(rank) + ")");
  Shape out;
  for (size_t i = 0; i < rank; ++i) {
    if (steps[i] <= 0) throw InferError("slice step must be positive, got " + std::to_string(steps[i]));
    out.push_back(slice_length(in[0].shape[i], starts[i], ends[i], steps[i]));
  }
  return {tensor_of(in[0].dtype, out)};
}

Types squeeze(In in, const OpParams& params) {
  const std::vector<int64_t>& axes = std::get<AxesParams>(params).axes;
  Shape out;
  for (int64_t i = 0; i < in[0].rank(); ++i) {
    const Dim& d = in[0].shape[size_t(i)];
    if (!std::binary_search(axes.begin(), axes.end(), i))
      out.push_back(d);
    else if (!(d == Dim(1)))
      throw InferError("cannot squeeze axis " + std::to_string(i) + " of size " + d.to_string());
  }
  return {tensor_of(in[0].dtype, out)};
}

Types unsqueeze(In in, const OpParams& params) {
  const std::vector<int64_t>& axes = std::get<AxesParams>(params).axes;
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < in[0].rank() + int64_t(axes.size()); ++i)
    out.push_back(std::binary_search(axes.begin(), axes.end(), i) ? Dim(1) : in[0].shape[next++]);
  return {tensor_of(in[0].dtype, out)};
}

Types gather(In in, const OpParams& params) {
  const int64_t axis = std::get<AxisParams>(params).axis;
  if (in[1].dtype != DType::i32 && in[1].dtype != DType::i64)
    throw InferError(std::string("indices must be i32 or i64, got ") + dtype_name(in[1].dtype), ErrorKind::dtype);
  Shape out(in[0].shape.begin(), in[0].shape.begin() + axis);
  out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
  out.insert(out.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  return {tensor_of(in[0].dtype, out)};
}

Types pad(In in, const OpParams& params) {
  const auto& pads = std::get<PadParams>(params).pads;
  if (int64_t(pads.size()) != 2 * in[0].rank())
    throw InferError("pads needs " + std::to_string(2 * in[0].rank()) + " entries, got " + std::to_string(pads.size()));
  Shape out;
  for (size_t i = 0; i < size_t(in[0].rank()); ++i) {
    if (pads[2 * i] < 0 || pads[2 * i + 1] < 0) throw InferError("negative padding");
    out.push_back(in[0].shape[i] + Dim(pads[2 * i]) + Dim(pads[2 * i + 1]));
  }
  return {tensor_of(in[0].dtype, out)};
}

// q [..., L, E], k [..., S, E], v [..., S, Ev] with one batch shape (torch's fused kernels ask the
// same); the mask broadcasts to the scores [..., L, S].
Types attention(In in, const OpParams& params) {
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
    throw InferError("q, k and v need one rank >= 2, got " + str(q) + ", " + str(k) + " and " + str(v));
  if (!dtype_is_float(in[0].dtype))
    throw InferError(std::string("q must be a float tensor, got ") + dtype_name(in[0].dtype), ErrorKind::dtype);
  require_same_dtype(in, 0, 1);
  require_same_dtype(in, 0, 2);
  const size_t rank = q.size();
  if (!(q.back() == k.back())) throw InferError("q " + str(q) + " and k " + str(k) + " differ in the embedding dim E");
  if (!(k[rank - 2] == v[rank - 2]))
    throw InferError("k " + str(k) + " and v " + str(v) + " differ in the source length S");
  const Shape batch(q.begin(), q.end() - 2);
  if (Shape(k.begin(), k.end() - 2) != batch || Shape(v.begin(), v.end() - 2) != batch)
    throw InferError("q " + str(q) + ", k " + str(k) + " and v " + str(v) + " differ in their batch dims");
  if (in.size() == 4) {
    if (std::get<AttentionParams>(params).is_causal)
      throw InferError("an attn_mask and is_causal exclude each other, as in torch");
    if (in[3].dtype != DType::boolean && in[3].dtype != in[0].dtype)
      throw InferError(std::string("attn_mask must be bool or q's dtype ") + dtype_name(in[0].dtype) + ", got " +
                           dtype_name(in[3].dtype),
                       ErrorKind::dtype);
    Shape scores = batch;
    scores.push_back(q[rank - 2]);
    scores.push_back(k[rank - 2]);
    if (broadcast_shapes(in[3].shape, scores) != scores)
      throw InferError("attn_mask " + str(in[3].shape) + " does not broadcast to the scores " + str(scores));
  }
  Shape out = batch;
  out.push_back(q[rank - 2]);
  out.push_back(v.back());
  return {tensor_of(in[0].dtype, out)};
}

// A symbolic axis leaves k <= size to the kernel, which checks it on every call.
Types topk(In in, const OpParams& params) {
  const auto& p = std::get<TopkParams>(params);
  Shape out = in[0].shape;
  const Dim& size = out[size_t(p.axis)];
  if (size.is_static() && p.k > size.size())
    throw InferError("k " + std::to_string(p.k) + " is larger than axis " + std::to_string(p.axis) + " of " +
                     str(in[0].shape));
  out[size_t(p.axis)] = Dim(p.k);
  return {tensor_of(in[0].dtype, out), tensor_of(DType::i64, out)};
}

Types constant(In, const OpParams& params) {
  const Tensor& t = std::get<ConstantParams>(params).value;
  return {tensor_of(t.dtype(), t.shape())};
}

Types full(In, const OpParams& params) {
  const auto& p = std::get<FullParams>(params);
  return {tensor_of(p.dtype, p.shape)};
}

Types arange(In, const OpParams& params) {
  const auto& p = std::get<ArangeParams>(params);
  if (!p.length.empty()) {
    if (p.length.size() != 1) throw InferError("length needs one dim, got " + str(p.length));
    return {tensor_of(p.dtype, p.length)};
  }
  return {tensor_of(p.dtype, {checked_arange_size(p.start, p.stop, p.step)})};
}

Types buffer_store(In in, const OpParams&) {
  if (!in[0].is_buffer)
    throw InferError("destination is staged as a tensor, not a buffer: declare it with BufferLayout");
  if (in[0].dtype != in[1].dtype || in[0].shape != in[1].shape)
    throw InferError("stores " + str(in[1]) + " into a buffer of " + str(in[0]));
  return {};
}

} // namespace infer
} // namespace kiln::ir
