#pragma once
#include "ir/graph.hpp"
#include <memory>
#include <span>

namespace kiln::exec {

// One concrete value inside an execution plan: data pointer, dtype and static dims (C order,
// contiguous). Views are cheap and never own memory.
struct View {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::span<const int64_t> dims;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  int64_t rank() const { return int64_t(dims.size()); }
  template <class T> T* as() const { return static_cast<T*>(data); }
};

// What a kernel gets: the op (kind, attributes), its input views and preallocated output views
// (sized from the op's inferred static result types). Kernels never allocate outputs.
struct KernelArgs {
  const ir::Op& op;
  std::span<const View> inputs;
  std::span<const View> outputs;
  // Working memory the kernel asked for (KernelScratch), from the plan's arena, so that the arena's
  // peak is the call's peak.
  std::span<std::byte> scratch = {};
  // What the kernel's prepare (KernelPrepare) derived from the op and these dims when the plan was
  // built; null for kernels without one.
  const void* prepared = nullptr;
};

using Kernel = void (*)(const KernelArgs&);
// The bytes of working memory a kernel needs for an op over views of these dims (data unset); 0 for
// most kernels.
using KernelScratch = size_t (*)(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs);

// What a kernel derives once from an op and its static dims (checked shapes, loop extents, strides,
// thread split), owned by the plan step and read by every call through KernelArgs::prepared.
using PreparedState = std::shared_ptr<const void>;
// Checks an op over views of these dims (data unset) and derives its kernel's state; throws
// kiln::Error naming the op for shapes the kernel cannot run, so they fail when the plan is built.
using KernelPrepare = PreparedState (*)(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs);

} // namespace kiln::exec
