#include "core/checked_arithmetic.hpp"
#include "core/half.hpp"
#include "core/tensor_impl.hpp"
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

namespace kiln {
namespace detail {

std::shared_ptr<void> allocate_aligned(size_t bytes, bool zero) {
  // Every tensor and arena comes through here: the limit also keeps the rounding below from wrapping.
  check_allocation_size(bytes, "an allocation");
  size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error(ErrorKind::internal, "out of memory allocating " + std::to_string(bytes) + " bytes");
  if (zero) std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

namespace {

// An allocator for std::allocate_shared that adds `extra` bytes past the one object it allocates
// (the shared_ptr's control block with the TensorImpl inside) and says where they start.
template <class T> struct TrailingBytesAllocator {
  using value_type = T;
  size_t extra;
  std::byte** trailing;
  TrailingBytesAllocator(size_t extra_bytes, std::byte** where) : extra(extra_bytes), trailing(where) {}
  template <class U>
  TrailingBytesAllocator(const TrailingBytesAllocator<U>& other) : extra(other.extra), trailing(other.trailing) {}
  T* allocate(size_t n) {
    auto* block = static_cast<std::byte*>(::operator new(n * sizeof(T) + extra));
    *trailing = block + n * sizeof(T);
    return reinterpret_cast<T*>(block);
  }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p); }
  template <class U> bool operator==(const TrailingBytesAllocator<U>& other) const { return extra == other.extra; }
};

} // namespace

std::shared_ptr<TensorImpl> make_concrete_impl(TensorLayout layout, size_t bytes) {
  constexpr size_t kAlignment = 64;
  std::byte* trailing = nullptr;
  auto impl = std::allocate_shared<TensorImpl>(
      TrailingBytesAllocator<TensorImpl>(std::max<size_t>(bytes, 1) + kAlignment - 1, &trailing));
  impl->layout = std::move(layout);
  impl->data =
      reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(trailing) + kAlignment - 1) / kAlignment * kAlignment);
  return impl;
}

} // namespace detail

namespace {

std::shared_ptr<detail::TensorImpl> concrete_impl(const std::vector<int64_t>& dims, DType dtype, bool zero) {
  for (int64_t d : dims)
    if (d < 0) throw Error(ErrorKind::shape, "tensor dimension " + std::to_string(d) + " is negative");
  const uint64_t bytes = checked_byte_size(dims, dtype);
  check_allocation_size(size_t(bytes), "an allocation");
  auto impl = detail::make_concrete_impl(TensorLayout(dtype, shape_from_dims(dims)), size_t(bytes));
  if (zero) std::memset(impl->data, 0, size_t(bytes));
  return impl;
}

void store_double(void* data, DType dtype, int64_t i, double v) {
  switch (dtype) {
  case DType::f32: static_cast<float*>(data)[i] = float(v); break;
  case DType::f64: static_cast<double*>(data)[i] = v; break;
  case DType::f16: static_cast<uint16_t*>(data)[i] = float_to_f16(float(v)); break;
  case DType::bf16: static_cast<uint16_t*>(data)[i] = float_to_bf16(float(v)); break;
  case DType::i8: static_cast<int8_t*>(data)[i] = int8_t(v); break;
  case DType::i32: static_cast<int32_t*>(data)[i] = int32_t(v); break;
  case DType::i64: static_cast<int64_t*>(data)[i] = int64_t(v); break;
  case DType::u8: static_cast<uint8_t*>(data)[i] = uint8_t(v); break;
  case DType::boolean: static_cast<bool*>(data)[i] = v != 0.0; break;
  }
}

} // namespace

Tensor Tensor::empty(const std::vector<int64_t>& dims, DType dtype) {
  return Tensor(concrete_impl(dims, dtype, false));
}
Tensor Tensor::zeros(const std::vector<int64_t>& dims, DType dtype) { return Tensor(concrete_impl(dims, dtype, true)); }
Tensor Tensor::ones(const std::vector<int64_t>& dims, DType dtype) { return full(dims, 1.0, dtype); }

Tensor Tensor::full(const std::vector<int64_t>& dims, double value, DType dtype) {
  Tensor t = empty(dims, dtype);
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    store_double(t.raw_data(), dtype, i, value);
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype) { return arange(0.0, double(n), 1.0, dtype); }

Tensor Tensor::arange(double start, double stop, double step, DType dtype) {
  Tensor t = empty({checked_arange_size(start, stop, step)}, dtype);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i)
    store_double(t.raw_data(), dtype, i, start + double(i) * step);
  return t;
}

Tensor Tensor::rand(const std::vector<int64_t>& dims, uint64_t seed, float low, float high) {
  Tensor t = empty(dims, DType::f32);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  float* p = t.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    p[i] = dist(gen);
  return t;
}

Tensor Tensor::randn(const std::vector<int64_t>& dims, uint64_t seed) {
  Tensor t = empty(dims, DType::f32);
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    p[i] = dist(gen);
  return t;
}

Tensor Tensor::wrap(void* data, const std::vector<int64_t>& dims, DType dtype, std::shared_ptr<void> keep_alive) {
  if (!data && numel_of(dims) != 0) throw Error(ErrorKind::spec, "Tensor::wrap: null data pointer");
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->layout = TensorLayout(dtype, shape_from_dims(dims));
  impl->storage = std::move(keep_alive);
  impl->data = data;
  return Tensor(std::move(impl));
}

bool Tensor::is_concrete() const { return impl_ && !impl_->graph; }
bool Tensor::is_symbolic() const { return impl_ && impl_->graph; }

static const detail::TensorImpl& checked(const std::shared_ptr<detail::TensorImpl>& impl) {
  if (!impl) throw Error(ErrorKind::spec, "use of an undefined (default-constructed) Tensor");
  return *impl;
}

TensorLayout Tensor::layout() const { return checked(impl_).layout; }
const Shape& Tensor::shape() const { return checked(impl_).layout.shape; }
DType Tensor::dtype() const { return checked(impl_).layout.dtype; }
int64_t Tensor::rank() const { return int64_t(shape().size()); }
std::vector<int64_t> Tensor::dims() const { return static_dims(shape()); }
int64_t Tensor::dim(int64_t axis) const {
  const Dim d = dim_of(axis);
  if (d.is_symbolic()) throw Error(ErrorKind::shape, "dimension '" + d.name() + "' is symbolic");
  return d.size();
}
Dim Tensor::dim_of(int64_t axis) const {
  int64_t r = rank();
  if (axis < -r || axis >= r)
    throw Error(ErrorKind::shape, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return shape()[size_t(axis < 0 ? axis + r : axis)];
}
int64_t Tensor::numel() const {
  // A concrete tensor's dims were checked when it was made; this way no vector is built, since
  // numel is on every call's path (output checks and copies).
  if (!is_concrete()) return numel_of(dims());
  int64_t count = 1;
  for (const Dim& d : shape())
    count *= d.size();
  return count;
}
size_t Tensor::nbytes() const { return size_t(numel()) * dtype_size(dtype()); }

void* Tensor::raw_data() {
  if (!is_concrete()) throw Error(ErrorKind::spec, "data() of a symbolic tensor: it has no values while tracing");
  if (impl_->layout.device.kind != DeviceKind::cpu)
    throw Error(ErrorKind::spec, "data() of a tensor on " + impl_->layout.device.to_string() +
                                     ": its values are on the device, not readable on the host; copy it with "
                                     ".to(CPU()) first");
  return impl_->data;
}
const void* Tensor::raw_data() const { return const_cast<Tensor*>(this)->raw_data(); }

void Tensor::check_access(DType requested) const {
  if (dtype() != requested)
    throw Error(ErrorKind::dtype,
                std::string("data<") + dtype_name(requested) + ">() of a tensor of dtype " + dtype_name(dtype()));
}

double Tensor::item_as_double(int64_t i) const {
  const void* p = raw_data();
  if (i < 0 || i >= numel()) throw Error(ErrorKind::shape, "element index " + std::to_string(i) + " out of range");
  switch (dtype()) {
  case DType::f32: return static_cast<const float*>(p)[i];
  case DType::f64: return static_cast<const double*>(p)[i];
  case DType::f16: return f16_to_float(static_cast<const uint16_t*>(p)[i]);
  case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  case DType::i8: return static_cast<const int8_t*>(p)[i];
  case DType::i32: return static_cast<const int32_t*>(p)[i];
  case DType::i64: return double(static_cast<const int64_t*>(p)[i]);
  case DType::u8: return static_cast<const uint8_t*>(p)[i];
  case DType::boolean: return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

} // namespace kiln
