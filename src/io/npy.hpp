#pragma once
#include <cstdint>
#include <kiln/dtype.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

// What a .npy header dict says about the array that follows it.
struct NpyHeader {
  DType dtype;
  std::vector<int64_t> dims;
};

// Parses the header dict of a .npy file, a small Python literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" followed by padding. Throws
// kiln::Error(parse) for malformed text and kiln::Error(unsupported) for arrays kiln cannot load
// (Fortran order, big-endian or unsupported dtypes); messages start with `where`.
NpyHeader parse_npy_header(std::string_view text, const std::string& where);

// The header dict numpy writes for this array, unpadded. Throws kiln::Error(unsupported) for bf16,
// which has no .npy dtype.
std::string format_npy_header(const NpyHeader& header, const std::string& where);

} // namespace kiln::io
