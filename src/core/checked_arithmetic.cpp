#include "core/checked_arithmetic.hpp"
#include "core/environment.hpp"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <unistd.h>
#include <vector>

namespace kiln {

namespace {

std::string operation_error(std::string_view what, int64_t a, const char* op, int64_t b) {
  return std::string(what) + ": " + std::to_string(a) + " " + op + " " + std::to_string(b) + " overflows int64";
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string dims_text(std::span<const int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<int64_t>::max();
  return uint64_t(pages) * uint64_t(page_size);
}

std::string limit_text() {
  if (env::max_tensor_bytes()) return std::to_string(max_tensor_bytes()) + " bytes (KILN_MAX_TENSOR_BYTES)";
  return std::to_string(max_tensor_bytes()) +
         " bytes, the machine's physical memory (KILN_MAX_TENSOR_BYTES sets another limit)";
}

// The product of sizes; nullopt when one is negative or it overflows. A zero size empties the
// tensor however large the others are.
std::optional<int64_t> product_of(std::span<const int64_t> sizes) {
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  int64_t n = 1;
  for (int64_t d : sizes)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::string size_problem(const std::string& described, std::span<const int64_t> sizes) {
  const bool negative = std::any_of(sizes.begin(), sizes.end(), [](int64_t d) { return d < 0; });
  return described + (negative ? " has a negative dim" : " has more elements than int64 counts");
}

// `numel` elements of `dtype`; `described()` names them in errors (built only on failure: this is
// on the path of every tensor allocation).
template <class Describe> uint64_t checked_bytes_of(int64_t numel, DType dtype, const Describe& described) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, int64_t(dtype_size(dtype)), &bytes))
    throw SizeError(described() + " has " + std::to_string(numel) + " elements of " +
                    std::to_string(dtype_size(dtype)) + " bytes: the byte size overflows int64");
  if (uint64_t(bytes) > max_tensor_bytes())
    throw SizeError(described() + " needs " + std::to_string(bytes) + " bytes, more than the limit of " + limit_text());
  return uint64_t(bytes);
}

} // namespace

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) throw SizeError(operation_error(what, a, "+", b));
  return out;
}

int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) throw SizeError(operation_error(what, a, "-", b));
  return out;
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) throw SizeError(operation_error(what, a, "*", b));
  return out;
}

int64_t checked_int64(double value, std::string_view what) {
  // 2^63 is exactly representable; every double below it (and at or above -2^63) casts exactly.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(value >= -kLimit && value < kLimit))
    throw SizeError(std::string(what) + ": " + number_text(value) + " does not fit in int64");
  return static_cast<int64_t>(value);
}

int64_t checked_arange_size(double start, double stop, double step) {
  if (step == 0.0) throw SizeError("arange step is zero");
  const double steps = std::ceil((stop - start) / step);
  if (steps <= 0.0) return 0; // an empty range, -inf included
  return checked_int64(steps, "arange length ceil((" + number_text(stop) + " - " + number_text(start) + ") / " +
                                  number_text(step) + ")");
}

int64_t checked_numel(std::span<const int64_t> dims) {
  const std::optional<int64_t> n = product_of(dims);
  if (!n) throw SizeError(size_problem(dims_text(dims), dims));
  return *n;
}

uint64_t checked_byte_size(std::span<const int64_t> dims, DType dtype) {
  const std::optional<int64_t> n = product_of(dims);
  const auto described = [&] { return std::string(dtype_name(dtype)) + " " + dims_text(dims); };
  if (!n) throw SizeError(size_problem(described(), dims));
  return checked_bytes_of(*n, dtype, described);
}

uint64_t checked_static_byte_size(const Shape& shape, DType dtype, std::string_view what) {
  std::vector<int64_t> sizes;
  for (const Dim& d : shape)
    if (d.is_static()) sizes.push_back(d.size());
  const std::optional<int64_t> n = product_of(sizes);
  const auto described = [&] {
    return std::string(what) + ": " + std::string(dtype_name(dtype)) + " " + shape_to_string(shape);
  };
  if (!n) throw SizeError(size_problem(described(), sizes));
  return checked_bytes_of(*n, dtype, described);
}

void check_allocation_size(uint64_t bytes, std::string_view what) {
  if (bytes > max_tensor_bytes())
    throw SizeError(std::string(what) + " needs " + std::to_string(bytes) + " bytes, more than the limit of " +
                    limit_text());
}

uint64_t max_tensor_bytes() {
  static const uint64_t physical = physical_memory_bytes();
  return env::max_tensor_bytes().value_or(physical);
}

} // namespace kiln
