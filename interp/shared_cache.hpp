#pragma once
#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::interp {

// Values shared by everyone holding them and found by key equality, kept only while held: what
// lets plans (one per signature and tier) share packed weights and precomputed values. Keys are
// compared linearly; a process holds a few entries per weight.
template <class Key, class Value> class SharedCache {
public:
  // The live value for `key`, or make()'s result, built under the lock so that concurrent plans
  // over the same weights build it once.
  template <class Make> std::shared_ptr<const Value> get(const Key& key, Make&& make) {
    std::lock_guard lock(mutex_);
    std::erase_if(entries_, [](const Entry& e) { return e.second.expired(); });
    for (const Entry& e : entries_)
      if (e.first == key)
        if (auto live = e.second.lock()) return live;
    auto value = std::make_shared<const Value>(make());
    entries_.emplace_back(key, value);
    return value;
  }

private:
  using Entry = std::pair<Key, std::weak_ptr<const Value>>;
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

} // namespace kiln::interp
