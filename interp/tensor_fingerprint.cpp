#include "interp/tensor_fingerprint.hpp"
#include <cstring>

namespace kiln::interp {

namespace {

uint64_t rotate_left(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

// Four independent 64-bit lanes of multiply-rotate mixing, combined at the end: not
// cryptographic, only to tell changed weights from unchanged ones.
uint64_t hash_bytes(const unsigned char* bytes, size_t size) {
  constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull, kFinal = 0xC2B2AE3D27D4EB4Full;
  uint64_t lanes[4] = {size, kMultiplier, kFinal, ~size};
  auto mix = [&](const unsigned char* block) {
    for (int lane = 0; lane < 4; ++lane) {
      uint64_t word;
      std::memcpy(&word, block + 8 * lane, 8);
      lanes[lane] = rotate_left(lanes[lane] ^ (word * kMultiplier), 29) * kFinal;
    }
  };
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    mix(bytes + i);
  if (i < size) { // the last partial block, zero-padded (the size is mixed in above)
    unsigned char last[32] = {};
    std::memcpy(last, bytes + i, size - i);
    mix(last);
  }
  const uint64_t h =
      (lanes[0] ^ rotate_left(lanes[1], 17) ^ rotate_left(lanes[2], 31) ^ rotate_left(lanes[3], 47)) * kMultiplier;
  return h ^ (h >> 32);
}

} // namespace

TensorFingerprint fingerprint(const Tensor& tensor) {
  const size_t bytes = size_t(tensor.numel()) * dtype_size(tensor.dtype());
  return {tensor.raw_data(), tensor.dtype(), tensor.dims(),
          hash_bytes(static_cast<const unsigned char*>(tensor.raw_data()), bytes)};
}

} // namespace kiln::interp
