#pragma once
#include <atomic>
#include <cstddef>

namespace kiln::detail {

// A small number of the calling thread, handed out in the order threads first ask: shards of
// per-call counters and pools start from it, so threads calling at once write different cache lines.
inline size_t thread_slot() {
  static std::atomic<size_t> next{0};
  thread_local size_t slot = 0; // 0: not yet handed out (constant-initialised: no guard per call)
  if (slot == 0) slot = next.fetch_add(1, std::memory_order_relaxed) + 1;
  return slot - 1;
}

} // namespace kiln::detail
