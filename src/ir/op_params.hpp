#pragma once
#include "ir/attr.hpp"
#include "ir/op_kind.hpp"
#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace kiln::ir {

struct ValueType;

// The typed parameters of each op kind, decoded from its attributes once, when the op is built or
// parsed. Kernels, lowerings, shape inference and passes read these; attribute names appear only
// in op_params.cpp (decode and encode), so the printer and every tier agree on them.
//
// Axes are normalised against the operand ranks when decoded (0 <= axis < rank), so no reader
// handles negative axes.

struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};

enum class GeluForm : uint8_t { exact, tanh }; // approximate = "none" | "tanh"
struct GeluParams {
  GeluForm form = GeluForm::exact;
  friend bool operator==(const GeluParams&, const GeluParams&) = default;
};

struct LeakyReluParams {
  double negative_slope = 0.01;
  friend bool operator==(const LeakyReluParams&, const LeakyReluParams&) = default;
};

struct EluParams {
  double alpha = 1.0;
  friend bool operator==(const EluParams&, const EluParams&) = default;
};

// softplus: x where x * beta > threshold, else log1p(exp(x * beta)) / beta; beta != 0.
struct SoftplusParams {
  double beta = 1.0, threshold = 20.0;
  friend bool operator==(const SoftplusParams&, const SoftplusParams&) = default;
};

enum class ComparePredicate : uint8_t { eq, ne, lt, le, gt, ge };
struct CompareParams {
  ComparePredicate predicate = ComparePredicate::eq;
  friend bool operator==(const CompareParams&, const CompareParams&) = default;
};

struct CastParams {
  DType dtype = DType::f32;
  friend bool operator==(const CastParams&, const CastParams&) = default;
};

// reduce_sum/mean/max/min. `axes` is sorted, without repeats; an empty attribute means every axis.
struct ReduceParams {
  std::vector<int64_t> axes;
  bool keepdims = false;
  friend bool operator==(const ReduceParams&, const ReduceParams&) = default;
};

// reduce_var and reduce_std: the reduced axes as ReduceParams, and n - correction the divisor.
struct VarianceParams {
  std::vector<int64_t> axes;
  int64_t correction = 1;
  bool keepdims = false;
  friend bool operator==(const VarianceParams&, const VarianceParams&) = default;
};

// argmax and argmin.
struct ArgmaxParams {
  int64_t axis = 0;
  bool keepdims = false;
  friend bool operator==(const ArgmaxParams&, const ArgmaxParams&) = default;
};

// softmax, log_softmax, cumsum, concat, gather.
struct AxisParams {
  int64_t axis = 0;
  friend bool operator==(const AxisParams&, const AxisParams&) = default;
};

// layer_norm and rms_norm: the dims from `axis` on are normalised.
struct NormParams {
  int64_t axis = 0;
  double eps = 1e-5;
  friend bool operator==(const NormParams&, const NormParams&) = default;
};

struct BatchNormParams {
  double eps = 1e-5;
  friend bool operator==(const BatchNormParams&, const BatchNormParams&) = default;
};

// group_norm: the number of channel groups (instance_norm: the channel count) and eps.
struct GroupNormParams {
  int64_t groups = 1;
  double eps = 1e-5;
  friend bool operator==(const GroupNormParams&, const GroupNormParams&) = default;
};

using Pair = std::array<int64_t, 2>; // [height, width]
// One value per spatial axis of a convolution: [length], or [height, width].
using Spatial = std::vector<int64_t>;

// A convolution's stride, padding (on both sides) and dilation (1: dense), one value per spatial
// axis, and its channel groups.
struct ConvParams {
  Spatial stride, padding, dilation;
  int64_t groups = 1;
  friend bool operator==(const ConvParams&, const ConvParams&) = default;
};

// conv_transpose2d: conv2d's hyperparameters, and the rows and columns added at the bottom and right
// of the result (torch's output_padding).
struct ConvTransposeParams {
  ConvParams conv;
  Pair output_padding{0, 0};
  friend bool operator==(const ConvTransposeParams&, const ConvTransposeParams&) = default;
};

enum class InterpolateMode : uint8_t { nearest, bilinear };
// interpolate: the result's height and width, the scale factors the coordinates map by (0: none,
// in / out is used), the mode and, bilinear only, align_corners.
struct InterpolateParams {
  Pair size{1, 1};
  std::array<double, 2> scales{0.0, 0.0};
  InterpolateMode mode = InterpolateMode::nearest;
  bool align_corners = false;
  friend bool operator==(const InterpolateParams&, const InterpolateParams&) = default;
};

struct PoolParams {
  Pair kernel{1, 1}, stride{1, 1}, padding{0, 0};
  friend bool operator==(const PoolParams&, const PoolParams&) = default;
};

struct AvgPoolParams {
  PoolParams window;
  bool count_include_pad = true;
  friend bool operator==(const AvgPoolParams&, const AvgPoolParams&) = default;
};

// adaptive_avg_pool2d: the result's height and width.
struct AdaptivePoolParams {
  Pair output_size{1, 1};
  friend bool operator==(const AdaptivePoolParams&, const AdaptivePoolParams&) = default;
};

// reshape and broadcast_to: the full target shape.
struct ShapeParams {
  Shape shape;
  friend bool operator==(const ShapeParams&, const ShapeParams&) = default;
};

struct TransposeParams {
  std::vector<int64_t> perm;
  friend bool operator==(const TransposeParams&, const TransposeParams&) = default;
};

struct SplitParams {
  int64_t axis = 0;
  std::vector<int64_t> sizes;
  friend bool operator==(const SplitParams&, const SplitParams&) = default;
};

// starts/ends may be symbolic (x[:, seq-1:]); written as array<i64> when all are static.
struct SliceParams {
  Shape starts, ends;
  std::vector<int64_t> steps;
  friend bool operator==(const SliceParams&, const SliceParams&) = default;
};

// squeeze (axes of the operand) and unsqueeze (axes of the result).
struct AxesParams {
  std::vector<int64_t> axes;
  friend bool operator==(const AxesParams&, const AxesParams&) = default;
};

// tril and triu: the diagonal kept, 0 the main one, > 0 above it, < 0 below it.
struct DiagonalParams {
  int64_t diagonal = 0;
  friend bool operator==(const DiagonalParams&, const DiagonalParams&) = default;
};

// masked_fill: the value written where the mask is set, converted to x's dtype as cast converts.
struct MaskedFillParams {
  double value = 0.0;
  friend bool operator==(const MaskedFillParams&, const MaskedFillParams&) = default;
};

struct PadParams {
  std::vector<int64_t> pads; // [lo0, hi0, lo1, hi1, ...]
  double value = 0.0;
  friend bool operator==(const PadParams&, const PadParams&) = default;
};

struct ConstantParams {
  Tensor value;
  friend bool operator==(const ConstantParams& a, const ConstantParams& b);
};

struct ExternalParams {
  std::string name;
  friend bool operator==(const ExternalParams&, const ExternalParams&) = default;
};

struct FullParams {
  Shape shape;
  double value = 0.0;
  DType dtype = DType::f32;
  friend bool operator==(const FullParams&, const FullParams&) = default;
};

// length, when set (one dim, written only then), is the element count in place of
// ceil((stop - start) / step): arange(seq) of a symbolic seq.
struct ArangeParams {
  double start = 0.0, stop = 0.0, step = 1.0;
  DType dtype = DType::f32;
  Shape length;
  friend bool operator==(const ArangeParams&, const ArangeParams&) = default;
};

// scaled_dot_product_attention: the causal mask, and the scale (none: 1/sqrt(E) of the call).
struct AttentionParams {
  bool is_causal = false;
  std::optional<double> scale;
  friend bool operator==(const AttentionParams&, const AttentionParams&) = default;
};

// topk: the count kept along the (normalised) axis, which end, and whether sorted was asked for.
struct TopkParams {
  int64_t k = 0;
  int64_t axis = 0;
  bool largest = true;
  bool sorted = true;
  friend bool operator==(const TopkParams&, const TopkParams&) = default;
};

struct CallParams {
  std::string callee;
  friend bool operator==(const CallParams&, const CallParams&) = default;
};

// An extension op: its name; the extension reads its other attributes itself.
struct CustomParams {
  std::string op;
  friend bool operator==(const CustomParams&, const CustomParams&) = default;
};

// What a hand-built op whose attributes do not decode holds, so that verify_module can report it
// (the parser and the tracer refuse such ops before they are built).
struct InvalidParams {
  std::string reason;
  ErrorKind kind = ErrorKind::spec; // spec: bad attributes; shape: an axis the operands lack
  friend bool operator==(const InvalidParams&, const InvalidParams&) = default;
};

using OpParams =
    std::variant<NoParams, GeluParams, LeakyReluParams, EluParams, SoftplusParams, CompareParams, CastParams,
                 ReduceParams, VarianceParams, ArgmaxParams, AxisParams, NormParams, BatchNormParams, ConvParams,
                 PoolParams, AvgPoolParams, ShapeParams, TransposeParams, SplitParams, SliceParams, AxesParams,
                 DiagonalParams, MaskedFillParams, PadParams, ConstantParams, ExternalParams, FullParams, ArangeParams,
                 CallParams, CustomParams, InvalidParams, AdaptivePoolParams, GroupNormParams, ConvTransposeParams,
                 InterpolateParams, AttentionParams, TopkParams>;

// A missing, mistyped or out-of-domain attribute ("missing attribute 'value' (f64)"). An axis out of
// range for the operand's rank is an InferError (ops.hpp) instead: the attributes are fine, the
// operands do not fit them.
struct AttrError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The window of a max_pool2d (PoolParams) or avg_pool2d (AvgPoolParams, beside count_include_pad).
const PoolParams& pool_window(const OpParams& params);

// "none" -> exact, "tanh" -> tanh (PyTorch's `approximate`), nullopt otherwise.
std::optional<GeluForm> gelu_form_from_name(const std::string& name);

// Decodes and checks `attrs` for an op of `kind` over operands of `operand_types`, with the decoder
// the op table names for the kind.
OpParams decode_params(OpKind kind, const Attrs& attrs, std::span<const ValueType> operand_types);

// The decoders the op table (ops.cpp) chooses from, one per params struct (axis: AxisParams,
// shape: ShapeParams, none: NoParams, ...). Each throws AttrError or InferError as above.
namespace decode {
#define KILN_DECODER(name) OpParams name(const Attrs& attrs, std::span<const ValueType> operand_types);
KILN_DECODER(none)
KILN_DECODER(gelu)
KILN_DECODER(leaky_relu)
KILN_DECODER(elu)
KILN_DECODER(softplus)
KILN_DECODER(compare)
KILN_DECODER(cast)
KILN_DECODER(reduce)
KILN_DECODER(variance)
KILN_DECODER(argmax)
KILN_DECODER(axis)
KILN_DECODER(norm)
KILN_DECODER(batch_norm)
KILN_DECODER(max_pool)
KILN_DECODER(avg_pool)
KILN_DECODER(shape)
KILN_DECODER(transpose)
KILN_DECODER(split)
KILN_DECODER(slice)
KILN_DECODER(squeeze)
KILN_DECODER(unsqueeze)
KILN_DECODER(diagonal)
KILN_DECODER(masked_fill)
KILN_DECODER(pad)
KILN_DECODER(constant)
KILN_DECODER(external)
KILN_DECODER(full)
KILN_DECODER(arange)
KILN_DECODER(attention)
KILN_DECODER(topk)
KILN_DECODER(call)
KILN_DECODER(custom)
KILN_DECODER(adaptive_pool)
KILN_DECODER(group_norm)
KILN_DECODER(conv_transpose)
KILN_DECODER(interpolate)
#undef KILN_DECODER
// A convolution over `spatial_rank` axes: stride, padding and dilation of that many values each.
OpParams conv_of_rank(const Attrs& attrs, int spatial_rank);
// The decoder of a convolution row (conv<2> for conv2d): every spatial rank is one template away.
template <int SpatialRank> OpParams conv(const Attrs& attrs, std::span<const ValueType>) {
  return conv_of_rank(attrs, SpatialRank);
}
} // namespace decode
// The attributes that decode to `params` (the printer's form of the op).
Attrs encode_params(const OpParams& params);

} // namespace kiln::ir
