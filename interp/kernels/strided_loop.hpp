#pragma once
#include "interp/kernels/kernel_support.hpp"
#include <array>

namespace kiln::interp {

// The iteration space of a loop that walks a contiguous output in C order while N operands are
// read (or written) through their own element strides. Dims of size 1 are dropped and adjacent
// dims merged wherever every operand is contiguous across them, so "same shape" becomes one flat
// row and a row or column broadcast two dims; the kernels then run a tight innermost loop.
template <size_t N> class StridedLoop {
public:
  StridedLoop(std::span<const int64_t> dims, const std::array<std::vector<int64_t>, N>& strides,
              std::array<int64_t, N> base = {})
      : base_(base) {
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) continue;
      if (!dims_.empty() && merges(dims[d], strides, d)) {
        dims_.back() *= dims[d];
        for (size_t k = 0; k < N; ++k)
          strides_[k].back() = strides[k][d];
        continue;
      }
      dims_.push_back(dims[d]);
      for (size_t k = 0; k < N; ++k)
        strides_[k].push_back(strides[k][d]);
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      for (auto& s : strides_)
        s.push_back(0);
    }
    for (size_t d = 0; d + 1 < dims_.size(); ++d)
      rows_ *= dims_[d];
  }

  int64_t inner() const { return dims_.back(); }
  int64_t rows() const { return rows_; }
  int64_t inner_stride(size_t k) const { return strides_[k].back(); }
  // Element offsets of each operand at the start of the first innermost row (row_offsets(0)).
  const std::array<int64_t, N>& first_row_offsets() const { return base_; }
  // Element offsets of each operand at the start of innermost row `row`.
  std::array<int64_t, N> row_offsets(int64_t row) const {
    std::array<int64_t, N> offsets = base_;
    for (size_t d = dims_.size() - 1; d-- > 0;) {
      const int64_t index = row % dims_[d];
      row /= dims_[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += index * strides_[k][d];
    }
    return offsets;
  }

private:
  bool merges(int64_t size, const std::array<std::vector<int64_t>, N>& strides, size_t d) const {
    for (size_t k = 0; k < N; ++k)
      if (strides_[k].back() != strides[k][d] * size) return false;
    return true;
  }

  std::vector<int64_t> dims_;
  std::array<std::vector<int64_t>, N> strides_;
  std::array<int64_t, N> base_;
  int64_t rows_ = 1; // the product of every dim but the innermost
};

// The loop of an elementwise op with numpy broadcasting: each operand's dims are right-aligned
// with the output's and read with stride 0 along the dims where it has size 1. Its inner strides
// are therefore 0 (broadcast) or 1. kiln::Error(shape) when an operand does not broadcast.
template <size_t N>
StridedLoop<N> broadcast_loop(std::span<const int64_t> out_dims,
                              const std::array<std::span<const int64_t>, N>& operand_dims, const ir::Op& op) {
  const size_t rank = out_dims.size();
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    std::span<const int64_t> dims = operand_dims[k];
    bool fits = dims.size() <= rank;
    strides[k].assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = 0; fits && i < dims.size(); ++i) {
      const size_t d = rank - 1 - i;
      const int64_t size = dims[dims.size() - 1 - i];
      fits = size == out_dims[d] || size == 1;
      strides[k][d] = size == 1 ? 0 : stride;
      stride *= size;
    }
    if (!fits)
      throw Error(ErrorKind::shape, ir::op_place(op) + ": operand " + std::to_string(k) + " " + dims_string(dims) +
                                        " does not broadcast to " + dims_string(out_dims));
  }
  return StridedLoop<N>(out_dims, strides);
}

// Calls body(out_offset, operand_offsets, count) over the loop in chunks of at most kChunk
// innermost elements, in parallel when the loop is large. Operand k's elements in a chunk are
// operand_offsets[k] + i * loop.inner_stride(k) for i in [0, count).
template <size_t N, class Body> void for_each_chunk(const StridedLoop<N>& loop, Body&& body) {
  const int64_t inner = loop.inner(), rows = loop.rows();
  if (inner == 0 || rows == 0) return;
  // One row within a chunk (a small tensor): no tasks to split it into, no index arithmetic.
  if (rows == 1 && inner <= kChunk) return body(0, loop.first_row_offsets(), inner);
  const int64_t chunks_per_row = (inner + kChunk - 1) / kChunk;
  exec::parallel_for(rows * chunks_per_row, exec::worth_parallel(rows * inner), [&](int64_t task) {
    const int64_t row = task / chunks_per_row, begin = (task % chunks_per_row) * kChunk;
    std::array<int64_t, N> offsets = loop.row_offsets(row);
    for (size_t k = 0; k < N; ++k)
      offsets[k] += begin * loop.inner_stride(k);
    body(row * inner + begin, offsets, std::min(kChunk, inner - begin));
  });
}

} // namespace kiln::interp
