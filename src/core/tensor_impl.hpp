#pragma once
#include <cstdint>
#include <kiln/tensor.hpp>
#include <memory>

namespace kiln::trace {
class FunctionBuilder;
}

namespace kiln::detail {

struct TensorImpl {
  TensorLayout layout;
  // Concrete tensors: storage owner and the first element (64-byte aligned unless wrapped).
  std::shared_ptr<void> storage;
  void* data = nullptr;
  // Symbolic tensors: the graph under construction and the value id in it (an ir::ValueId, kept as
  // a plain integer so that core does not depend on the IR; trace/builder.hpp checks they agree).
  std::shared_ptr<trace::FunctionBuilder> builder;
  uint32_t value = 0;
};

// Allocates a 64-byte aligned block (at least one byte, zero-initialised when asked).
std::shared_ptr<void> allocate_aligned(size_t bytes, bool zero);

} // namespace kiln::detail
