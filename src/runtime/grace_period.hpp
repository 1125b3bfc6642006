#pragma once
#include "core/thread_slot.hpp"
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace kiln::runtime {

// Lets a writer free what concurrent readers may still be using without the readers writing a
// shared cache line per call (as a shared_ptr copy would): a reader counts its section in its own
// thread's shard, and wait() returns once every section begun before it has ended (sleepable RCU
// with two phases). Readers never block. A thread must not wait() inside a section of the same
// GracePeriod: it would wait for itself.
class GracePeriod {
public:
  // Begins a section of the thread with this detail::thread_slot(); leave() with what it returns
  // ends it.
  std::atomic<uint64_t>* enter(size_t thread_slot = detail::thread_slot()) {
    std::atomic<uint64_t>* counter = &shards_[thread_slot % kShards].active[phase_.load()];
    counter->fetch_add(1); // before the section reads a pointer a writer may retire
    return counter;
  }
  static void leave(std::atomic<uint64_t>* counter) { counter->fetch_sub(1, std::memory_order_release); }

  class Section {
  public:
    explicit Section(GracePeriod& period, size_t thread_slot = detail::thread_slot())
        : counter_(period.enter(thread_slot)) {}
    ~Section() { leave(counter_); }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

  private:
    std::atomic<uint64_t>* counter_;
  };

  // Returns once every section begun before the call has ended. What a writer unpublished before
  // calling it is no longer read by anyone.
  void wait();

private:
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, 2> active{}; // sections now running, per phase
  };
  bool drained(unsigned phase) const;
  std::array<Shard, kShards> shards_{};
  std::atomic<unsigned> phase_{0};
  std::mutex waiting_; // one waiter flips the phases at a time
};

} // namespace kiln::runtime
