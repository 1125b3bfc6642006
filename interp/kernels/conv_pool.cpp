#include "core/checked_arithmetic.hpp"
#include "interp/kernels/gemm.hpp"
#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include "ir/shape_inference.hpp"
#include <Eigen/Core>
#include <cmath>

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;

namespace {

// The sliding-window geometry shared by the convolutions and the pools.
struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// The op table's output size (overflow-checked); -1, which no dim equals, when the window does not fit.
int64_t window_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  try {
    return ir::infer::window_output(size, kernel, stride, pad, dilation);
  } catch (const std::exception&) {
    return -1;
  }
}

// Dims as NCHW: conv1d's [N, C, L] is one row of an image, [N, C, 1, L], and runs as one.
std::vector<int64_t> as_image(std::span<const int64_t> dims) {
  if (dims.size() == 3) return {dims[0], dims[1], 1, dims[2]};
  return {dims.begin(), dims.end()};
}

// A convolution's input rank: conv1d's [N, C, L], else NCHW.
size_t conv_rank(const ir::Op& op) { return op.kind == ir::OpKind::conv1d ? 3 : 4; }

// Checks that the preallocated result, of the input's rank, has the dims the window implies.
void check_output(const KernelArgs& args, const Window& w, int64_t channels, size_t rank = 4) {
  std::span<const int64_t> given_x = args.inputs[0].dims, given_y = args.outputs[0].dims;
  const std::vector<int64_t> x = as_image(given_x), y = as_image(given_y);
  if (given_x.size() != rank || given_y.size() != rank || w.sh <= 0 || w.sw <= 0 || w.dh <= 0 || w.dw <= 0 ||
      y[0] != x[0] || y[1] != channels || y[2] != window_output(x[2], w.kh, w.sh, w.ph, w.dh) ||
      y[3] != window_output(x[3], w.kw, w.sw, w.pw, w.dw))
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": result " + dims_string(given_y) +
                                      " does not match the window over input " + dims_string(given_x));
}

struct ConvShape {
  int64_t batch, channels, height, width, out_channels, groups, out_height, out_width;
  int64_t group_in() const { return channels / groups; }
  int64_t group_out() const { return out_channels / groups; }
  int64_t out_plane() const { return out_height * out_width; }
};

ConvShape conv_shape(const KernelArgs& args, const Window& w, int64_t groups) {
  std::span<const int64_t> given_x = args.inputs[0].dims, given_k = args.inputs[1].dims;
  const size_t rank = conv_rank(args.op);
  const std::vector<int64_t> x = as_image(given_x), k = as_image(given_k), y = as_image(args.outputs[0].dims);
  const bool ok = given_x.size() == rank && given_k.size() == rank && groups > 0 && x[1] % groups == 0 &&
                  k[0] % groups == 0 && k[1] == x[1] / groups &&
                  (args.inputs.size() < 3 || args.inputs[2].numel() == k[0]);
  if (!ok)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": input " + dims_string(given_x) + ", weight " +
                                      dims_string(given_k) + " and groups " + std::to_string(groups) +
                                      " do not fit together");
  check_output(args, w, k[0], rank);
  return {x[0], x[1], x[2], x[3], k[0], groups, y[2], y[3]};
}

// A convolution's window: the kernel's extent from the weight, the rest from the op's params (one
// value per spatial axis; conv1d's row has height 1).
Window conv_window(const KernelArgs& args) {
  const auto& [stride, padding, dilation, groups] = ir::params_of<ir::ConvParams>(args.op);
  const std::vector<int64_t> k = as_image(args.inputs[1].dims);
  const int64_t kh = k.size() == 4 ? k[2] : 0, kw = k.size() == 4 ? k[3] : 0;
  if (stride.size() == 1) return {kh, kw, 1, stride[0], 0, padding[0], 1, dilation[0]};
  return {kh, kw, stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1]};
}

// A convolution's working memory: one im2col buffer per thread convolving images in parallel, or one;
// none for a pointwise convolution, which reads the image as its own column matrix.
// The scratch: `count` column buffers of `elements`, then (f32 GEMMs) one GEMM workspace of
// `gemm_bytes` per buffer slot, from gemm_offset (64-byte aligned).
struct ColumnBuffers {
  bool pointwise;
  bool tasks_in_parallel;
  int64_t elements; // per buffer
  int64_t count;
  size_t gemm_offset = 0, gemm_bytes = 0;
  size_t bytes() const { return gemm_offset + gemm_bytes * size_t(tasks_in_parallel ? exec::num_threads() : 1); }
};

GemmF32 conv_gemm_shape(const ConvShape& s, const Window& w, bool tasks_in_parallel) {
  const int64_t patch = s.group_in() * w.kh * w.kw;
  return GemmF32{
      .m = s.group_out(), .n = s.out_plane(), .k = patch, .threads = tasks_in_parallel ? 1 : exec::num_threads()};
}

// `element`: the bytes of the type convolved (f16 and bf16 are convolved in f32, run_in_f32).
ColumnBuffers column_buffers(const ConvShape& s, const Window& w, size_t element) {
  const int64_t patch = s.group_in() * w.kh * w.kw;
  const bool pointwise = w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.ph == 0 && w.pw == 0;
  const int64_t tasks = s.batch * s.groups;
  const bool tasks_in_parallel =
      tasks >= exec::num_threads() && exec::worth_parallel(tasks * s.group_out() * patch * s.out_plane());
  ColumnBuffers buffers{pointwise, tasks_in_parallel, pointwise ? 0 : patch * s.out_plane(),
                        pointwise ? 0 : (tasks_in_parallel ? exec::num_threads() : 1)};
  const int64_t column_bytes =
      checked_mul(checked_mul(buffers.elements, buffers.count, "conv scratch"), int64_t(element), "conv scratch");
  buffers.gemm_offset = (size_t(column_bytes) + 63) / 64 * 64;
  if (element == sizeof(float)) buffers.gemm_bytes = gemm_workspace_bytes(conv_gemm_shape(s, w, tasks_in_parallel));
  return buffers;
}

// col[(c, i, j), (oh, ow)] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], zero in the padding: the
// convolution of one image and group becomes a GEMM with the [group_out, group_in*kh*kw] weights.
// Channels run on the interpreter's threads when `parallel` (one image convolved at a time).
template <class T> void im2col(const T* image, const ConvShape& s, const Window& w, T* col, bool parallel) {
  exec::parallel_for(s.group_in(), parallel, [&](int64_t c) {
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        T* row = col + ((c * w.kh + i) * w.kw + j) * s.out_plane();
        for (int64_t oh = 0; oh < s.out_height; ++oh) {
          const int64_t ih = oh * w.sh - w.ph + i * w.dh;
          T* out = row + oh * s.out_width;
          if (ih < 0 || ih >= s.height) {
            std::fill(out, out + s.out_width, T(0));
            continue;
          }
          const T* in = image + (c * s.height + ih) * s.width;
          for (int64_t ow = 0; ow < s.out_width; ++ow) {
            const int64_t iw = ow * w.sw - w.pw + j * w.dw;
            out[ow] = iw >= 0 && iw < s.width ? in[iw] : T(0);
          }
        }
      }
  });
}

// What a convolution derives from the op and its static dims: the checked shape, the window and the
// thread split its column buffers were sized for.
struct ConvPlan {
  Window w;
  ConvShape s;
  ColumnBuffers buffers;
};

template <class T> void conv_typed(const KernelArgs& args, const ConvPlan& plan) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Window& w = plan.w;
  const ConvShape& s = plan.s;
  const T* x = args.inputs[0].as<const T>();
  const T* weight = args.inputs[1].as<const T>();
  const T* bias = args.inputs.size() > 2 ? args.inputs[2].as<const T>() : nullptr;
  T* y = args.outputs[0].as<T>();
  const int64_t patch = s.group_in() * w.kh * w.kw;
  const ColumnBuffers& buffers = plan.buffers;
  const bool pointwise = buffers.pointwise, tasks_in_parallel = buffers.tasks_in_parallel;
  const size_t needed = buffers.bytes();
  if (args.scratch.size() < needed)
    throw Error(ErrorKind::internal, ir::op_place(args.op) + ": needs " + std::to_string(needed) +
                                         " bytes of scratch, the plan gave " + std::to_string(args.scratch.size()));
  const int64_t tasks = s.batch * s.groups;
  auto convolve = [&](int64_t task) {
    const int64_t n = task / s.groups, g = task % s.groups;
    const T* image = x + (n * s.channels + g * s.group_in()) * s.height * s.width;
    // The plan's scratch holds one column buffer per thread of the task loop.
    T* col =
        reinterpret_cast<T*>(args.scratch.data()) + (tasks_in_parallel ? exec::thread_index() : 0) * buffers.elements;
    if (!pointwise) im2col(image, s, w, col, !tasks_in_parallel && exec::worth_parallel(patch * s.out_plane()));
    const T* cols = pointwise ? image : col;
    const T* kernel = weight + g * s.group_out() * patch;
    Eigen::Map<Matrix> out(y + (n * s.out_channels + g * s.group_out()) * s.out_plane(), s.group_out(), s.out_plane());
    if constexpr (std::is_same_v<T, float>) {
      std::byte* workspace = args.scratch.data() + buffers.gemm_offset +
                             (tasks_in_parallel ? size_t(exec::thread_index()) : 0) * buffers.gemm_bytes;
      GemmF32 gemm = conv_gemm_shape(s, w, tasks_in_parallel);
      gemm.a = kernel;
      gemm.b = cols;
      gemm.c = out.data();
      gemm.lda = patch;
      gemm.ldb = gemm.ldc = s.out_plane();
      gemm.workspace = buffers.gemm_bytes ? reinterpret_cast<float*>(workspace) : nullptr;
      gemm_f32(gemm);
    } else {
      out.noalias() =
          Eigen::Map<const Matrix>(kernel, s.group_out(), patch) * Eigen::Map<const Matrix>(cols, patch, s.out_plane());
    }
    if (bias)
      for (int64_t o = 0; o < s.group_out(); ++o)
        out.row(o).array() += bias[g * s.group_out() + o];
  };
  exec::parallel_for(tasks, tasks_in_parallel, convolve);
}

// conv1d and conv2d: f16 and bf16 convolve in f32.
void convolve(const KernelArgs& args, Kernel self) {
  if (has_half_operand(args)) return run_in_f32(args, self);
  const ConvPlan& plan = prepared<ConvPlan>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { conv_typed<typename decltype(e)::Storage>(args, plan); });
}

enum class Pool { max, average };

// What a pool derives from the op and its static dims: the checked window and the loop extents.
struct PoolPlan {
  Window w;
  bool include_pad;
  int64_t planes, height, width, out_height, out_width;
  bool parallel;
};

// `kind` comes from the kernel, not the plan, and the window is copied to the stack: read from the
// plan, max_pool2d ran 4.5% more instructions (callgrind), 3.4% with these.
template <class T> void pool_typed(const KernelArgs& args, const PoolPlan& p, Pool kind) {
  const Window w = p.w;
  const int64_t height = p.height, width = p.width, out_height = p.out_height, out_width = p.out_width;
  const bool include_pad = p.include_pad;
  const T* x = args.inputs[0].as<const T>();
  T* y = args.outputs[0].as<T>();
  exec::parallel_for(p.planes, p.parallel, [&](int64_t plane) {
    const T* in = x + plane * height * width;
    T* out = y + plane * out_height * out_width;
    for (int64_t oh = 0; oh < out_height; ++oh)
      for (int64_t ow = 0; ow < out_width; ++ow) {
        const int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
        const int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + w.kh, height);
        const int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + w.kw, width);
        T max = -std::numeric_limits<T>::infinity();
        double sum = 0;
        for (int64_t h = h_begin; h < h_end; ++h)
          for (int64_t c = w_begin; c < w_end; ++c) {
            max = nan_max(max, in[h * width + c]);
            sum += in[h * width + c];
          }
        // Padding never wins a max; the average counts it only with count_include_pad.
        const double count = include_pad ? double(w.kh * w.kw) : double((h_end - h_begin) * (w_end - w_begin));
        out[oh * out_width + ow] = kind == Pool::max ? max : T(sum / count);
      }
  });
}

PoolPlan pool_plan(const KernelArgs& args) {
  require_uniform_dtype(args);
  const bool average = args.op.kind == ir::OpKind::avg_pool2d;
  const auto& [kernel, stride, padding] =
      average ? ir::params_of<ir::AvgPoolParams>(args.op).window : ir::params_of<ir::PoolParams>(args.op);
  const Window w{kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1], 1, 1};
  check_output(args, w, args.inputs[0].dims.size() == 4 ? args.inputs[0].dims[1] : -1);
  std::span<const int64_t> x = args.inputs[0].dims, y = args.outputs[0].dims;
  const int64_t planes = x[0] * x[1];
  return {w,      average && ir::params_of<ir::AvgPoolParams>(args.op).count_include_pad,
          planes, x[2],
          x[3],   y[2],
          y[3],   exec::worth_parallel(planes * y[2] * y[3] * w.kh * w.kw)};
}

void pool(const KernelArgs& args, Pool kind, Kernel self) {
  if (has_half_operand(args)) return run_in_f32(args, self);
  const PoolPlan& plan = prepared<PoolPlan>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { pool_typed<typename decltype(e)::Storage>(args, plan, kind); });
}

// adaptive_avg_pool2d's extents; shape inference checked that out * in does not overflow.
struct AdaptivePoolPlan {
  int64_t planes, height, width, out_height, out_width;
  bool parallel;
};

// torch's window of output index i: [floor(i * in / out), ceil((i + 1) * in / out)).
int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) { return i * in / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

template <class T> void adaptive_avg_pool_typed(const KernelArgs& args, const AdaptivePoolPlan& p) {
  const T* x = args.inputs[0].as<const T>();
  T* y = args.outputs[0].as<T>();
  exec::parallel_for(p.planes, p.parallel, [&](int64_t plane) {
    const T* in = x + plane * p.height * p.width;
    T* out = y + plane * p.out_height * p.out_width;
    for (int64_t oh = 0; oh < p.out_height; ++oh) {
      const int64_t h0 = adaptive_begin(oh, p.height, p.out_height), h1 = adaptive_end(oh, p.height, p.out_height);
      for (int64_t ow = 0; ow < p.out_width; ++ow) {
        const int64_t w0 = adaptive_begin(ow, p.width, p.out_width), w1 = adaptive_end(ow, p.width, p.out_width);
        double sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t c = w0; c < w1; ++c)
            sum += in[h * p.width + c];
        out[oh * p.out_width + ow] = T(sum / double((h1 - h0) * (w1 - w0)));
      }
    }
  });
}

// conv_transpose2d's extents and hyperparameters (shape inference checked them).
struct TransposedConvPlan {
  Window w;
  int64_t batch, channels, height, width, out_channels, groups, out_height, out_width;
  int64_t group_in() const { return channels / groups; }
  int64_t group_out() const { return out_channels / groups; }
};

// Input row ih reaches output row ih * stride - pad + i * dilation through kernel row i, so output
// row oh gathers the (ih, i) with oh + pad - i * dilation = ih * stride: a gather per output element
// (no scatter races between threads), summed in double.
template <class T> void conv_transpose2d_typed(const KernelArgs& args, const TransposedConvPlan& p) {
  const Window w = p.w;
  const T* x = args.inputs[0].as<const T>();
  const T* weight = args.inputs[1].as<const T>();
  const T* bias = args.inputs.size() > 2 ? args.inputs[2].as<const T>() : nullptr;
  T* y = args.outputs[0].as<T>();
  const int64_t planes = p.batch * p.out_channels, in_plane = p.height * p.width;
  exec::parallel_for(
      planes, exec::worth_parallel(planes * p.out_height * p.out_width * p.group_in() * w.kh * w.kw),
      [&](int64_t plane) {
        const int64_t n = plane / p.out_channels, o = plane % p.out_channels;
        const int64_t g = o / p.group_out(), o_in_group = o % p.group_out();
        const T* image = x + (n * p.channels + g * p.group_in()) * in_plane;
        T* out = y + plane * p.out_height * p.out_width;
        for (int64_t oh = 0; oh < p.out_height; ++oh)
          for (int64_t ow = 0; ow < p.out_width; ++ow) {
            double sum = bias ? double(bias[o]) : 0.0;
            for (int64_t i = 0; i < w.kh; ++i) {
              const int64_t th = oh + w.ph - i * w.dh;
              if (th < 0 || th % w.sh != 0 || th / w.sh >= p.height) continue;
              for (int64_t j = 0; j < w.kw; ++j) {
                const int64_t tw = ow + w.pw - j * w.dw;
                if (tw < 0 || tw % w.sw != 0 || tw / w.sw >= p.width) continue;
                const int64_t at = th / w.sh * p.width + tw / w.sw;
                for (int64_t c = 0; c < p.group_in(); ++c)
                  sum += double(image[c * in_plane + at]) *
                         weight[(((g * p.group_in() + c) * p.group_out() + o_in_group) * w.kh + i) * w.kw + j];
              }
            }
            out[oh * p.out_width + ow] = T(sum);
          }
      });
}

} // namespace

exec::PreparedState prepare_convolution(const ir::Op& op, std::span<const exec::View> inputs,
                                        std::span<const exec::View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  require_uniform_dtype(args);
  const Window w = conv_window(args);
  const ConvShape s = conv_shape(args, w, ir::params_of<ir::ConvParams>(op).groups);
  const size_t element = inputs[0].dtype == DType::f64 ? sizeof(double) : sizeof(float);
  return make_prepared(ConvPlan{w, s, column_buffers(s, w, element)});
}

exec::PreparedState prepare_pool2d(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs) {
  return make_prepared(pool_plan(KernelArgs{op, inputs, outputs}));
}

void conv1d(const KernelArgs& args) { convolve(args, conv1d); }
void conv2d(const KernelArgs& args) { convolve(args, conv2d); }

size_t convolution_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs,
                                 std::span<const exec::View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  const Window w = conv_window(args);
  const size_t element = args.inputs[0].dtype == DType::f64 ? sizeof(double) : sizeof(float);
  return column_buffers(conv_shape(args, w, ir::params_of<ir::ConvParams>(args.op).groups), w, element).bytes();
}

exec::PreparedState prepare_adaptive_avg_pool2d(const ir::Op& op, std::span<const exec::View> inputs,
                                                std::span<const exec::View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  require_uniform_dtype(args);
  std::span<const int64_t> x = inputs[0].dims, y = outputs[0].dims;
  const ir::Pair& size = ir::params_of<ir::AdaptivePoolParams>(op).output_size;
  if (x.size() != 4 || y.size() != 4 || x[2] == 0 || x[3] == 0 || y[0] != x[0] || y[1] != x[1] || y[2] != size[0] ||
      y[3] != size[1])
    throw Error(ErrorKind::shape, ir::op_place(op) + ": result " + dims_string(y) + " does not match output_size [" +
                                      std::to_string(size[0]) + ", " + std::to_string(size[1]) + "] of input " +
                                      dims_string(x));
  checked_mul(size[0], x[2], "adaptive_avg_pool2d window");
  checked_mul(size[1], x[3], "adaptive_avg_pool2d window");
  const int64_t planes = x[0] * x[1];
  return make_prepared(AdaptivePoolPlan{planes, x[2], x[3], y[2], y[3], exec::worth_parallel(planes * x[2] * x[3])});
}

void adaptive_avg_pool2d(const KernelArgs& args) {
  if (has_half_operand(args)) return run_in_f32(args, adaptive_avg_pool2d);
  const AdaptivePoolPlan& plan = prepared<AdaptivePoolPlan>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { adaptive_avg_pool_typed<typename decltype(e)::Storage>(args, plan); });
}

exec::PreparedState prepare_conv_transpose2d(const ir::Op& op, std::span<const exec::View> inputs,
                                             std::span<const exec::View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  require_uniform_dtype(args);
  const ir::ConvTransposeParams& p = ir::params_of<ir::ConvTransposeParams>(op);
  const int64_t groups = p.conv.groups;
  std::span<const int64_t> x = inputs[0].dims, k = inputs[1].dims, y = outputs[0].dims;
  const bool fits = x.size() == 4 && k.size() == 4 && y.size() == 4 && groups > 0 && k[0] == x[1] &&
                    x[1] % groups == 0 && y[0] == x[0] && y[1] == k[1] * groups &&
                    (inputs.size() < 3 || inputs[2].numel() == y[1]);
  auto out_size = [&](int a) {
    try {
      return ir::infer::transposed_output(x[size_t(2 + a)], k[size_t(2 + a)], p.conv.stride[size_t(a)],
                                          p.conv.padding[size_t(a)], p.conv.dilation[size_t(a)],
                                          p.output_padding[size_t(a)]);
    } catch (const std::exception&) {
      return int64_t(-1);
    }
  };
  if (!fits || y[2] != out_size(0) || y[3] != out_size(1))
    throw Error(ErrorKind::shape, ir::op_place(op) + ": input " + dims_string(x) + ", weight " + dims_string(k) +
                                      ", groups " + std::to_string(groups) + " and result " + dims_string(y) +
                                      " do not fit together");
  const ir::ConvParams& c = p.conv;
  const Window w{k[2], k[3], c.stride[0], c.stride[1], c.padding[0], c.padding[1], c.dilation[0], c.dilation[1]};
  return make_prepared(TransposedConvPlan{w, x[0], x[1], x[2], x[3], y[1], groups, y[2], y[3]});
}

void conv_transpose2d(const KernelArgs& args) {
  if (has_half_operand(args)) return run_in_f32(args, conv_transpose2d);
  const TransposedConvPlan& plan = prepared<TransposedConvPlan>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { conv_transpose2d_typed<typename decltype(e)::Storage>(args, plan); });
}

void max_pool2d(const KernelArgs& args) { pool(args, Pool::max, max_pool2d); }
void avg_pool2d(const KernelArgs& args) { pool(args, Pool::average, avg_pool2d); }

// Windows are checked and measured once; the convolutions take their column buffers and GEMM
// blocks from the plan's scratch.
std::span<const KernelSetup> conv_pool_setups() {
  static constexpr KernelSetup kSetups[] = {
      KILN_KERNEL_SETUP(conv1d, prepare_convolution, convolution_scratch_bytes),
      KILN_KERNEL_SETUP(conv2d, prepare_convolution, convolution_scratch_bytes),
      KILN_KERNEL_SETUP(max_pool2d, prepare_pool2d, nullptr),
      KILN_KERNEL_SETUP(avg_pool2d, prepare_pool2d, nullptr),
      KILN_KERNEL_SETUP(adaptive_avg_pool2d, prepare_adaptive_avg_pool2d, nullptr),
      KILN_KERNEL_SETUP(conv_transpose2d, prepare_conv_transpose2d, nullptr),
  };
  return kSetups;
}

} // namespace kiln::interp
