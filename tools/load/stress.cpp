#include "load/stress.hpp"
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <kiln/kiln.hpp>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>

namespace kiln::tools {

namespace {

// The JIT's polynomial transcendentals and oneDNN's summation order differ from the interpreter
// by up to about 1e-5 relative here; a real disagreement (a wrong plan, a torn weight) is far larger.
constexpr double kTolerance = 1e-4;

Tensor model(const Tensor& x) {
  auto weight = [](const char* name, std::vector<Dim> dims) {
    return F::constant_external(name, TensorLayout(DType::f32, std::move(dims)));
  };
  Tensor h = F::gelu(F::linear(x, weight("fc1.weight", {64, 32}), weight("fc1.bias", {64})));
  Tensor y = F::linear(F::tanh(h) * 0.5 + h, weight("fc2.weight", {16, 64}), weight("fc2.bias", {16}));
  return F::softmax(y);
}

std::map<std::string, Tensor> model_weights() {
  return {{"fc1.weight", Tensor::randn({64, 32}, 1) * 0.2f},
          {"fc1.bias", Tensor::randn({64}, 2)},
          {"fc2.weight", Tensor::randn({16, 64}, 3) * 0.2f},
          {"fc2.bias", Tensor::randn({16}, 4)}};
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * size_t(sysconf(_SC_PAGESIZE));
}

// Where got and expected disagree, a description of the first place; empty when they agree.
std::string first_difference(const Tensor& expected, const Tensor& got) {
  if (expected.dims() != got.dims()) return "dims differ";
  const float* e = expected.data<float>();
  const float* g = got.data<float>();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const bool agree = std::isnan(e[i]) ? std::isnan(g[i]) : std::abs(g[i] - e[i]) <= kTolerance * (1 + std::abs(e[i]));
    if (!agree)
      return "element " + std::to_string(i) + ": expected " + std::to_string(e[i]) + ", got " + std::to_string(g[i]);
  }
  return "";
}

struct Workload {
  std::vector<Tensor> inputs;   // one per batch size
  std::vector<Tensor> expected; // the single-threaded interpreter's results
};

Workload prepare(const StressOptions& options, const std::map<std::string, Tensor>& weights) {
  TierPolicy interpreter_only;
  interpreter_only.mode = JitMode::off;
  auto reference = compile(model, {.weights = weights, .session = std::make_shared<Session>(interpreter_only)})(
      TensorLayout(DType::f32, {"batch", 32}));
  Workload w;
  for (int64_t batch : options.batches) {
    w.inputs.push_back(Tensor::randn({batch, 32}, options.seed + uint64_t(batch)));
    w.expected.push_back(reference(w.inputs.back()));
  }
  return w;
}

} // namespace

StressReport run_stress(const StressOptions& options) {
  const std::map<std::string, Tensor> weights = model_weights();
  const Workload work = prepare(options, weights);
  // The environment's policy (KILN_JIT, KILN_PROMOTE_AFTER...); by default promoted after two calls
  // on the session's background thread.
  auto session = std::make_shared<Session>(TierPolicy::from_env(), options.cache_capacity);
  auto run = compile(model, {.weights = weights, .session = session})(TensorLayout(DType::f32, {"batch", 32}));

  StressReport report;
  std::mutex problem_mutex;
  std::atomic<int64_t> calls{0}, mismatches{0}, errors{0};
  auto note = [&](const std::string& what) {
    std::lock_guard lock(problem_mutex);
    if (report.first_problem.empty()) report.first_problem = what;
  };
  auto caller = [&](int thread, int64_t count) {
    std::mt19937_64 random(options.seed * 7919 + uint64_t(thread));
    const size_t hot = std::min<size_t>(2, work.inputs.size());
    for (int64_t i = 0; i < count; ++i) {
      const size_t pick =
          random() % 8 != 0 || work.inputs.size() == hot ? random() % hot : hot + random() % (work.inputs.size() - hot);
      try {
        const std::string diff = first_difference(work.expected[pick], run(work.inputs[pick]));
        if (!diff.empty()) {
          mismatches.fetch_add(1);
          note("batch " + std::to_string(options.batches[pick]) + ": " + diff);
        }
      } catch (const std::exception& e) {
        errors.fetch_add(1);
        note(e.what());
      }
      calls.fetch_add(1, std::memory_order_relaxed);
    }
  };
  // The same threads warm up and then run, so their thread-local buffers and malloc arenas exist
  // before the baseline is taken; the barrier's completion step takes it.
  std::chrono::steady_clock::time_point start;
  std::barrier after_warmup(options.threads, [&]() noexcept {
    session->wait_for_promotions();
    report.rss_after_warmup = resident_bytes();
    start = std::chrono::steady_clock::now();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t)
    threads.emplace_back([&, t] {
      caller(t, options.warmup_calls_per_thread);
      after_warmup.arrive_and_wait();
      caller(t, options.calls_per_thread);
    });
  for (std::thread& t : threads)
    t.join();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  session->wait_for_promotions();
  report.rss_after_run = resident_bytes();

  report.calls = calls.load();
  report.mismatches = mismatches.load();
  report.errors = errors.load();
  report.totals = session->totals();
  return report;
}

std::string format_report(const StressOptions& options, const StressReport& report) {
  char text[1024];
  const double measured = double(options.threads) * double(options.calls_per_thread);
  std::snprintf(text, sizeof text,
                "threads %d, calls %lld (%lld warm-up), cache capacity %zu, %zu batch sizes\n"
                "mismatches %lld, errors %lld\n"
                "signatures compiled %llu, evictions %llu, promotions %llu (%llu failed)\n"
                "resident memory after warm-up %.1f MiB, after the run %.1f MiB (%+.1f %%)\n"
                "%.0f calls/s over %.2f s\n",
                options.threads, static_cast<long long>(report.calls),
                static_cast<long long>(options.threads * options.warmup_calls_per_thread), options.cache_capacity,
                options.batches.size(), static_cast<long long>(report.mismatches),
                static_cast<long long>(report.errors),
                static_cast<unsigned long long>(report.totals.signatures_compiled),
                static_cast<unsigned long long>(report.totals.evictions),
                static_cast<unsigned long long>(report.totals.promotions),
                static_cast<unsigned long long>(report.totals.failed_promotions),
                double(report.rss_after_warmup) / (1 << 20), double(report.rss_after_run) / (1 << 20),
                100.0 * (double(report.rss_after_run) / double(report.rss_after_warmup) - 1), measured / report.seconds,
                report.seconds);
  std::string out = text;
  if (!report.first_problem.empty()) out += "first problem: " + report.first_problem + "\n";
  return out;
}

} // namespace kiln::tools
