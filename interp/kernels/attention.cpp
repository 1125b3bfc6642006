#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include <cmath>
#include <limits>

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

namespace {

// Where each (batch, row, column) of the scores [batch..., L, S] reads the mask: the mask's dims
// align right and broadcast (stride 0 where a dim is 1 or missing).
struct MaskIndex {
  std::vector<int64_t> batch_offsets; // one per flattened batch index
  int64_t row_stride = 0, col_stride = 0;
};

MaskIndex mask_index(const View& mask, std::span<const int64_t> batch_dims) {
  const size_t rank = batch_dims.size() + 2;
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < mask.dims.size(); ++i) {
    const size_t d = mask.dims.size() - 1 - i;
    strides[rank - 1 - i] = mask.dims[d] == 1 ? 0 : stride;
    stride *= mask.dims[d];
  }
  MaskIndex index{{}, strides[rank - 2], strides[rank - 1]};
  const int64_t batches = product(batch_dims);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b, offset = 0;
    for (size_t d = batch_dims.size(); d-- > 0;) {
      offset += (rest % batch_dims[d]) * strides[d];
      rest /= batch_dims[d];
    }
    index.batch_offsets.push_back(offset);
  }
  return index;
}

// The reference: for each query row, scores in double, then the mask, a max-subtracted softmax and
// the weighted sum of v's rows. A row whose scores are all -inf gives NaN (0 / 0), as torch's.
template <class T> void attention_typed(const KernelArgs& args) {
  const View &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2], &out = args.outputs[0];
  const View* mask = args.inputs.size() == 4 ? &args.inputs[3] : nullptr;
  const auto& params = ir::params_of<ir::AttentionParams>(args.op);
  const size_t rank = q.dims.size();
  const int64_t L = q.dims[rank - 2], E = q.dims[rank - 1], S = k.dims[rank - 2], Ev = v.dims[rank - 1];
  const std::span<const int64_t> batch_dims = q.dims.first(rank - 2);
  const int64_t batches = product(batch_dims);
  const double scale = params.scale.value_or(1.0 / std::sqrt(double(E)));
  const MaskIndex index = mask ? mask_index(*mask, batch_dims) : MaskIndex{};
  const T *qd = q.as<const T>(), *kd = k.as<const T>(), *vd = v.as<const T>();
  T* od = out.as<T>();
  exec::parallel_for(batches * L, exec::worth_parallel(batches * L * S * (E + Ev)), [&](int64_t row) {
    const int64_t b = row / L, i = row % L;
    std::vector<double> scores(static_cast<size_t>(S));
    for (int64_t j = 0; j < S; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < E; ++e)
        dot += double(qd[(b * L + i) * E + e]) * double(kd[(b * S + j) * E + e]);
      double s = dot * scale;
      if (params.is_causal && j > i) s = -std::numeric_limits<double>::infinity();
      if (mask) {
        const int64_t m = index.batch_offsets[size_t(b)] + i * index.row_stride + j * index.col_stride;
        if (mask->dtype == DType::boolean)
          s = mask->as<const uint8_t>()[m] ? s : -std::numeric_limits<double>::infinity();
        else
          s += double(mask->as<const T>()[m]);
      }
      scores[size_t(j)] = s;
    }
    double top = -std::numeric_limits<double>::infinity();
    for (double s : scores)
      top = std::isnan(s) || s > top ? s : top;
    double total = 0;
    for (double& s : scores)
      total += s = std::exp(s - top);
    for (int64_t c = 0; c < Ev; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < S; ++j)
        acc += scores[size_t(j)] / total * double(vd[(b * S + j) * Ev + c]);
      od[(b * L + i) * Ev + c] = T(acc);
    }
  });
}

} // namespace

void scaled_dot_product_attention(const KernelArgs& args) {
  require_same_dtype(args, {0, 1, 2});
  if (has_half_operand(args)) return run_in_f32(args, scaled_dot_product_attention);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { attention_typed<typename decltype(e)::Storage>(args); });
}

} // namespace kiln::interp
