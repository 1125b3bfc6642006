#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include <cmath>

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;

namespace {

double eps_of(const ir::Op& op) {
  if (op.kind == ir::OpKind::batch_norm) return ir::params_of<ir::BatchNormParams>(op).eps;
  return ir::params_of<ir::NormParams>(op).eps;
}

// x viewed as [rows, features] where features are the dims from `axis` on; the op's eps.
struct RowSplit {
  int64_t rows, features;
  double eps;
};

RowSplit rows_from_axis(const KernelArgs& args) {
  std::span<const int64_t> dims = args.inputs[0].dims;
  const int64_t axis = require_axis(args.op, ir::params_of<ir::NormParams>(args.op).axis, int64_t(dims.size()));
  const RowSplit s{product(dims.subspan(0, size_t(axis))), product(dims.subspan(size_t(axis))), eps_of(args.op)};
  for (size_t i = 1; i < args.inputs.size(); ++i)
    if (args.inputs[i].numel() != s.features)
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": parameter " + std::to_string(i) + " has " +
                                        std::to_string(args.inputs[i].numel()) + " elements, expected " +
                                        std::to_string(s.features));
  return s;
}

// Statistics in double, two passes: the variance does not cancel catastrophically.
template <class T> void layer_norm_typed(const KernelArgs& args, const RowSplit& s) {
  const T* x = args.inputs[0].as<const T>();
  const T* weight = args.inputs.size() > 1 ? args.inputs[1].as<const T>() : nullptr;
  const T* bias = args.inputs.size() > 2 ? args.inputs[2].as<const T>() : nullptr;
  T* y = args.outputs[0].as<T>();
  const double eps = s.eps;
  if (s.features == 0) return;
  exec::parallel_for(s.rows, exec::worth_parallel(s.rows * s.features), [&](int64_t r) {
    const T* in = x + r * s.features;
    T* out = y + r * s.features;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < s.features; ++i)
      mean += in[i];
    mean /= double(s.features);
    for (int64_t i = 0; i < s.features; ++i)
      var += (in[i] - mean) * (in[i] - mean);
    const double inv_std = 1.0 / std::sqrt(var / double(s.features) + eps);
    for (int64_t i = 0; i < s.features; ++i) {
      double v = (in[i] - mean) * inv_std;
      if (weight) v *= weight[i];
      if (bias) v += bias[i];
      out[i] = T(v);
    }
  });
}

template <class T> void rms_norm_typed(const KernelArgs& args, const RowSplit& s) {
  const T* x = args.inputs[0].as<const T>();
  const T* weight = args.inputs.size() > 1 ? args.inputs[1].as<const T>() : nullptr;
  T* y = args.outputs[0].as<T>();
  const double eps = s.eps;
  if (s.features == 0) return;
  exec::parallel_for(s.rows, exec::worth_parallel(s.rows * s.features), [&](int64_t r) {
    const T* in = x + r * s.features;
    T* out = y + r * s.features;
    double mean_square = 0;
    for (int64_t i = 0; i < s.features; ++i)
      mean_square += double(in[i]) * in[i];
    const double inv_rms = 1.0 / std::sqrt(mean_square / double(s.features) + eps);
    for (int64_t i = 0; i < s.features; ++i)
      out[i] = T(in[i] * inv_rms * (weight ? double(weight[i]) : 1.0));
  });
}

// x viewed as [batch, channels, plane]; the op's eps.
struct ChannelSplit {
  int64_t batch, channels, plane;
  double eps;
};

ChannelSplit channels_of(const KernelArgs& args) {
  std::span<const int64_t> dims = args.inputs[0].dims;
  if (dims.size() < 2)
    throw Error(ErrorKind::shape,
                ir::op_place(args.op) + ": input " + dims_string(dims) + " needs rank >= 2 (N, C, ...)");
  const ChannelSplit s{dims[0], dims[1], product(dims.subspan(2)), eps_of(args.op)};
  for (size_t i = 1; i < args.inputs.size(); ++i)
    if (args.inputs[i].numel() != s.channels)
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": parameter " + std::to_string(i) + " has " +
                                        std::to_string(args.inputs[i].numel()) + " elements, expected " +
                                        std::to_string(s.channels));
  return s;
}

// y = x * scale[c] + shift[c], with scale and shift folded from the statistics once per channel.
template <class T> void batch_norm_typed(const KernelArgs& args, const ChannelSplit& s) {
  const int64_t batch = s.batch, channels = s.channels, plane = s.plane;
  const T* mean = args.inputs[1].as<const T>();
  const T* var = args.inputs[2].as<const T>();
  const T* weight = args.inputs.size() > 3 ? args.inputs[3].as<const T>() : nullptr;
  const T* bias = args.inputs.size() > 4 ? args.inputs[4].as<const T>() : nullptr;
  const double eps = s.eps;
  std::vector<double> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    scale[size_t(c)] = (weight ? double(weight[c]) : 1.0) / std::sqrt(double(var[c]) + eps);
    shift[size_t(c)] = (bias ? double(bias[c]) : 0.0) - double(mean[c]) * scale[size_t(c)];
  }
  const T* x = args.inputs[0].as<const T>();
  T* y = args.outputs[0].as<T>();
  exec::parallel_for(batch * channels, exec::worth_parallel(batch * channels * plane), [&](int64_t nc) {
    const size_t c = size_t(nc % channels);
    for (int64_t i = nc * plane; i < (nc + 1) * plane; ++i)
      y[i] = T(x[i] * scale[c] + shift[c]);
  });
}

// x viewed as [batch * groups, group channels, plane]; the op's eps.
struct GroupSplit {
  int64_t tasks, group_channels, plane, channels;
  double eps;
};

GroupSplit groups_of(const KernelArgs& args) {
  std::span<const int64_t> dims = args.inputs[0].dims;
  const int64_t groups = ir::params_of<ir::GroupNormParams>(args.op).groups;
  if (dims.size() < 2 || dims[1] % groups != 0)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": input " + dims_string(dims) + " does not split into " +
                                      std::to_string(groups) + " channel groups");
  for (size_t i = 1; i < args.inputs.size(); ++i)
    if (args.inputs[i].numel() != dims[1])
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": parameter " + std::to_string(i) + " has " +
                                        std::to_string(args.inputs[i].numel()) + " elements, expected " +
                                        std::to_string(dims[1]));
  return {dims[0] * groups, dims[1] / groups, product(dims.subspan(2)), dims[1],
          ir::params_of<ir::GroupNormParams>(args.op).eps};
}

// Each group's statistics in double, two passes (mean, then the squared deviations), as
// layer_norm's: the variance does not cancel catastrophically.
template <class T> void group_norm_typed(const KernelArgs& args, const GroupSplit& s) {
  const T* x = args.inputs[0].as<const T>();
  const T* weight = args.inputs.size() > 1 ? args.inputs[1].as<const T>() : nullptr;
  const T* bias = args.inputs.size() > 2 ? args.inputs[2].as<const T>() : nullptr;
  T* y = args.outputs[0].as<T>();
  const int64_t size = s.group_channels * s.plane;
  if (size == 0) return;
  exec::parallel_for(s.tasks, exec::worth_parallel(s.tasks * size), [&](int64_t task) {
    const T* in = x + task * size;
    T* out = y + task * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i)
      mean += in[i];
    mean /= double(size);
    for (int64_t i = 0; i < size; ++i)
      var += (in[i] - mean) * (in[i] - mean);
    const double inv_std = 1.0 / std::sqrt(var / double(size) + s.eps);
    const int64_t first_channel = task * s.group_channels % s.channels;
    for (int64_t c = 0; c < s.group_channels; ++c) {
      const double scale = weight ? double(weight[first_channel + c]) : 1.0;
      const double shift = bias ? double(bias[first_channel + c]) : 0.0;
      for (int64_t i = c * s.plane; i < (c + 1) * s.plane; ++i)
        out[i] = T((in[i] - mean) * inv_std * scale + shift);
    }
  });
}

// The checks every normalization makes before its own (`split`).
template <class Split>
exec::PreparedState prepare_normalization(const KernelArgs& args, Split (*split)(const KernelArgs&)) {
  require_uniform_dtype(args);
  require_same_dims(args);
  return make_prepared(split(args));
}

template <class Split, class Typed> void normalization(const KernelArgs& args, Kernel self, Typed typed) {
  if (has_half_operand(args)) return run_in_f32(args, self);
  const Split& split = prepared<Split>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op, [&](auto e) { typed(e, split); });
}

} // namespace

exec::PreparedState prepare_row_norm(const ir::Op& op, std::span<const exec::View> inputs,
                                     std::span<const exec::View> outputs) {
  return prepare_normalization(KernelArgs{op, inputs, outputs}, rows_from_axis);
}
exec::PreparedState prepare_batch_norm(const ir::Op& op, std::span<const exec::View> inputs,
                                       std::span<const exec::View> outputs) {
  return prepare_normalization(KernelArgs{op, inputs, outputs}, channels_of);
}
exec::PreparedState prepare_group_norm(const ir::Op& op, std::span<const exec::View> inputs,
                                       std::span<const exec::View> outputs) {
  return prepare_normalization(KernelArgs{op, inputs, outputs}, groups_of);
}

void layer_norm(const KernelArgs& args) {
  normalization<RowSplit>(args, layer_norm,
                          [&](auto e, const RowSplit& s) { layer_norm_typed<typename decltype(e)::Storage>(args, s); });
}
void rms_norm(const KernelArgs& args) {
  normalization<RowSplit>(args, rms_norm,
                          [&](auto e, const RowSplit& s) { rms_norm_typed<typename decltype(e)::Storage>(args, s); });
}
void batch_norm(const KernelArgs& args) {
  normalization<ChannelSplit>(args, batch_norm, [&](auto e, const ChannelSplit& s) {
    batch_norm_typed<typename decltype(e)::Storage>(args, s);
  });
}

void group_norm(const KernelArgs& args) {
  normalization<GroupSplit>(
      args, group_norm, [&](auto e, const GroupSplit& s) { group_norm_typed<typename decltype(e)::Storage>(args, s); });
}

std::span<const KernelSetup> normalization_setups() {
  static constexpr KernelSetup kSetups[] = {
      KILN_KERNEL_SETUP(layer_norm, prepare_row_norm, nullptr),
      KILN_KERNEL_SETUP(rms_norm, prepare_row_norm, nullptr),
      KILN_KERNEL_SETUP(batch_norm, prepare_batch_norm, nullptr),
      KILN_KERNEL_SETUP(group_norm, prepare_group_norm, nullptr),
  };
  return kSetups;
}

} // namespace kiln::interp
