#pragma once
#include <cstdint>
#include <string>

namespace kiln::jit::dnnl_ops {

class WeightPackCache;

// A constant operand (a weight) given at creation instead of at execute, laid out exactly like the
// operand it replaces. A primitive reads it in place when that layout is already the one it
// prefers (the buffer must then outlive the primitive), else from a packing made once.
struct ConstantWeight {
  const float* data = nullptr;
  std::string name{};               // the registry's weight name
  uint64_t version = 0;             // the registry's version of that weight
  WeightPackCache* cache = nullptr; // shares packings by (name, version, layout); null: private packing
};

} // namespace kiln::jit::dnnl_ops
