#include "runtime/executable_cache.hpp"
#include <algorithm>
#include <optional>

namespace kiln::runtime {

void CacheEntry::promote(std::shared_ptr<const Executable> exe) {
  const Executable* raw = exe.get();
  jit.store(std::move(exe), std::memory_order_release);
  jit_serving_.store(raw, std::memory_order_release);
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
  s.interp_compile_ms = interp_compile_ms;
  const runtime::ExecutableMemory memory = serving->memory();
  s.arena_bytes = memory.arena_bytes;
  s.weight_bytes = memory.weight_bytes;
  s.constant_bytes = memory.constant_bytes;
  s.device_bytes = memory.device_bytes;
  s.ops_per_lowering = serving->ops_per_lowering();
  const std::shared_ptr<const Executable> promoted = jit.load(std::memory_order_acquire);
  for (CallCounts::Tier tier : {CallCounts::interp, CallCounts::promoted})
    if (const uint64_t n = calls.total(tier)) {
      s.calls_per_tier[tier == CallCounts::interp ? "interp" : promoted ? std::string(promoted->tier()) : "jit"] = n;
      s.calls += n;
    }
  s.total_ms = calls.estimated_total_ms();
  s.median_ms = calls.median_ms();
  std::lock_guard lock(mutex_);
  s.jit_compile_ms = jit_compile_ms_;
  s.jit_error = jit_error_;
  return s;
}

std::shared_ptr<CacheEntry> ExecutableCache::get_or_build(const std::string& key, const Builder& build, bool* built,
                                                          uint64_t* epoch) {
  if (built) *built = false;
  // Made only on a miss: a promise allocates its shared state, and a hit must allocate nothing.
  std::optional<std::promise<std::shared_ptr<CacheEntry>>> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      touch(*it->second);
      if (epoch) *epoch = epoch_.load();
      return it->second;
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
    {
      std::lock_guard lock(mutex_);
      insert_locked(key, entry);
      if (epoch) *epoch = epoch_.load();
      pending_.erase(key);
      promise->set_value(entry);
    }
    free_evicted();
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
  touch(*entry);
  index_.insert_or_assign(key, std::move(entry));
  while (index_.size() > capacity_) {
    auto oldest = index_.begin();
    for (auto it = index_.begin(); it != index_.end(); ++it)
      if (it->second->last_use.load(std::memory_order_relaxed) <
          oldest->second->last_use.load(std::memory_order_relaxed))
        oldest = it;
    evict_locked(oldest);
  }
}

// The entry leaves the index now; it is freed by free_evicted() once no warm call can be using it.
void ExecutableCache::evict_locked(std::unordered_map<std::string, std::shared_ptr<CacheEntry>>::iterator it) {
  evicted_.push_back(std::move(it->second));
  index_.erase(it);
  epoch_.fetch_add(1);
  evictions_.fetch_add(1, std::memory_order_relaxed);
}

// Called without the lock and outside any section of grace().
void ExecutableCache::free_evicted() {
  std::vector<std::shared_ptr<CacheEntry>> freeing;
  {
    std::lock_guard lock(mutex_);
    freeing.swap(evicted_);
  }
  if (freeing.empty()) return;
  grace_.wait();
}

void ExecutableCache::count_promotion(bool succeeded) {
  (succeeded ? promotions_ : failed_promotions_).fetch_add(1, std::memory_order_relaxed);
}

SessionTotals ExecutableCache::totals() const {
  return {builds_.load(std::memory_order_relaxed), evictions_.load(std::memory_order_relaxed),
          promotions_.load(std::memory_order_relaxed), failed_promotions_.load(std::memory_order_relaxed)};
}

void ExecutableCache::retire_stale(const WeightRegistry& registry) {
  {
    std::lock_guard lock(mutex_);
    for (auto it = index_.begin(); it != index_.end();) {
      const auto& versions = it->second->registry_versions;
      const bool stale = std::any_of(versions.begin(), versions.end(), [&](const auto& weight) {
        return registry.version(weight.first) != weight.second;
      });
      auto next = std::next(it);
      if (stale) evict_locked(it);
      it = next;
    }
  }
  free_evicted();
}

std::vector<std::shared_ptr<CacheEntry>> ExecutableCache::entries() const {
  std::vector<std::shared_ptr<CacheEntry>> out;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, entry] : index_)
      out.push_back(entry);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a->last_use.load(std::memory_order_relaxed) > b->last_use.load(std::memory_order_relaxed);
  });
  return out;
}

size_t ExecutableCache::size() const {
  std::lock_guard lock(mutex_);
  return index_.size();
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
