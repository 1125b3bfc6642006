#pragma once
// What the per-family GLSL generators of vulkan/op_kernels.cpp share: the shader prelude, the
// bindings, index math over static dims, float literals and the f32 math library. Private to
// vulkan/.
#include "vulkan/op_kernels.hpp"
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace kiln::vulkan::glsl {

using KernelOrRefusal = std::variant<OpKernel, std::string>;

// Invocations per workgroup of the one-dimensional kernels, and the most workgroups a dimension
// of a dispatch may have (Vulkan's guaranteed minimum of maxComputeWorkGroupCount).
inline constexpr uint32_t kLocalSize = 256;
inline constexpr uint32_t kMaxGroups = 65535;

// The static dims of value `v` of `graph`.
std::vector<int64_t> dims_of(const ir::Function& graph, ir::ValueId v);
int64_t numel(const std::vector<int64_t>& dims);
// Row-major element strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// Why the device cannot take `op` whatever its kind, or "" when it may: a dtype other than f32, a
// symbolic or empty value, or one too large for 32-bit indices.
std::string common_refusal(const ir::Function& graph, const ir::Op& op);
// "kiln.topk is not supported on the device".
std::string unsupported(const ir::Op& op);

// `#version 450`, signed zeros, infinities and NaN preserved (SPV_KHR_float_controls), the
// workgroup size, and the helpers every kernel may use (k_isnan, k_nan_max, ...).
std::string prelude(uint32_t local_x, uint32_t local_y = 1);
// One storage buffer per operand (readonly, named in0, in1, ... with member v) then per result
// (writeonly, out0, ...), of `element` ("K_FLOAT", or "K_BITS" for copies that must keep every
// bit): the prelude makes them f32 and uint, or f16 and uint16_t under KILN_F16_STORAGE.
std::string bindings(const ir::Op& op, const char* element = "K_FLOAT");
// One such buffer: binding `binding`, "readonly" or "writeonly", named `name`.
std::string storage_buffer(int binding, const char* access, const char* element, const std::string& name);
// Element `index` of K_FLOAT buffer `buffer` as an f32 expression, and the statement that writes
// the f32 expression `value` there (rounded to f16 under KILN_F16_STORAGE).
std::string load(const std::string& buffer, const std::string& index);
std::string store(const std::string& buffer, const std::string& index, const std::string& value);

// An exact GLSL f32 literal for `value` rounded to f32 (infinities and NaN as bit patterns).
std::string float_literal(double value);
// The f32 bits of `value` as a GLSL uint literal.
std::string float_bits_literal(double value);
// `value` as the K_BITS a copy writes as a fill value: its f32 bits, or its f16 bits under
// KILN_F16_STORAGE.
std::string fill_literal(double value);
std::string uint_literal(int64_t value);

// GLSL `uint NAME(uint i)`: the offset into an operand of dims `in` of element i (row-major) of a
// result of dims `out`, with numpy broadcasting (`in` right-aligned, size-1 dims repeated).
std::string broadcast_index_function(const std::string& name, const std::vector<int64_t>& out,
                                     const std::vector<int64_t>& in);
// GLSL statements that add to `offset` the offset of element `index` (a uint expression, consumed
// as a variable named `rest`) of a row-major walk over `dims`, where axis d moves by strides[d].
// Adjacent axes that walk contiguously are merged.
std::string strided_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                           const std::string& index, const std::string& offset);

// A kernel with one invocation per element index in [0, count), in a grid-stride loop so that no
// dispatch dimension exceeds kMaxGroups. `declarations` go before main; `body` runs with `uint i`.
OpKernel elementwise_dispatch(const std::string& declarations, const std::string& body, int64_t count,
                              std::string implementation);

// The f32 functions of the elementwise ops (k_exp, k_log, k_tanh, k_erf, ...), ports of the
// interpreter's vector_math.hpp and the JIT's math_emitters.cpp (docs/accelerator-kernels.md lists their
// errors).
const std::string& math_library();

// The family generators op_kernels.cpp dispatches to; each takes the op kinds of its family and
// refuses the rest of what it cannot do.
KernelOrRefusal elementwise_kernel(const ir::Function& graph, const ir::Op& op);
// See vulkan::fused_elementwise_kernel (op_kernels.hpp).
KernelOrRefusal fused_elementwise_kernel(const ir::Function& graph, std::span<const ir::OpId> ops,
                                         std::span<const ir::ValueId> inputs, std::span<const ir::ValueId> outputs);
KernelOrRefusal matmul_kernel(const ir::Function& graph, const ir::Op& op);
KernelOrRefusal reduction_kernel(const ir::Function& graph, const ir::Op& op);
KernelOrRefusal normalization_kernel(const ir::Function& graph, const ir::Op& op);
KernelOrRefusal shape_kernel(const ir::Function& graph, const ir::Op& op);
KernelOrRefusal conv_pool_kernel(const ir::Function& graph, const ir::Op& op);

} // namespace kiln::vulkan::glsl
