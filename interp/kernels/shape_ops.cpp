#include "interp/kernels/kernels.hpp"
#include "interp/kernels/strided_loop.hpp"
#include <cstring>

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

namespace {

size_t element_bytes(const View& v) { return dtype_size(v.dtype); }

// Ops that only relabel dims keep the bytes: reshape, squeeze, unsqueeze.
void copy_bytes(const KernelArgs& args) {
  const View &x = args.inputs[0], &y = args.outputs[0];
  require_same_dtype(args, {0});
  if (x.numel() != y.numel())
    throw Error(ErrorKind::shape,
                ir::op_place(args.op) + ": cannot view " + dims_string(x.dims) + " as " + dims_string(y.dims));
  if (x.data != y.data) std::memcpy(y.data, x.data, size_t(y.numel()) * element_bytes(y));
}

// out (contiguous, C order) = in read through `loop` (the strided source). Rows whose source is
// contiguous are memcpy'd.
void gather_strided(const StridedLoop<1>& loop, const View& in, const View& out) {
  const size_t bytes = element_bytes(out);
  const int64_t stride = loop.inner_stride(0);
  dispatch_element_size(bytes, [&](auto word) {
    using W = decltype(word);
    const W* src = in.as<const W>();
    W* dst = out.as<W>();
    for_each_chunk(loop, [&](int64_t out_offset, std::array<int64_t, 1> in_offset, int64_t count) {
      if (stride == 1) {
        std::memcpy(dst + out_offset, src + in_offset[0], size_t(count) * bytes);
        return;
      }
      for (int64_t i = 0; i < count; ++i)
        dst[out_offset + i] = src[in_offset[0] + i * stride];
    });
  });
}

// The dims of x viewed as [outer, axis * inner] blocks for concat and split.
struct Blocks {
  int64_t outer, inner;
};

Blocks blocks_around(const View& v, int64_t axis) {
  return {product(v.dims.first(size_t(axis))), product(v.dims.subspan(size_t(axis) + 1))};
}

// concat and split pieces must have the whole's dims except along the axis.
void check_piece(const ir::Op& op, const View& piece, const View& whole, int64_t axis) {
  bool fits = piece.rank() == whole.rank();
  for (size_t d = 0; fits && d < piece.dims.size(); ++d)
    fits = int64_t(d) == axis || piece.dims[d] == whole.dims[d];
  if (!fits)
    throw Error(ErrorKind::shape, ir::op_place(op) + ": " + dims_string(piece.dims) + " and " +
                                      dims_string(whole.dims) + " differ outside axis " + std::to_string(axis));
}

// The data index picked by each gather index, wrapped like numpy and checked.
std::vector<int64_t> gather_indices(const KernelArgs& args, int64_t axis, int64_t size) {
  const View& idx = args.inputs[1];
  std::vector<int64_t> indices(size_t(idx.numel()));
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t raw = idx.dtype == DType::i64 ? idx.as<const int64_t>()[i] : idx.as<const int32_t>()[i];
    if (raw < -size || raw >= size)
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": index " + std::to_string(raw) +
                                        " is out of range for axis " + std::to_string(axis) + " of size " +
                                        std::to_string(size));
    indices[i] = raw < 0 ? raw + size : raw;
  }
  return indices;
}

// Keeps the elements of each matrix of the last two axes whose column - row passes `kept`, zeroes
// the rest (+0 for floats: all bits clear).
template <class Kept> void triangle(const KernelArgs& args, Kept kept) {
  require_same_dtype(args, {0});
  require_same_dims(args);
  const View &x = args.inputs[0], &y = args.outputs[0];
  const size_t rank = x.dims.size();
  if (rank < 2) throw Error(ErrorKind::shape, ir::op_place(args.op) + ": needs at least 2 dims");
  const int64_t rows = x.dims[rank - 2], cols = x.dims[rank - 1];
  const int64_t diagonal = ir::params_of<ir::DiagonalParams>(args.op).diagonal;
  const int64_t matrix_rows = x.numel() == 0 ? 0 : x.numel() / cols;
  dispatch_element_size(element_bytes(x), [&](auto word) {
    using W = decltype(word);
    const W* in = x.as<const W>();
    W* out = y.as<W>();
    exec::parallel_for(matrix_rows, exec::worth_parallel(x.numel()), [&](int64_t r) {
      const int64_t row = r % rows;
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = kept(c - row, diagonal) ? in[r * cols + c] : W(0);
    });
  });
}

} // namespace

void tril(const KernelArgs& args) {
  triangle(args, [](int64_t offset, int64_t diagonal) { return offset <= diagonal; });
}
void triu(const KernelArgs& args) {
  triangle(args, [](int64_t offset, int64_t diagonal) { return offset >= diagonal; });
}

void reshape(const KernelArgs& args) { copy_bytes(args); }
void squeeze(const KernelArgs& args) { copy_bytes(args); }
void unsqueeze(const KernelArgs& args) { copy_bytes(args); }

void transpose(const KernelArgs& args) {
  require_same_dtype(args, {0});
  const View &x = args.inputs[0], &y = args.outputs[0];
  const auto& perm = ir::params_of<ir::TransposeParams>(args.op).perm;
  if (int64_t(perm.size()) != x.rank() || y.rank() != x.rank())
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": perm has " + std::to_string(perm.size()) +
                                      " entries for rank " + std::to_string(x.rank()));
  const std::vector<int64_t> in_strides = contiguous_strides(x.dims);
  std::array<std::vector<int64_t>, 1> strides;
  for (size_t i = 0; i < perm.size(); ++i) {
    const size_t axis = size_t(require_axis(args.op, perm[i], x.rank()));
    if (y.dims[i] != x.dims[axis])
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": result " + dims_string(y.dims) +
                                        " is not a permutation of " + dims_string(x.dims));
    strides[0].push_back(in_strides[axis]);
  }
  gather_strided(StridedLoop<1>(y.dims, strides), x, y);
}

void broadcast_to(const KernelArgs& args) {
  require_same_dtype(args, {0});
  const View &x = args.inputs[0], &y = args.outputs[0];
  gather_strided(broadcast_loop<1>(y.dims, {x.dims}, args.op), x, y);
}

void slice(const KernelArgs& args) {
  require_same_dtype(args, {0});
  const View &x = args.inputs[0], &y = args.outputs[0];
  const ir::SliceParams& params = ir::params_of<ir::SliceParams>(args.op);
  const std::vector<int64_t> starts = static_dims(params.starts);
  const std::vector<int64_t>& steps = params.steps;
  const size_t rank = x.dims.size();
  if (starts.size() != rank || steps.size() != rank || y.dims.size() != rank)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": starts and steps need one entry per axis (rank " +
                                      std::to_string(rank) + ")");
  const std::vector<int64_t> in_strides = contiguous_strides(x.dims);
  std::array<std::vector<int64_t>, 1> strides{std::vector<int64_t>(rank)};
  std::array<int64_t, 1> base{0};
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] <= 0)
      throw Error(ErrorKind::unsupported, ir::op_place(args.op) + ": step " + std::to_string(steps[d]) + " on axis " +
                                              std::to_string(d) + "; only positive steps are supported");
    // The last element read, start + (count - 1) * step, stays inside the axis; written as a division so
    // a huge step cannot overflow.
    const bool in_range =
        starts[d] >= 0 && starts[d] < x.dims[d] && (y.dims[d] - 1) <= (x.dims[d] - 1 - starts[d]) / steps[d];
    if (y.dims[d] > 0 && !in_range)
      throw Error(ErrorKind::shape, ir::op_place(args.op) + ": " + std::to_string(y.dims[d]) + " elements from " +
                                        std::to_string(starts[d]) + " by " + std::to_string(steps[d]) + " leave axis " +
                                        std::to_string(d) + " of size " + std::to_string(x.dims[d]));
    if (y.dims[d] == 0) continue; // nothing is read, and start may lie anywhere
    // A one-element axis never moves by its step (which may be huge); longer ones fit in the axis.
    strides[0][d] = y.dims[d] > 1 ? in_strides[d] * steps[d] : in_strides[d];
    base[0] += starts[d] * in_strides[d];
  }
  if (y.numel() == 0) return;
  gather_strided(StridedLoop<1>(y.dims, strides, base), x, y);
}

void concat(const KernelArgs& args) {
  const View& y = args.outputs[0];
  const int64_t axis = require_axis(args.op, ir::params_of<ir::AxisParams>(args.op).axis, y.rank());
  const size_t bytes = element_bytes(y);
  const Blocks out = blocks_around(y, axis);
  int64_t axis_total = 0;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    require_same_dtype(args, {i});
    check_piece(args.op, args.inputs[i], y, axis);
    axis_total += args.inputs[i].dims[size_t(axis)];
  }
  if (axis_total != y.dims[size_t(axis)])
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": operands add up to " + std::to_string(axis_total) +
                                      " along axis " + std::to_string(axis) + ", result has " +
                                      std::to_string(y.dims[size_t(axis)]));
  auto* dst = static_cast<std::byte*>(y.data);
  exec::parallel_for(out.outer, exec::worth_parallel(y.numel()), [&](int64_t o) {
    std::byte* row = dst + size_t(o * y.dims[size_t(axis)] * out.inner) * bytes;
    for (const View& x : args.inputs) {
      const size_t block = size_t(x.dims[size_t(axis)] * out.inner) * bytes;
      std::memcpy(row, static_cast<const std::byte*>(x.data) + size_t(o) * block, block);
      row += block;
    }
  });
}

void split(const KernelArgs& args) {
  const View& x = args.inputs[0];
  const int64_t axis = require_axis(args.op, ir::params_of<ir::SplitParams>(args.op).axis, x.rank());
  const size_t bytes = element_bytes(x);
  const Blocks in = blocks_around(x, axis);
  int64_t axis_total = 0;
  for (const View& y : args.outputs) {
    check_piece(args.op, y, x, axis);
    axis_total += y.dims[size_t(axis)];
  }
  require_same_dtype(args, {0});
  if (axis_total != x.dims[size_t(axis)])
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": results add up to " + std::to_string(axis_total) +
                                      " along axis " + std::to_string(axis) + ", operand has " +
                                      std::to_string(x.dims[size_t(axis)]));
  const auto* src = static_cast<const std::byte*>(x.data);
  exec::parallel_for(in.outer, exec::worth_parallel(x.numel()), [&](int64_t o) {
    const std::byte* row = src + size_t(o * x.dims[size_t(axis)] * in.inner) * bytes;
    for (const View& y : args.outputs) {
      const size_t block = size_t(y.dims[size_t(axis)] * in.inner) * bytes;
      std::memcpy(static_cast<std::byte*>(y.data) + size_t(o) * block, row, block);
      row += block;
    }
  });
}

void gather(const KernelArgs& args) {
  const View &data = args.inputs[0], &idx = args.inputs[1], &y = args.outputs[0];
  if (idx.dtype != DType::i32 && idx.dtype != DType::i64) throw_unsupported_dtype(args.op, idx.dtype);
  require_same_dtype(args, {0});
  const int64_t axis = require_axis(args.op, ir::params_of<ir::AxisParams>(args.op).axis, data.rank());
  const Blocks b = blocks_around(data, axis);
  const int64_t size = data.dims[size_t(axis)];
  if (y.numel() != b.outer * idx.numel() * b.inner)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": result " + dims_string(y.dims) + " does not match data " +
                                      dims_string(data.dims) + " gathered by " + dims_string(idx.dims));
  const std::vector<int64_t> indices = gather_indices(args, axis, size);
  const size_t block = size_t(b.inner) * element_bytes(y);
  const auto* src = static_cast<const std::byte*>(data.data);
  auto* dst = static_cast<std::byte*>(y.data);
  const int64_t count = int64_t(indices.size());
  exec::parallel_for(b.outer * count, exec::worth_parallel(y.numel()), [&](int64_t t) {
    const int64_t o = t / count, j = t % count;
    std::memcpy(dst + size_t(t) * block, src + size_t(o * size + indices[size_t(j)]) * block, block);
  });
}

void pad(const KernelArgs& args) {
  require_same_dtype(args, {0});
  const View &x = args.inputs[0], &y = args.outputs[0];
  const ir::PadParams& params = ir::params_of<ir::PadParams>(args.op);
  const std::vector<int64_t>& pads = params.pads;
  const size_t rank = x.dims.size();
  bool fits = pads.size() == 2 * rank && y.dims.size() == rank;
  // y - x - lo == hi rather than x + lo + hi == y: huge pads must not overflow on the way to a refusal.
  for (size_t d = 0; fits && d < rank; ++d)
    fits = pads[2 * d] >= 0 && pads[2 * d + 1] >= 0 && y.dims[d] >= x.dims[d] &&
           y.dims[d] - x.dims[d] - pads[2 * d] == pads[2 * d + 1];
  if (!fits)
    throw Error(ErrorKind::shape, ir::op_place(args.op) + ": pads do not take " + dims_string(x.dims) + " to " +
                                      dims_string(y.dims) + " (non-negative [lo0, hi0, lo1, hi1, ...] expected)");
  dispatch_dtype(AllDTypes{}, y.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    const auto fill = storage_from_double<E>(params.value);
    auto* out = y.as<typename E::Storage>();
    for_each_range(y.numel(), [&](int64_t begin, int64_t end) { std::fill(out + begin, out + end, fill); });
  });
  // Scatter x into the interior: walk x in order, writing through the result's strides.
  const std::vector<int64_t> out_strides = contiguous_strides(y.dims);
  std::array<int64_t, 1> interior{0};
  for (size_t d = 0; d < rank; ++d)
    interior[0] += pads[2 * d] * out_strides[d];
  const StridedLoop<1> loop(x.dims, {out_strides}, interior);
  const int64_t stride = loop.inner_stride(0); // 1 unless x's trailing dims are all 1
  dispatch_element_size(element_bytes(y), [&](auto word) {
    using W = decltype(word);
    const W* src = x.as<const W>();
    W* dst = y.as<W>();
    for_each_chunk(loop, [&](int64_t in_offset, std::array<int64_t, 1> out_offset, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        dst[out_offset[0] + i * stride] = src[in_offset + i];
    });
  });
}

} // namespace kiln::interp
