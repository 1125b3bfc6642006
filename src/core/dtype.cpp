#include <kiln/dtype.hpp>
#include <kiln/error.hpp>

namespace kiln {

size_t dtype_size(DType dtype) {
  switch (dtype) {
  case DType::f64:
  case DType::i64: return 8;
  case DType::f32:
  case DType::i32: return 4;
  case DType::f16:
  case DType::bf16: return 2;
  case DType::i8:
  case DType::u8:
  case DType::boolean: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
  case DType::f32: return "f32";
  case DType::f64: return "f64";
  case DType::f16: return "f16";
  case DType::bf16: return "bf16";
  case DType::i8: return "i8";
  case DType::i32: return "i32";
  case DType::i64: return "i64";
  case DType::u8: return "ui8";
  case DType::boolean: return "i1";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType d :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::u8, DType::boolean})
    if (name == dtype_name(d)) return d;
  if (name == "bool") return DType::boolean;
  if (name == "u8") return DType::u8;
  throw Error(ErrorKind::dtype, "unknown dtype '" + std::string(name) + "'");
}

bool dtype_is_float(DType d) { return d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16; }
bool dtype_is_integer(DType d) { return !dtype_is_float(d); }

} // namespace kiln
