#pragma once
#include "jit/elementwise/region.hpp"
#include <cstdint>
#include <memory>
#include <xbyak/xbyak.h>

namespace kiln::jitc {

// Generated code: the generator owns the pages, switched to read+execute once complete.
struct ElementwiseKernel::Code {
  std::unique_ptr<Xbyak::CodeGenerator> generator;
  KernelEntry entry = nullptr;
  size_t instruction_bytes = 0; // the code before the constant table
};

// Generates the kernel of a region that passed check_region, for avx512 or avx2 (not automatic).
// Throws Xbyak::Error or kiln::Error when code generation fails.
std::shared_ptr<const ElementwiseKernel::Code> generate_kernel(const Region& region, VectorIsa isa);

} // namespace kiln::jitc
