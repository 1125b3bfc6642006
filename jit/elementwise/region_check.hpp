#pragma once
#include "jit/elementwise/region.hpp"
#include <string>

namespace kiln::jitc {

// Regions larger than this are refused: each node may need a vector spill slot on the stack.
inline constexpr size_t kMaxRegionNodes = 512;

// Whether code can be generated for the region: argument references point backwards, every op is
// one the generator has an emitter for, and every dtype is f32, i32 or bool as the op requires
// (and equal to the node's declared dtype). Says why not in *why_not.
bool check_region(const Region& region, std::string* why_not);

// The dtype of a node argument (node index >= 0, or input -(k + 1)).
DType arg_dtype(const Region& region, int32_t arg);

// A node's gelu form: true for the tanh approximation.
bool gelu_uses_tanh(const RegionNode& node);

} // namespace kiln::jitc
