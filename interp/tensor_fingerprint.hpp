#pragma once
#include <cstdint>
#include <kiln/tensor.hpp>
#include <vector>

namespace kiln::interp {

// What identifies a bound tensor to the caches shared between plans (packed weights, precomputed
// values): its address, type and a hash of its bytes. The address alone is not enough: a zero-copy
// weight can be changed in place and set again under its name (a new version, so new plans),
// while an older plan still holds the cache entry made from the old bytes.
struct TensorFingerprint {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
  uint64_t content_hash = 0;
  friend bool operator==(const TensorFingerprint&, const TensorFingerprint&) = default;
};

// Reads every byte of the tensor once (a few GB/s; done only when a plan is built).
TensorFingerprint fingerprint(const Tensor& tensor);

} // namespace kiln::interp
