#pragma once
#include "ir/graph.hpp"
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace kiln::vulkan {

// How the accelerator runs one op of a static graph: a GLSL compute shader and its dispatch.
// Binding i is the op's operand i for i < operands, then its results in order; each binding is the
// whole value, contiguous, row-major, in the value's dtype. Sizes are static (the graph is
// specialised), so they may be baked into the source.
struct OpKernel {
  std::string glsl;
  std::vector<std::byte> push; // push constants, as the shader declares them (often none)
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::string implementation; // "vulkan.elementwise", "vulkan.matmul", ...: KILN_LOG=jit names it
};

// How f32 values are stored in device memory: as f32, or as f16 (an option, where the device has
// 16-bit storage and arithmetic: KILN_ACCELERATOR_STORAGE=f16). Kernels compute in f32 either way;
// under f16 each value is rounded to f16 where a kernel writes it.
enum class Storage { f32, f16 };
// Bytes of one stored f32 element.
inline size_t stored_element_bytes(Storage storage) { return storage == Storage::f16 ? 2 : 4; }
// The source of `kernel` for values stored as `storage` (its GLSL with the storage selected).
std::string kernel_source(const OpKernel& kernel, Storage storage);

// The device kernel for op `op` of `graph`, or why the accelerator leaves it to the CPU (an
// unsupported dtype, attribute or kind), said in a few words: "f64 is not supported on the
// device". Pure: compiles nothing and needs no device.
std::variant<OpKernel, std::string> op_kernel(const ir::Function& graph, ir::OpId op);

// One kernel for a run of elementwise ops that op_kernel takes and whose results all have the
// dims of the first one's (the iteration space): each element is read once from `inputs` (values
// made outside the run, broadcast to the space), carried through every op in registers, and
// written to `outputs` (values of the run read after it). Binding i is inputs[i], then outputs in
// order. Or why it cannot be fused. The graph's ops in `ops` are in program order.
std::variant<OpKernel, std::string> fused_elementwise_kernel(const ir::Function& graph, std::span<const ir::OpId> ops,
                                                             std::span<const ir::ValueId> inputs,
                                                             std::span<const ir::ValueId> outputs);

} // namespace kiln::vulkan
