#pragma once
#include "exec/threads.hpp"
#include "exec/view.hpp"
#include "interp/kernels/element.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <cstdint>
#include <kiln/error.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln::interp {

[[noreturn]] void throw_unsupported_dtype(const ir::Op& op, DType dtype);
// Inputs named by index (and every output) must share inputs[first]'s dtype: kiln::Error(dtype).
void require_same_dtype(const exec::KernelArgs& args, std::initializer_list<size_t> inputs, bool outputs = true);
// Every input and output has inputs[0]'s dtype: kiln::Error(dtype) otherwise.
void require_uniform_dtype(const exec::KernelArgs& args);
// The result has operand 0's dims (ops that keep the shape): kiln::Error(shape) otherwise.
void require_same_dims(const exec::KernelArgs& args);
// The op's (decoded, so non-negative) axis when the views have it; kiln::Error(shape) naming the op
// otherwise.
int64_t require_axis(const ir::Op& op, int64_t axis, int64_t rank);

[[noreturn]] void throw_unprepared(const ir::Op& op);
// The state the kernel's prepare derived (exec::KernelArgs::prepared); kiln::Error(internal) when
// the caller prepared nothing, which every caller of a kernel with a prepare must.
template <class State> const State& prepared(const exec::KernelArgs& args) {
  if (!args.prepared) throw_unprepared(args.op);
  return *static_cast<const State*>(args.prepared);
}
template <class State> exec::PreparedState make_prepared(State state) {
  return std::make_shared<const State>(std::move(state));
}

template <DType... Ds> struct DTypeList {};
using FloatDTypes = DTypeList<DType::f32, DType::f64, DType::f16, DType::bf16>;
// Every dtype but bool (ir/operand_dtypes.hpp's numeric rule): integers wrap around.
using ArithmeticDTypes =
    DTypeList<DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::u8>;
using AllDTypes = DTypeList<DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64,
                            DType::u8, DType::boolean>;
// The types the heavy kernels compute in; f16/bf16 reach them through run_in_f32.
using WideFloatDTypes = DTypeList<DType::f32, DType::f64>;

// Calls fn(Element<D>{}) for the D in the list equal to `dtype`; kiln::Error(dtype) when none is.
template <DType... Ds, class Fn> void dispatch_dtype(DTypeList<Ds...>, DType dtype, const ir::Op& op, Fn&& fn) {
  bool matched = ((dtype == Ds ? (fn(Element<Ds>{}), true) : false) || ...);
  if (!matched) throw_unsupported_dtype(op, dtype);
}

// Calls fn(T{}) with the unsigned integer type T of `bytes` bytes: data movement ignores dtypes.
template <class Fn> void dispatch_element_size(size_t bytes, Fn&& fn) {
  switch (bytes) {
  case 1: fn(uint8_t{}); return;
  case 2: fn(uint16_t{}); return;
  case 4: fn(uint32_t{}); return;
  default: fn(uint64_t{}); return;
  }
}

inline bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }
inline bool has_half_operand(const exec::KernelArgs& args) {
  return std::any_of(args.inputs.begin(), args.inputs.end(), [](const exec::View& v) { return is_half(v.dtype); });
}
// Runs `kernel` on f32 copies of the f16/bf16 inputs and outputs, then rounds the outputs back:
// the interpreter computes half-precision types in f32.
void run_in_f32(const exec::KernelArgs& args, exec::Kernel kernel);

// Elements handled by one task of a chunked loop.
inline constexpr int64_t kChunk = 8192;

// Calls body(begin, end) over [0, n) in chunks, in parallel when n is large.
template <class Body> void for_each_range(int64_t n, Body&& body) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  exec::parallel_for(chunks, exec::worth_parallel(n),
                     [&](int64_t c) { body(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

inline int64_t product(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}
// "[3, 4]"
std::string dims_string(std::span<const int64_t> dims);
// Element strides of a contiguous C-order array.
std::vector<int64_t> contiguous_strides(std::span<const int64_t> dims);

} // namespace kiln::interp
