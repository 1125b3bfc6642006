#pragma once
#include <cstddef>
#include <memory>
#include <span>

namespace kiln::jitc::dnnl_ops {

// oneDNN's scratchpads and the activations a primitive keeps in its own layout are 64-byte aligned.
inline constexpr size_t kScratchAlignment = 64;
constexpr size_t scratch_piece(size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

// Working memory for one execute, handed out in aligned pieces in the order they are taken. A plan
// gives a piece of its arena (each wrapper's scratch_bytes() says how much), so the arena's peak is
// the call's; a caller that gives none (a test, a one-off execute) gets a buffer owned here.
class Scratch {
public:
  Scratch(std::span<std::byte> given, size_t needed);
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // Throws kiln::Error(internal) when the pieces taken exceed what was given.
  void* take(size_t bytes);

private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, AlignedDelete> owned_;
  std::span<std::byte> rest_;
};

} // namespace kiln::jitc::dnnl_ops
