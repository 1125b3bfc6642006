#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

void full(const KernelArgs& args) {
  const View& y = args.outputs[0];
  const double value = ir::params_of<ir::FullParams>(args.op).value;
  dispatch_dtype(AllDTypes{}, y.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto fill = storage_from_double<E>(value);
    auto* out = y.as<typename E::Storage>();
    for_each_range(y.numel(), [&](int64_t begin, int64_t end) { std::fill(out + begin, out + end, fill); });
  });
}

// out[i] = start + i * step, computed in double and converted like `cast` (integers truncate).
void arange(const KernelArgs& args) {
  const View& y = args.outputs[0];
  const auto& params = ir::params_of<ir::ArangeParams>(args.op);
  const double start = params.start, step = params.step;
  dispatch_dtype(AllDTypes{}, y.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    auto* out = y.as<typename E::Storage>();
    for_each_range(y.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = storage_from_double<E>(start + double(i) * step);
    });
  });
}

} // namespace kiln::interp
