#pragma once
#include "core/thread_slot.hpp"
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace kiln::runtime {

// The calls of one cached signature per tier, counted in per-thread shards (one counter written by
// every calling thread would bounce its cache line between cores on every call), and the times of
// a sample of them: each shard's first kAlwaysTimed calls on a tier, then one in kTimedEvery.
class CallCounts {
public:
  enum Tier { interp = 0, promoted = 1 }; // promoted: the JIT or the accelerator (TierPolicy::promote_to)
  static constexpr uint64_t kAlwaysTimed = 16, kTimedEvery = 64;

  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, 2> calls{}; // per Tier
  };
  // The shard of the thread with this detail::thread_slot().
  Shard& shard(size_t thread_slot = detail::thread_slot()) { return shards_[thread_slot % shards_.size()]; }
  // Whether the call that follows `shard_calls` calls of its shard on its tier is timed.
  static bool timed(uint64_t shard_calls) { return shard_calls < kAlwaysTimed || shard_calls % kTimedEvery == 0; }
  void record_time(double ms);

  uint64_t total(Tier tier) const;
  uint64_t total() const { return total(interp) + total(promoted); }
  // Over the sampled calls: the median of the most recent ones, and the total estimated from
  // their mean times every call counted.
  double median_ms() const;
  double estimated_total_ms() const;

private:
  static constexpr size_t kRecent = 1024;
  std::array<Shard, 8> shards_{};
  mutable std::mutex mutex_; // the timed calls' ring
  std::vector<double> recent_ms_;
  size_t next_slot_ = 0;
  double timed_ms_ = 0;
  uint64_t timed_calls_ = 0;
};

} // namespace kiln::runtime
