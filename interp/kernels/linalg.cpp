#include "interp/kernels/gemm.hpp"
#include "interp/kernels/kernels.hpp"
#include "interp/kernels/strided_loop.hpp"
#include <Eigen/Core>

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

namespace {

template <class T> using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Matrix indices (a, b, out) of every batch of a broadcast batched matmul, in output order.
struct BatchTriple {
  int64_t a, b, out;
};

std::vector<BatchTriple> batch_triples(const KernelArgs& args) {
  const View &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
  const StridedLoop<2> loop = broadcast_loop<2>(
      out.dims.first(out.dims.size() - 2), {a.dims.first(a.dims.size() - 2), b.dims.first(b.dims.size() - 2)}, args.op);
  std::vector<BatchTriple> triples;
  for (int64_t row = 0; row < loop.rows(); ++row) {
    const std::array<int64_t, 2> start = loop.row_offsets(row);
    for (int64_t i = 0; i < loop.inner(); ++i)
      triples.push_back(
          {start[0] + i * loop.inner_stride(0), start[1] + i * loop.inner_stride(1), row * loop.inner() + i});
  }
  return triples;
}

void check_matmul_dims(const KernelArgs& args) {
  std::span<const int64_t> a = args.inputs[0].dims, b = args.inputs[1].dims, out = args.outputs[0].dims;
  const bool ranks_ok = a.size() >= 2 && b.size() >= 2 && out.size() == std::max(a.size(), b.size());
  if (!ranks_ok || a[a.size() - 1] != b[b.size() - 2] || out[out.size() - 2] != a[a.size() - 2] ||
      out.back() != b.back())
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": cannot multiply " + dims_string(a) + " by " +
                                      dims_string(b) + " into " + dims_string(out));
}

// One Eigen GEMM per batch. Many small batches run in parallel (Eigen then stays on one thread);
// otherwise batches run in turn and Eigen parallelises each product itself.
template <class T> void matmul_typed(const KernelArgs& args) {
  const View &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
  const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = b.dims.back();
  const std::vector<BatchTriple> batches = batch_triples(args);
  const T* a_data = a.as<const T>();
  const T* b_data = b.as<const T>();
  T* out_data = out.as<T>();
  const int64_t count = int64_t(batches.size());
  const bool batches_in_parallel = count >= exec::num_threads() && exec::worth_parallel(count * m * n * k);
  auto multiply = [&](int64_t i) {
    const BatchTriple& t = batches[size_t(i)];
    Eigen::Map<RowMajorMatrix<T>> product(out_data + t.out * m * n, m, n);
    if (k == 0) {
      product.setZero();
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      gemm_f32(GemmF32{.a = a_data + t.a * m * k,
                       .b = b_data + t.b * k * n,
                       .c = product.data(),
                       .m = m,
                       .n = n,
                       .k = k,
                       .lda = k,
                       .ldb = n,
                       .ldc = n,
                       .threads = batches_in_parallel ? 1 : exec::num_threads()});
      return;
    }
    Eigen::Map<const RowMajorMatrix<T>> lhs(a_data + t.a * m * k, m, k);
    Eigen::Map<const RowMajorMatrix<T>> rhs(b_data + t.b * k * n, k, n);
    product.noalias() = lhs * rhs;
  };
  exec::parallel_for(count, batches_in_parallel, multiply);
}

} // namespace

void matmul(const KernelArgs& args) {
  require_uniform_dtype(args);
  check_matmul_dims(args);
  if (has_half_operand(args)) return run_in_f32(args, matmul);
  using MatmulDTypes = DTypeList<DType::f32, DType::f64, DType::i32, DType::i64>;
  dispatch_dtype(MatmulDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { matmul_typed<typename decltype(e)::Storage>(args); });
}

} // namespace kiln::interp
