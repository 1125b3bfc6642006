#pragma once
#include <cstdint>
#include <kiln/error.hpp>
#include <kiln/layout.hpp>
#include <kiln/scalar.hpp>
#include <memory>
#include <optional>
#include <source_location>
#include <vector>

namespace kiln {

namespace detail {
struct TensorImpl;
}
struct ValuesAndIndices;

// A tensor handle. Either concrete (contiguous, 64-byte aligned, shared storage) or symbolic
// (a value of the graph being traced). Copies share storage. A concrete tensor lives on the host
// unless moved with to(Accelerator()): an accelerator tensor's values stay on the device, and
// reading them on the host (data(), item_as_double, printing values, eager ops) is a kiln::Error
// saying to copy it back with to(CPU()) first.
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
  // Where the values live: cpu:0, or the accelerator for a tensor moved there with to(Device).
  Device device() const;
  // A copy on `device` (an upload or a download), or this tensor itself when it is already there,
  // as torch's to(device). kiln::Error(unsupported) saying what is missing where the device is not
  // there (see Accelerator()).
  Tensor to(Device device) const;

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
  // A deep copy with its own storage, on this tensor's device.
  Tensor clone() const;
  // Copies this tensor's values into an existing concrete tensor of the same shape and dtype, on
  // any device (an upload or a download where the two differ).
  void copy_to(Tensor& dst) const;
  // True when both handles share the same implementation object.
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

  // Methods that forward to F:: (work eagerly on concrete tensors, stage on symbolic ones).
  Tensor reshape(const Shape& shape, std::source_location loc = std::source_location::current()) const;
  Tensor transpose(int64_t a, int64_t b, std::source_location loc = std::source_location::current()) const;
  Tensor permute(const std::vector<int64_t>& perm, std::source_location loc = std::source_location::current()) const;
  Tensor cast(DType dtype, std::source_location loc = std::source_location::current()) const;

  // torch.Tensor's common methods with torch's semantics (src/trace/tensor_methods.cpp), each the
  // op of its F:: twin: eager on concrete tensors, staged while tracing, as F:: is. Where torch's
  // method and F:: differ in defaults, the method follows torch: flatten() starts at dim 0,
  // max(dim) gives values and indices, sum() of an integer tensor is i64, squeeze(dim) keeps a dim
  // that is not 1.
  using Loc = std::source_location;
  Tensor relu(Loc loc = Loc::current()) const;
  Tensor sigmoid(Loc loc = Loc::current()) const;
  Tensor tanh(Loc loc = Loc::current()) const;
  Tensor exp(Loc loc = Loc::current()) const;
  Tensor log(Loc loc = Loc::current()) const;
  Tensor sqrt(Loc loc = Loc::current()) const;
  Tensor rsqrt(Loc loc = Loc::current()) const;
  Tensor abs(Loc loc = Loc::current()) const;
  Tensor neg(Loc loc = Loc::current()) const;
  Tensor sin(Loc loc = Loc::current()) const;
  Tensor cos(Loc loc = Loc::current()) const;
  Tensor erf(Loc loc = Loc::current()) const;
  Tensor floor(Loc loc = Loc::current()) const;
  Tensor ceil(Loc loc = Loc::current()) const;
  Tensor round(Loc loc = Loc::current()) const;
  Tensor sign(Loc loc = Loc::current()) const;
  Tensor log1p(Loc loc = Loc::current()) const;
  Tensor expm1(Loc loc = Loc::current()) const;

  Tensor add(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor sub(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor mul(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor div(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor matmul(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor pow(const Tensor& exponent, Loc loc = Loc::current()) const;
  Tensor pow(Scalar exponent, Loc loc = Loc::current()) const;
  Tensor maximum(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor minimum(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor eq(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor ne(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor lt(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor le(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor gt(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor ge(const Tensor& other, Loc loc = Loc::current()) const;
  // torch.clamp: a missing bound does not clamp (at least one is needed); promotes as F::clamp.
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc = Loc::current()) const;
  Tensor clamp(const Tensor& min, const Tensor& max, Loc loc = Loc::current()) const;
  // torch's x.where(condition, other): x where condition holds, other elsewhere.
  Tensor where(const Tensor& condition, const Tensor& other, Loc loc = Loc::current()) const;
  Tensor masked_fill(const Tensor& mask, double value, Loc loc = Loc::current()) const;
  Tensor to(DType dtype, Loc loc = Loc::current()) const;

  // Reductions over every dim, over one dim, or over several (torch's dim and keepdim).
  Tensor sum(Loc loc = Loc::current()) const;
  Tensor sum(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor mean(Loc loc = Loc::current()) const;
  Tensor mean(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor prod(Loc loc = Loc::current()) const;
  Tensor prod(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  // The global maximum (minimum), or along one dim the values and the index of the first of them.
  Tensor max(Loc loc = Loc::current()) const;
  ValuesAndIndices max(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor min(Loc loc = Loc::current()) const;
  ValuesAndIndices min(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor amax(const std::vector<int64_t>& dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor amin(const std::vector<int64_t>& dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  // Without a dim, the index into the flattened tensor.
  Tensor argmax(Loc loc = Loc::current()) const;
  Tensor argmax(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor argmin(Loc loc = Loc::current()) const;
  Tensor argmin(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor var(const std::vector<int64_t>& dims = {}, int64_t correction = 1, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor std(const std::vector<int64_t>& dims = {}, int64_t correction = 1, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor cumsum(int64_t dim, Loc loc = Loc::current()) const;
  ValuesAndIndices topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true,
                        Loc loc = Loc::current()) const;
  Tensor softmax(int64_t dim, Loc loc = Loc::current()) const;
  Tensor log_softmax(int64_t dim, Loc loc = Loc::current()) const;
  Tensor tril(int64_t diagonal = 0, Loc loc = Loc::current()) const;
  Tensor triu(int64_t diagonal = 0, Loc loc = Loc::current()) const;

  // Shapes. flatten merges dims start..end (inclusive); a 0-d tensor becomes [1], as in torch.
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  // Drops the dims of size 1 (every one, or dim if it is 1); a symbolic dim is a kiln::Error(shape),
  // since whether torch drops it depends on its size at each call.
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor view(const Shape& shape, Loc loc = Loc::current()) const;
  Tensor expand(const std::vector<int64_t>& sizes, Loc loc = Loc::current()) const;
  // t(): the transpose of a matrix (a 0-d or 1-d tensor unchanged); mT(): of the last two dims.
  Tensor t(Loc loc = Loc::current()) const;
  Tensor mT(Loc loc = Loc::current()) const;
  // torch.split: pieces of split_size along dim (the last one smaller), or of the given sizes.
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, Loc loc = Loc::current()) const;

  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

private:
  void check_access(DType requested) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

// torch's (values, indices) pair of max(dim), min(dim) and topk.
struct ValuesAndIndices {
  Tensor values;
  Tensor indices;
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
