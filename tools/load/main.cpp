// kiln-stress: the full load test (tools/stress runs it). Exit status 1 on any mismatch, error or
// resident memory growing more than 10 % after warm-up.
#include "load/stress.hpp"
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  kiln::tools::StressOptions options;
  CLI::App app("Many threads calling one compiled callable, checked against the interpreter", "kiln-stress");
  app.add_option("--threads", options.threads, "calling threads")->check(CLI::Range(1, 1024));
  app.add_option("--calls", options.calls_per_thread, "measured calls per thread")->check(CLI::PositiveNumber);
  app.add_option("--warmup", options.warmup_calls_per_thread, "warm-up calls per thread")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cache-capacity", options.cache_capacity, "signatures the session keeps")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const kiln::tools::StressReport report = kiln::tools::run_stress(options);
    std::fputs(kiln::tools::format_report(options, report).c_str(), stdout);
    const bool memory_ok = double(report.rss_after_run) <= 1.1 * double(report.rss_after_warmup);
    if (!memory_ok) std::puts("FAIL: resident memory grew more than 10 % after warm-up");
    return report.mismatches == 0 && report.errors == 0 && memory_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-stress: %s\n", e.what());
    return 1;
  }
}
