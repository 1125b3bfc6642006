#pragma once
#include <cstdint>
#include <functional>
#include <kiln/layout.hpp>
#include <kiln/tensor.hpp>
#include <map>
#include <optional>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

// Graph-building functions. On symbolic tensors they stage an op (recording the caller's source
// line); on concrete tensors they run at once through the interpreter's kernels (eager mode).
// A concrete tensor mixed with symbolic ones becomes an embedded constant.
namespace kiln::F {

using Loc = std::source_location;

// The unary ops without parameters, each named once in this list; src/trace/functional.cpp defines
// them from the same list.
// clang-format off
#define KILN_UNARY_FUNCTIONS(X) \
  X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(tanh) X(sigmoid) X(relu) X(silu) X(erf) X(sin) X(cos) X(hardsigmoid) \
  X(floor) X(ceil) X(round) X(sign) X(hardswish) X(log1p) X(expm1)
// clang-format on
#define KILN_UNARY(name) Tensor name(const Tensor& x, Loc loc = Loc::current());
KILN_UNARY_FUNCTIONS(KILN_UNARY)
#undef KILN_UNARY

// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none", Loc loc = Loc::current());

// torch.nn.functional's leaky_relu, elu and softplus; the parameters must be finite, beta not 0.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01, Loc loc = Loc::current());
Tensor elu(const Tensor& x, double alpha = 1.0, Loc loc = Loc::current());
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0, Loc loc = Loc::current());

// Binary ops promote their operands as PyTorch does (dtype_promotion.hpp: an i32 and an f32 tensor
// give f32) with a kiln.cast in the graph; div is true division (integers give f32); comparisons
// promote, then give bool.
#define KILN_BINARY(name) Tensor name(const Tensor& a, const Tensor& b, Loc loc = Loc::current())
KILN_BINARY(add);
KILN_BINARY(sub);
KILN_BINARY(mul);
KILN_BINARY(div);
KILN_BINARY(pow);
KILN_BINARY(maximum);
KILN_BINARY(minimum);
// torch.floor_divide and torch.remainder: rounding toward -inf, the remainder taking the divisor's
// sign. Integer division by zero is a kiln::Error(numeric) in eager mode; in a graph it gives 0.
KILN_BINARY(floor_divide);
KILN_BINARY(remainder);
KILN_BINARY(eq);
KILN_BINARY(ne);
KILN_BINARY(lt);
KILN_BINARY(le);
KILN_BINARY(gt);
KILN_BINARY(ge);
#undef KILN_BINARY

// x ** exponent with a constant exponent (an i32 tensor to the 0.5 is f32, to the 2 stays i32). As in
// PyTorch, an integer tensor to a negative integer power is a kiln::Error(dtype), and integer
// powers wrap on overflow; pow of two integer tensors gives 0 for x ** -n unless x is 1 or -1.
Tensor pow(const Tensor& x, Scalar exponent, Loc loc = Loc::current());
// A scalar operand as a 0-d constant of `dtype` (i64 integers exactly), as the operators make it.
Tensor scalar_operand(Scalar value, DType dtype);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor cast(const Tensor& x, DType dtype, Loc loc = Loc::current());
// min(max(x, lo), hi), as torch.clamp: NaN anywhere gives NaN, lo > hi gives hi. The bounds broadcast
// and have x's dtype; the scalar overload makes them constants (clamp(x, 0, 6) is relu6) and promotes
// as torch.clamp does: an integer tensor clamped by floating bounds (0.5, even 2.0) is f32.
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, Loc loc = Loc::current());
Tensor clamp(const Tensor& x, Scalar lo, Scalar hi, Loc loc = Loc::current());
// x where mask is false, value where it is true, as torch.masked_fill: mask is bool and broadcasts to
// x's shape; value is converted to x's dtype as cast converts.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Loc loc = Loc::current());
// A 0-d constant of x's dtype, for mixing scalars into graphs.
Tensor scalar(double value, DType dtype = DType::f32, Loc loc = Loc::current());

// Reductions; empty axes means all axes.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false, Loc loc = Loc::current());
// torch.var / torch.std: sum((x - mean)^2) / max(0, n - correction) over the axes (n the elements
// reduced per result), and its square root; floats only.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1, bool keepdims = false,
           Loc loc = Loc::current());
Tensor std(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1, bool keepdims = false,
           Loc loc = Loc::current());
// The first index of the maximum (minimum) along axis, i64; a NaN counts as both, as in torch.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims = false, Loc loc = Loc::current());
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims = false, Loc loc = Loc::current());
// Running sums along axis, as torch.cumsum: floats keep their dtype, integers and bool give i64.
Tensor cumsum(const Tensor& x, int64_t axis, Loc loc = Loc::current());
// The k largest (smallest) elements along axis and their i64 indices, as torch.topk: NaN counts as
// larger than every number; ties come in index order (torch's order among ties is unspecified);
// sorted = false returns them sorted too. 0 <= k <= the axis size.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true, bool sorted = true,
                               Loc loc = Loc::current());
// The lower (upper) triangle of each matrix of the last two axes, the rest 0, as torch.tril (triu):
// diagonal 0 is the main diagonal, > 0 above it, < 0 below it.
Tensor tril(const Tensor& x, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& x, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());

// Normalisations. Undefined weight/bias tensors mean "none".
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5, int64_t axis = -1,
                  Loc loc = Loc::current());
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6, int64_t axis = -1, Loc loc = Loc::current());
Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                  double eps = 1e-5, Loc loc = Loc::current());
// torch's group_norm: x [N, C, ...] with C a multiple of num_groups; each sample's groups of
// C / num_groups channels are normalised by their mean and biased variance, then weight and bias [C]
// (each may be undefined) apply per channel.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, Loc loc = Loc::current());
// torch's instance_norm with use_input_stats (no running statistics): group_norm with a group per
// channel. x needs rank >= 3 and more than one spatial element, as torch checks.
Tensor instance_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5,
                     Loc loc = Loc::current());

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
// PyTorch's Linear: x @ weightᵀ + bias, weight [out, in]. bias may be undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc = Loc::current());
// torch.nn.functional.scaled_dot_product_attention without dropout, one op:
// softmax(q·kᵀ * scale + mask) · v. q [..., L, E], k [..., S, E], v [..., S, Ev] share their batch
// dims; the result is [..., L, Ev]. attn_mask (undefined: none) is bool (true attends) or q's dtype
// (added) and broadcasts to [..., L, S]; is_causal attends key j <= query i and excludes a mask;
// scale defaults to 1/sqrt(E). A query row that attends nothing gives NaN, as torch's.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = {},
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    Loc loc = Loc::current());

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
};
// NCHW input, OIHW weight; bias may be undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options = {},
              Loc loc = Loc::current());
// torch.nn.functional.conv1d: [N, C, L] input, [O, C / groups, K] weight; bias [O] may be undefined.
// padding is added at both ends of L.
struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& options = {},
              Loc loc = Loc::current());
struct Pool2dOptions {
  std::vector<int64_t> kernel{2, 2};
  std::vector<int64_t> stride{}; // empty: same as kernel
  std::vector<int64_t> padding{0, 0};
  bool count_include_pad = false; // avg_pool2d only
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options, Loc loc = Loc::current());
// torch's adaptive_avg_pool2d on NCHW: output_size {oh, ow}; row i of the result averages input rows
// floor(i * H / oh) to ceil((i + 1) * H / oh) (exclusive), columns likewise. Floats only.
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size, Loc loc = Loc::current());
struct ConvTranspose2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> output_padding{0, 0}; // each < stride or < dilation, as torch requires
  int64_t groups = 1;
  std::vector<int64_t> dilation{1, 1};
};
// torch's conv_transpose2d: NCHW input, weight [C, O / groups, kh, kw], bias [O] (may be undefined);
// the result's height is (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1,
// its width likewise.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options = {}, Loc loc = Loc::current());
struct InterpolateOptions {
  std::vector<int64_t> size{};        // {oh, ow}; or
  std::vector<double> scale_factor{}; // {sh, sw}: the result is floor(H * sh) x floor(W * sw)
  std::string mode = "nearest";       // "nearest" (torch's legacy nearest) or "bilinear"
  bool align_corners = false;         // bilinear only, as torch
};
// torch 1.13's interpolate of an NCHW tensor, recompute_scale_factor unset: given a scale_factor,
// source coordinates map by 1 / scale_factor (not in / out), as torch's. Exactly one of size and
// scale_factor.
Tensor interpolate(const Tensor& x, const InterpolateOptions& options, Loc loc = Loc::current());

// Shape ops. reshape accepts one -1 (inferred, symbolic dims included).
Tensor reshape(const Tensor& x, const Shape& shape, Loc loc = Loc::current());
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm, Loc loc = Loc::current());
Tensor transpose(const Tensor& x, int64_t a, int64_t b, Loc loc = Loc::current());
Tensor broadcast_to(const Tensor& x, const Shape& shape, Loc loc = Loc::current());
Tensor concat(const std::vector<Tensor>& xs, int64_t axis, Loc loc = Loc::current());
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis, Loc loc = Loc::current());
// Python-style slice on one axis: negative indices count from the end; end is clipped. On a
// symbolic axis seq, x[:, -1:] is seq-1..seq and the length assumes the bounds lie inside the axis,
// which each call's sizes are checked against.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1, Loc loc = Loc::current());
// Bounds that may be symbolic: x[:, :seq-1] is slice(x, 1, 0, x.dim_of(1) - 1); pos[:seq] of a
// static axis 128 is slice(pos, 0, 0, seq) (seq <= 128 is checked at each call).
Tensor slice(const Tensor& x, int64_t axis, const Dim& start, const Dim& end, int64_t step = 1,
             Loc loc = Loc::current());
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes, Loc loc = Loc::current());
Tensor unsqueeze(const Tensor& x, const std::vector<int64_t>& axes, Loc loc = Loc::current());
Tensor flatten(const Tensor& x, int64_t start_axis = 1, Loc loc = Loc::current());
Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis, Loc loc = Loc::current());
// pads: [lo0, hi0, lo1, hi1, ...] one pair per axis.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0.0, Loc loc = Loc::current());
// torch.nn.functional.embedding: the rows of weight [rows, D] the i32/i64 indices pick, shaped
// indices.shape + [D]. Written onto kiln.gather along axis 0 at trace time, which picks the same
// rows (no op of its own). Concrete indices must lie in [0, rows), as torch asks; in a staged
// graph gather's rule applies: a negative index counts from the end, one beyond it is an error.
Tensor embedding(const Tensor& indices, const Tensor& weight, Loc loc = Loc::current());
// torch.Tensor.expand: x broadcast to sizes, where -1 keeps x's dim and extra leading sizes add
// dims (never -1). Written onto kiln.broadcast_to at trace time, which has torch's semantics.
Tensor expand(const Tensor& x, const std::vector<int64_t>& sizes, Loc loc = Loc::current());
// torch.einsum for one or two operands: letters name axes, "->" the output (implicit: the letters
// seen once, sorted); letters of both operands missing from the output are summed. Decomposed at
// trace time into kiln.reduce_sum, transpose, reshape and one batched matmul. No "..." and no
// letter twice in one operand (diagonals): kiln::Error(spec) naming the position.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, Loc loc = Loc::current());

// Creation.
Tensor constant(const Tensor& value, Loc loc = Loc::current());
// A weight whose data comes from the weight registry at compile time.
Tensor constant_external(const std::string& name, const TensorLayout& layout, Loc loc = Loc::current());
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Loc loc = Loc::current());
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::f32, Loc loc = Loc::current());
// 0, 1, ..., length - 1, as torch.arange(n) (i64 by default); length may be symbolic: arange(x.dim_of(1)).
Tensor arange(const Dim& length, DType dtype = DType::i64, Loc loc = Loc::current());

// Stores value into a buffer argument (staged from a BufferLayout).
void buffer_store(const Tensor& buffer, const Tensor& value, Loc loc = Loc::current());

// An attribute of an extension op; the extension's shape function and kernel receive it typed.
using CustomAttr = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;
// The op `name` of a loaded extension (kiln/extension.h; load its library with
// StageOptions/CompileOptions::custom_extensions or kiln::load_extension), one result per output of
// its shape function. The attribute name "op" is reserved (it holds `name` in the graph).
std::vector<Tensor> custom(const std::string& name, const std::vector<Tensor>& inputs,
                           const std::map<std::string, CustomAttr>& attrs = {}, Loc loc = Loc::current());

} // namespace kiln::F
