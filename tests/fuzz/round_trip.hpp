#pragma once
// Helpers shared by the file-format checks: writing the fuzz input to a file, reading every byte of
// a tensor, comparing two tensors exactly.
#include "fuzz/checks.hpp"
#include <cstring>
#include <fstream>
#include <kiln/tensor.hpp>

namespace kiln::fuzz {

inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!out) throw CheckFailure("cannot write " + path);
  return path;
}

// Reads every byte (so ASan sees a view that reaches past its storage) and folds them together.
inline uint8_t touch_every_byte(const Tensor& t) {
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  uint8_t sum = 0;
  for (size_t i = 0; i < t.nbytes(); ++i)
    sum = uint8_t(sum + bytes[i]);
  return sum;
}

inline void check_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  if (a.dtype() != b.dtype()) throw CheckFailure(what + ": dtype changed in the round-trip");
  if (!(a.shape() == b.shape())) throw CheckFailure(what + ": shape changed in the round-trip");
  if (a.nbytes() != b.nbytes()) throw CheckFailure(what + ": byte count changed in the round-trip");
  if (a.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0)
    throw CheckFailure(what + ": bytes changed in the round-trip");
}

} // namespace kiln::fuzz
