#include "ir/op_params.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <cmath>
#include <iterator>

namespace kiln::ir {

bool operator==(const ConstantParams& a, const ConstantParams& b) {
  return attr_equal(Attr::of_tensor(a.value), Attr::of_tensor(b.value));
}

namespace {

// Reads one attribute of type T; `kind` names the type in messages ("f64", "array<i64>").
template <class T> const T& required(const Attrs& attrs, const std::string& name, const char* kind) {
  const Attr* attr = attrs.find(name);
  if (!attr) throw AttrError("missing attribute '" + name + "' (" + kind + ")");
  const T* value = std::get_if<T>(&attr->value);
  if (!value) throw AttrError("attribute '" + name + "' must be " + kind);
  return *value;
}
template <class T> T optional(const Attrs& attrs, const std::string& name, const char* kind, T fallback) {
  return attrs.has(name) ? required<T>(attrs, name, kind) : fallback;
}

bool get_bool(const Attrs& a, const std::string& n) { return required<bool>(a, n, "bool"); }
int64_t get_int(const Attrs& a, const std::string& n) { return required<int64_t>(a, n, "i64"); }
double get_float(const Attrs& a, const std::string& n) { return required<double>(a, n, "f64"); }
const std::string& get_string(const Attrs& a, const std::string& n) { return required<std::string>(a, n, "string"); }
const Attr::Ints& get_ints(const Attrs& a, const std::string& n) { return required<Attr::Ints>(a, n, "array<i64>"); }
const Shape& get_shape(const Attrs& a, const std::string& n) { return required<Shape>(a, n, "shape"); }
DType get_dtype(const Attrs& a, const std::string& n) { return required<DType>(a, n, "dtype"); }

// Slice bounds: array<i64> when static, a shape attribute when one is symbolic. A negative static
// bound reads as 0, the clamp inference applies to it.
Shape get_bounds(const Attrs& attrs, const std::string& name) {
  const Attr* attr = attrs.find(name);
  if (attr)
    if (const Shape* shape = std::get_if<Shape>(&attr->value)) return *shape;
  Shape bounds;
  for (int64_t v : get_ints(attrs, name))
    bounds.push_back(Dim(std::max<int64_t>(v, 0)));
  return bounds;
}

Spatial get_spatial(const Attrs& attrs, const std::string& name, int rank) {
  const Attr::Ints& values = get_ints(attrs, name);
  if (values.size() != size_t(rank))
    throw AttrError(name + " needs " + std::to_string(rank) + (rank == 1 ? " value" : " values") + ", got " +
                    std::to_string(values.size()));
  return values;
}

Pair get_pair(const Attrs& attrs, const std::string& name) {
  const Attr::Ints& values = get_ints(attrs, name);
  if (values.size() != 2) throw AttrError(name + " needs 2 values, got " + std::to_string(values.size()));
  return {values[0], values[1]};
}

int64_t operand_rank(std::span<const ValueType> operands) {
  if (operands.empty()) throw InferError("needs an operand");
  return operands[0].rank();
}

constexpr const char* kPredicateNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};

// One flag per axis of `rank`, set for each written axis (negatives count from the end); a repeated
// axis is an InferError.
std::vector<bool> marked_axes(const Attr::Ints& written, int64_t rank) {
  std::vector<bool> marked(size_t(rank), false);
  for (int64_t axis : written) {
    const int64_t n = normalize_axis(axis, rank);
    if (marked[size_t(n)]) throw InferError("axis " + std::to_string(axis) + " is repeated");
    marked[size_t(n)] = true;
  }
  return marked;
}

std::vector<int64_t> indices_of(const std::vector<bool>& marked) {
  std::vector<int64_t> indices;
  for (size_t i = 0; i < marked.size(); ++i)
    if (marked[i]) indices.push_back(int64_t(i));
  return indices;
}

// An optional f64 attribute that must be finite when given.
double finite(const Attrs& attrs, const std::string& name, double fallback) {
  const double value = optional<double>(attrs, name, "f64", fallback);
  if (!std::isfinite(value)) throw AttrError("attribute '" + name + "' must be finite");
  return value;
}

PoolParams decode_pool(const Attrs& attrs) {
  return {get_pair(attrs, "kernel"), get_pair(attrs, "stride"), get_pair(attrs, "padding")};
}

} // namespace

const PoolParams& pool_window(const OpParams& params) {
  if (const auto* avg = std::get_if<AvgPoolParams>(&params)) return avg->window;
  return std::get<PoolParams>(params);
}

std::optional<GeluForm> gelu_form_from_name(const std::string& name) {
  if (name == "none") return GeluForm::exact;
  if (name == "tanh") return GeluForm::tanh;
  return std::nullopt;
}

namespace decode {

using Types = std::span<const ValueType>;

OpParams none(const Attrs&, Types) { return NoParams{}; }
OpParams gelu(const Attrs& attrs, Types) {
  const std::string& name = get_string(attrs, "approximate");
  if (std::optional<GeluForm> form = gelu_form_from_name(name)) return GeluParams{*form};
  throw AttrError("gelu approximate must be \"none\" or \"tanh\", got \"" + name + "\"");
}
OpParams leaky_relu(const Attrs& attrs, Types) { return LeakyReluParams{finite(attrs, "negative_slope", 0.01)}; }
OpParams elu(const Attrs& attrs, Types) { return EluParams{finite(attrs, "alpha", 1.0)}; }
OpParams softplus(const Attrs& attrs, Types) {
  const SoftplusParams params{finite(attrs, "beta", 1.0), finite(attrs, "threshold", 20.0)};
  if (params.beta == 0.0) throw AttrError("softplus beta must not be 0");
  return params;
}
OpParams compare(const Attrs& attrs, Types) {
  const std::string& name = get_string(attrs, "predicate");
  for (size_t i = 0; i < std::size(kPredicateNames); ++i)
    if (name == kPredicateNames[i]) return CompareParams{ComparePredicate(i)};
  throw AttrError("unknown compare predicate \"" + name + "\"");
}
OpParams cast(const Attrs& attrs, Types) { return CastParams{get_dtype(attrs, "dtype")}; }
// An empty axes attribute reduces every axis.
OpParams reduce(const Attrs& attrs, Types in) {
  const Attr::Ints& written = get_ints(attrs, "axes");
  const int64_t rank = operand_rank(in);
  const std::vector<bool> reduced =
      written.empty() ? std::vector<bool>(size_t(rank), true) : marked_axes(written, rank);
  return ReduceParams{indices_of(reduced), get_bool(attrs, "keepdims")};
}
OpParams variance(const Attrs& attrs, Types in) {
  const auto reduced = std::get<ReduceParams>(reduce(attrs, in));
  const int64_t correction = optional<int64_t>(attrs, "correction", "i64", 1);
  if (correction < 0) throw AttrError("correction must be >= 0, got " + std::to_string(correction));
  return VarianceParams{reduced.axes, correction, reduced.keepdims};
}
OpParams argmax(const Attrs& attrs, Types in) {
  return ArgmaxParams{normalize_axis(get_int(attrs, "axis"), operand_rank(in)), get_bool(attrs, "keepdims")};
}
OpParams axis(const Attrs& attrs, Types in) {
  return AxisParams{normalize_axis(get_int(attrs, "axis"), operand_rank(in))};
}
OpParams norm(const Attrs& attrs, Types in) {
  return NormParams{normalize_axis(get_int(attrs, "axis"), operand_rank(in)),
                    optional<double>(attrs, "eps", "f64", 1e-5)};
}
OpParams batch_norm(const Attrs& attrs, Types) { return BatchNormParams{optional<double>(attrs, "eps", "f64", 1e-5)}; }
OpParams conv_of_rank(const Attrs& attrs, int spatial_rank) {
  return ConvParams{get_spatial(attrs, "stride", spatial_rank), get_spatial(attrs, "padding", spatial_rank),
                    get_spatial(attrs, "dilation", spatial_rank), get_int(attrs, "groups")};
}
OpParams max_pool(const Attrs& attrs, Types) { return decode_pool(attrs); }
OpParams avg_pool(const Attrs& attrs, Types) {
  return AvgPoolParams{decode_pool(attrs), get_bool(attrs, "count_include_pad")};
}
OpParams shape(const Attrs& attrs, Types) { return ShapeParams{get_shape(attrs, "shape")}; }
OpParams transpose(const Attrs& attrs, Types in) {
  const Attr::Ints& perm = get_ints(attrs, "perm");
  const int64_t rank = operand_rank(in);
  if (int64_t(perm.size()) != rank)
    throw InferError("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  TransposeParams params;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    const int64_t axis = normalize_axis(p, rank);
    if (seen[size_t(axis)]) throw InferError("perm repeats axis " + std::to_string(axis));
    seen[size_t(axis)] = true;
    params.perm.push_back(axis);
  }
  return params;
}
OpParams split(const Attrs& attrs, Types in) {
  return SplitParams{normalize_axis(get_int(attrs, "axis"), operand_rank(in)), get_ints(attrs, "sizes")};
}
OpParams slice(const Attrs& attrs, Types) {
  return SliceParams{get_bounds(attrs, "starts"), get_bounds(attrs, "ends"), get_ints(attrs, "steps")};
}
// squeeze's axes are of the operand, unsqueeze's of the result (rank + number of axes).
OpParams squeeze(const Attrs& attrs, Types in) {
  return AxesParams{indices_of(marked_axes(get_ints(attrs, "axes"), operand_rank(in)))};
}
OpParams unsqueeze(const Attrs& attrs, Types in) {
  const Attr::Ints& written = get_ints(attrs, "axes");
  return AxesParams{indices_of(marked_axes(written, operand_rank(in) + int64_t(written.size())))};
}
// tril and triu work on the last two axes, so the operand needs them.
OpParams diagonal(const Attrs& attrs, Types in) {
  const int64_t rank = operand_rank(in);
  if (rank < 2) throw InferError("needs at least 2 dims (the matrix), got rank " + std::to_string(rank));
  return DiagonalParams{optional<int64_t>(attrs, "diagonal", "i64", 0)};
}
OpParams masked_fill(const Attrs& attrs, Types) { return MaskedFillParams{get_float(attrs, "value")}; }
OpParams pad(const Attrs& attrs, Types) { return PadParams{get_ints(attrs, "pads"), get_float(attrs, "value")}; }
OpParams constant(const Attrs& attrs, Types) {
  return ConstantParams{required<Tensor>(attrs, "value", "dense tensor")};
}
OpParams external(const Attrs& attrs, Types) { return ExternalParams{get_string(attrs, "name")}; }
OpParams full(const Attrs& attrs, Types) {
  return FullParams{get_shape(attrs, "shape"), get_float(attrs, "value"), get_dtype(attrs, "dtype")};
}
OpParams arange(const Attrs& attrs, Types) {
  return ArangeParams{get_float(attrs, "start"), get_float(attrs, "stop"), get_float(attrs, "step"),
                      get_dtype(attrs, "dtype"), optional<Shape>(attrs, "length", "shape", {})};
}
// A given scale must be finite: torch multiplies by it, and inf or NaN would poison every row.
OpParams attention(const Attrs& attrs, Types) {
  AttentionParams params{optional<bool>(attrs, "is_causal", "bool", false), std::nullopt};
  if (attrs.has("scale")) params.scale = finite(attrs, "scale", 1.0);
  return params;
}
OpParams topk(const Attrs& attrs, Types in) {
  const int64_t k = get_int(attrs, "k");
  if (k < 0) throw AttrError("k must be >= 0, got " + std::to_string(k));
  return TopkParams{k, normalize_axis(get_int(attrs, "axis"), operand_rank(in)), get_bool(attrs, "largest"),
                    get_bool(attrs, "sorted")};
}
OpParams call(const Attrs& attrs, Types) { return CallParams{get_string(attrs, "callee")}; }
OpParams custom(const Attrs& attrs, Types) { return CustomParams{get_string(attrs, "op")}; }
OpParams adaptive_pool(const Attrs& attrs, Types) {
  const Pair size = get_pair(attrs, "output_size");
  if (size[0] < 0 || size[1] < 0)
    throw AttrError("output_size must be >= 0, got [" + std::to_string(size[0]) + ", " + std::to_string(size[1]) + "]");
  return AdaptivePoolParams{size};
}
OpParams group_norm(const Attrs& attrs, Types) {
  const int64_t groups = get_int(attrs, "groups");
  if (groups < 1) throw AttrError("groups must be >= 1, got " + std::to_string(groups));
  return GroupNormParams{groups, optional<double>(attrs, "eps", "f64", 1e-5)};
}
OpParams conv_transpose(const Attrs& attrs, Types in) {
  return ConvTransposeParams{std::get<ConvParams>(conv<2>(attrs, in)), get_pair(attrs, "output_padding")};
}
OpParams interpolate(const Attrs& attrs, Types) {
  InterpolateParams p;
  p.size = get_pair(attrs, "size");
  if (p.size[0] < 1 || p.size[1] < 1)
    throw AttrError("size must be >= 1, got [" + std::to_string(p.size[0]) + ", " + std::to_string(p.size[1]) + "]");
  const Attr::Floats& scales = required<Attr::Floats>(attrs, "scales", "array<f64>");
  if (scales.size() != 2) throw AttrError("scales needs 2 values, got " + std::to_string(scales.size()));
  for (size_t i = 0; i < 2; ++i) {
    if (!(std::isfinite(scales[i]) && scales[i] >= 0)) throw AttrError("scales must be finite and >= 0 (0: none)");
    p.scales[i] = scales[i];
  }
  const std::string& mode = get_string(attrs, "mode");
  if (mode == "bilinear")
    p.mode = InterpolateMode::bilinear;
  else if (mode != "nearest")
    throw AttrError("interpolate mode must be \"nearest\" or \"bilinear\", got \"" + mode + "\"");
  p.align_corners = get_bool(attrs, "align_corners");
  if (p.align_corners && p.mode == InterpolateMode::nearest)
    throw AttrError("align_corners needs mode \"bilinear\" (torch refuses it for \"nearest\")");
  return p;
}

} // namespace decode

OpParams decode_params(OpKind kind, const Attrs& attrs, std::span<const ValueType> operands) {
  return op_info(kind).decode(attrs, operands);
}

namespace {

Attr ints(const std::vector<int64_t>& v) { return Attr::of_ints(v); }
Attr bounds(const Shape& s) { return shape_is_static(s) ? Attr::of_ints(static_dims(s)) : Attr::of_shape(s); }
Attr pair(const Pair& p) { return Attr::of_ints({p[0], p[1]}); }

struct Encoder {
  Attrs operator()(const NoParams&) const { return {}; }
  Attrs operator()(const GeluParams& p) const {
    return {{"approximate", Attr::of_string(p.form == GeluForm::tanh ? "tanh" : "none")}};
  }
  Attrs operator()(const LeakyReluParams& p) const { return {{"negative_slope", Attr::of_float(p.negative_slope)}}; }
  Attrs operator()(const EluParams& p) const { return {{"alpha", Attr::of_float(p.alpha)}}; }
  Attrs operator()(const SoftplusParams& p) const {
    return {{"beta", Attr::of_float(p.beta)}, {"threshold", Attr::of_float(p.threshold)}};
  }
  Attrs operator()(const CompareParams& p) const {
    return {{"predicate", Attr::of_string(kPredicateNames[size_t(p.predicate)])}};
  }
  Attrs operator()(const CastParams& p) const { return {{"dtype", Attr::of_dtype(p.dtype)}}; }
  Attrs operator()(const ReduceParams& p) const {
    return {{"axes", ints(p.axes)}, {"keepdims", Attr::of_bool(p.keepdims)}};
  }
  Attrs operator()(const VarianceParams& p) const {
    return {
        {"axes", ints(p.axes)}, {"correction", Attr::of_int(p.correction)}, {"keepdims", Attr::of_bool(p.keepdims)}};
  }
  Attrs operator()(const ArgmaxParams& p) const {
    return {{"axis", Attr::of_int(p.axis)}, {"keepdims", Attr::of_bool(p.keepdims)}};
  }
  Attrs operator()(const AxisParams& p) const { return {{"axis", Attr::of_int(p.axis)}}; }
  Attrs operator()(const NormParams& p) const {
    return {{"axis", Attr::of_int(p.axis)}, {"eps", Attr::of_float(p.eps)}};
  }
  Attrs operator()(const BatchNormParams& p) const { return {{"eps", Attr::of_float(p.eps)}}; }
  Attrs operator()(const ConvParams& p) const {
    return {{"stride", ints(p.stride)},
            {"padding", ints(p.padding)},
            {"dilation", ints(p.dilation)},
            {"groups", Attr::of_int(p.groups)}};
  }
  Attrs operator()(const PoolParams& p) const {
    return {{"kernel", pair(p.kernel)}, {"stride", pair(p.stride)}, {"padding", pair(p.padding)}};
  }
  Attrs operator()(const AvgPoolParams& p) const {
    Attrs attrs = (*this)(p.window);
    attrs.set("count_include_pad", Attr::of_bool(p.count_include_pad));
    return attrs;
  }
  Attrs operator()(const ShapeParams& p) const { return {{"shape", Attr::of_shape(p.shape)}}; }
  Attrs operator()(const TransposeParams& p) const { return {{"perm", ints(p.perm)}}; }
  Attrs operator()(const SplitParams& p) const { return {{"axis", Attr::of_int(p.axis)}, {"sizes", ints(p.sizes)}}; }
  Attrs operator()(const SliceParams& p) const {
    return {{"starts", bounds(p.starts)}, {"ends", bounds(p.ends)}, {"steps", ints(p.steps)}};
  }
  Attrs operator()(const AxesParams& p) const { return {{"axes", ints(p.axes)}}; }
  Attrs operator()(const DiagonalParams& p) const { return {{"diagonal", Attr::of_int(p.diagonal)}}; }
  Attrs operator()(const MaskedFillParams& p) const { return {{"value", Attr::of_float(p.value)}}; }
  Attrs operator()(const PadParams& p) const { return {{"pads", ints(p.pads)}, {"value", Attr::of_float(p.value)}}; }
  Attrs operator()(const ConstantParams& p) const { return {{"value", Attr::of_tensor(p.value)}}; }
  Attrs operator()(const ExternalParams& p) const { return {{"name", Attr::of_string(p.name)}}; }
  Attrs operator()(const FullParams& p) const {
    return {{"shape", Attr::of_shape(p.shape)}, {"value", Attr::of_float(p.value)}, {"dtype", Attr::of_dtype(p.dtype)}};
  }
  Attrs operator()(const ArangeParams& p) const {
    Attrs attrs{{"start", Attr::of_float(p.start)},
                {"stop", Attr::of_float(p.stop)},
                {"step", Attr::of_float(p.step)},
                {"dtype", Attr::of_dtype(p.dtype)}};
    if (!p.length.empty()) attrs.set("length", Attr::of_shape(p.length));
    return attrs;
  }
  Attrs operator()(const AttentionParams& p) const {
    Attrs attrs{{"is_causal", Attr::of_bool(p.is_causal)}};
    if (p.scale) attrs.set("scale", Attr::of_float(*p.scale));
    return attrs;
  }
  Attrs operator()(const TopkParams& p) const {
    return {{"k", Attr::of_int(p.k)},
            {"axis", Attr::of_int(p.axis)},
            {"largest", Attr::of_bool(p.largest)},
            {"sorted", Attr::of_bool(p.sorted)}};
  }
  Attrs operator()(const CallParams& p) const { return {{"callee", Attr::of_string(p.callee)}}; }
  Attrs operator()(const CustomParams& p) const { return {{"op", Attr::of_string(p.op)}}; }
  Attrs operator()(const AdaptivePoolParams& p) const { return {{"output_size", pair(p.output_size)}}; }
  Attrs operator()(const GroupNormParams& p) const {
    return {{"groups", Attr::of_int(p.groups)}, {"eps", Attr::of_float(p.eps)}};
  }
  Attrs operator()(const ConvTransposeParams& p) const {
    Attrs attrs = (*this)(p.conv);
    attrs.set("output_padding", pair(p.output_padding));
    return attrs;
  }
  Attrs operator()(const InterpolateParams& p) const {
    return {{"size", pair(p.size)},
            {"scales", Attr::of_floats({p.scales[0], p.scales[1]})},
            {"mode", Attr::of_string(p.mode == InterpolateMode::bilinear ? "bilinear" : "nearest")},
            {"align_corners", Attr::of_bool(p.align_corners)}};
  }
  Attrs operator()(const InvalidParams& p) const {
    throw Error(ErrorKind::internal, "cannot encode invalid op parameters: " + p.reason);
  }
};

} // namespace

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw InferError("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Attrs encode_params(const OpParams& params) { return std::visit(Encoder{}, params); }

} // namespace kiln::ir
