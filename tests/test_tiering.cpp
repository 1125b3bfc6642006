#include "kiln_config.h"
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kiln;

namespace {

std::shared_ptr<Session> session_with(JitMode mode, int promote_after = 2, bool async = true) {
  TierPolicy p;
  p.mode = mode;
  p.promote_after = promote_after;
  p.async = async;
  return std::make_shared<Session>(p, 16);
}

// A small model touching both tiers' lowerings: linear + gelu, an elementwise chain, softmax.
auto model(const TensorLayout& w_layout) {
  return [w_layout](Tensor x) {
    Tensor h = F::gelu(
        F::linear(x, F::constant_external("w", w_layout), F::constant_external("b", TensorLayout(DType::f32, {16}))));
    Tensor e = F::tanh(h * 1.5 + 0.25) * F::sigmoid(h) - 0.1 * h;
    return F::softmax(e, -1);
  };
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return worst;
}

} // namespace

TEST_CASE("a hot signature is promoted in the background while threads keep calling, with the same results") {
  TensorLayout w_layout(DType::f32, {16, 8});
  std::map<std::string, Tensor> weights{{"w", Tensor::randn({16, 8}, 3)}, {"b", Tensor::randn({16}, 4)}};
  auto reference = compile(model(w_layout), {.weights = weights, .session = session_with(JitMode::off)})(
      TensorLayout(DType::f32, {"batch", 8}));
  auto session = session_with(JitMode::automatic, 2, true);
  auto tiered =
      compile(model(w_layout), {.weights = weights, .session = session})(TensorLayout(DType::f32, {"batch", 8}));
  Tensor x = Tensor::randn({33, 8}, 5);
  Tensor expected = reference(x);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i)
        if (max_abs_diff(tiered(x), expected) > 1e-5f) ++bad; // tolerance: JIT approximations of tanh/erf/exp
    });
  for (auto& t : threads)
    t.join();
  session->wait_for_promotions();
  CHECK(bad.load() == 0);
  auto stats = session->stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].calls == 240);
#if KILN_HAS_JIT
  CHECK(stats[0].tier == "jit");
  CHECK(stats[0].jit_error == "");
  CHECK(stats[0].jit_compile_ms > 0.0);
  CHECK(stats[0].calls_per_tier.count("interp") == 1); // the interpreter served while the JIT compiled
  CHECK(max_abs_diff(tiered(x), expected) <= 1e-5f);
#else
  CHECK(stats[0].tier == "interp");
  CHECK(stats[0].jit_error == "the JIT tier is not linked into this build");
#endif
}

TEST_CASE("KILN_JIT=off keeps every signature on the interpreter") {
  auto session = session_with(JitMode::off);
  auto run = compile([](Tensor x) { return F::exp(x); }, {.session = session})(TensorLayout(DType::f32, {4}));
  for (int i = 0; i < 5; ++i)
    run(Tensor::zeros({4}));
  session->wait_for_promotions();
  CHECK(session->stats().at(0).tier == "interp");
  CHECK(session->stats().at(0).calls_per_tier.at("interp") == 5);
}

TEST_CASE("the tier policy reads the environment") {
  setenv("KILN_JIT", "always", 1);
  setenv("KILN_PROMOTE_AFTER", "5", 1);
  setenv("KILN_JIT_ASYNC", "0", 1);
  TierPolicy p = TierPolicy::from_env();
  CHECK(p.mode == JitMode::always);
  CHECK(p.promote_after == 5);
  CHECK_FALSE(p.async);
  setenv("KILN_JIT", "sometimes", 1);
  CHECK_THROWS_WITH_AS(
      TierPolicy::from_env(),
      "spec error: environment variable KILN_JIT='sometimes': expected off, auto, always, automatic, 0 or 1", Error);
  setenv("KILN_JIT", "OFF", 1); // spellings are case-insensitive
  CHECK(TierPolicy::from_env().mode == JitMode::off);
  setenv("KILN_JIT_ASYNC", "no", 1);
  CHECK_FALSE(TierPolicy::from_env().async);
  setenv("KILN_JIT_ASYNC", "maybe", 1);
  CHECK_THROWS_AS(TierPolicy::from_env(), Error);
  setenv("KILN_JIT_ASYNC", "0", 1);
  setenv("KILN_JIT", "auto", 1);
  setenv("KILN_PROMOTE_AFTER", "-1", 1);
  CHECK_THROWS_AS(TierPolicy::from_env(), Error);
  unsetenv("KILN_PROMOTE_AFTER");
  CHECK(TierPolicy::from_env().promote_to == "jit");
  setenv("KILN_PROMOTE_TO", " Accelerator ", 1);
  CHECK(TierPolicy::from_env().promote_to == "accelerator");
  setenv("KILN_PROMOTE_TO", "gpu", 1);
  CHECK_THROWS_WITH_AS(TierPolicy::from_env(),
                       "spec error: environment variable KILN_PROMOTE_TO='gpu': expected jit or accelerator", Error);
  unsetenv("KILN_PROMOTE_TO");
  unsetenv("KILN_JIT");
  unsetenv("KILN_PROMOTE_AFTER");
  unsetenv("KILN_JIT_ASYNC");
}

// Every knob is checked when a session is made, so a bad value never surfaces later on the compile
// thread, inside a kernel or at exit.
TEST_CASE("a session refuses a bad KILN_* variable when it is created") {
  const std::vector<std::pair<const char*, const char*>> bad{
      {"KILN_NUM_THREADS", "0"},   {"KILN_CACHE_CAPACITY", "abc"},  {"KILN_JIT_ISA", "AVX512F"},
      {"KILN_JIT_ASYNC", "maybe"}, {"KILN_JIT_MATMUL", "mkl"},      {"KILN_PACK_WEIGHTS", "2"},
      {"KILN_LOG", "tiers,bogus"}, {"KILN_MAX_TENSOR_BYTES", "-1"}, {"KILN_PROMOTE_AFTER", "1e3"},
      {"KILN_PROMOTE_TO", "cuda"}};
  for (const auto& [name, value] : bad) {
    CAPTURE(name);
    setenv(name, value, 1);
    try {
      Session session;
      FAIL("accepted " << name << "=" << value);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::spec);
      CHECK(std::string(e.what()).find(std::string(name) + "='" + value + "'") != std::string::npos);
      CHECK(std::string(e.what()).find("expected") != std::string::npos);
    }
    unsetenv(name);
  }
  setenv("KILN_JIT_ISA", "AVX2", 1); // case-insensitive, accepted
  CHECK_NOTHROW(Session());
  unsetenv("KILN_JIT_ISA");
}

namespace {
// Waits for child; kills it (SIGKILL, reported in status) when it takes longer than limit.
bool wait_or_kill(pid_t child, std::chrono::milliseconds limit, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}
} // namespace

// The default session's compile thread used oneDNN state that static destructors had already torn
// down (24 of 30 runs crashed on an AVX-512 machine). Each run must exit cleanly.
TEST_CASE("returning from main while promotions are in flight never crashes") {
  constexpr int kRuns = 50;
  int failures = 0;
  for (int run = 0; run < kRuns; ++run) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Through the exec prefix where the build has one (qemu-aarch64 in the aarch64 cross build).
      if (KILN_TEST_EXEC_PREFIX[0] == '\0')
        execl(KILN_TEST_EXIT_PROGRAM, KILN_TEST_EXIT_PROGRAM, static_cast<char*>(nullptr));
      else
        execl("/bin/sh", "sh", "-c", KILN_TEST_EXEC_PREFIX KILN_TEST_EXIT_PROGRAM, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (!wait_or_kill(child, std::chrono::seconds(30), status)) MESSAGE("run " << run << " hung at exit");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
      const std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "exit status " + std::to_string(WEXITSTATUS(status));
      MESSAGE("run " << run << ": " << how);
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("session totals count compiles, evictions and promotions of evicted signatures too") {
  TierPolicy policy;
  policy.promote_after = 1; // one interpreter call, then the JIT
  policy.async = false;     // promotions finish inside the call that triggers them
  auto session = std::make_shared<Session>(policy, 1);
  auto scale = [](Tensor x) { return F::tanh(x) * 2.0; };
  auto run = compile(scale, {.session = session})(TensorLayout(DType::f32, {"n"}));
  for (int round = 0; round < 3; ++round)
    for (int64_t n : {3, 5}) { // alternating signatures evict each other from a one-entry cache
      run(Tensor::ones({n}));
      run(Tensor::ones({n})); // the second call promotes
    }
  const SessionTotals totals = session->totals();
  CHECK(totals.signatures_compiled == 6);
  CHECK(totals.evictions == 5);
  CHECK(session->stats().size() == 1);
  CHECK(totals.promotions == (KILN_HAS_JIT ? 6 : 0)); // no JIT tier linked: nothing to compile
  CHECK(totals.failed_promotions == 0);
}

TEST_CASE("promote_after = N means N interpreter calls, then the JIT, synchronous or not") {
  for (int n : {0, 1, 3}) {
    CAPTURE(n);
    auto session = session_with(JitMode::automatic, n, false);
    auto f = compile([](Tensor x) { return F::tanh(x) + 1.0; }, {.session = session})(TensorLayout(DType::f32, {4}));
    std::vector<std::string> served;
    for (int call = 0; call < n + 2; ++call) {
      f(Tensor::ones({4}));
      served.push_back(f.core()->last_tier());
    }
    std::vector<std::string> want(size_t(n), "interp");
    want.resize(size_t(n + 2), KILN_HAS_JIT ? "jit" : "interp");
    CHECK(served == want);
  }
}
