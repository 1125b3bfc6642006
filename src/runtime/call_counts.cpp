#include "runtime/call_counts.hpp"
#include <algorithm>

namespace kiln::runtime {

void CallCounts::record_time(double ms) {
  std::lock_guard lock(mutex_);
  if (recent_ms_.capacity() < kRecent) recent_ms_.reserve(kRecent); // once: later calls allocate nothing
  if (recent_ms_.size() < kRecent)
    recent_ms_.push_back(ms);
  else
    recent_ms_[next_slot_] = ms;
  next_slot_ = (next_slot_ + 1) % kRecent;
  timed_ms_ += ms;
  ++timed_calls_;
}

uint64_t CallCounts::total(Tier tier) const {
  uint64_t sum = 0;
  for (const Shard& shard : shards_)
    sum += shard.calls[tier].load(std::memory_order_relaxed);
  return sum;
}

double CallCounts::median_ms() const {
  std::lock_guard lock(mutex_);
  if (recent_ms_.empty()) return 0;
  std::vector<double> sorted = recent_ms_;
  std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
  return sorted[sorted.size() / 2];
}

double CallCounts::estimated_total_ms() const {
  const uint64_t calls = total();
  std::lock_guard lock(mutex_);
  if (timed_calls_ == 0) return 0;
  // Exact while every call was timed (the first kAlwaysTimed of each shard).
  return timed_calls_ >= calls ? timed_ms_ : timed_ms_ / double(timed_calls_) * double(calls);
}

} // namespace kiln::runtime
