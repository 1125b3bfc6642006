#include "runtime/executable_cache.hpp"
#include <algorithm>
#include <optional>

namespace kiln::runtime {

namespace {
constexpr size_t kRecent = 1024;
}

void CacheEntry::record_call(std::string_view tier, double ms) {
  calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (recent_ms_.capacity() < kRecent) recent_ms_.reserve(kRecent); // once: later calls allocate nothing
  if (recent_ms_.size() < kRecent)
    recent_ms_.push_back(ms);
  else
    recent_ms_[next_slot_] = ms;
  next_slot_ = (next_slot_ + 1) % kRecent;
  total_ms_ += ms;
  ++calls_per_tier_[std::string(tier)];
}

void CacheEntry::record_promotion(double ms, const std::string& error) {
  std::lock_guard lock(mutex_);
  jit_compile_ms_ = ms;
  jit_error_ = error;
}

SignatureStats CacheEntry::stats() const {
  SignatureStats s;
  s.callable = callable;
  s.signature = signature;
  auto serving = current();
  s.tier = std::string(serving->tier());
  s.calls = calls.load();
  s.interp_compile_ms = interp_compile_ms;
  const runtime::ExecutableMemory memory = serving->memory();
  s.arena_bytes = memory.arena_bytes;
  s.weight_bytes = memory.weight_bytes;
  s.constant_bytes = memory.constant_bytes;
  s.ops_per_lowering = serving->ops_per_lowering();
  std::lock_guard lock(mutex_);
  s.calls_per_tier = calls_per_tier_;
  s.total_ms = total_ms_;
  s.jit_compile_ms = jit_compile_ms_;
  s.jit_error = jit_error_;
  if (!recent_ms_.empty()) {
    std::vector<double> sorted = recent_ms_;
    std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
    s.median_ms = sorted[sorted.size() / 2];
  }
  return s;
}

std::shared_ptr<CacheEntry> ExecutableCache::get_or_build(const std::string& key, const Builder& build, bool* built) {
  if (built) *built = false;
  // Made only on a miss: a promise allocates its shared state, and a hit must allocate nothing.
  std::optional<std::promise<std::shared_ptr<CacheEntry>>> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
    if (auto it = pending_.find(key); it != pending_.end()) {
      auto future = it->second;
      lock.unlock();
      return future.get(); // another thread is building this signature
    }
    pending_[key] = promise.emplace().get_future().share();
  }
  try {
    auto entry = build();
    builds_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    insert_locked(key, entry);
    pending_.erase(key);
    promise->set_value(entry);
    if (built) *built = true;
    return entry;
  } catch (...) {
    std::lock_guard lock(mutex_);
    pending_.erase(key);
    promise->set_exception(std::current_exception());
    throw;
  }
}

void ExecutableCache::insert_locked(const std::string& key, std::shared_ptr<CacheEntry> entry) {
  lru_.emplace_front(key, std::move(entry));
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ExecutableCache::count_promotion(bool succeeded) {
  (succeeded ? promotions_ : failed_promotions_).fetch_add(1, std::memory_order_relaxed);
}

SessionTotals ExecutableCache::totals() const {
  return {builds_.load(std::memory_order_relaxed), evictions_.load(std::memory_order_relaxed),
          promotions_.load(std::memory_order_relaxed), failed_promotions_.load(std::memory_order_relaxed)};
}

void ExecutableCache::retire_stale(const WeightRegistry& registry) {
  std::lock_guard lock(mutex_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    const auto& versions = it->second->registry_versions;
    const bool stale = std::any_of(versions.begin(), versions.end(),
                                   [&](const auto& weight) { return registry.version(weight.first) != weight.second; });
    if (!stale) {
      ++it;
      continue;
    }
    index_.erase(it->first);
    it = lru_.erase(it);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<std::shared_ptr<CacheEntry>> ExecutableCache::entries() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<CacheEntry>> out;
  for (const auto& [key, entry] : lru_)
    out.push_back(entry);
  return out;
}

size_t ExecutableCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

CompileQueue::CompileQueue() : thread_([this] { loop(); }) {}

CompileQueue::~CompileQueue() { shutdown(); }

void CompileQueue::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  idle_.notify_all();
  std::lock_guard join_lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
}

void CompileQueue::push(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void CompileQueue::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return (jobs_.empty() || stopping_) && !busy_; });
}

void CompileQueue::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return; // pending promotions are dropped: the interpreter keeps serving
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    job(); // jobs catch their own errors
    lock.lock();
    busy_ = false;
    if (jobs_.empty() || stopping_) idle_.notify_all();
  }
}

} // namespace kiln::runtime
