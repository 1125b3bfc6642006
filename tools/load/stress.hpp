#pragma once
#include <cstddef>
#include <cstdint>
#include <kiln/session.hpp>
#include <string>
#include <vector>

// Many threads calling one compiled callable with mixed batch sizes through a session whose cache
// is smaller than the set of signatures (evictions, so promotions keep happening), each result
// compared with the interpreter's, computed single-threaded beforehand. Used by tools/stress (full
// size) and tests/test_stress.cpp (a short form in CI).
namespace kiln::tools {

struct StressOptions {
  int threads = 8;
  int64_t calls_per_thread = 10'000;
  int64_t warmup_calls_per_thread = 1'000; // before the resident memory baseline is taken
  size_t cache_capacity = 3;
  // Most calls take one of the first two batch sizes; one in eight a rarer one, which evicts.
  std::vector<int64_t> batches{1, 4, 2, 3, 5, 7, 8};
  uint64_t seed = 42;
};

struct StressReport {
  int64_t calls = 0;
  int64_t mismatches = 0;
  int64_t errors = 0; // calls that threw
  std::string first_problem;
  SessionTotals totals;        // compiles, evictions and promotions over the whole run
  size_t rss_after_warmup = 0; // bytes
  size_t rss_after_run = 0;
  double seconds = 0;
};

StressReport run_stress(const StressOptions& options);
// A few lines for people: calls, mismatches, errors, RSS before/after, calls per second.
std::string format_report(const StressOptions& options, const StressReport& report);

} // namespace kiln::tools
