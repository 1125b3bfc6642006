#include "jit/dnnl/scratch.hpp"
#include <kiln/error.hpp>
#include <new>
#include <string>

namespace kiln::jitc::dnnl_ops {

void Scratch::AlignedDelete::operator()(std::byte* p) const {
  ::operator delete(p, std::align_val_t(kScratchAlignment));
}

Scratch::Scratch(std::span<std::byte> given, size_t needed) : rest_(given) {
  if (needed == 0 || !given.empty()) return;
  owned_.reset(static_cast<std::byte*>(::operator new(needed, std::align_val_t(kScratchAlignment))));
  rest_ = std::span(owned_.get(), needed);
}

void* Scratch::take(size_t bytes) {
  const size_t piece = scratch_piece(bytes);
  if (piece > rest_.size()) {
    throw Error(ErrorKind::internal, "jitc::dnnl_ops: a primitive took " + std::to_string(piece) +
                                         " bytes of scratch, " + std::to_string(rest_.size()) + " were left");
  }
  void* data = rest_.data();
  rest_ = rest_.subspan(piece);
  return data;
}

} // namespace kiln::jitc::dnnl_ops
