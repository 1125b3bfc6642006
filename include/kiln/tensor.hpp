#pragma once
#include <cstdint>
#include <kiln/error.hpp>
#include <kiln/layout.hpp>
#include <kiln/scalar.hpp>
#include <memory>
#include <source_location>
#include <vector>

namespace kiln {

namespace detail {
struct TensorImpl;
}

// A tensor handle. Either concrete (contiguous, 64-byte aligned, shared storage) or symbolic
// (a value of the graph being traced). Copies share storage.
class Tensor {
public:
  Tensor() = default;

  static Tensor zeros(const std::vector<int64_t>& dims, DType dtype = DType::f32);
  static Tensor ones(const std::vector<int64_t>& dims, DType dtype = DType::f32);
  static Tensor full(const std::vector<int64_t>& dims, double value, DType dtype = DType::f32);
  // [0, 1, ..., n-1]
  static Tensor arange(int64_t n, DType dtype = DType::f32);
  static Tensor arange(double start, double stop, double step, DType dtype = DType::f32);
  // Uniform in [low, high), deterministic for a seed.
  static Tensor rand(const std::vector<int64_t>& dims, uint64_t seed, float low = 0.0f, float high = 1.0f);
  // Standard normal, deterministic for a seed.
  static Tensor randn(const std::vector<int64_t>& dims, uint64_t seed);
  template <class T> static Tensor from_vector(const std::vector<T>& values, const std::vector<int64_t>& dims);
  // Uninitialised storage.
  static Tensor empty(const std::vector<int64_t>& dims, DType dtype = DType::f32);
  // Wraps user memory without a copy; the caller keeps it alive (keep_alive may own it).
  static Tensor wrap(void* data, const std::vector<int64_t>& dims, DType dtype,
                     std::shared_ptr<void> keep_alive = nullptr);

  bool defined() const { return impl_ != nullptr; }
  bool is_concrete() const;
  bool is_symbolic() const;

  TensorLayout layout() const;
  const Shape& shape() const;
  DType dtype() const;
  int64_t rank() const;
  // Static sizes (concrete tensors; symbolic ones throw when a dim is symbolic).
  std::vector<int64_t> dims() const;
  int64_t dim(int64_t axis) const;
  // The dim itself, static or symbolic, for the ops that take sizes (PyTorch's x.size(axis)):
  // F::arange(x.dim_of(1)), F::full({d, d}, 0.0), F::reshape(x, {d, -1}). Negative axes count
  // from the end.
  Dim dim_of(int64_t axis) const;
  int64_t numel() const;
  size_t nbytes() const;

  void* raw_data();
  const void* raw_data() const;
  template <class T> T* data() {
    check_access(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  template <class T> const T* data() const {
    check_access(dtype_of<T>());
    return static_cast<const T*>(raw_data());
  }
  // Element i (flat, C order) converted to double, for any dtype.
  double item_as_double(int64_t i = 0) const;
  // A deep copy with its own storage.
  Tensor clone() const;
  // Copies this tensor's values into an existing concrete tensor of the same shape and dtype.
  void copy_to(Tensor& dst) const;
  // True when both handles share the same implementation object.
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

  // Methods that forward to F:: (work eagerly on concrete tensors, stage on symbolic ones).
  Tensor reshape(const Shape& shape, std::source_location loc = std::source_location::current()) const;
  Tensor transpose(int64_t a, int64_t b, std::source_location loc = std::source_location::current()) const;
  Tensor permute(const std::vector<int64_t>& perm, std::source_location loc = std::source_location::current()) const;
  Tensor cast(DType dtype, std::source_location loc = std::source_location::current()) const;

  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

private:
  void check_access(DType requested) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

// A tensor operand that remembers where the user wrote the operator: the implicit conversion
// evaluates source_location::current() at the expression, since operators cannot take a
// defaulted location parameter themselves.
struct LocatedTensor {
  LocatedTensor(const Tensor& t, std::source_location loc = std::source_location::current()) // NOLINT
      : tensor(t), loc(loc) {}
  const Tensor& tensor;
  std::source_location loc;
};

Tensor operator+(LocatedTensor a, const Tensor& b);
Tensor operator-(LocatedTensor a, const Tensor& b);
Tensor operator*(LocatedTensor a, const Tensor& b);
Tensor operator/(LocatedTensor a, const Tensor& b);
// torch.allclose: every |a - b| <= atol + rtol * |b|, elementwise over tensors of one shape (any
// dtypes: compared as doubles); NaNs are equal only with equal_nan. kiln::Error(shape) naming both
// shapes when they differ, kiln::Error(spec) for a symbolic tensor.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);

// With a scalar, PyTorch's promotion decides the dtype (dtype_promotion.hpp): an i32 tensor times
// 0.5 is f32, an f16 tensor plus 1 stays f16. `/` is true division: integers give f32.
Tensor operator+(LocatedTensor a, Scalar b);
Tensor operator-(LocatedTensor a, Scalar b);
Tensor operator*(LocatedTensor a, Scalar b);
Tensor operator/(LocatedTensor a, Scalar b);
Tensor operator+(Scalar a, LocatedTensor b);
Tensor operator-(Scalar a, LocatedTensor b);
Tensor operator*(Scalar a, LocatedTensor b);
Tensor operator/(Scalar a, LocatedTensor b);
Tensor operator-(LocatedTensor a);

template <class T> Tensor Tensor::from_vector(const std::vector<T>& values, const std::vector<int64_t>& dims) {
  if (static_cast<int64_t>(values.size()) != numel_of(dims))
    throw Error(ErrorKind::shape, "from_vector: " + std::to_string(values.size()) + " values do not fill shape " +
                                      shape_to_string(shape_from_dims(dims)));
  Tensor t = empty(dims, dtype_of<T>());
  T* out = static_cast<T*>(t.raw_data());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = values[i];
  return t;
}

} // namespace kiln
