#include <kiln/dtype_promotion.hpp>
#include <kiln/error.hpp>
#include <optional>

namespace kiln {

namespace {

bool is_float(DType d) { return dtype_is_float(d); }

// Integers by how wide a signed integer must be to hold them: u8 needs 16 bits, kiln's next is i32.
int signed_bits(DType d) {
  switch (d) {
  case DType::i8: return 8;
  case DType::u8: return 16;
  case DType::i32: return 32;
  case DType::i64: return 64;
  case DType::boolean: return 1;
  case DType::f16:
  case DType::bf16:
  case DType::f32:
  case DType::f64: return 0;
  }
  return 0;
}

DType promote_floats(DType a, DType b) {
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::f32; // f16 with bf16: neither holds the other
}

DType promote_integers(DType a, DType b) {
  if ((a == DType::u8 && b == DType::i8) || (a == DType::i8 && b == DType::u8)) return DType::i32; // torch: i16
  return signed_bits(a) >= signed_bits(b) ? a : b;
}

// torch's combine_categories: the higher priority class decides unless a lower one is of a higher
// category (a float under integers, anything under bools).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || is_float(*higher)) return higher;
  if (*higher == DType::boolean || is_float(*lower)) return promote_types(*higher, *lower);
  return higher;
}

void promote_into(std::optional<DType>& into, DType d) { into = into ? promote_types(*into, d) : d; }

DType scalar_dtype(const Scalar& s) {
  switch (s.kind()) {
  case Scalar::Kind::boolean: return DType::boolean;
  case Scalar::Kind::integer: return DType::i64;
  case Scalar::Kind::floating: return DType::f32; // the default float dtype
  }
  return DType::f32;
}

} // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  if (is_float(a) && is_float(b)) return promote_floats(a, b);
  if (is_float(a)) return a;
  if (is_float(b)) return b;
  return promote_integers(a, b);
}

DType result_type(std::initializer_list<PromotionOperand> operands) {
  std::optional<DType> dims, zero_dim, scalars;
  for (const PromotionOperand& operand : operands) {
    if (const Scalar* s = std::get_if<Scalar>(&operand)) {
      promote_into(scalars, scalar_dtype(*s));
      continue;
    }
    const Tensor& t = std::get<Tensor>(operand);
    if (!t.defined()) throw Error(ErrorKind::spec, "result_type: an operand is an undefined tensor");
    promote_into(t.rank() == 0 ? zero_dim : dims, t.dtype());
  }
  const std::optional<DType> result = combine(dims, combine(zero_dim, scalars));
  if (!result) throw Error(ErrorKind::spec, "result_type: no operands");
  return *result;
}

} // namespace kiln
