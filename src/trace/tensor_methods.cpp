// torch.Tensor's common methods on kiln::Tensor, each written onto its F:: twin, so a method stages
// exactly the op F:: stages (or runs it eagerly on a concrete tensor). Where torch's method differs
// from the functional form (flatten from dim 0, max(dim) with indices, integer sums in i64), the
// difference is made here, at trace time, never by a new op.
#include "trace/builder.hpp"
#include <kiln/dtype_promotion.hpp>
#include <kiln/functional.hpp>

namespace kiln {

namespace {

using Loc = std::source_location;

std::string place(const char* method, Loc loc) {
  return std::string("Tensor.") + method + " at " + trace::to_source_loc(loc).to_string() + ": ";
}

// A dim of a tensor of `rank` dims; torch's range is [-rank, rank) (or [-rank-1, rank] when the
// method adds a dim, `extra` 1).
int64_t dim_index(int64_t dim, int64_t rank, const char* method, Loc loc, int64_t extra = 0) {
  const int64_t bound = std::max<int64_t>(rank + extra, 1);
  if (dim < -bound || dim >= bound)
    throw Error(ErrorKind::shape, place(method, loc) + "dim " + std::to_string(dim) +
                                      " is out of range for a tensor "
                                      "of " +
                                      std::to_string(rank) + " dims (expected [" + std::to_string(-bound) + ", " +
                                      std::to_string(bound - 1) + "])");
  return dim < 0 ? dim + bound : dim;
}

// torch sums and multiplies integers and bools in i64.
Tensor accumulating(const Tensor& x, Loc loc) {
  return dtype_is_float(x.dtype()) || x.dtype() == DType::i64 ? x : F::cast(x, DType::i64, loc);
}

// torch's mean refuses integer tensors rather than truncating.
const Tensor& floating(const Tensor& x, const char* method, Loc loc) {
  if (!dtype_is_float(x.dtype()))
    throw Error(ErrorKind::dtype, place(method, loc) + "needs a floating-point tensor, got " + dtype_name(x.dtype()) +
                                      " (torch refuses it too): call .to(f32) first");
  return x;
}

const Dim& static_or_refuse(const Tensor& x, int64_t dim, const char* method, Loc loc) {
  const Dim& d = x.shape()[size_t(dim)];
  if (!d.is_static())
    throw Error(ErrorKind::shape, place(method, loc) + "dim " + std::to_string(dim) + " of " +
                                      shape_to_string(x.shape()) +
                                      " is symbolic, and torch's result depends on "
                                      "its size at each call; name the dims to keep with reshape instead");
  return d;
}

} // namespace

Tensor Tensor::reshape(const Shape& shape, Loc loc) const { return F::reshape(*this, shape, loc); }
Tensor Tensor::transpose(int64_t a, int64_t b, Loc loc) const { return F::transpose(*this, a, b, loc); }
Tensor Tensor::permute(const std::vector<int64_t>& perm, Loc loc) const { return F::permute(*this, perm, loc); }
Tensor Tensor::cast(DType dtype, Loc loc) const { return F::cast(*this, dtype, loc); }

#define KILN_METHOD_UNARY(name)                                                                                        \
  Tensor Tensor::name(Loc loc) const { return F::name(*this, loc); }
KILN_METHOD_UNARY(relu)
KILN_METHOD_UNARY(sigmoid)
KILN_METHOD_UNARY(tanh)
KILN_METHOD_UNARY(exp)
KILN_METHOD_UNARY(log)
KILN_METHOD_UNARY(sqrt)
KILN_METHOD_UNARY(rsqrt)
KILN_METHOD_UNARY(abs)
KILN_METHOD_UNARY(neg)
KILN_METHOD_UNARY(sin)
KILN_METHOD_UNARY(cos)
KILN_METHOD_UNARY(erf)
KILN_METHOD_UNARY(floor)
KILN_METHOD_UNARY(ceil)
KILN_METHOD_UNARY(round)
KILN_METHOD_UNARY(sign)
KILN_METHOD_UNARY(log1p)
KILN_METHOD_UNARY(expm1)
#undef KILN_METHOD_UNARY

#define KILN_METHOD_BINARY(name, twin)                                                                                 \
  Tensor Tensor::name(const Tensor& other, Loc loc) const { return F::twin(*this, other, loc); }
KILN_METHOD_BINARY(add, add)
KILN_METHOD_BINARY(sub, sub)
KILN_METHOD_BINARY(mul, mul)
KILN_METHOD_BINARY(div, div)
KILN_METHOD_BINARY(matmul, matmul)
KILN_METHOD_BINARY(pow, pow)
KILN_METHOD_BINARY(maximum, maximum)
KILN_METHOD_BINARY(minimum, minimum)
KILN_METHOD_BINARY(eq, eq)
KILN_METHOD_BINARY(ne, ne)
KILN_METHOD_BINARY(lt, lt)
KILN_METHOD_BINARY(le, le)
KILN_METHOD_BINARY(gt, gt)
KILN_METHOD_BINARY(ge, ge)
#undef KILN_METHOD_BINARY

Tensor Tensor::pow(Scalar exponent, Loc loc) const { return F::pow(*this, exponent, loc); }

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) const {
  if (min && max) return F::clamp(*this, *min, *max, loc);
  if (!min && !max) throw Error(ErrorKind::spec, place("clamp", loc) + "needs a min, a max or both, got neither");
  const Scalar bound = min ? *min : *max;
  const DType dtype = result_type({*this, bound});
  const Tensor x = dtype == this->dtype() ? *this : F::cast(*this, dtype, loc);
  const Tensor b = F::scalar_operand(bound, dtype);
  return min ? F::maximum(x, b, loc) : F::minimum(x, b, loc);
}

Tensor Tensor::clamp(const Tensor& min, const Tensor& max, Loc loc) const { return F::clamp(*this, min, max, loc); }
Tensor Tensor::where(const Tensor& condition, const Tensor& other, Loc loc) const {
  return F::where(condition, *this, other, loc);
}
Tensor Tensor::masked_fill(const Tensor& mask, double value, Loc loc) const {
  return F::masked_fill(*this, mask, value, loc);
}
Tensor Tensor::to(DType dtype, Loc loc) const { return F::cast(*this, dtype, loc); }

Tensor Tensor::sum(Loc loc) const { return F::sum(accumulating(*this, loc), {}, false, loc); }
Tensor Tensor::sum(int64_t dim, bool keepdim, Loc loc) const {
  return F::sum(accumulating(*this, loc), {dim}, keepdim, loc);
}
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim, Loc loc) const {
  return F::sum(accumulating(*this, loc), dims, keepdim, loc);
}
Tensor Tensor::mean(Loc loc) const { return F::mean(floating(*this, "mean", loc), {}, false, loc); }
Tensor Tensor::mean(int64_t dim, bool keepdim, Loc loc) const {
  return F::mean(floating(*this, "mean", loc), {dim}, keepdim, loc);
}
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim, Loc loc) const {
  return F::mean(floating(*this, "mean", loc), dims, keepdim, loc);
}
Tensor Tensor::prod(Loc loc) const { return F::prod(accumulating(*this, loc), {}, false, loc); }
Tensor Tensor::prod(int64_t dim, bool keepdim, Loc loc) const {
  return F::prod(accumulating(*this, loc), {dim}, keepdim, loc);
}

Tensor Tensor::max(Loc loc) const { return F::max(*this, {}, false, loc); }
ValuesAndIndices Tensor::max(int64_t dim, bool keepdim, Loc loc) const {
  return {F::max(*this, {dim}, keepdim, loc), F::argmax(*this, dim, keepdim, loc)};
}
Tensor Tensor::min(Loc loc) const { return F::min(*this, {}, false, loc); }
ValuesAndIndices Tensor::min(int64_t dim, bool keepdim, Loc loc) const {
  return {F::min(*this, {dim}, keepdim, loc), F::argmin(*this, dim, keepdim, loc)};
}
Tensor Tensor::amax(const std::vector<int64_t>& dims, bool keepdim, Loc loc) const {
  return F::max(*this, dims, keepdim, loc);
}
Tensor Tensor::amin(const std::vector<int64_t>& dims, bool keepdim, Loc loc) const {
  return F::min(*this, dims, keepdim, loc);
}
Tensor Tensor::argmax(Loc loc) const { return F::argmax(F::reshape(*this, {-1}, loc), 0, false, loc); }
Tensor Tensor::argmax(int64_t dim, bool keepdim, Loc loc) const { return F::argmax(*this, dim, keepdim, loc); }
Tensor Tensor::argmin(Loc loc) const { return F::argmin(F::reshape(*this, {-1}, loc), 0, false, loc); }
Tensor Tensor::argmin(int64_t dim, bool keepdim, Loc loc) const { return F::argmin(*this, dim, keepdim, loc); }
Tensor Tensor::var(const std::vector<int64_t>& dims, int64_t correction, bool keepdim, Loc loc) const {
  return F::var(*this, dims, correction, keepdim, loc);
}
Tensor Tensor::std(const std::vector<int64_t>& dims, int64_t correction, bool keepdim, Loc loc) const {
  return F::std(*this, dims, correction, keepdim, loc);
}
Tensor Tensor::cumsum(int64_t dim, Loc loc) const { return F::cumsum(*this, dim, loc); }
ValuesAndIndices Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) const {
  auto [values, indices] = F::topk(*this, k, dim, largest, sorted, loc);
  return {values, indices};
}
Tensor Tensor::softmax(int64_t dim, Loc loc) const { return F::softmax(*this, dim, loc); }
Tensor Tensor::log_softmax(int64_t dim, Loc loc) const { return F::log_softmax(*this, dim, loc); }
Tensor Tensor::tril(int64_t diagonal, Loc loc) const { return F::tril(*this, diagonal, loc); }
Tensor Tensor::triu(int64_t diagonal, Loc loc) const { return F::triu(*this, diagonal, loc); }

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, Loc loc) const {
  const int64_t r = rank();
  if (r == 0) return F::reshape(*this, {1}, loc);
  const int64_t start = dim_index(start_dim, r, "flatten", loc);
  const int64_t end = dim_index(end_dim, r, "flatten", loc);
  if (start > end)
    throw Error(ErrorKind::shape, place("flatten", loc) + "start_dim " + std::to_string(start_dim) +
                                      " comes after end_dim " + std::to_string(end_dim));
  if (start == end) return *this;
  Shape target(shape().begin(), shape().begin() + start);
  target.push_back(Dim(-1));
  target.insert(target.end(), shape().begin() + end + 1, shape().end());
  return F::reshape(*this, target, loc);
}

Tensor Tensor::unsqueeze(int64_t dim, Loc loc) const {
  return F::unsqueeze(*this, {dim_index(dim, rank(), "unsqueeze", loc, 1)}, loc);
}

Tensor Tensor::squeeze(Loc loc) const {
  std::vector<int64_t> ones;
  for (int64_t d = 0; d < rank(); ++d)
    if (static_or_refuse(*this, d, "squeeze", loc).size() == 1) ones.push_back(d);
  return ones.empty() ? *this : F::squeeze(*this, ones, loc);
}

Tensor Tensor::squeeze(int64_t dim, Loc loc) const {
  if (rank() == 0) {
    dim_index(dim, 0, "squeeze", loc); // torch accepts 0 and -1 here, and returns the tensor
    return *this;
  }
  const int64_t d = dim_index(dim, rank(), "squeeze", loc);
  return static_or_refuse(*this, d, "squeeze", loc).size() == 1 ? F::squeeze(*this, {d}, loc) : *this;
}

Tensor Tensor::view(const Shape& shape, Loc loc) const { return F::reshape(*this, shape, loc); }
Tensor Tensor::expand(const std::vector<int64_t>& sizes, Loc loc) const { return F::expand(*this, sizes, loc); }

Tensor Tensor::t(Loc loc) const {
  if (rank() < 2) return *this;
  if (rank() > 2)
    throw Error(ErrorKind::shape, place("t", loc) + "expects a tensor of at most 2 dims, got " +
                                      shape_to_string(shape()) + " (use mT() or transpose(-2, -1))");
  return F::transpose(*this, 0, 1, loc);
}

Tensor Tensor::mT(Loc loc) const {
  if (rank() < 2)
    throw Error(ErrorKind::shape, place("mT", loc) + "needs at least 2 dims, got " + shape_to_string(shape()));
  return F::transpose(*this, rank() - 2, rank() - 1, loc);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim, Loc loc) const {
  const int64_t d = dim_index(dim, rank(), "split", loc);
  const int64_t n = static_or_refuse(*this, d, "split", loc).size();
  if (split_size < 0 || (split_size == 0 && n > 0))
    throw Error(ErrorKind::shape, place("split", loc) + "split_size " + std::to_string(split_size) +
                                      " must be positive (dim " + std::to_string(dim) + " has " + std::to_string(n) +
                                      " elements)");
  if (n == 0) return {*this};
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += split_size)
    sizes.push_back(std::min(split_size, n - at));
  return F::split(*this, sizes, d, loc);
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim, Loc loc) const {
  return F::split(*this, sizes, dim, loc);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim, Loc loc) const {
  if (chunks <= 0)
    throw Error(ErrorKind::shape, place("chunk", loc) + "chunks must be positive, got " + std::to_string(chunks));
  const int64_t d = dim_index(dim, rank(), "chunk", loc);
  const int64_t n = static_or_refuse(*this, d, "chunk", loc).size();
  return split((n + chunks - 1) / chunks, d, loc);
}

} // namespace kiln
