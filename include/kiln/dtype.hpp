#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

enum class DType : uint8_t { f32, f64, f16, bf16, i8, i32, i64, u8, boolean };

// Bytes per element.
size_t dtype_size(DType dtype);
// MLIR-style element type name: f32 f64 f16 bf16 i8 i32 i64 ui8 i1.
const char* dtype_name(DType dtype);
// Inverse of dtype_name; also accepts "bool" and "u8". Throws kiln::Error(dtype) otherwise.
DType parse_dtype(std::string_view name);
bool dtype_is_float(DType dtype);
bool dtype_is_integer(DType dtype); // integers and bool

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

} // namespace kiln
