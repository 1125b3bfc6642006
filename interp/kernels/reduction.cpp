#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/kernels.hpp"
#include <array>

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;
using exec::View;

namespace {

enum class Reduction { sum, mean, max, min };

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

// Reduces x over the groups' reduced axes, last group first, into accumulators in result order.
template <class E, class Acc, class Combine>
std::vector<Acc> reduce_groups(const View& x, std::vector<AxisGroup> groups, Combine combine) {
  const auto* data = x.as<const typename E::Storage>();
  std::vector<Acc> partial;
  bool from_input = true;
  auto pass = [&](int64_t outer, int64_t middle, int64_t inner) {
    std::vector<Acc> next(size_t(outer * inner));
    if (from_input)
      reduce_middle(
          outer, middle, inner, [&](int64_t i) { return Acc(E::load(data[i])); }, combine, next.data());
    else
      reduce_middle(
          outer, middle, inner, [&](int64_t i) { return partial[size_t(i)]; }, combine, next.data());
    partial = std::move(next);
    from_input = false;
  };
  for (;;) {
    auto last = std::find_if(groups.rbegin(), groups.rend(), [](const AxisGroup& g) { return g.reduced; });
    if (last == groups.rend()) break;
    const auto g = std::prev(last.base());
    int64_t outer = 1, inner = 1;
    for (auto it = groups.begin(); it != g; ++it)
      outer *= it->size;
    for (auto it = g + 1; it != groups.end(); ++it)
      inner *= it->size;
    pass(outer, g->size, inner);
    groups.erase(g);
  }
  if (from_input) pass(x.numel(), 1, 1); // only size-1 axes were reduced: a copy
  return partial;
}

// Reducing an empty axis: sums are 0, means NaN (0 / 0), max and min have no answer.
template <class E> void reduce_empty(const KernelArgs& args, Reduction kind) {
  if (kind == Reduction::max || kind == Reduction::min)
    throw Error(ErrorKind::shape, exec::op_place(args.op) + ": cannot reduce an empty axis (no identity)");
  using C = typename E::Compute;
  const C value = kind == Reduction::sum ? C(0) : C(std::numeric_limits<double>::quiet_NaN());
  auto* out = args.outputs[0].as<typename E::Storage>();
  std::fill(out, out + args.outputs[0].numel(), E::store(value));
}

template <class E> void reduce_typed(const KernelArgs& args, Reduction kind) {
  using C = typename E::Compute;
  using Acc = Accumulator<C>;
  const View &x = args.inputs[0], &y = args.outputs[0];
  if (y.numel() == 0) return;
  if (x.numel() == 0) return reduce_empty<E>(args, kind);
  std::vector<AxisGroup> groups = axis_groups(args.op, x.dims);
  std::vector<Acc> acc;
  if (kind == Reduction::max)
    acc = reduce_groups<E, Acc>(x, groups, [](Acc a, Acc b) { return nan_max(a, b); });
  else if (kind == Reduction::min)
    acc = reduce_groups<E, Acc>(x, groups, [](Acc a, Acc b) { return nan_min(a, b); });
  else
    acc = reduce_groups<E, Acc>(x, groups, [](Acc a, Acc b) { return wrapping_add(a, b); });
  if (int64_t(acc.size()) != y.numel())
    throw Error(ErrorKind::shape, exec::op_place(args.op) + ": result dims " + dims_string(y.dims) +
                                      " do not match the reduction of " + dims_string(x.dims));
  const double count = double(x.numel() / y.numel());
  auto* out = y.as<typename E::Storage>();
  for (size_t i = 0; i < acc.size(); ++i)
    out[i] = E::store(kind == Reduction::mean ? C(double(acc[i]) / count) : C(acc[i]));
}

template <class DTypes> void reduce(const KernelArgs& args, Reduction kind) {
  require_same_dtype(args, {0});
  dispatch_dtype(DTypes{}, args.inputs[0].dtype, args.op, [&](auto e) { reduce_typed<decltype(e)>(args, kind); });
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

template <class T> void softmax_typed(const KernelArgs& args, bool log_form) {
  const AxisSplit s = split_at_axis(args.op, ir::params_of<ir::AxisParams>(args.op).axis, args.inputs[0].dims);
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
  require_same_dtype(args, {0});
  require_same_dims(args);
  if (has_half_operand(args)) return run_in_f32(args, self);
  dispatch_dtype(WideFloatDTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { softmax_typed<typename decltype(e)::Storage>(args, log_form); });
}

} // namespace

void reduce_sum(const KernelArgs& args) { reduce<ArithmeticDTypes>(args, Reduction::sum); }
void reduce_mean(const KernelArgs& args) { reduce<FloatDTypes>(args, Reduction::mean); }
void reduce_max(const KernelArgs& args) { reduce<ArithmeticDTypes>(args, Reduction::max); }
void reduce_min(const KernelArgs& args) { reduce<ArithmeticDTypes>(args, Reduction::min); }

void argmax(const KernelArgs& args) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  if (y.dtype != DType::i64) throw_unsupported_dtype(args.op, y.dtype);
  const AxisSplit s = split_at_axis(args.op, ir::params_of<ir::ArgmaxParams>(args.op).axis, x.dims);
  if (y.numel() != s.outer * s.inner)
    throw Error(ErrorKind::shape, exec::op_place(args.op) + ": result dims " + dims_string(y.dims) +
                                      " do not match the reduction of " + dims_string(x.dims));
  if (s.outer * s.inner == 0) return;
  if (s.size == 0) throw Error(ErrorKind::shape, exec::op_place(args.op) + ": argmax of an empty axis");
  int64_t* out = y.as<int64_t>();
  dispatch_dtype(ArithmeticDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto* data = x.as<const typename E::Storage>();
    exec::parallel_for(s.outer * s.inner, exec::worth_parallel(s.outer * s.size * s.inner), [&](int64_t t) {
      const auto* column = data + (t / s.inner) * s.size * s.inner + t % s.inner;
      auto best = E::load(column[0]);
      int64_t best_index = 0;
      // The first maximum wins; a NaN counts as the maximum (numpy).
      for (int64_t b = 1; b < s.size && !is_nan(best); ++b) {
        const auto v = E::load(column[b * s.inner]);
        if (is_nan(v) || v > best) {
          best = v;
          best_index = b;
        }
      }
      out[t] = best_index;
    });
  });
}

void softmax(const KernelArgs& args) { softmax_any(args, false, softmax); }
void log_softmax(const KernelArgs& args) { softmax_any(args, true, log_softmax); }

} // namespace kiln::interp
