#include "runtime/grace_period.hpp"
#include <thread>

namespace kiln::runtime {

bool GracePeriod::drained(unsigned phase) const {
  for (const Shard& shard : shards_)
    if (shard.active[phase].load() != 0) return false;
  return true;
}

// Two flips: a reader that read the phase just before the first flip may count itself in the old
// phase after the first wait looked; the second flip and wait cover it.
void GracePeriod::wait() {
  std::lock_guard lock(waiting_);
  for (int round = 0; round < 2; ++round) {
    const unsigned old_phase = phase_.load();
    phase_.store(old_phase ^ 1u);
    while (!drained(old_phase))
      std::this_thread::yield();
  }
}

} // namespace kiln::runtime
