#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#if defined(__aarch64__)
#include "interp/kernels/reduction_neon.hpp"
#endif

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;
using exec::View;

namespace {

enum class Reduction { sum, mean, max, min, prod };

// Floats accumulate in double, integers in int64 (wrapping), then round once into the result.
template <class T> using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Consecutive input dims that are all reduced or all kept, with size-1 dims dropped: a reduction
// over any axes becomes a few [outer, reduced, inner] passes.
struct AxisGroup {
  int64_t size;
  bool reduced;
};

std::vector<AxisGroup> axis_groups(const ir::Op& op, std::span<const int64_t> dims) {
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t axis : ir::params_of<ir::ReduceParams>(op).axes)
    reduced[size_t(require_axis(op, axis, int64_t(dims.size())))] = true;
  std::vector<AxisGroup> groups;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[d])
      groups.back().size *= dims[d];
    else
      groups.push_back({dims[d], reduced[d]});
  }
  return groups;
}

// Lanes of a row reduction: independent accumulators the compiler keeps in vector registers,
// instead of one chain that waits on each add (a global pool of a [8, 64, 32, 32] tensor took
// 0.9 ms that way).
inline constexpr int64_t kRowLanes = 8;

// out[o] = combine over m of load(o * middle + m): the trailing axes reduced (inner == 1).
template <class Acc, class Load, class Combine>
void reduce_rows(int64_t outer, int64_t middle, Load load, Combine combine, Acc* out) {
  exec::parallel_for(outer, exec::worth_parallel(outer * middle), [&](int64_t o) {
    const int64_t base = o * middle;
    if (middle < kRowLanes) {
      Acc acc = load(base);
      for (int64_t m = 1; m < middle; ++m)
        acc = combine(acc, load(base + m));
      out[o] = acc;
      return;
    }
    std::array<Acc, kRowLanes> lanes;
    for (int64_t j = 0; j < kRowLanes; ++j)
      lanes[size_t(j)] = load(base + j);
    int64_t m = kRowLanes;
    for (; m + kRowLanes <= middle; m += kRowLanes)
      for (int64_t j = 0; j < kRowLanes; ++j)
        lanes[size_t(j)] = combine(lanes[size_t(j)], load(base + m + j));
    for (; m < middle; ++m)
      lanes[0] = combine(lanes[0], load(base + m));
    Acc acc = lanes[0];
    for (int64_t j = 1; j < kRowLanes; ++j)
      acc = combine(acc, lanes[size_t(j)]);
    out[o] = acc;
  });
}

// One pass over data viewed as [outer, middle, inner]: out[o, i] = combine over m of load(o, m, i).
// Walks `inner` contiguously, so reducing leading and trailing axes both stream through memory.
template <class Acc, class Load, class Combine>
void reduce_middle(int64_t outer, int64_t middle, int64_t inner, Load load, Combine combine, Acc* out) {
  if (inner == 1) return reduce_rows(outer, middle, load, combine, out);
  const int64_t block = std::min(inner, kChunk), blocks = (inner + block - 1) / block;
  exec::parallel_for(outer * blocks, exec::worth_parallel(outer * middle * inner), [&](int64_t task) {
    const int64_t o = task / blocks, begin = (task % blocks) * block, end = std::min(inner, begin + block);
    Acc* row = out + o * inner;
    for (int64_t i = begin; i < end; ++i)
      row[i] = load(o * middle * inner + i);
    for (int64_t m = 1; m < middle; ++m) {
      const int64_t base = (o * middle + m) * inner;
      for (int64_t i = begin; i < end; ++i)
        row[i] = combine(row[i], load(base + i));
    }
  });
}

// One [outer, middle, inner] pass of a reduction.
struct ReducePass {
  int64_t outer, middle, inner;
};

// The groups' reduced axes as passes, last group first, each over what the previous one left.
std::vector<ReducePass> reduce_passes(std::vector<AxisGroup> groups, int64_t numel) {
  std::vector<ReducePass> passes;
  for (;;) {
    auto last = std::find_if(groups.rbegin(), groups.rend(), [](const AxisGroup& g) { return g.reduced; });
    if (last == groups.rend()) break;
    const auto g = std::prev(last.base());
    int64_t outer = 1, inner = 1;
    for (auto it = groups.begin(); it != g; ++it)
      outer *= it->size;
    for (auto it = g + 1; it != groups.end(); ++it)
      inner *= it->size;
    passes.push_back({outer, g->size, inner});
    groups.erase(g);
  }
  if (passes.empty()) passes.push_back({numel, 1, 1}); // only size-1 axes were reduced: a copy
  return passes;
}

// What a reduction derives from the op and its static dims. `empty_result`: nothing to write;
// `empty_input`: the result is the reduction's identity (reduce_empty).
struct ReducePlan {
  bool empty_result = false, empty_input = false;
  std::vector<ReducePass> passes;
  double count = 0; // input elements per result element, for the mean
};

Reduction reduction_of(ir::OpKind kind) {
  if (kind == ir::OpKind::reduce_max) return Reduction::max;
  if (kind == ir::OpKind::reduce_min) return Reduction::min;
  if (kind == ir::OpKind::reduce_prod) return Reduction::prod;
  return kind == ir::OpKind::reduce_mean ? Reduction::mean : Reduction::sum;
}

ReducePlan reduce_plan(const KernelArgs& args) {
  require_same_dtype(args, {0});
  const View &x = args.inputs[0], &y = args.outputs[0];
  ReducePlan plan;
  plan.empty_result = y.numel() == 0;
  plan.empty_input = x.numel() == 0;
  if (plan.empty_result) return plan;
  const Reduction kind = reduction_of(args.op.kind);
  if (plan.empty_input && (kind == Reduction::max || kind == Reduction::min))
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": cannot reduce an empty axis (no identity)");
  if (plan.empty_input) return plan;
  const std::vector<AxisGroup> groups = axis_groups(args.op, x.dims);
  int64_t kept = 1;
  for (const AxisGroup& g : groups)
    kept *= g.reduced ? 1 : g.size;
  if (kept != y.numel())
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": result dims " + dims_string(y.dims) +
                                      " do not match the reduction of " + dims_string(x.dims));
  plan.passes = reduce_passes(groups, x.numel());
  plan.count = double(x.numel() / y.numel());
  return plan;
}

// The largest pass result: each of the two accumulator buffers the passes alternate between (in the
// kernel's scratch, so a call allocates nothing) holds this many.
int64_t pass_buffer_elements(std::span<const ReducePass> passes) {
  int64_t most = 0;
  for (const ReducePass& p : passes)
    most = std::max(most, p.outer * p.inner);
  return most;
}

constexpr size_t kAccumulatorBytes = 8; // double or int64_t

size_t reduction_scratch_bytes(const ReducePlan& plan) {
  return 2 * size_t(pass_buffer_elements(plan.passes)) * kAccumulatorBytes;
}

// An explicit loop for a first pass over rows of f32 input (inner == 1): out[o] of x's row o.
using RowPass = void (*)(const float* x, int64_t outer, int64_t middle, double* out);

// Runs the plan's passes over x, the first from the input, into accumulators in result order: the
// returned pointer into `scratch`. `rows` (when not null) runs that first pass where it reduces rows.
template <class E, class Acc, class Combine>
const Acc* run_passes(const View& x, std::span<const ReducePass> passes, std::span<std::byte> scratch, Combine combine,
                      RowPass rows = nullptr) {
  const auto* data = x.as<const typename E::Storage>();
  Acc* buffers[2] = {reinterpret_cast<Acc*>(scratch.data()),
                     reinterpret_cast<Acc*>(scratch.data()) + pass_buffer_elements(passes)};
  const Acc* partial = nullptr;
  for (size_t i = 0; i < passes.size(); ++i) {
    const ReducePass& p = passes[i];
    Acc* next = buffers[i % 2];
    if constexpr (std::is_same_v<typename E::Storage, float> && std::is_same_v<Acc, double>)
      if (!partial && rows && p.inner == 1) {
        rows(data, p.outer, p.middle, next);
        partial = next;
        continue;
      }
    if (!partial)
      reduce_middle(
          p.outer, p.middle, p.inner, [&](int64_t j) { return Acc(E::load(data[j])); }, combine, next);
    else
      reduce_middle(
          p.outer, p.middle, p.inner, [&](int64_t j) { return partial[j]; }, combine, next);
    partial = next;
  }
  return partial;
}

// Reducing an empty axis: sums are 0, products 1, means NaN (0 / 0); max and min were refused by
// reduce_plan.
template <class E> void reduce_empty(const KernelArgs& args, Reduction kind) {
  using C = typename E::Compute;
  const C value = kind == Reduction::sum    ? C(0)
                  : kind == Reduction::prod ? C(1)
                                            : C(std::numeric_limits<double>::quiet_NaN());
  auto* out = args.outputs[0].as<typename E::Storage>();
  std::fill(out, out + args.outputs[0].numel(), E::store(value));
}

template <class E> void reduce_typed(const KernelArgs& args, const ReducePlan& plan, Reduction kind) {
  using C = typename E::Compute;
  using Acc = Accumulator<C>;
  const View &x = args.inputs[0], &y = args.outputs[0];
  if (plan.empty_result) return;
  if (plan.empty_input) return reduce_empty<E>(args, kind);
  static_assert(sizeof(Acc) <= kAccumulatorBytes);
  if (args.scratch.size() < reduction_scratch_bytes(plan))
    throw Error(ErrorKind::internal, ir::op_place(args.op) + ": the reduction needs " +
                                         std::to_string(reduction_scratch_bytes(plan)) +
                                         " bytes of scratch, the plan gave " + std::to_string(args.scratch.size()));
  const Acc* acc = nullptr;
  RowPass row_max = nullptr, row_min = nullptr;
#if defined(__aarch64__)
  row_max = neon::row_extrema<true>;
  row_min = neon::row_extrema<false>;
#endif
  if (kind == Reduction::max)
    acc = run_passes<E, Acc>(
        x, plan.passes, args.scratch, [](Acc a, Acc b) { return nan_max(a, b); }, row_max);
  else if (kind == Reduction::min)
    acc = run_passes<E, Acc>(
        x, plan.passes, args.scratch, [](Acc a, Acc b) { return nan_min(a, b); }, row_min);
  else if (kind == Reduction::prod)
    acc = run_passes<E, Acc>(x, plan.passes, args.scratch, [](Acc a, Acc b) { return wrapping_mul(a, b); });
  else
    acc = run_passes<E, Acc>(x, plan.passes, args.scratch, [](Acc a, Acc b) { return wrapping_add(a, b); });
  auto* out = y.as<typename E::Storage>();
  for (int64_t i = 0; i < y.numel(); ++i)
    out[i] = E::store(kind == Reduction::mean ? C(double(acc[i]) / plan.count) : C(acc[i]));
}

template <class DTypes> void reduce(const KernelArgs& args, Reduction kind) {
  const ReducePlan& plan = prepared<ReducePlan>(args);
  dispatch_dtype(DTypes{}, args.inputs[0].dtype, args.op, [&](auto e) { reduce_typed<decltype(e)>(args, plan, kind); });
}

// x viewed as [outer, size of axis, inner] for the ops that work along one axis.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};

AxisSplit split_at_axis(const ir::Op& op, int64_t axis, std::span<const int64_t> dims) {
  require_axis(op, axis, int64_t(dims.size()));
  AxisSplit s;
  s.outer = product(dims.subspan(0, size_t(axis)));
  s.size = dims[size_t(axis)];
  s.inner = product(dims.subspan(size_t(axis) + 1));
  return s;
}

// Columns of `inner` handled together by softmax, so rows are read contiguously.
constexpr int64_t kColumnBlock = 64;

template <class T> void softmax_typed(const KernelArgs& args, const AxisSplit& s, bool log_form) {
  const T* x = args.inputs[0].as<const T>();
  T* y = args.outputs[0].as<T>();
  if (s.outer * s.size * s.inner == 0) return;
  const int64_t blocks = (s.inner + kColumnBlock - 1) / kColumnBlock;
  exec::parallel_for(s.outer * blocks, exec::worth_parallel(s.outer * s.size * s.inner), [&](int64_t task) {
    const int64_t o = task / blocks, c0 = (task % blocks) * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, s.inner - c0), base = o * s.size * s.inner + c0;
    std::array<T, kColumnBlock> max;
    std::array<double, kColumnBlock> sum{};
    for (int64_t j = 0; j < width; ++j)
      max[j] = x[base + j];
    for (int64_t b = 1; b < s.size; ++b)
      for (int64_t j = 0; j < width; ++j)
        max[j] = nan_max(max[j], x[base + b * s.inner + j]);
    for (int64_t b = 0; b < s.size; ++b)
      for (int64_t j = 0; j < width; ++j)
        sum[j] += std::exp(x[base + b * s.inner + j] - max[j]);
    for (int64_t j = 0; j < width; ++j)
      sum[j] = log_form ? std::log(sum[j]) : 1.0 / sum[j];
    for (int64_t b = 0; b < s.size; ++b) {
      const T* in = x + base + b * s.inner;
      T* out = y + base + b * s.inner;
      for (int64_t j = 0; j < width; ++j)
        out[j] = log_form ? (in[j] - max[j]) - T(sum[j]) : std::exp(in[j] - max[j]) * T(sum[j]);
    }
  });
}

void softmax_any(const KernelArgs& args, bool log_form, Kernel self) {
  if (has_half_operand(args)) return run_in_f32(args, self);
  const AxisSplit& s = prepared<AxisSplit>(args);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { softmax_typed<typename decltype(e)::Storage>(args, s, log_form); });
}

} // namespace

void reduce_sum(const KernelArgs& args) { reduce<ArithmeticDTypes>(args, Reduction::sum); }
void reduce_mean(const KernelArgs& args) { reduce<FloatDTypes>(args, Reduction::mean); }
// bool too: max is any, min is all.
void reduce_max(const KernelArgs& args) { reduce<AllDTypes>(args, Reduction::max); }
void reduce_min(const KernelArgs& args) { reduce<AllDTypes>(args, Reduction::min); }
void reduce_prod(const KernelArgs& args) { reduce<ArithmeticDTypes>(args, Reduction::prod); }

exec::PreparedState prepare_reduction(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  return make_prepared(reduce_plan(KernelArgs{op, inputs, outputs}));
}

size_t reduction_accumulator_bytes(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  return reduction_scratch_bytes(reduce_plan(KernelArgs{op, inputs, outputs}));
}

exec::PreparedState prepare_argmax(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  const View &x = inputs[0], &y = outputs[0];
  if (y.dtype != DType::i64) throw_unsupported_dtype(op, y.dtype);
  const AxisSplit s = split_at_axis(op, ir::params_of<ir::ArgmaxParams>(op).axis, x.dims);
  if (y.numel() != s.outer * s.inner)
    throw Error(ErrorKind::shape, ir::op_place(op) + ": result dims " + dims_string(y.dims) +
                                      " do not match the reduction of " + dims_string(x.dims));
  if (s.outer * s.inner != 0 && s.size == 0)
    throw Error(ErrorKind::shape, ir::op_place(op) + ": an empty axis has no extreme to index");
  return make_prepared(s);
}

// Where each input element lands in the result of reduce_var / reduce_std (C order), and the count
// n of elements per result.
struct VariancePlan {
  std::vector<int64_t> dims, result_strides; // per input axis; 0 along the reduced ones
  int64_t per_result = 0;
};

exec::PreparedState prepare_variance(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  const View &x = inputs[0], &y = outputs[0];
  require_same_dtype(KernelArgs{op, inputs, outputs}, {0});
  if (!dtype_is_float(x.dtype)) throw_unsupported_dtype(op, x.dtype);
  const auto& p = ir::params_of<ir::VarianceParams>(op);
  VariancePlan plan;
  plan.dims.assign(x.dims.begin(), x.dims.end());
  plan.result_strides.assign(x.dims.size(), 0);
  std::vector<bool> reduced(x.dims.size(), false);
  for (int64_t axis : p.axes)
    reduced[size_t(require_axis(op, axis, int64_t(x.dims.size())))] = true;
  int64_t stride = 1, kept = 1;
  for (size_t d = x.dims.size(); d-- > 0;) {
    if (reduced[d]) continue;
    plan.result_strides[d] = stride;
    stride *= x.dims[d];
    kept *= x.dims[d];
  }
  if (kept != y.numel())
    throw Error(ErrorKind::shape, ir::op_place(op) + ": result dims " + dims_string(y.dims) +
                                      " do not match the reduction of " + dims_string(x.dims));
  plan.per_result = kept == 0 ? 0 : x.numel() / kept;
  return make_prepared(std::move(plan));
}

exec::PreparedState prepare_softmax(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  const KernelArgs args{op, inputs, outputs};
  require_same_dtype(args, {0});
  require_same_dims(args);
  return make_prepared(split_at_axis(op, ir::params_of<ir::AxisParams>(op).axis, inputs[0].dims));
}

// The first extreme of each column along the axis: `beats(v, best)` says v replaces best. A NaN
// beats everything and ends the search (torch's argmax and argmin).
template <class Beats> void arg_extreme(const KernelArgs& args, Beats beats) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  const AxisSplit& s = prepared<AxisSplit>(args);
  if (s.outer * s.inner == 0) return;
  int64_t* out = y.as<int64_t>();
  dispatch_dtype(ArithmeticDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto* data = x.as<const typename E::Storage>();
    exec::parallel_for(s.outer * s.inner, exec::worth_parallel(s.outer * s.size * s.inner), [&](int64_t t) {
      const auto* column = data + (t / s.inner) * s.size * s.inner + t % s.inner;
      auto best = E::load(column[0]);
      int64_t best_index = 0;
      for (int64_t b = 1; b < s.size && !is_nan(best); ++b) {
        const auto v = E::load(column[b * s.inner]);
        if (is_nan(v) || beats(v, best)) {
          best = v;
          best_index = b;
        }
      }
      out[t] = best_index;
    });
  });
}

void argmax(const KernelArgs& args) {
  arg_extreme(args, [](auto v, auto best) { return v > best; });
}
void argmin(const KernelArgs& args) {
  arg_extreme(args, [](auto v, auto best) { return v < best; });
}

// Each column along the axis ordered by `before`, a strict total order (NaN beyond every number,
// then the index), so the k first are torch's values with ties in index order.
void topk(const KernelArgs& args) {
  const View &x = args.inputs[0], &values = args.outputs[0], &indices = args.outputs[1];
  const auto& p = ir::params_of<ir::TopkParams>(args.op);
  const AxisSplit s = split_at_axis(args.op, p.axis, x.dims);
  if (p.k > s.size)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": k " + std::to_string(p.k) + " is larger than axis " +
                                      std::to_string(p.axis) + " of " + dims_string(x.dims));
  if (values.dtype != x.dtype) throw_unsupported_dtype(args.op, values.dtype);
  if (indices.dtype != DType::i64) throw_unsupported_dtype(args.op, indices.dtype);
  dispatch_dtype(ArithmeticDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto* in = x.as<const typename E::Storage>();
    auto* out = values.as<typename E::Storage>();
    auto* out_index = indices.as<int64_t>();
    exec::parallel_for(s.outer * s.inner, exec::worth_parallel(s.outer * s.size * s.inner), [&](int64_t t) {
      const auto* column = in + (t / s.inner) * s.size * s.inner + t % s.inner;
      auto before = [&](int64_t a, int64_t b) {
        const auto va = E::load(column[a * s.inner]), vb = E::load(column[b * s.inner]);
        if (is_nan(va) != is_nan(vb)) return is_nan(va) == p.largest;
        if (!is_nan(va) && va != vb) return p.largest ? va > vb : va < vb;
        return a < b;
      };
      std::vector<int64_t> order(static_cast<size_t>(s.size));
      std::iota(order.begin(), order.end(), int64_t(0));
      std::partial_sort(order.begin(), order.begin() + p.k, order.end(), before);
      const int64_t base = (t / s.inner) * p.k * s.inner + t % s.inner;
      for (int64_t r = 0; r < p.k; ++r) {
        out[base + r * s.inner] = column[order[size_t(r)] * s.inner];
        out_index[base + r * s.inner] = order[size_t(r)];
      }
    });
  });
}

exec::PreparedState prepare_cumsum(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  const View &x = inputs[0], &y = outputs[0];
  const DType want = dtype_is_float(x.dtype) ? x.dtype : DType::i64;
  if (y.dtype != want) throw_unsupported_dtype(op, y.dtype);
  require_same_dims(KernelArgs{op, inputs, outputs});
  return make_prepared(split_at_axis(op, ir::params_of<ir::AxisParams>(op).axis, x.dims));
}

// Floats sum in double and round each running sum once, as torch's CPU kernel (its accumulator
// type for float is double); integers and bool sum in int64, wrapping.
void cumsum(const KernelArgs& args) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  const AxisSplit& s = prepared<AxisSplit>(args);
  dispatch_dtype(AllDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    constexpr bool is_float = std::is_floating_point_v<typename E::Compute>;
    using Acc = std::conditional_t<is_float, double, int64_t>;
    using Out = std::conditional_t<is_float, typename E::Storage, int64_t>;
    const auto* in = x.as<const typename E::Storage>();
    Out* out = y.as<Out>();
    exec::parallel_for(s.outer * s.inner, exec::worth_parallel(s.outer * s.size * s.inner), [&](int64_t t) {
      const int64_t base = (t / s.inner) * s.size * s.inner + t % s.inner;
      Acc acc = 0;
      for (int64_t b = 0; b < s.size; ++b) {
        const int64_t i = base + b * s.inner;
        acc = wrapping_add(acc, Acc(E::load(in[i])));
        if constexpr (is_float)
          out[i] = E::store(typename E::Compute(acc));
        else
          out[i] = acc;
      }
    });
  });
}

namespace {

// Calls fn(input index, result index) for every input element in C order.
template <class Fn> void for_each_landing(const VariancePlan& plan, int64_t numel, Fn fn) {
  std::vector<int64_t> index(plan.dims.size(), 0);
  int64_t result = 0;
  for (int64_t i = 0; i < numel; ++i) {
    fn(i, result);
    for (size_t d = plan.dims.size(); d-- > 0;) {
      result += plan.result_strides[d];
      if (++index[d] < plan.dims[d]) break;
      result -= plan.result_strides[d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

// Two passes in double: the means, then the squared deviations from them (accurate where the
// one-pass sum of squares cancels).
void variance(const KernelArgs& args, bool root) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  const VariancePlan& plan = prepared<VariancePlan>(args);
  const int64_t correction = ir::params_of<ir::VarianceParams>(args.op).correction;
  const double divisor = double(std::max<int64_t>(0, plan.per_result - correction));
  dispatch_dtype(FloatDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto* in = x.as<const typename E::Storage>();
    std::vector<double> mean(size_t(y.numel()), 0.0), squares(size_t(y.numel()), 0.0);
    for_each_landing(plan, x.numel(), [&](int64_t i, int64_t r) { mean[size_t(r)] += double(E::load(in[i])); });
    for (double& m : mean)
      m /= double(plan.per_result);
    for_each_landing(plan, x.numel(), [&](int64_t i, int64_t r) {
      const double d = double(E::load(in[i])) - mean[size_t(r)];
      squares[size_t(r)] += d * d;
    });
    auto* out = y.as<typename E::Storage>();
    for (size_t r = 0; r < squares.size(); ++r) {
      const double v = squares[r] / divisor;
      out[r] = E::store(typename E::Compute(root ? std::sqrt(v) : v));
    }
  });
}

} // namespace

void reduce_var(const KernelArgs& args) { variance(args, false); }
void reduce_std(const KernelArgs& args) { variance(args, true); }

void softmax(const KernelArgs& args) { softmax_any(args, false, softmax); }
void log_softmax(const KernelArgs& args) { softmax_any(args, true, log_softmax); }

// Reductions derive their passes and accumulators once; the reductions that sum or keep extremes
// take accumulators from the plan's scratch.
std::span<const KernelSetup> reduction_setups() {
  static constexpr KernelSetup kSetups[] = {
      KILN_KERNEL_SETUP(reduce_sum, prepare_reduction, reduction_accumulator_bytes),
      KILN_KERNEL_SETUP(reduce_mean, prepare_reduction, reduction_accumulator_bytes),
      KILN_KERNEL_SETUP(reduce_max, prepare_reduction, reduction_accumulator_bytes),
      KILN_KERNEL_SETUP(reduce_min, prepare_reduction, reduction_accumulator_bytes),
      KILN_KERNEL_SETUP(reduce_prod, prepare_reduction, reduction_accumulator_bytes),
      KILN_KERNEL_SETUP(reduce_var, prepare_variance, nullptr),
      KILN_KERNEL_SETUP(reduce_std, prepare_variance, nullptr),
      KILN_KERNEL_SETUP(argmax, prepare_argmax, nullptr),
      KILN_KERNEL_SETUP(argmin, prepare_argmax, nullptr),
      KILN_KERNEL_SETUP(softmax, prepare_softmax, nullptr),
      KILN_KERNEL_SETUP(log_softmax, prepare_softmax, nullptr),
      KILN_KERNEL_SETUP(cumsum, prepare_cumsum, nullptr),
  };
  return kSetups;
}

} // namespace kiln::interp
