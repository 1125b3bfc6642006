#pragma once
#include <kiln/tensor.hpp>
#include <map>
#include <string>

namespace kiln {

// Tensor file formats. Errors are kiln::Error whose message starts with the file path: kind io when
// the file cannot be opened, read or written; parse when its contents are malformed; unsupported
// when they are well formed but name something kiln cannot represent (a dtype, Fortran order,
// big-endian data). Writers replace the target atomically: readers see the old file or the new one.

// The contents of a .safetensors file.
struct SafetensorsFile {
  // Zero-copy views into a private mapping of the file, kept alive by the tensors themselves.
  // Writing into one changes this process's copy only, never the file.
  std::map<std::string, Tensor> tensors;
  // The optional "__metadata__" string map.
  std::map<std::string, std::string> metadata;
};

// Reads a safetensors file (dtypes F32 F64 F16 BF16 I8 I32 I64 U8 BOOL), validating the header
// against the file: every entry complete, sizes matching shapes, ranges inside the data section and
// disjoint. Tensor data need not be aligned.
SafetensorsFile load_safetensors(const std::string& path);

// Writes tensors (concrete ones) as the reference implementation does: tensors laid out by element
// size, largest first, then by name, so each stays aligned to its element size; the header lists
// them in that order after "__metadata__" and is padded with spaces to a multiple of 8 bytes.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a .npy file, format version 1.0, 2.0 or 3.0, C order, little-endian or byte-sized dtypes:
// <f4 <f8 <f2 <i1 <i4 <i8 |u1 |b1 (any byte order mark for the one-byte ones). The tensor owns a copy.
Tensor load_npy(const std::string& path);

// Writes a concrete tensor as .npy version 1.0 (2.0 when the header needs it) with the data starting
// at a multiple of 64 bytes, as numpy does. bf16 has no .npy dtype and is refused.
void save_npy(const std::string& path, const Tensor& tensor);

} // namespace kiln
