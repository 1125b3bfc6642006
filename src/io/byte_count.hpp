#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace kiln::io {

// The bytes a C-ordered array of `dims` holds, or nullopt when the product of its non-zero dims and
// `element_size` exceeds INT64_MAX. Zero dims are left out of the bound on purpose: kiln computes
// strides and offsets in int64_t, so [0, 2^62, 2^62] is unrepresentable even though it is empty.
// Readers call this before they allocate or map anything a file's header describes.
inline std::optional<uint64_t> checked_byte_count(size_t element_size, const std::vector<int64_t>& dims) {
  int64_t bound = int64_t(element_size);
  bool empty = false;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    if (dim == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(bound, dim, &bound)) return std::nullopt;
  }
  return empty ? 0 : uint64_t(bound);
}

} // namespace kiln::io
