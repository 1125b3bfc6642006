#pragma once
#include "ir/graph.hpp"
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>

namespace kiln::ir {

// The one op table (op_table.def: a row per kind). Every tier reads it; tiers attach kernels in
// their own tables by OpKind. The attributes are the printed form; op_params.hpp decodes them once
// into typed params (Op::params), which is what every layer reads.
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
// Why an op's operands do not fit it; `kind` is shape unless the dtypes are what is wrong.
struct InferError : std::runtime_error {
  explicit InferError(const std::string& message, ErrorKind kind = ErrorKind::shape)
      : std::runtime_error(message), kind(kind) {}
  ErrorKind kind;
};

using InferFn = std::vector<ValueType> (*)(std::span<const ValueType> operands, const OpParams& params);
using DecodeFn = OpParams (*)(const Attrs& attrs, std::span<const ValueType> operands);

// What the layers ask of an op instead of keeping their own lists of op kinds.
enum OpTrait : uint32_t {
  kNoTraits = 0,
  kTranscendental = 1u << 0, // costly per element (exp, erf, sin, pow, ...): worth threads sooner
  kSideEffects = 1u << 1,    // runs even when its results are unused (buffer_store, custom)
  kNeverFolded = 1u << 2,    // constant folding leaves it: already constant, bound later, or effects
  kNoKernel = 1u << 3,       // the plan executor runs it itself: reads the registry, stores, calls
  // The dtypes an op computes in where its shape inference leaves that open (ir/operand_dtypes.hpp);
  // without one of these, every dtype.
  kNumericOperands = 1u << 4,     // every dtype but bool
  kWideNumericOperands = 1u << 5, // every dtype but bool, i8 and u8
  kFloatOperands = 1u << 6,       // f32, f64, f16 and bf16
};

inline constexpr int kAny = -1; // an op table row's max operands: any number

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
// "kiln.add at model.cpp:3:9" (or just "kiln.add" when the op has no source location): how errors
// and debugging tools name an op.
std::string op_place(const Op& op);
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
