#pragma once
#include <cstdint>
#include <kiln/tensor.hpp>
#include <memory>

namespace kiln::detail {

// The graph a symbolic tensor is a value of. What staging does is the trace layer's
// (trace::FunctionBuilder derives from this); a tensor needs only to tell whether it has one.
class StagingGraph {
protected:
  StagingGraph() = default;
  ~StagingGraph() = default; // owners hold the derived type's shared_ptr, which deletes it as such
};

struct TensorImpl {
  TensorLayout layout;
  // Concrete tensors: storage owner and the first element (64-byte aligned unless wrapped). On an
  // accelerator (layout.device), storage is the tensor's DeviceBuffer (core/device_buffer.hpp)
  // and data is null: nothing reads device memory as host memory.
  std::shared_ptr<void> storage;
  void* data = nullptr;
  // Symbolic tensors: the graph under construction and the value id in it (an ir::ValueId, kept as
  // a plain integer so that core does not depend on the IR; trace/builder.hpp checks they agree).
  std::shared_ptr<StagingGraph> graph;
  uint32_t value = 0;
};

// Allocates a 64-byte aligned block (at least one byte, zero-initialised when asked).
std::shared_ptr<void> allocate_aligned(size_t bytes, bool zero);

// A concrete tensor of `layout` whose `bytes` of data (64-byte aligned, uninitialised) share one
// allocation with the TensorImpl itself, so `storage` stays empty: whatever keeps the tensor alive
// keeps its data. The caller has checked `bytes` (check_allocation_size).
std::shared_ptr<TensorImpl> make_concrete_impl(TensorLayout layout, size_t bytes);

} // namespace kiln::detail
