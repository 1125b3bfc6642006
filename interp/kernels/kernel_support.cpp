#include "interp/kernels/kernel_support.hpp"
#include "ir/ops.hpp"

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;
using exec::View;

void throw_unsupported_dtype(const ir::Op& op, DType dtype) {
  throw Error(ErrorKind::dtype, ir::op_place(op) + ": the interpreter has no kernel for dtype " + dtype_name(dtype));
}

void throw_unprepared(const ir::Op& op) {
  throw Error(ErrorKind::internal, ir::op_place(op) + ": its kernel ran without the state its prepare derives");
}

namespace {

void check_dtype(const KernelArgs& args, const View& v, DType expected, const char* what, size_t index) {
  if (v.dtype != expected)
    throw Error(ErrorKind::dtype, ir::op_place(args.op) + ": " + what + " " + std::to_string(index) + " is " +
                                      dtype_name(v.dtype) + ", expected " + dtype_name(expected));
}

void check_outputs(const KernelArgs& args, DType expected) {
  for (size_t i = 0; i < args.outputs.size(); ++i)
    check_dtype(args, args.outputs[i], expected, "result", i);
}

} // namespace

void require_same_dtype(const KernelArgs& args, std::initializer_list<size_t> inputs, bool outputs) {
  const DType expected = args.inputs[*inputs.begin()].dtype;
  for (size_t i : inputs)
    check_dtype(args, args.inputs[i], expected, "operand", i);
  if (outputs) check_outputs(args, expected);
}

void require_uniform_dtype(const KernelArgs& args) {
  const DType expected = args.inputs[0].dtype;
  for (size_t i = 0; i < args.inputs.size(); ++i)
    check_dtype(args, args.inputs[i], expected, "operand", i);
  check_outputs(args, expected);
}

void require_same_dims(const KernelArgs& args) {
  std::span<const int64_t> in = args.inputs[0].dims, out = args.outputs[0].dims;
  if (!std::equal(in.begin(), in.end(), out.begin(), out.end()))
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": result dims " + dims_string(out) +
                                      " differ from operand dims " + dims_string(in));
}

int64_t require_axis(const ir::Op& op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    throw Error(ErrorKind::shape, ir::op_place(op) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                                      std::to_string(rank));
  return axis;
}

std::string dims_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return strides;
}

namespace {

std::vector<float> to_f32(const View& v) {
  std::vector<float> out(size_t(v.numel()));
  const auto* bits = v.as<const uint16_t>();
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == DType::f16 ? f16_to_float(bits[i]) : bf16_to_float(bits[i]);
  return out;
}

void store_half(const std::vector<float>& values, const View& v) {
  auto* bits = v.as<uint16_t>();
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = v.dtype == DType::f16 ? float_to_f16(values[i]) : float_to_bf16(values[i]);
}

} // namespace

void run_in_f32(const KernelArgs& args, Kernel kernel) {
  std::vector<std::vector<float>> input_copies(args.inputs.size()), output_copies(args.outputs.size());
  std::vector<View> inputs(args.inputs.begin(), args.inputs.end());
  std::vector<View> outputs(args.outputs.begin(), args.outputs.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_half(inputs[i].dtype)) continue;
    input_copies[i] = to_f32(inputs[i]);
    inputs[i] = View{input_copies[i].data(), DType::f32, inputs[i].dims};
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!is_half(outputs[i].dtype)) continue;
    output_copies[i].resize(size_t(outputs[i].numel()));
    outputs[i] = View{output_copies[i].data(), DType::f32, outputs[i].dims};
  }
  kernel(KernelArgs{args.op, inputs, outputs, args.scratch, args.prepared});
  for (size_t i = 0; i < outputs.size(); ++i)
    if (is_half(args.outputs[i].dtype)) store_half(output_copies[i], args.outputs[i]);
}

} // namespace kiln::interp
