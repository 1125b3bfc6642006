#include "bench/bench.hpp"
#include "cli/summary.hpp"
#include "cli/tier_option.hpp"
#include "io/atomic_file.hpp"
#include "workloads.hpp"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kiln/kiln.hpp>
#include <nlohmann/json.hpp>
#include <thread>

namespace kiln::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kWeightSeed = 2024, kInputSeed = 11;
constexpr int kWarmupCalls = 3;
constexpr int kMinTimedCalls = 5;
const std::string kOneOp = "oneop";

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Calls per second of `threads` caller threads together, kiln's and the control loop's.
struct Throughput {
  int threads = 0;
  double calls_per_s = 0;
  double control_per_s = 0;
};

struct CaseResult {
  std::string workload;
  std::vector<int64_t> input_dims;
  double build_ms = 0;      // tracing plus weight binding: compile(...)(spec)
  double first_call_ms = 0; // specialisation and executable building included
  double median_ms = 0;
  size_t timed_calls = 0;
  SignatureStats stats{};
  std::vector<Throughput> throughput; // --caller-threads: 1..N threads
};

Tensor case_forward(const std::string& name, const Tensor& x) {
  if (name == kOneOp) return x + 1.0;
  return workload_forward(name, x);
}

// A static shape: the one-op case measures the cheapest call, without symbolic dims to bind.
TensorLayout case_input_layout(const std::string& name) {
  if (name == kOneOp) return TensorLayout(DType::f32, {16});
  return workload_input_layout(name);
}

std::vector<std::vector<int64_t>> case_input_dims(const std::string& name) {
  if (name == kOneOp) return {{16}};
  return benchmark_input_dims(name);
}

std::map<std::string, Tensor> case_weights(const std::string& name) {
  if (name == kOneOp) return {};
  return deterministic_weights(name, kWeightSeed);
}

// Calls per second of `threads` threads each calling `call(thread index)` in a loop for about
// `time_s` seconds, started together.
template <class Call> double calls_per_second(int threads, double time_s, const Call& call) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<uint64_t> calls(size_t(threads), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load())
        std::this_thread::yield();
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        call(t);
        ++n;
      }
      calls[size_t(t)] = n;
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  const auto start = Clock::now();
  go.store(true);
  std::this_thread::sleep_for(std::chrono::duration<double>(time_s));
  stop.store(true);
  for (std::thread& thread : pool)
    thread.join();
  const double seconds = ms_since(start) / 1e3;
  uint64_t total = 0;
  for (uint64_t n : calls)
    total += n;
  return double(total) / seconds;
}

// The control: what the one-op case computes (a fresh output, x + 1), written by hand, no kiln.
void control_call(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] + 1.0f;
  volatile float sink = y.empty() ? 0.0f : y[0]; // keeps the loop from being elided
  (void)sink;
}

// Throughput of `callable` with 1..max_threads caller threads, each with its own input.
template <class Callable>
std::vector<Throughput> measure_throughput(const Callable& callable, const std::vector<int64_t>& dims, int max_threads,
                                           double time_s) {
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> control_inputs;
  for (int t = 0; t < max_threads; ++t) {
    inputs.push_back(Tensor::randn(dims, kInputSeed));
    control_inputs.emplace_back(size_t(numel_of(dims)), 1.0f);
  }
  std::vector<Throughput> out;
  for (int threads = 1; threads <= max_threads; ++threads)
    out.push_back({threads, calls_per_second(threads, time_s, [&](int t) { callable(inputs[size_t(t)]); }),
                   calls_per_second(threads, time_s, [&](int t) { control_call(control_inputs[size_t(t)]); })});
  return out;
}

// One case at one input shape, in a session of its own so the statistics are the case's alone.
CaseResult bench_case(const std::string& name, const std::vector<int64_t>& dims,
                      const std::map<std::string, Tensor>& weights, const TierPolicy& policy, double time_s,
                      int caller_threads) {
  CaseResult result{name, dims};
  auto session = std::make_shared<Session>(policy);
  session->weights().set_all(weights);
  auto forward = [name](const Tensor& x) { return case_forward(name, x); };
  auto start = Clock::now();
  CompileOptions compile_options;
  compile_options.name = name;
  compile_options.session = session;
  auto callable = compile(forward, compile_options)(case_input_layout(name));
  result.build_ms = ms_since(start);

  const Tensor x = Tensor::randn(dims, kInputSeed);
  start = Clock::now();
  callable(x);
  result.first_call_ms = ms_since(start);
  for (int i = 0; i < kWarmupCalls; ++i)
    callable(x);
  session->wait_for_promotions();

  std::vector<double> timed_ms;
  const auto timing_start = Clock::now();
  while (timed_ms.size() < size_t(kMinTimedCalls) || ms_since(timing_start) < time_s * 1e3) {
    start = Clock::now();
    callable(x);
    timed_ms.push_back(ms_since(start));
  }
  result.median_ms = median(timed_ms);
  result.timed_calls = timed_ms.size();
  result.stats = session->stats().at(0);
  if (caller_threads > 0) result.throughput = measure_throughput(callable, dims, caller_threads, time_s);
  return result;
}

std::string lowerings_text(const std::map<std::string, int>& ops_per_lowering) {
  std::string text;
  for (const auto& [lowering, ops] : ops_per_lowering)
    text += (text.empty() ? "" : " ") + lowering + ":" + std::to_string(ops);
  return text.empty() ? "-" : text;
}

void print_table(const std::vector<CaseResult>& results, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-18s %-11s %10s %10s %7s %11s %11s %11s %9s  %s\n", "workload", "input",
                "tier", "first ms", "median ms", "calls", "arena KiB", "weight KiB", "const KiB", "jit ms",
                "ops per lowering");
  out << line;
  for (const CaseResult& r : results) {
    std::snprintf(line, sizeof line, "%-12s %-18s %-11s %10.3f %10.4f %7zu %11.1f %11.1f %11.1f %9.2f  %s\n",
                  r.workload.c_str(), shape_to_string(shape_from_dims(r.input_dims)).c_str(), r.stats.tier.c_str(),
                  r.first_call_ms, r.median_ms, r.timed_calls, double(r.stats.arena_bytes) / 1024.0,
                  double(r.stats.weight_bytes) / 1024.0, double(r.stats.constant_bytes) / 1024.0,
                  r.stats.jit_compile_ms, lowerings_text(r.stats.ops_per_lowering).c_str());
    out << line;
    if (!r.stats.jit_error.empty())
      out << "  (" << r.workload << ": JIT promotion failed: " << r.stats.jit_error << ")\n";
  }
  bool header = false;
  for (const CaseResult& r : results)
    for (const Throughput& t : r.throughput) {
      if (!header) {
        std::snprintf(line, sizeof line, "\n%-12s %-18s %-11s %7s %14s %14s %9s %9s\n", "workload", "input", "tier",
                      "callers", "calls/s", "control/s", "speedup", "control");
        out << line;
        header = true;
      }
      const Throughput& one = r.throughput.front();
      std::snprintf(line, sizeof line, "%-12s %-18s %-11s %7d %14.0f %14.0f %8.2fx %8.2fx\n", r.workload.c_str(),
                    shape_to_string(shape_from_dims(r.input_dims)).c_str(), r.stats.tier.c_str(), t.threads,
                    t.calls_per_s, t.control_per_s, t.calls_per_s / one.calls_per_s,
                    t.control_per_s / one.control_per_s);
      out << line;
    }
  for (const CaseResult& r : results) {
    if (r.workload != kOneOp) continue;
    std::snprintf(line, sizeof line, "per-call overhead (%s, %s tier): %.2f us median\n", kOneOp.c_str(),
                  r.stats.tier.c_str(), r.median_ms * 1e3);
    out << line;
  }
}

nlohmann::json to_json(const BenchOptions& options, const std::vector<CaseResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : results) {
    nlohmann::json throughput = nlohmann::json::array();
    for (const Throughput& t : r.throughput)
      throughput.push_back(
          {{"caller_threads", t.threads}, {"calls_per_s", t.calls_per_s}, {"control_calls_per_s", t.control_per_s}});
    cases.push_back({{"workload", r.workload},
                     {"input", r.input_dims},
                     {"batch", r.input_dims.at(0)},
                     {"tier", r.stats.tier},
                     {"build_ms", r.build_ms},
                     {"first_call_ms", r.first_call_ms},
                     {"median_ms", r.median_ms},
                     {"timed_calls", r.timed_calls},
                     {"arena_peak_bytes", r.stats.arena_bytes},
                     {"weight_bytes", r.stats.weight_bytes},
                     {"constant_bytes", r.stats.constant_bytes},
                     {"device_bytes", r.stats.device_bytes},
                     {"interp_compile_ms", r.stats.interp_compile_ms},
                     {"jit_compile_ms", r.stats.jit_compile_ms},
                     {"ops_per_lowering", r.stats.ops_per_lowering},
                     {"jit_error", r.stats.jit_error},
                     {"throughput", throughput}});
  }
  return {{"tier", options.tier},       {"device", options.device},
          {"threads", options.threads}, {"caller_threads", options.caller_threads},
          {"time_s", options.time_s},   {"cases", cases}};
}

} // namespace

const std::vector<std::string>& bench_case_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = workload_names();
    all.push_back(kOneOp);
    return all;
  }();
  return names;
}

void run_bench(const BenchOptions& options, std::ostream& out) {
  if (options.threads < 1) throw Error(ErrorKind::spec, "--threads must be at least 1");
  if (options.caller_threads < 0) throw Error(ErrorKind::spec, "--caller-threads must be at least 0");
  if (!(options.time_s > 0)) throw Error(ErrorKind::spec, "--time-s must be positive");
  // The interpreter reads the thread count once, at its first kernel call: set it before any run.
  setenv("KILN_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  const TierPolicy policy = tier_policy(options.tier, options.device);
  const std::vector<std::string>& names = options.workloads.empty() ? bench_case_names() : options.workloads;
  for (const std::string& name : names)
    if (name != kOneOp) check_workload_name(name);

  std::vector<CaseResult> results;
  for (const std::string& name : names) {
    const std::map<std::string, Tensor> weights = case_weights(name);
    for (const std::vector<int64_t>& dims : case_input_dims(name))
      results.push_back(bench_case(name, dims, weights, policy, options.time_s, options.caller_threads));
  }
  print_table(results, out);
  if (options.json_path.empty()) return;
  // Replacing invalid UTF-8 (a JIT error text, say) keeps dump() from throwing after the runs are done.
  const std::string text =
      to_json(options, results).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  io::write_file_atomic(options.json_path, [&](std::ostream& os) { os << text; });
  out << "wrote " << options.json_path << "\n";
}

} // namespace kiln::tools
