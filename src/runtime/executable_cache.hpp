#pragma once
#include "runtime/call_counts.hpp"
#include "runtime/executable.hpp"
#include "runtime/grace_period.hpp"
#include "runtime/signature_types.hpp"
#include <atomic>
#include <condition_variable>
#include <future>
#include <kiln/session.hpp>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace kiln::runtime {

// One cached signature: its static graph, bound weights, the interpreter executable and, once
// promoted, the JIT executable (swapped in atomically).
struct CacheEntry : std::enable_shared_from_this<CacheEntry> {
  std::string callable;  // graph name
  std::string signature; // human-readable: "0=f32[4, 2]"
  std::shared_ptr<const ir::Function> graph;
  SignatureTypes types; // of the graph's arguments and outputs, flat: what a warm call compares
  WeightMap weights;
  // The registry weights it was built with and their versions: set() of one makes the entry stale.
  std::vector<std::pair<std::string, uint64_t>> registry_versions;
  std::shared_ptr<const Executable> interp;
  std::atomic<std::shared_ptr<const Executable>> jit; // owns what serving() points to once promoted
  std::atomic<bool> promotion_started{false};
  double interp_compile_ms = 0;
  CallCounts calls;
  std::atomic<uint64_t> last_use{0}; // the cache's recency stamp (LRU)

  // The executable serving calls now. The raw pointer is for a call that the entry outlives (the
  // cache's grace period, or a shared_ptr to the entry); it lives as long as the entry.
  const Executable* serving() const {
    const Executable* j = jit_serving_.load(std::memory_order_acquire);
    return j ? j : interp.get();
  }
  std::shared_ptr<const Executable> current() const {
    auto j = jit.load(std::memory_order_acquire);
    return j ? j : interp;
  }
  // Swaps the JIT executable in: later calls run it.
  void promote(std::shared_ptr<const Executable> exe);
  void record_promotion(double ms, const std::string& error);
  SignatureStats stats() const;

private:
  std::atomic<const Executable*> jit_serving_{nullptr};
  mutable std::mutex mutex_;
  double jit_compile_ms_ = 0;
  std::string jit_error_;
};

// Map from signature key to entry, shared by every callable of a session, least recently used
// evicted first. Concurrent misses on one key build it once; the others wait for that build (no
// recompile storms). The lock is taken only to look up by key, insert or evict: a callable's warm
// call holds its last entry (ExecutableCache::held) and checks only the eviction epoch, stamping
// recency with touch().
class ExecutableCache {
public:
  explicit ExecutableCache(size_t capacity) : capacity_(capacity) {}
  using Builder = std::function<std::shared_ptr<CacheEntry>()>;
  // The entry for key; builds it with `build` when missing. `built` tells whether this call built
  // it; `epoch` gets the eviction epoch read while the entry was in the cache.
  std::shared_ptr<CacheEntry> get_or_build(const std::string& key, const Builder& build, bool* built = nullptr,
                                           uint64_t* epoch = nullptr);
  // Most recently used first.
  std::vector<std::shared_ptr<CacheEntry>> entries() const;
  // Drops the entries built with an older version of a registry weight than `registry` holds now:
  // no key can reach them again, and they hold that version's packed forms. Counted as evictions.
  void retire_stale(const WeightRegistry& registry);
  size_t capacity() const { return capacity_; }
  size_t size() const;
  // Counted by the promotion jobs of this cache's entries.
  void count_promotion(bool succeeded);
  SessionTotals totals() const;

  // Changes whenever an entry leaves the cache. An entry looked up at epoch E is still cached
  // (and alive) while epoch() == E, read inside a Section of grace(): evicted entries are freed
  // only after the sections running at their eviction have ended.
  uint64_t epoch() const { return epoch_.load(); }
  GracePeriod& grace() { return grace_; }
  // Marks `entry` most recently used; writes nothing when it already is.
  void touch(CacheEntry& entry) {
    const uint64_t now = clock_.load(std::memory_order_relaxed);
    if (entry.last_use.load(std::memory_order_relaxed) != now)
      entry.last_use.store(clock_.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

private:
  void insert_locked(const std::string& key, std::shared_ptr<CacheEntry> entry);
  void evict_locked(std::unordered_map<std::string, std::shared_ptr<CacheEntry>>::iterator it);
  void free_evicted();
  size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<CacheEntry>> index_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<CacheEntry>>> pending_;
  std::vector<std::shared_ptr<CacheEntry>> evicted_; // freed once the grace period has passed
  std::atomic<uint64_t> clock_{1}, epoch_{0};        // stamps start above a new entry's 0
  GracePeriod grace_;
  std::atomic<uint64_t> builds_{0}, evictions_{0}, promotions_{0}, failed_promotions_{0};
};

// The session's background compile thread: runs promotion jobs in order.
class CompileQueue {
public:
  CompileQueue();
  ~CompileQueue(); // shutdown()
  // Queues a job; dropped once shutdown() has begun (the interpreter keeps serving).
  void push(std::function<void()> job);
  void wait_idle();
  // Drops the pending jobs, waits for the running one and stops the thread. Idempotent.
  void shutdown();

private:
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::list<std::function<void()>> jobs_;
  bool busy_ = false, stopping_ = false;
  std::mutex join_mutex_; // shutdown() from two threads joins once
  std::thread thread_;
};

} // namespace kiln::runtime
