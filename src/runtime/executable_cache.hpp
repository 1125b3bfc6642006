#pragma once
#include "runtime/executable.hpp"
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
struct CacheEntry {
  std::string callable;  // graph name
  std::string signature; // human-readable: "0=f32[4, 2]"
  std::shared_ptr<const ir::Function> graph;
  WeightMap weights;
  // The registry weights it was built with and their versions: set() of one makes the entry stale.
  std::vector<std::pair<std::string, uint64_t>> registry_versions;
  std::shared_ptr<const Executable> interp;
  std::atomic<std::shared_ptr<const Executable>> jit;
  std::atomic<uint64_t> calls{0};
  std::atomic<bool> promotion_started{false};
  double interp_compile_ms = 0;

  // The executable serving calls now.
  std::shared_ptr<const Executable> current() const {
    auto j = jit.load(std::memory_order_acquire);
    return j ? j : interp;
  }
  void record_call(std::string_view tier, double ms);
  void record_promotion(double ms, const std::string& error);
  SignatureStats stats() const;

private:
  mutable std::mutex mutex_;
  std::vector<double> recent_ms_; // ring of the last kRecent call times
  size_t next_slot_ = 0;
  double total_ms_ = 0;
  std::map<std::string, uint64_t> calls_per_tier_;
  double jit_compile_ms_ = 0;
  std::string jit_error_;
};

// LRU map from signature key to entry, shared by every callable of a session. Concurrent misses on
// one key build it once; the others wait for that build (no recompile storms).
class ExecutableCache {
public:
  explicit ExecutableCache(size_t capacity) : capacity_(capacity) {}
  using Builder = std::function<std::shared_ptr<CacheEntry>()>;
  // The entry for key; builds it with `build` when missing. `built` tells whether this call built it.
  std::shared_ptr<CacheEntry> get_or_build(const std::string& key, const Builder& build, bool* built = nullptr);
  std::vector<std::shared_ptr<CacheEntry>> entries() const;
  // Drops the entries built with an older version of a registry weight than `registry` holds now:
  // no key can reach them again, and they hold that version's packed forms. Counted as evictions.
  void retire_stale(const WeightRegistry& registry);
  size_t capacity() const { return capacity_; }
  size_t size() const;
  // Counted by the promotion jobs of this cache's entries.
  void count_promotion(bool succeeded);
  SessionTotals totals() const;

private:
  void insert_locked(const std::string& key, std::shared_ptr<CacheEntry> entry);
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<CacheEntry>>> lru_; // front: most recent
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<CacheEntry>>> pending_;
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
