#include "core/half.hpp"
#include "ir/ops.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::vulkan::glsl {

namespace {

// Indices are 32-bit in the shaders (uint), and a grid-stride step may add up to
// kMaxGroups * kLocalSize to one: values stay below 2^31 elements so that never wraps.
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;

} // namespace

std::vector<int64_t> dims_of(const ir::Function& graph, ir::ValueId v) { return static_dims(graph.type_of(v).shape); }

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    strides[d - 1] = strides[d] * dims[d];
  return strides;
}

std::string common_refusal(const ir::Function& graph, const ir::Op& op) {
  std::vector<ir::ValueId> values = op.operands;
  values.insert(values.end(), op.results.begin(), op.results.end());
  for (ir::ValueId v : values) {
    const ir::ValueType& type = graph.type_of(v);
    if (type.dtype != DType::f32) return std::string(dtype_name(type.dtype)) + " is not supported on the device";
    if (!shape_is_static(type.shape)) return "symbolic dims are not supported on the device";
    const int64_t n = numel(static_dims(type.shape));
    if (n == 0) return "empty tensors are left to the CPU";
    if (n > kMaxElements) return "tensors of 2^31 elements or more are not supported on the device";
  }
  return "";
}

std::string unsupported(const ir::Op& op) {
  return "kiln." + std::string(ir::op_info(op.kind).name) + " is not supported on the device";
}

std::string prelude(uint32_t local_x, uint32_t local_y) {
  std::string s = R"(#version 450
#extension GL_EXT_spirv_intrinsics : require
// Storage of f32 values: f32, or f16 where the region asks (KILN_F16_STORAGE, defined before this
// by the device region). Kernels compute in f32 either way: every float read goes through K_LOAD
// and every float write through K_STORE; bit copies move K_BITS and write fills as K_FILL.
#ifdef KILN_F16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define K_FLOAT float16_t
#define K_BITS uint16_t
#define K_LOAD(x) float(x)
#define K_STORE(x) float16_t(x)
#define K_FILL(bits32, bits16) uint16_t(bits16)
#else
#define K_FLOAT float
#define K_BITS uint
#define K_LOAD(x) (x)
#define K_STORE(x) (x)
#define K_FILL(bits32, bits16) (bits32)
#endif
// SignedZeroInfNanPreserve (4461) for 32-bit floats: the compiler keeps -0, infinities and NaN as
// the interpreter does instead of assuming them away.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
)";
  s += "layout(local_size_x = " + std::to_string(local_x) + ", local_size_y = " + std::to_string(local_y) + ") in;\n";
  s += R"(#define K_INF uintBitsToFloat(0x7f800000u)
#define K_NAN uintBitsToFloat(0x7fc00000u)
// NaN and |x| by their bits, which no float optimisation can assume away.
bool k_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
float k_abs(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }
// The interpreter's nan_max / nan_min: NaN from either side wins, ties keep a.
float k_nan_max(float a, float b) { return k_isnan(a) ? a : k_isnan(b) ? b : (a < b ? b : a); }
float k_nan_min(float a, float b) { return k_isnan(a) ? a : k_isnan(b) ? b : (b < a ? b : a); }
// s + c is a running sum carried as two floats (Neumaier): sums close to the interpreter's double
// accumulation without a double type, which not every device has.
// Once the sum is infinite or NaN it is carried as the interpreter's is (inf - inf would make the
// compensation NaN), and k_sum gives it as it is.
void k_sum_add(inout float s, inout float c, float x) {
  precise float t = s + x;
  if (k_abs(t) < K_INF) {
    precise float e = k_abs(s) >= k_abs(x) ? (s - t) + x : (x - t) + s;
    c += e;
  }
  s = t;
}
float k_sum(float s, float c) { return k_abs(s) < K_INF ? s + c : s; }
)";
  return s;
}

std::string storage_buffer(int binding, const char* access, const char* element, const std::string& name) {
  return "layout(std430, set = 0, binding = " + std::to_string(binding) + ") " + access + " buffer B" +
         std::to_string(binding) + " { " + element + " v[]; } " + name + ";\n";
}

std::string load(const std::string& buffer, const std::string& index) {
  return "K_LOAD(" + buffer + ".v[" + index + "])";
}

std::string store(const std::string& buffer, const std::string& index, const std::string& value) {
  return buffer + ".v[" + index + "] = K_STORE(" + value + ");\n";
}

std::string bindings(const ir::Op& op, const char* element) {
  std::string s;
  int binding = 0;
  auto add = [&](const char* access, const std::string& name) {
    s += storage_buffer(binding, access, element, name);
    ++binding;
  };
  for (size_t i = 0; i < op.operands.size(); ++i)
    add("readonly", "in" + std::to_string(i));
  for (size_t i = 0; i < op.results.size(); ++i)
    add("writeonly", "out" + std::to_string(i));
  return s;
}

std::string float_literal(double value) {
  const float f = float(value);
  if (!std::isfinite(f)) return "uintBitsToFloat(" + float_bits_literal(value) + ")";
  char text[48];
  std::snprintf(text, sizeof text, "%.9g", double(f));
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f < 0 || std::signbit(f) ? "(" + s + ")" : s;
}

std::string float_bits_literal(double value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08xu", std::bit_cast<uint32_t>(float(value)));
  return text;
}

std::string fill_literal(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "K_FILL(0x%08xu, 0x%04xu)", std::bit_cast<uint32_t>(float(value)),
                unsigned(float_to_f16(float(value))));
  return text;
}

std::string uint_literal(int64_t value) { return std::to_string(value) + "u"; }

std::string strided_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                           const std::string& index, const std::string& offset) {
  // (size, stride) per axis, size-1 axes dropped, then merged where the outer axis steps over the
  // whole inner one.
  std::vector<std::pair<int64_t, int64_t>> axes;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != 1) axes.emplace_back(dims[d], strides[d]);
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& axis : axes) {
    if (!merged.empty() && merged.back().second == axis.first * axis.second) {
      merged.back() = {merged.back().first * axis.first, axis.second};
      continue;
    }
    merged.push_back(axis);
  }
  if (merged.empty()) return "";
  std::string s = "{\n  uint rest = " + index + ";\n";
  for (size_t k = merged.size(); k-- > 0;) {
    const auto [size, stride] = merged[k];
    const std::string coordinate = k == 0 ? "rest" : "(rest % " + uint_literal(size) + ")";
    if (stride != 0)
      s += "  " + offset + " += " + coordinate + (stride == 1 ? "" : " * " + uint_literal(stride)) + ";\n";
    if (k != 0) s += "  rest /= " + uint_literal(size) + ";\n";
  }
  return s + "}\n";
}

std::string broadcast_index_function(const std::string& name, const std::vector<int64_t>& out,
                                     const std::vector<int64_t>& in) {
  const std::string head = "uint " + name + "(uint i) {\n";
  if (in == out) return head + "  return i;\n}\n";
  if (numel(in) == 1) return head + "  return 0u;\n}\n";
  const std::vector<int64_t> in_strides = strides_of(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == out[lead + d] ? in_strides[d] : 0;
  return head + "  uint offset = 0u;\n" + strided_offset(out, strides, "i", "offset") + "  return offset;\n}\n";
}

OpKernel elementwise_dispatch(const std::string& declarations, const std::string& body, int64_t count,
                              std::string implementation) {
  const int64_t wanted = (count + kLocalSize - 1) / kLocalSize;
  const uint32_t groups = uint32_t(std::min<int64_t>(wanted, kMaxGroups));
  OpKernel kernel;
  kernel.glsl = prelude(kLocalSize) + declarations + "void main() {\n  for (uint i = gl_GlobalInvocationID.x; i < " +
                uint_literal(count) + "; i += " + uint_literal(int64_t(groups) * kLocalSize) + ") {\n" + body +
                "  }\n}\n";
  kernel.groups = {groups, 1, 1};
  kernel.implementation = std::move(implementation);
  return kernel;
}

} // namespace kiln::vulkan::glsl
