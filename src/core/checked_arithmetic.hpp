#pragma once
#include <cstdint>
#include <kiln/dtype.hpp>
#include <kiln/error.hpp>
#include <kiln/shape.hpp>
#include <span>
#include <string>
#include <string_view>

// Size arithmetic that cannot overflow: every element count, byte size and derived dim (pads,
// windows, slices, arange lengths, reshape products) goes through these, so a hostile graph or
// argument becomes an error before anything is allocated instead of signed-overflow UB.
namespace kiln {

// A size that overflows int64 or exceeds the tensor-size limit. A kiln::Error(shape) of its own
// type, so that layers which rephrase op errors (the parser turns inference errors into parse
// errors) can keep it a shape error.
class SizeError : public Error {
public:
  explicit SizeError(const std::string& message) : Error(ErrorKind::shape, message) {}
};

// a + b, a - b, a * b; SizeError "<what>: 3 * 9223372036854775807 overflows int64" otherwise.
int64_t checked_add(int64_t a, int64_t b, std::string_view what);
int64_t checked_sub(int64_t a, int64_t b, std::string_view what);
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);

// `value` as int64_t when it is finite and in range (the cast is UB otherwise); SizeError naming
// `what` and the value.
int64_t checked_int64(double value, std::string_view what);

// The length of arange(start, stop, step): ceil((stop - start) / step), 0 when negative;
// SizeError when it is not a finite int64 (a huge stop, NaN) or step is zero.
int64_t checked_arange_size(double start, double stop, double step);

// The product of dims; SizeError naming the dims when one is negative or the product overflows.
int64_t checked_numel(std::span<const int64_t> dims);
// numel * dtype_size, checked against overflow and max_tensor_bytes(); SizeError naming dtype and dims.
uint64_t checked_byte_size(std::span<const int64_t> dims, DType dtype);
// The same for a shape whose symbolic dims are skipped: their sizes are unknown until a call binds
// them, so only the static part is checked (the whole shape when it is static). `what` names the
// value in the error: "<what>: f32 [4294967296, 4294967296, 16] has more elements than int64 counts".
uint64_t checked_static_byte_size(const Shape& shape, DType dtype, std::string_view what);
// An allocation of `bytes` (an arena, a tensor): SizeError naming `what` over max_tensor_bytes().
void check_allocation_size(uint64_t bytes, std::string_view what);

// The largest tensor (and allocation) kiln creates: KILN_MAX_TENSOR_BYTES, default the machine's
// physical memory, since anything larger can only fail or swap.
uint64_t max_tensor_bytes();

} // namespace kiln
