#pragma once
#include "cli/tier_option.hpp"
#include <ostream>
#include <string>
#include <vector>

namespace kiln::tools {

struct BenchOptions {
  std::vector<std::string> workloads; // empty: every case of bench_case_names()
  // Timed after the warm-up calls and any promotion they start.
  std::string tier = kDefaultTier;
  std::string device = "cpu"; // --device: where hot signatures are promoted (tier_policy)
  int threads = 2;            // the peers of WORKLOADS.md are measured with 2 threads
  // Caller threads: 0 times single calls only; N > 0 also measures calls/s with 1..N threads each
  // calling the case in a loop, beside a control loop without kiln from as many threads.
  int caller_threads = 0;
  std::string json_path; // empty: no JSON file
  double time_s = 2.0;   // timed calls per case run for about this long
};

// The workloads of WORKLOADS.md, then "oneop": `x + 1` on an f32 [16] tensor, whose median is
// the per-call overhead of a compiled callable (argument checks, cache lookup, dispatch, output).
const std::vector<std::string>& bench_case_names();

// `kiln bench`: times every benchmark case of the chosen workloads (random weights and inputs: the
// timings do not depend on the values), prints a table and optionally writes it as JSON.
void run_bench(const BenchOptions& options, std::ostream& out);

} // namespace kiln::tools
