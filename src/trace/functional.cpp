#include "core/checked_arithmetic.hpp"
#include "ir/ops.hpp"
#include "ir/shape_inference.hpp"
#include "trace/builder.hpp"
#include <algorithm>
#include <cctype>
#include <cmath>
#include <kiln/dtype_promotion.hpp>
#include <kiln/functional.hpp>
#include <map>
#include <optional>

namespace kiln::F {

using ir::Attr;
using ir::Attrs;
using ir::encode_params;
using ir::OpKind;
using trace::apply1;

// A [height, width] option; kiln::Error(spec) naming the op and option otherwise.
static ir::Spatial option_values(const std::vector<int64_t>& values, size_t count, const char* name,
                                 const std::string& op) {
  if (values.size() != count)
    throw Error(ErrorKind::spec,
                op + ": " + name + " needs " + std::to_string(count) + " values, got " + std::to_string(values.size()));
  return values;
}
static ir::Pair option_pair(const std::vector<int64_t>& values, const char* name, const std::string& op) {
  const ir::Spatial pair = option_values(values, 2, name, op);
  return {pair[0], pair[1]};
}

#define KILN_UNARY(name)                                                                                               \
  Tensor name(const Tensor& x, Loc loc) { return apply1(OpKind::name, {x}, {}, loc); }
KILN_UNARY_FUNCTIONS(KILN_UNARY)
#undef KILN_UNARY

Tensor gelu(const Tensor& x, const std::string& approximate, Loc loc) {
  const std::optional<ir::GeluForm> form = ir::gelu_form_from_name(approximate);
  if (!form)
    throw Error(ErrorKind::spec, "kiln.gelu at " + trace::to_source_loc(loc).to_string() +
                                     ": approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return apply1(OpKind::gelu, {x}, encode_params(ir::GeluParams{*form}), loc);
}

Tensor leaky_relu(const Tensor& x, double negative_slope, Loc loc) {
  return apply1(OpKind::leaky_relu, {x}, encode_params(ir::LeakyReluParams{negative_slope}), loc);
}
Tensor elu(const Tensor& x, double alpha, Loc loc) {
  return apply1(OpKind::elu, {x}, encode_params(ir::EluParams{alpha}), loc);
}
Tensor softplus(const Tensor& x, double beta, double threshold, Loc loc) {
  return apply1(OpKind::softplus, {x}, encode_params(ir::SoftplusParams{beta, threshold}), loc);
}

// x as `dtype`: itself, or a kiln.cast (an eager cast on concrete tensors).
static Tensor cast_to(const Tensor& x, DType dtype, Loc loc) { return x.dtype() == dtype ? x : cast(x, dtype, loc); }

// Both operands cast to their result type (PyTorch's promotion, dtype_promotion.hpp), so the graph
// holds the casts and every tier computes in one dtype.
static std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, DType dtype, Loc loc) {
  return {cast_to(a, dtype, loc), cast_to(b, dtype, loc)};
}
static std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, Loc loc) {
  return promoted(a, b, result_type({a, b}), loc);
}

#define KILN_BINARY(name, kind)                                                                                        \
  Tensor name(const Tensor& a, const Tensor& b, Loc loc) {                                                             \
    auto [x, y] = promoted(a, b, loc);                                                                                 \
    return apply1(OpKind::kind, {x, y}, {}, loc);                                                                      \
  }
// clang-format off
KILN_BINARY(add, add)
KILN_BINARY(sub, sub)
KILN_BINARY(mul, mul)
KILN_BINARY(pow, pow)
KILN_BINARY(maximum, maximum)
KILN_BINARY(minimum, minimum)
// clang-format on
#undef KILN_BINARY

// Eager integer division by zero is an error, as in PyTorch; a graph cannot stop mid-kernel, so
// there it gives 0 (documented in op_table.def).
static void refuse_integer_division_by_zero(const Tensor& divisor, const char* op, Loc loc) {
  if (!divisor.is_concrete() || dtype_is_float(divisor.dtype())) return;
  const Tensor wide = divisor.cast(DType::i64);
  for (int64_t i = 0; i < wide.numel(); ++i)
    if (wide.data<int64_t>()[i] == 0)
      throw Error(ErrorKind::numeric, std::string("kiln.") + op + " at " + trace::to_source_loc(loc).to_string() +
                                          ": integer division by zero (element " + std::to_string(i) +
                                          " of the divisor)");
}

#define KILN_FLOOR_DIVISION(name)                                                                                      \
  Tensor name(const Tensor& a, const Tensor& b, Loc loc) {                                                             \
    auto [x, y] = promoted(a, b, loc);                                                                                 \
    if (x.is_concrete()) refuse_integer_division_by_zero(y, #name, loc);                                               \
    return apply1(OpKind::name, {x, y}, {}, loc);                                                                      \
  }
KILN_FLOOR_DIVISION(floor_divide)
KILN_FLOOR_DIVISION(remainder)
#undef KILN_FLOOR_DIVISION

// True division, as torch.div: integer and bool operands give the default float dtype (f32).
static DType true_division_type(DType promoted) { return dtype_is_float(promoted) ? promoted : DType::f32; }

Tensor div(const Tensor& a, const Tensor& b, Loc loc) {
  auto [x, y] = promoted(a, b, true_division_type(result_type({a, b})), loc);
  return apply1(OpKind::div, {x, y}, {}, loc);
}

#define KILN_COMPARE(name)                                                                                             \
  Tensor name(const Tensor& a, const Tensor& b, Loc loc) {                                                             \
    auto [x, y] = promoted(a, b, loc);                                                                                 \
    return apply1(OpKind::compare, {x, y}, encode_params(ir::CompareParams{ir::ComparePredicate::name}), loc);         \
  }
// clang-format off
KILN_COMPARE(eq)
KILN_COMPARE(ne)
KILN_COMPARE(lt)
KILN_COMPARE(le)
KILN_COMPARE(gt)
KILN_COMPARE(ge)
// clang-format on
#undef KILN_COMPARE

Tensor scalar(double value, DType dtype, Loc loc) {
  // A captured concrete 0-d tensor: eager here, an embedded constant once mixed into a graph.
  (void)loc;
  return Tensor::full({}, value, dtype);
}

// A scalar operand as a 0-d constant of `dtype`, integers exactly.
Tensor scalar_operand(Scalar value, DType dtype) {
  if (dtype == DType::i64 && value.kind() != Scalar::Kind::floating)
    return Tensor::from_vector<int64_t>({value.as_integer()}, {});
  return Tensor::full({}, value.as_double(), dtype);
}

Tensor pow(const Tensor& x, Scalar exponent, Loc loc) {
  const DType dtype = result_type({x, exponent});
  if (!dtype_is_float(dtype) && exponent.as_integer() < 0)
    throw Error(ErrorKind::dtype, "kiln.pow at " + trace::to_source_loc(loc).to_string() + ": " +
                                      dtype_name(x.dtype()) + " to the power " + std::to_string(exponent.as_integer()) +
                                      ": integers to negative integer powers are not allowed (as in PyTorch)");
  return apply1(OpKind::pow, {cast_to(x, dtype, loc), scalar_operand(exponent, dtype)}, {}, loc);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc) {
  auto [x, y] = promoted(a, b, loc);
  return apply1(OpKind::where, {cond, x, y}, {}, loc);
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, Loc loc) {
  return apply1(OpKind::clamp, {x, lo, hi}, {}, loc);
}
Tensor clamp(const Tensor& x, Scalar lo, Scalar hi, Loc loc) {
  const DType dtype = result_type({x, lo, hi});
  return clamp(cast_to(x, dtype, loc), scalar_operand(lo, dtype), scalar_operand(hi, dtype), loc);
}

Tensor cast(const Tensor& x, DType dtype, Loc loc) {
  return apply1(OpKind::cast, {x}, encode_params(ir::CastParams{dtype}), loc);
}

static Attrs reduce_attrs(const std::vector<int64_t>& axes, bool keepdims) {
  return encode_params(ir::ReduceParams{axes, keepdims});
}
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_sum, {x}, reduce_attrs(axes, keepdims), loc);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_mean, {x}, reduce_attrs(axes, keepdims), loc);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_max, {x}, reduce_attrs(axes, keepdims), loc);
}
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_min, {x}, reduce_attrs(axes, keepdims), loc);
}
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_prod, {x}, reduce_attrs(axes, keepdims), loc);
}
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_var, {x}, encode_params(ir::VarianceParams{axes, correction, keepdims}), loc);
}
Tensor std(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdims, Loc loc) {
  return apply1(OpKind::reduce_std, {x}, encode_params(ir::VarianceParams{axes, correction, keepdims}), loc);
}
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  return apply1(OpKind::argmax, {x}, encode_params(ir::ArgmaxParams{axis, keepdims}), loc);
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  return apply1(OpKind::argmin, {x}, encode_params(ir::ArgmaxParams{axis, keepdims}), loc);
}
Tensor cumsum(const Tensor& x, int64_t axis, Loc loc) {
  return apply1(OpKind::cumsum, {x}, encode_params(ir::AxisParams{axis}), loc);
}
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted, Loc loc) {
  std::vector<Tensor> results =
      trace::apply(OpKind::topk, {x}, encode_params(ir::TopkParams{k, axis, largest, sorted}), loc);
  return {results.at(0), results.at(1)};
}
Tensor tril(const Tensor& x, int64_t diagonal, Loc loc) {
  return apply1(OpKind::tril, {x}, encode_params(ir::DiagonalParams{diagonal}), loc);
}
Tensor triu(const Tensor& x, int64_t diagonal, Loc loc) {
  return apply1(OpKind::triu, {x}, encode_params(ir::DiagonalParams{diagonal}), loc);
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Loc loc) {
  return apply1(OpKind::masked_fill, {x, mask}, encode_params(ir::MaskedFillParams{value}), loc);
}
Tensor softmax(const Tensor& x, int64_t axis, Loc loc) {
  return apply1(OpKind::softmax, {x}, encode_params(ir::AxisParams{axis}), loc);
}
Tensor log_softmax(const Tensor& x, int64_t axis, Loc loc) {
  return apply1(OpKind::log_softmax, {x}, encode_params(ir::AxisParams{axis}), loc);
}

static std::vector<Tensor> defined_only(std::vector<Tensor> ts) {
  std::vector<Tensor> out;
  for (auto& t : ts)
    if (t.defined()) out.push_back(std::move(t));
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t axis, Loc loc) {
  if (!weight.defined() && bias.defined())
    throw Error(ErrorKind::spec, "layer_norm at " + trace::to_source_loc(loc).to_string() +
                                     ": a bias needs a weight (pass Tensor::ones for the weight)");
  return apply1(OpKind::layer_norm, defined_only({x, weight, bias}), encode_params(ir::NormParams{axis, eps}), loc);
}
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, int64_t axis, Loc loc) {
  return apply1(OpKind::rms_norm, defined_only({x, weight}), encode_params(ir::NormParams{axis, eps}), loc);
}
Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                  double eps, Loc loc) {
  if (weight.defined() != bias.defined())
    throw Error(ErrorKind::spec,
                "batch_norm at " + trace::to_source_loc(loc).to_string() + ": weight and bias come together");
  return apply1(OpKind::batch_norm, defined_only({x, mean, var, weight, bias}), encode_params(ir::BatchNormParams{eps}),
                loc);
}

// The op takes weight and bias together, as batch_norm: the one torch lets be missing is 1 or 0.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps, Loc loc) {
  // torch refuses groups of one value: N * C / num_groups * the spatial size must exceed 1.
  if (x.defined() && x.rank() >= 2 && num_groups > 0) {
    bool one_value = x.shape()[1].is_static() && x.shape()[1].size() == num_groups;
    for (size_t i = 0; i < x.shape().size(); ++i)
      if (i != 1) one_value = one_value && x.shape()[i].is_static() && x.shape()[i].size() == 1;
    if (one_value)
      throw Error(ErrorKind::shape, "kiln.group_norm at " + trace::to_source_loc(loc).to_string() + ": input " +
                                        shape_to_string(x.shape()) + " has one value per group (torch refuses it)");
  }
  if (!weight.defined() && !bias.defined())
    return apply1(OpKind::group_norm, {x}, encode_params(ir::GroupNormParams{num_groups, eps}), loc);
  const Tensor& given = weight.defined() ? weight : bias;
  const Tensor w = weight.defined() ? weight : F::full(given.shape(), 1.0, given.dtype(), loc);
  const Tensor b = bias.defined() ? bias : F::full(given.shape(), 0.0, given.dtype(), loc);
  return apply1(OpKind::group_norm, {x, w, b}, encode_params(ir::GroupNormParams{num_groups, eps}), loc);
}
Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Loc loc) {
  const std::string op = "kiln.instance_norm at " + trace::to_source_loc(loc).to_string();
  if (!x.defined()) throw Error(ErrorKind::spec, op + ": undefined input");
  const Shape& shape = x.shape();
  if (shape.size() < 3) throw Error(ErrorKind::shape, op + ": input " + shape_to_string(shape) + " needs rank >= 3");
  bool one_spatial = true;
  for (size_t i = 2; i < shape.size(); ++i)
    one_spatial = one_spatial && shape[i].is_static() && shape[i].size() == 1;
  if (one_spatial)
    throw Error(ErrorKind::shape,
                op + ": input " + shape_to_string(shape) + " has one spatial element (torch refuses it)");
  if (!shape[1].is_static()) throw Error(ErrorKind::shape, op + ": channels must be static");
  return group_norm(x, shape[1].size(), weight, bias, eps, loc);
}

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) { return apply1(OpKind::matmul, {a, b}, {}, loc); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc) {
  Tensor y = matmul(x, transpose(weight, -1, -2, loc), loc);
  return bias.defined() ? add(y, bias, loc) : y;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    bool is_causal, std::optional<double> scale, Loc loc) {
  return apply1(OpKind::scaled_dot_product_attention, defined_only({q, k, v, attn_mask}),
                encode_params(ir::AttentionParams{is_causal, scale}), loc);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o, Loc loc) {
  const std::string op = "kiln.conv2d at " + trace::to_source_loc(loc).to_string();
  const ir::ConvParams params{option_values(o.stride, 2, "stride", op), option_values(o.padding, 2, "padding", op),
                              option_values(o.dilation, 2, "dilation", op), o.groups};
  return apply1(OpKind::conv2d, defined_only({x, weight, bias}), encode_params(params), loc);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o, Loc loc) {
  const ir::ConvParams params{{o.stride}, {o.padding}, {o.dilation}, o.groups};
  return apply1(OpKind::conv1d, defined_only({x, weight, bias}), encode_params(params), loc);
}

static ir::PoolParams pool_window(const Pool2dOptions& o, const std::string& op) {
  return {option_pair(o.kernel, "kernel", op), option_pair(o.stride.empty() ? o.kernel : o.stride, "stride", op),
          option_pair(o.padding, "padding", op)};
}
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o, Loc loc) {
  const std::string op = "kiln.max_pool2d at " + trace::to_source_loc(loc).to_string();
  return apply1(OpKind::max_pool2d, {x}, encode_params(pool_window(o, op)), loc);
}
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o, Loc loc) {
  const std::string op = "kiln.avg_pool2d at " + trace::to_source_loc(loc).to_string();
  return apply1(OpKind::avg_pool2d, {x}, encode_params(ir::AvgPoolParams{pool_window(o, op), o.count_include_pad}),
                loc);
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size, Loc loc) {
  const std::string op = "kiln.adaptive_avg_pool2d at " + trace::to_source_loc(loc).to_string();
  return apply1(OpKind::adaptive_avg_pool2d, {x},
                encode_params(ir::AdaptivePoolParams{option_pair(output_size, "output_size", op)}), loc);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTranspose2dOptions& o,
                        Loc loc) {
  const std::string op = "kiln.conv_transpose2d at " + trace::to_source_loc(loc).to_string();
  const ir::ConvTransposeParams params{{option_values(o.stride, 2, "stride", op),
                                        option_values(o.padding, 2, "padding", op),
                                        option_values(o.dilation, 2, "dilation", op), o.groups},
                                       option_pair(o.output_padding, "output_padding", op)};
  return apply1(OpKind::conv_transpose2d, defined_only({x, weight, bias}), encode_params(params), loc);
}

Tensor interpolate(const Tensor& x, const InterpolateOptions& o, Loc loc) {
  const std::string op = "kiln.interpolate at " + trace::to_source_loc(loc).to_string();
  if (o.size.empty() == o.scale_factor.empty())
    throw Error(ErrorKind::spec, op + ": give exactly one of size and scale_factor");
  if (!x.defined() || x.rank() != 4) throw Error(ErrorKind::shape, op + ": needs an NCHW input");
  ir::InterpolateParams params;
  if (o.mode == "bilinear")
    params.mode = ir::InterpolateMode::bilinear;
  else if (o.mode != "nearest")
    throw Error(ErrorKind::spec, op + ": mode must be \"nearest\" or \"bilinear\", got \"" + o.mode + "\"");
  params.align_corners = o.align_corners;
  if (!o.size.empty()) {
    params.size = option_pair(o.size, "size", op);
  } else {
    if (o.scale_factor.size() != 2)
      throw Error(ErrorKind::spec, op + ": scale_factor needs 2 values, got " + std::to_string(o.scale_factor.size()));
    for (size_t i = 0; i < 2; ++i) {
      const Dim& d = x.shape()[2 + i];
      if (!d.is_static()) throw Error(ErrorKind::shape, op + ": scale_factor needs static spatial dims");
      const double scale = o.scale_factor[i];
      if (!(std::isfinite(scale) && scale > 0))
        throw Error(ErrorKind::spec, op + ": scale_factor must be finite and > 0");
      // torch: floor(float(in) * scale), in double.
      params.size[i] = checked_int64(std::floor(double(d.size()) * scale), "interpolate output size");
      params.scales[i] = scale;
    }
  }
  return apply1(OpKind::interpolate, {x}, encode_params(params), loc);
}

Tensor reshape(const Tensor& x, const Shape& shape, Loc loc) {
  if (!x.defined()) throw Error(ErrorKind::spec, "reshape of an undefined Tensor");
  Shape resolved;
  try {
    resolved = ir::infer::resolve_reshape(x.shape(), shape);
  } catch (const ir::InferError& e) {
    throw Error(e.kind, "kiln.reshape at " + trace::to_source_loc(loc).to_string() + ": " + e.what());
  }
  return apply1(OpKind::reshape, {x}, encode_params(ir::ShapeParams{resolved}), loc);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm, Loc loc) {
  return apply1(OpKind::transpose, {x}, encode_params(ir::TransposeParams{perm}), loc);
}

Tensor transpose(const Tensor& x, int64_t a, int64_t b, Loc loc) {
  int64_t rank = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[size_t(i)] = i;
  auto norm = [&](int64_t axis) {
    if (axis < -rank || axis >= rank)
      throw Error(ErrorKind::shape, "kiln.transpose at " + trace::to_source_loc(loc).to_string() + ": axis " +
                                        std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return size_t(axis < 0 ? axis + rank : axis);
  };
  std::swap(perm[norm(a)], perm[norm(b)]);
  return permute(x, perm, loc);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape, Loc loc) {
  return apply1(OpKind::broadcast_to, {x}, encode_params(ir::ShapeParams{shape}), loc);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, Loc loc) {
  return apply1(OpKind::concat, xs, encode_params(ir::AxisParams{axis}), loc);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis, Loc loc) {
  return trace::apply(OpKind::split, {x}, encode_params(ir::SplitParams{axis, sizes}), loc);
}

namespace {

// A slice bound as written: a static index (negative counts from the end) or a symbolic dim.
struct SliceBound {
  int64_t index = 0;
  std::optional<Dim> symbolic;
};

// The bound as an offset into the axis. Static bounds on a static axis are clipped to it; on a
// symbolic axis a negative one counts back from it (-1 on seq is seq-1).
Dim axis_offset(const SliceBound& bound, const Dim& axis) {
  if (bound.symbolic) return *bound.symbolic;
  if (axis.is_static()) {
    const int64_t n = axis.size(), i = bound.index;
    return Dim(std::clamp<int64_t>(i < 0 ? i + n : i, 0, n));
  }
  if (bound.index == INT64_MAX) return axis;
  if (bound.index >= 0) return Dim(bound.index);
  return axis - Dim(bound.index == INT64_MIN ? INT64_MAX : -bound.index);
}

Tensor slice_axis(const Tensor& x, int64_t axis, const SliceBound& start, const SliceBound& end, int64_t step,
                  Loc loc) {
  int64_t rank = x.rank();
  if (axis < -rank || axis >= rank)
    throw Error(ErrorKind::shape, "kiln.slice at " + trace::to_source_loc(loc).to_string() + ": axis " +
                                      std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  size_t a = size_t(axis < 0 ? axis + rank : axis);
  Shape starts(size_t(rank), Dim(0)), ends;
  std::vector<int64_t> steps(size_t(rank), 1);
  for (const Dim& d : x.shape())
    ends.push_back(d.is_static() ? d : Dim(INT64_MAX));
  const Dim& d = x.shape()[a];
  starts[a] = axis_offset(start, d);
  ends[a] = axis_offset(end, d);
  if (starts[a].is_static() && ends[a].is_static()) ends[a] = Dim(std::max(starts[a].size(), ends[a].size()));
  steps[a] = step;
  return apply1(OpKind::slice, {x}, encode_params(ir::SliceParams{starts, ends, steps}), loc);
}

SliceBound bound_of(const Dim& d) { return d.is_static() ? SliceBound{d.size(), {}} : SliceBound{0, d}; }

} // namespace

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step, Loc loc) {
  return slice_axis(x, axis, {start, {}}, {end, {}}, step, loc);
}

Tensor slice(const Tensor& x, int64_t axis, const Dim& start, const Dim& end, int64_t step, Loc loc) {
  return slice_axis(x, axis, bound_of(start), bound_of(end), step, loc);
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes, Loc loc) {
  return apply1(OpKind::squeeze, {x}, encode_params(ir::AxesParams{axes}), loc);
}
Tensor unsqueeze(const Tensor& x, const std::vector<int64_t>& axes, Loc loc) {
  return apply1(OpKind::unsqueeze, {x}, encode_params(ir::AxesParams{axes}), loc);
}

Tensor flatten(const Tensor& x, int64_t start_axis, Loc loc) {
  int64_t rank = x.rank();
  int64_t s = start_axis < 0 ? start_axis + rank : start_axis;
  if (s < 0 || s >= rank)
    throw Error(ErrorKind::shape, "flatten at " + trace::to_source_loc(loc).to_string() + ": start axis " +
                                      std::to_string(start_axis) + " is out of range for rank " + std::to_string(rank));
  Shape target(x.shape().begin(), x.shape().begin() + s);
  target.push_back(Dim(-1));
  return reshape(x, target, loc);
}

Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis, Loc loc) {
  return apply1(OpKind::gather, {data, indices}, encode_params(ir::AxisParams{axis}), loc);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value, Loc loc) {
  return apply1(OpKind::pad, {x}, encode_params(ir::PadParams{pads, value}), loc);
}

static std::string place(const char* op, Loc loc) {
  return std::string("kiln.") + op + " at " + trace::to_source_loc(loc).to_string() + ": ";
}

Tensor embedding(const Tensor& indices, const Tensor& weight, Loc loc) {
  const std::string where = place("embedding", loc);
  if (weight.rank() != 2)
    throw Error(ErrorKind::shape, where + "weight must be [rows, D], got " + shape_to_string(weight.shape()));
  const Dim& rows = weight.shape()[0];
  if (indices.is_concrete() && rows.is_static() && (indices.dtype() == DType::i32 || indices.dtype() == DType::i64)) {
    const Tensor wide = indices.cast(DType::i64);
    for (int64_t i = 0; i < wide.numel(); ++i) {
      const int64_t index = wide.data<int64_t>()[i];
      if (index < 0 || index >= rows.size())
        throw Error(ErrorKind::shape, where + "index " + std::to_string(index) + " (element " + std::to_string(i) +
                                          ") is out of range for " + std::to_string(rows.size()) + " rows");
    }
  }
  return gather(weight, indices, 0, loc);
}

Tensor expand(const Tensor& x, const std::vector<int64_t>& sizes, Loc loc) {
  const std::string where = place("expand", loc);
  const size_t rank = size_t(x.rank());
  if (sizes.size() < rank)
    throw Error(ErrorKind::shape, where + std::to_string(sizes.size()) + " sizes for " + shape_to_string(x.shape()) +
                                      ", which has " + std::to_string(rank) + " dims");
  const size_t lead = sizes.size() - rank;
  Shape target;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string size = std::to_string(sizes[i]);
    if (i < lead && sizes[i] < 0)
      throw Error(ErrorKind::shape,
                  where + "size " + size + " of new leading dim " + std::to_string(i) + " must be >= 0");
    if (i < lead) {
      target.push_back(Dim(sizes[i]));
      continue;
    }
    const Dim& d = x.shape()[i - lead];
    if (sizes[i] < -1) throw Error(ErrorKind::shape, where + "size " + size + " must be >= 0 or -1 (keep)");
    if (d.is_static() && sizes[i] != -1 && d.size() != 1 && d.size() != sizes[i])
      throw Error(ErrorKind::shape, where + "dim " + std::to_string(i - lead) + " of " + shape_to_string(x.shape()) +
                                        " is neither 1 nor " + size);
    target.push_back(sizes[i] == -1 ? d : Dim(sizes[i]));
  }
  return broadcast_to(x, target, loc);
}

namespace {

// An einsum equation read: each operand's letters, the output's, and where each letter was written.
struct EinsumEquation {
  std::vector<std::string> inputs;
  std::string output;
};

[[noreturn]] void einsum_error(const std::string& where, const std::string& equation, size_t position,
                               const std::string& what) {
  throw Error(ErrorKind::spec, where + what + " at position " + std::to_string(position) + " of \"" + equation + "\"");
}

// Letters, ',' between operands, one "->" before the output; spaces are skipped, as torch does.
EinsumEquation parse_einsum(const std::string& equation, const std::string& where) {
  EinsumEquation parsed{{""}, ""};
  bool explicit_output = false;
  std::vector<size_t> positions(128, 0);
  for (size_t i = 0; i < equation.size(); ++i) {
    const char c = equation[i];
    if (c == ' ') continue;
    std::string& letters = explicit_output ? parsed.output : parsed.inputs.back();
    if (std::isalpha(static_cast<unsigned char>(c))) {
      if (letters.find(c) != std::string::npos)
        einsum_error(where, equation, i,
                     std::string("'") + c + "' repeats in " + (explicit_output ? "the output" : "one operand") +
                         (explicit_output ? "" : " (diagonals are not supported)"));
      letters += c;
      positions[size_t(c)] = i;
      continue;
    }
    if (c == ',' && !explicit_output) {
      parsed.inputs.emplace_back();
      continue;
    }
    if (c == '-' && !explicit_output && i + 1 < equation.size() && equation[i + 1] == '>') {
      explicit_output = true;
      ++i;
      continue;
    }
    if (c == '.') einsum_error(where, equation, i, "'...' (ellipsis) is not supported");
    einsum_error(where, equation, i, std::string("unexpected '") + c + "'");
  }
  std::string all;
  for (const std::string& letters : parsed.inputs)
    all += letters;
  for (char c : parsed.output)
    if (all.find(c) == std::string::npos)
      einsum_error(where, equation, positions[size_t(c)], std::string("output letter '") + c + "' is in no operand");
  if (explicit_output) return parsed;
  for (char c : all)
    if (std::count(all.begin(), all.end(), c) == 1) parsed.output += c;
  std::sort(parsed.output.begin(), parsed.output.end());
  return parsed;
}

bool has(const std::string& letters, char c) { return letters.find(c) != std::string::npos; }

// The product of the dims of `letters`, one Dim: a symbolic dim only alone.
Dim merged_dim(const std::string& letters, const std::map<char, Dim>& dims, const std::string& where) {
  if (letters.size() == 1) return dims.at(letters[0]);
  int64_t product = 1;
  for (char c : letters) {
    const Dim& d = dims.at(c);
    if (d.is_symbolic())
      throw Error(ErrorKind::shape, where + "symbolic dim '" + d.name() + "' of '" + c + "' cannot merge with others");
    product *= d.size();
  }
  return Dim(product);
}

// x's axes (named by `from`) in the order of `to`; no op when it is already.
Tensor permuted(const Tensor& x, const std::string& from, const std::string& to, Loc loc) {
  if (from == to) return x;
  std::vector<int64_t> perm;
  for (char c : to)
    perm.push_back(int64_t(from.find(c)));
  return permute(x, perm, loc);
}

Tensor reshaped(const Tensor& x, const Shape& shape, Loc loc) {
  return x.shape() == shape ? x : reshape(x, shape, loc);
}

// Sums the axes whose letters neither the output nor the other operand has.
Tensor sum_private(const Tensor& x, std::string& letters, const std::string& keep, Loc loc) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t a = 0; a < letters.size(); ++a) {
    if (has(keep, letters[a]))
      kept += letters[a];
    else
      axes.push_back(int64_t(a));
  }
  letters = kept;
  return axes.empty() ? x : sum(x, axes, false, loc);
}

} // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, Loc loc) {
  const std::string where = place("einsum", loc);
  EinsumEquation eq = parse_einsum(equation, where);
  if (eq.inputs.size() != operands.size())
    throw Error(ErrorKind::spec, where + "\"" + equation + "\" names " + std::to_string(eq.inputs.size()) +
                                     " operands, got " + std::to_string(operands.size()));
  if (operands.empty() || operands.size() > 2)
    throw Error(ErrorKind::spec, where + "one or two operands are supported, got " + std::to_string(operands.size()));
  std::map<char, Dim> dims;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string& letters = eq.inputs[i];
    if (operands[i].rank() != int64_t(letters.size()))
      throw Error(ErrorKind::shape, where + "operand " + std::to_string(i) + " " +
                                        shape_to_string(operands[i].shape()) + " has " +
                                        std::to_string(operands[i].rank()) + " dims, \"" + letters + "\" names " +
                                        std::to_string(letters.size()));
    for (size_t a = 0; a < letters.size(); ++a) {
      const Dim& d = operands[i].shape()[a];
      const auto [it, added] = dims.emplace(letters[a], d);
      if (!added && !(it->second == d))
        throw Error(ErrorKind::shape, where + "'" + letters[a] + "' is " + it->second.to_string() + " and " +
                                          d.to_string() + " in different operands");
    }
  }
  std::string la = eq.inputs[0];
  if (operands.size() == 1) return permuted(sum_private(operands[0], la, eq.output, loc), la, eq.output, loc);
  std::string lb = eq.inputs[1];
  const Tensor a = sum_private(operands[0], la, eq.output + lb, loc);
  const Tensor b = sum_private(operands[1], lb, eq.output + la, loc);
  std::string batch, contracted, a_free, b_free;
  for (char c : eq.output)
    if (has(la, c) && has(lb, c)) batch += c;
  for (char c : la) {
    if (has(lb, c) && !has(eq.output, c)) contracted += c;
    if (!has(lb, c)) a_free += c;
  }
  for (char c : lb)
    if (!has(la, c)) b_free += c;
  auto size_of = [&](const std::string& letters) {
    return letters.empty() ? Dim(1) : merged_dim(letters, dims, where);
  };
  const Shape a_shape{size_of(batch), size_of(a_free), size_of(contracted)};
  const Shape b_shape{size_of(batch), size_of(contracted), size_of(b_free)};
  const Tensor product = matmul(reshaped(permuted(a, la, batch + a_free + contracted, loc), a_shape, loc),
                                reshaped(permuted(b, lb, batch + contracted + b_free, loc), b_shape, loc), loc);
  const std::string result = batch + a_free + b_free;
  Shape result_shape;
  for (char c : result)
    result_shape.push_back(dims.at(c));
  return permuted(reshaped(product, result_shape, loc), result, eq.output, loc);
}

Tensor constant(const Tensor& value, Loc loc) {
  if (!value.is_concrete()) return value;
  if (!trace::current_builder()) return value;
  return apply1(OpKind::constant, {}, encode_params(ir::ConstantParams{value}), loc);
}

Tensor constant_external(const std::string& name, const TensorLayout& layout, Loc loc) {
  auto builder = trace::current_builder();
  ir::SourceLoc where = trace::to_source_loc(loc);
  if (!builder)
    throw Error(ErrorKind::weight, "constant_external('" + name + "') at " + where.to_string() +
                                       ": weights exist only inside stage() or compile()");
  if (name.empty()) throw Error(ErrorKind::weight, "constant_external at " + where.to_string() + ": empty weight name");
  for (const Dim& d : layout.shape)
    if (d.is_symbolic() || d.size() < 0)
      throw Error(ErrorKind::weight, "constant_external('" + name + "') at " + where.to_string() +
                                         ": weights need static dims, got " + shape_to_string(layout.shape));
  ir::ValueType type{layout.dtype, layout.shape, false};
  return builder->add_op(OpKind::constant_external, {}, {type}, encode_params(ir::ExternalParams{name}), where).at(0);
}

Tensor full(const Shape& shape, double value, DType dtype, Loc loc) {
  return apply1(OpKind::full, {}, encode_params(ir::FullParams{shape, value, dtype}), loc);
}

Tensor arange(double start, double stop, double step, DType dtype, Loc loc) {
  return apply1(OpKind::arange, {}, encode_params(ir::ArangeParams{start, stop, step, dtype, {}}), loc);
}

Tensor arange(const Dim& length, DType dtype, Loc loc) {
  if (length.is_static()) return arange(0.0, double(length.size()), 1.0, dtype, loc);
  return apply1(OpKind::arange, {}, encode_params(ir::ArangeParams{0.0, 0.0, 1.0, dtype, {length}}), loc);
}

void buffer_store(const Tensor& buffer, const Tensor& value, Loc loc) {
  if (buffer.defined() && buffer.is_concrete())
    throw Error(ErrorKind::spec, "buffer_store at " + trace::to_source_loc(loc).to_string() +
                                     ": the destination is a concrete tensor; stores are staged into BufferLayout "
                                     "arguments (write eagerly with value.copy_to(buffer))");
  trace::apply(OpKind::buffer_store, {buffer, value}, {}, loc);
}

std::vector<Tensor> custom(const std::string& name, const std::vector<Tensor>& inputs,
                           const std::map<std::string, CustomAttr>& attrs, Loc loc) {
  Attrs op_attrs = encode_params(ir::CustomParams{name});
  for (const auto& [key, value] : attrs) {
    if (key == "op")
      throw Error(ErrorKind::spec, "custom op '" + name + "' at " + trace::to_source_loc(loc).to_string() +
                                       ": the attribute name 'op' is reserved for the op name");
    op_attrs.set(key, std::visit([](const auto& v) { return Attr{v}; }, value));
  }
  return trace::apply(OpKind::custom, inputs, std::move(op_attrs), loc);
}

} // namespace kiln::F

namespace kiln {

namespace {

// The dtype `t op s` computes in; division's is floating.
DType dtype_with_scalar(const Tensor& t, Scalar s, bool divides) {
  const DType promoted = result_type({t, s});
  return divides && !dtype_is_float(promoted) ? DType::f32 : promoted;
}

} // namespace

#define KILN_OPERATOR(op, fn, divides)                                                                                 \
  Tensor operator op(LocatedTensor a, const Tensor& b) { return F::fn(a.tensor, b, a.loc); }                           \
  Tensor operator op(LocatedTensor a, Scalar b) {                                                                      \
    const DType dtype = dtype_with_scalar(a.tensor, b, divides);                                                       \
    return F::fn(a.tensor, F::scalar_operand(b, dtype), a.loc);                                                        \
  }                                                                                                                    \
  Tensor operator op(Scalar a, LocatedTensor b) {                                                                      \
    const DType dtype = dtype_with_scalar(b.tensor, a, divides);                                                       \
    return F::fn(F::scalar_operand(a, dtype), b.tensor, b.loc);                                                        \
  }
KILN_OPERATOR(+, add, false)
KILN_OPERATOR(-, sub, false)
KILN_OPERATOR(*, mul, false)
KILN_OPERATOR(/, div, true)
#undef KILN_OPERATOR

Tensor operator-(LocatedTensor a) { return F::neg(a.tensor, a.loc); }

} // namespace kiln
