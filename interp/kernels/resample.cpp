#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

namespace {

// One axis of an interpolation: source indices and, bilinear, weights of each result index, as
// torch 1.13's CPU kernels compute them (in f32).
struct InterpolatedAxis {
  std::vector<int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;
};

// torch's scale: 1 / scale when one was given, else in / out.
float source_step(int64_t in, int64_t out, double scale) {
  return scale > 0 ? float(1.0 / scale) : float(in) / float(out);
}

InterpolatedAxis nearest_axis(int64_t in, int64_t out, double scale) {
  InterpolatedAxis axis;
  const float step = source_step(in, out, scale);
  for (int64_t i = 0; i < out; ++i)
    axis.lo.push_back(std::min(int64_t(std::floor(float(i) * step)), in - 1));
  return axis;
}

// torch's x86 kernels are built with FMA contraction, so its coordinates round once where the
// source rounds twice: (dst + 0.5) * s - 0.5 is one fma, and align_corners's fraction
// dst * s - index0 another. Matching them matters where a fraction of 0 meets an infinity.
InterpolatedAxis bilinear_axis(int64_t in, int64_t out, double scale, bool align_corners) {
  InterpolatedAxis axis;
  float step = 0;
  if (align_corners)
    step = out > 1 ? float(in - 1) / float(out - 1) : 0.0f;
  else
    step = source_step(in, out, scale);
  for (int64_t i = 0; i < out; ++i) {
    // An axis whose size is kept is copied, whatever the scale (torch's shortcut).
    if (in == out) {
      axis.lo.push_back(i);
      axis.hi.push_back(i);
      axis.w_lo.push_back(1.0f);
      axis.w_hi.push_back(0.0f);
      continue;
    }
    int64_t lo = 0;
    float frac = 0;
    if (align_corners) {
      lo = int64_t(step * float(i));
      frac = std::fma(step, float(i), -float(lo));
    } else {
      const float source = std::max(std::fma(step, float(i) + 0.5f, -0.5f), 0.0f);
      lo = int64_t(source);
      frac = source - float(lo);
    }
    frac = std::min(std::max(frac, 0.0f), 1.0f);
    axis.lo.push_back(lo);
    axis.hi.push_back(lo + (lo < in - 1 ? 1 : 0));
    axis.w_lo.push_back(1.0f - frac);
    axis.w_hi.push_back(frac);
  }
  return axis;
}

template <class T>
void bilinear_typed(const KernelArgs& args, const InterpolatedAxis& rows, const InterpolatedAxis& cols) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  const int64_t height = x.dims[2], width = x.dims[3], out_h = y.dims[2], out_w = y.dims[3];
  const int64_t planes = x.dims[0] * x.dims[1];
  const T* in = x.as<const T>();
  T* out = y.as<T>();
  exec::parallel_for(planes, exec::worth_parallel(planes * out_h * out_w * 4), [&](int64_t plane) {
    const T* src = in + plane * height * width;
    T* dst = out + plane * out_h * out_w;
    for (int64_t r = 0; r < out_h; ++r) {
      const T* lo = src + rows.lo[size_t(r)] * width;
      const T* hi = src + rows.hi[size_t(r)] * width;
      const T wr0 = T(rows.w_lo[size_t(r)]), wr1 = T(rows.w_hi[size_t(r)]);
      for (int64_t c = 0; c < out_w; ++c) {
        const size_t c0 = size_t(cols.lo[size_t(c)]), c1 = size_t(cols.hi[size_t(c)]);
        const T wc0 = T(cols.w_lo[size_t(c)]), wc1 = T(cols.w_hi[size_t(c)]);
        // torch's order: rows weigh the blends of each row's two columns.
        dst[r * out_w + c] = wr0 * (wc0 * lo[c0] + wc1 * lo[c1]) + wr1 * (wc0 * hi[c0] + wc1 * hi[c1]);
      }
    }
  });
}

} // namespace

exec::PreparedState prepare_interpolate(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  require_same_dtype(args, {0});
  const auto& p = ir::params_of<ir::InterpolateParams>(op);
  std::span<const int64_t> x = inputs[0].dims, y = outputs[0].dims;
  if (x.size() != 4 || y.size() != 4 || x[2] == 0 || x[3] == 0 || y[0] != x[0] || y[1] != x[1] || y[2] != p.size[0] ||
      y[3] != p.size[1])
    throw Error(ErrorKind::shape, ir::op_place(op) + ": result " + dims_string(y) + " does not match size [" +
                                      std::to_string(p.size[0]) + ", " + std::to_string(p.size[1]) + "] of input " +
                                      dims_string(x));
  if (p.mode == ir::InterpolateMode::nearest)
    return make_prepared(
        std::array<InterpolatedAxis, 2>{nearest_axis(x[2], y[2], p.scales[0]), nearest_axis(x[3], y[3], p.scales[1])});
  return make_prepared(std::array<InterpolatedAxis, 2>{bilinear_axis(x[2], y[2], p.scales[0], p.align_corners),
                                                       bilinear_axis(x[3], y[3], p.scales[1], p.align_corners)});
}

void interpolate(const KernelArgs& args) {
  const auto& axes = prepared<std::array<InterpolatedAxis, 2>>(args);
  const InterpolatedAxis &rows = axes[0], &cols = axes[1];
  const View &x = args.inputs[0], &y = args.outputs[0];
  if (ir::params_of<ir::InterpolateParams>(args.op).mode == ir::InterpolateMode::bilinear) {
    if (has_half_operand(args)) return run_in_f32(args, interpolate);
    return dispatch_dtype(WideFloatDTypes{}, x.dtype, args.op,
                          [&](auto e) { bilinear_typed<typename decltype(e)::Storage>(args, rows, cols); });
  }
  // Nearest moves elements, so any dtype goes as bits.
  const int64_t height = x.dims[2], width = x.dims[3], out_h = y.dims[2], out_w = y.dims[3];
  const int64_t planes = x.dims[0] * x.dims[1];
  dispatch_element_size(dtype_size(x.dtype), [&](auto word) {
    using W = decltype(word);
    const W* in = x.as<const W>();
    W* out = y.as<W>();
    exec::parallel_for(planes, exec::worth_parallel(planes * out_h * out_w), [&](int64_t plane) {
      for (int64_t r = 0; r < out_h; ++r) {
        const W* src = in + (plane * height + rows.lo[size_t(r)]) * width;
        W* dst = out + (plane * out_h + r) * out_w;
        for (int64_t c = 0; c < out_w; ++c)
          dst[c] = src[cols.lo[size_t(c)]];
      }
    });
  });
}

std::span<const KernelSetup> resample_setups() {
  static constexpr KernelSetup kSetups[] = {KILN_KERNEL_SETUP(interpolate, prepare_interpolate, nullptr)};
  return kSetups;
}

} // namespace kiln::interp
