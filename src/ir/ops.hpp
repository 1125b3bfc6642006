#pragma once
#include "ir/graph.hpp"
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>

namespace kiln::ir {

// The one op table. Every tier reads it; tiers attach kernels in their own tables by OpKind.
//
// Op semantics and attributes. The attributes are the printed form; op_params.hpp decodes them once
// into typed params (Op::params), which is what every layer reads:
//  unary elementwise  neg abs exp log sqrt rsqrt tanh sigmoid relu silu erf sin cos
//                     gelu {approximate: string "none" | "tanh"}
//  binary elementwise add sub mul div pow maximum minimum: same dtype, numpy broadcasting
//  compare(a, b)      {predicate: string eq|ne|lt|le|gt|ge} -> bool, broadcasting
//  where(c, a, b)     c bool; a, b same dtype; broadcasting of all three
//  cast(x)            {dtype: DType}
//  clamp(x, lo, hi)   min(max(x, lo), hi) as PyTorch's clamp: one dtype, broadcasting of all three;
//                     NaN in any operand gives NaN, lo > hi gives hi
//  reduce_sum/mean/max/min(x) {axes: ints (empty = all axes, negatives allowed), keepdims: bool}
//  argmax(x)          {axis: int, keepdims: bool} -> i64
//  softmax(x), log_softmax(x) {axis: int}
//  layer_norm(x[, weight[, bias]]) {axis: int (first normalised axis), eps: f64};
//                     weight/bias shape == x.shape[axis:]
//  rms_norm(x[, weight]) {axis: int, eps: f64}
//  batch_norm(x, mean, var[, weight, bias]) {eps: f64}: inference form, channel axis 1
//  matmul(a, b)       rank >= 2 each; [..., m, k] x [..., k, n]; batch dims broadcast
//  conv2d(x, w[, bias]) {stride: [sh, sw], padding: [ph, pw], dilation: [dh, dw], groups: int};
//                     NCHW input, OIHW weight (I = C / groups), bias [O]; static spatial dims
//  max_pool2d(x), avg_pool2d(x) {kernel: [kh, kw], stride: [sh, sw], padding: [ph, pw]};
//                     avg_pool2d also {count_include_pad: bool}
//  reshape(x)         {shape: Shape} the full target shape (already inferred; no -1)
//  transpose(x)       {perm: ints}
//  broadcast_to(x)    {shape: Shape}
//  concat(xs...)      {axis: int}
//  split(x)           {axis: int, sizes: ints} -> one result per size
//  slice(x)           {starts, ends, steps: ints, one per axis, normalised: 0 <= start, ends
//                     clipped to the dim; a symbolic axis only as the full range 0..INT64_MAX by 1}
//  squeeze(x)         {axes: ints}, unsqueeze(x) {axes: ints} (axes of the result)
//  gather(data, idx)  {axis: int}; idx i32/i64; result data[:axis] + idx.shape + data[axis+1:]
//  pad(x)             {pads: ints [lo0, hi0, lo1, hi1, ...], value: f64} constant padding
//  constant()         {value: Tensor}
//  constant_external() {name: string}: result type is the declared layout
//  full()             {shape: Shape, value: f64, dtype: DType}
//  arange()           {start, stop, step: f64, dtype: DType}
//  buffer_store(buf, v) no results; buf is a buffer argument, v has its type
//  call(args...)      {callee: string}: results are the callee's outputs
//  custom(args...)    {op: string, ...}: an extension op; results from the extension's shape fn
enum class OpClass {
  unary,
  binary,
  elementwise_other,
  reduction,
  normalization,
  linalg,
  nn,
  shape,
  creation,
  effect,
  call,
  custom
};

// Inference failures inside infer functions: the caller adds op name and source location.
struct InferError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using InferFn = std::vector<ValueType> (*)(std::span<const ValueType> operands, const OpParams& params);
using DecodeFn = OpParams (*)(const Attrs& attrs, std::span<const ValueType> operands);

// What the layers ask of an op instead of keeping their own lists of op kinds.
enum OpTrait : uint32_t {
  kNoTraits = 0,
  kTranscendental = 1u << 0, // costly per element (exp, erf, sin, pow, ...): worth threads sooner
  kSideEffects = 1u << 1,    // runs even when its results are unused (buffer_store, custom)
  kNeverFolded = 1u << 2,    // constant folding leaves it: already constant, bound later, or effects
};

struct OpInfo {
  OpKind kind;
  std::string_view name; // without the "kiln." prefix
  int min_operands;
  int max_operands; // -1: any number
  OpClass cls;
  InferFn infer;   // null for call and custom (they need the module / extension registry)
  DecodeFn decode; // attributes to typed params (op_params.hpp)
  uint32_t traits = kNoTraits;
  bool has(OpTrait trait) const { return (traits & trait) != 0; }
};

const OpInfo& op_info(OpKind kind);

std::optional<OpKind> op_kind_from_name(std::string_view name);
inline bool has_trait(OpKind kind, OpTrait trait) { return op_info(kind).has(trait); }
inline bool is_elementwise(OpKind k) {
  auto c = op_info(k).cls;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::elementwise_other;
}

// Checks arity, decodes the attributes (op_params.hpp), runs the op's inference and turns failures
// into kiln::Error naming the op and place: "kiln.matmul at model.cpp:42:17: inner dims differ:
// [batch, 3] x [4, 5]" (shape), "kiln.full at ...: missing attribute 'value' (f64)" (spec). A custom op
// asks its extension's shape function (ir/custom_ops.hpp). Sizes that overflow, and results larger
// than max_tensor_bytes (static dims only), are SizeError (core/checked_arithmetic.hpp).
std::vector<ValueType> infer_op(OpKind kind, std::span<const ValueType> operands, const Attrs& attrs,
                                const SourceLoc& loc);

// numpy broadcast of two shapes (equal names and 1 broadcast; otherwise InferError).
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against rank; InferError when out of range. Only decoding
// calls it: decoded params hold normalised axes.
int64_t normalize_axis(int64_t axis, int64_t rank);

} // namespace kiln::ir
