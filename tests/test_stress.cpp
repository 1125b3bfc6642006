// The short form of tools/stress: threads calling one callable across evictions and promotions,
// every result checked against the single-threaded interpreter.
#include "kiln_config.h"
#include "load/stress.hpp"
#include <doctest/doctest.h>

using namespace kiln;

namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMeasuresMemory = false; // ASan's quarantine holds freed memory on purpose
#else
constexpr bool kMeasuresMemory = true;
#endif
} // namespace

TEST_CASE("four threads calling one callable through evictions and promotions agree with the interpreter") {
  tools::StressOptions options;
  options.threads = 4;
  options.calls_per_thread = 4'000;
  options.warmup_calls_per_thread = 1'000;
  const tools::StressReport report = tools::run_stress(options);
  MESSAGE(tools::format_report(options, report));
  CHECK(report.calls == options.threads * (options.calls_per_thread + options.warmup_calls_per_thread));
  CHECK(report.mismatches == 0);
  CHECK(report.errors == 0);
  CHECK(report.first_problem.empty());
  CHECK(report.totals.evictions > 0);
#if KILN_HAS_JIT
  CHECK(report.totals.promotions > 0);
  CHECK(report.totals.failed_promotions == 0);
#endif
  if (kMeasuresMemory) CHECK(double(report.rss_after_run) <= 1.1 * double(report.rss_after_warmup));
}
