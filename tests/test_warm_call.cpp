// The warm call (issue 25): a call with the held entry's signature checks integers and runs; every
// change that must leave that path (a weight set, an eviction, another signature or structure, a
// cleared cache) does, with the results and statistics of the full path.
#include "kiln_config.h"
#include "runtime/grace_period.hpp"
#include "scoped_env.hpp"
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <thread>

using namespace kiln;

namespace {

TierPolicy sync_policy(JitMode mode, int promote_after = 2) { return TierPolicy{mode, promote_after, false}; }

Tensor add_one(const Tensor& x) { return x + 1.0f; }

// Every element of `t` (f32) equals `value`.
bool all_equal(const Tensor& t, float value) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.data<float>()[i] != value) return false;
  return true;
}

} // namespace

TEST_CASE("calls per tier are exact after many warm calls from several threads; times are sampled") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::automatic, 3));
  auto f = compile(add_one, {.session = session})(TensorLayout(DType::f32, {16}));
  const Tensor x = Tensor::zeros({16});
  for (int i = 0; i < 4; ++i) // three on the interpreter; the fourth promotes and runs on the JIT
    f(x);
  constexpr int kThreads = 4, kCalls = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      std::vector<Tensor> y{Tensor::empty({16})};
      for (int i = 0; i < kCalls; ++i)
        (i % 2 ? f(x) : (f.call_into(y, x), y[0]));
    });
  for (std::thread& thread : threads)
    thread.join();
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.calls == uint64_t(4 + kThreads * kCalls));
  if (KILN_HAS_JIT) {
    CHECK(stats.calls_per_tier.at("interp") == 3);
    CHECK(stats.calls_per_tier.at("jit") == uint64_t(1 + kThreads * kCalls));
    CHECK(stats.tier == "jit");
  } else { // no JIT tier linked (the aarch64 build): every call stays on the interpreter
    CHECK(stats.calls_per_tier.at("interp") == uint64_t(4 + kThreads * kCalls));
    CHECK(!stats.calls_per_tier.contains("jit"));
    CHECK(stats.tier == "interp");
  }
  CHECK(stats.median_ms > 0);
  CHECK(stats.total_ms >= stats.median_ms);
}

TEST_CASE("a weight set between warm calls rebuilds the readers and their next call reads the new value") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::off));
  session->weights().set("bias", Tensor::full({4}, 1.0));
  session->weights().set("unread", Tensor::zeros({1}));
  auto f = compile([](Tensor x) { return x + F::constant_external("bias", TensorLayout(DType::f32, {4})); },
                   {.session = session})(TensorLayout(DType::f32, {4}));
  const Tensor x = Tensor::zeros({4});
  for (int i = 0; i < 3; ++i)
    CHECK(all_equal(f(x), 1.0f));
  session->weights().set("unread", Tensor::ones({1})); // not read by f: its entry stays
  CHECK(all_equal(f(x), 1.0f));
  CHECK(session->totals().signatures_compiled == 1);
  session->weights().set("bias", Tensor::full({4}, 5.0));
  std::vector<Tensor> y{Tensor::empty({4})};
  f.call_into(y, x);
  CHECK(all_equal(y[0], 5.0f));
  CHECK(all_equal(f(x), 5.0f));
  CHECK(session->totals().signatures_compiled == 2);
  CHECK(session->totals().evictions == 1); // the entry of the old version
}

TEST_CASE("an entry evicted while a callable holds it is not served again; the next call rebuilds it") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::off), 1);
  auto f = compile(add_one, {.name = "f", .session = session})(TensorLayout(DType::f32, {8}));
  auto g = compile([](Tensor x) { return x * 3.0f; }, {.name = "g", .session = session})(TensorLayout(DType::f32, {8}));
  const Tensor x = Tensor::ones({8});
  for (int i = 0; i < 3; ++i)
    CHECK(all_equal(f(x), 2.0f));
  CHECK(all_equal(g(x), 3.0f)); // evicts f's entry from the one-entry cache
  CHECK(session->totals().evictions == 1);
  CHECK(all_equal(f(x), 2.0f)); // rebuilt, not the freed entry
  CHECK(session->totals().signatures_compiled == 3);
  CHECK(session->stats().at(0).callable == "f");
}

TEST_CASE("another signature after warm calls compiles it, and the first is served again after it") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::off));
  auto f = compile(add_one, {.session = session})(TensorLayout(DType::f32, {"n"}));
  for (int i = 0; i < 3; ++i)
    CHECK(f(Tensor::zeros({4})).dims() == std::vector<int64_t>{4});
  const Tensor five = f(Tensor::zeros({5}));
  CHECK(five.dims() == std::vector<int64_t>{5});
  CHECK(all_equal(five, 1.0f));
  CHECK(f(Tensor::zeros({4})).dims() == std::vector<int64_t>{4});
  CHECK(session->totals().signatures_compiled == 2);
  // A dtype the spec does not allow is still the full check's error, named.
  CHECK_THROWS_WITH_AS(f(Tensor::zeros({4}, DType::f64)), doctest::Contains("expected f32"), Error);
  // call_into's outputs are checked in full once they do not fit.
  std::vector<Tensor> wrong{Tensor::empty({3})};
  CHECK_THROWS_WITH_AS(f.call_into(wrong, Tensor::zeros({4})), doctest::Contains("output 0"), Error);
}

TEST_CASE("another container size or baked scalar after warm calls gets the full check and its error") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::off));
  auto sum = compile([](const std::vector<Tensor>& xs, double scale) { return (xs[0] + xs[1]) * scale; },
                     {.session = session});
  const TensorLayout layout(DType::f32, {2});
  auto f = sum(std::vector<TensorLayout>{layout, layout}, 2.0);
  const std::vector<Tensor> two{Tensor::ones({2}), Tensor::ones({2})};
  for (int i = 0; i < 3; ++i)
    CHECK(all_equal(f(two, 2.0), 4.0f));
  const std::vector<Tensor> three{Tensor::ones({2}), Tensor::ones({2}), Tensor::ones({2})};
  CHECK_THROWS_WITH_AS(f(three, 2.0), doctest::Contains("do not match the callable's inputs"), Error);
  CHECK_THROWS_WITH_AS(f(two, 3.0), doctest::Contains("expected 2, got 3"), Error);
  CHECK(all_equal(f(two, 2.0), 4.0f));
}

TEST_CASE("kiln::jit's warm call counts hits exactly, and retraces after clear_cache and on a new shape") {
  JitOptions options;
  options.dynamic = Dynamic::off;
  options.compile.session = std::make_shared<Session>(sync_policy(JitMode::off));
  auto f = kiln::jit(add_one, options);
  const Tensor x = Tensor::zeros({6});
  for (int i = 0; i < 10; ++i)
    CHECK(all_equal(f(x), 1.0f));
  JitStats stats = f.stats();
  CHECK(stats.misses == 1);
  CHECK(stats.hits == 9);
  CHECK(stats.per_entry.at(0).calls == 10);
  CHECK(f(Tensor::zeros({7})).dims() == std::vector<int64_t>{7});
  CHECK(f.stats().misses == 2);
  f.clear_cache();
  CHECK(all_equal(f(x), 1.0f));
  stats = f.stats();
  CHECK(stats.misses == 1);
  CHECK(stats.hits == 0);
  f.set_fail_on_recompile(true);
  CHECK(all_equal(f(x), 1.0f)); // the held entry still serves
  CHECK_THROWS_WITH_AS(f(Tensor::zeros({9})), doctest::Contains("fail_on_recompile"), Error);
}

TEST_CASE("kiln::jit with one entry: alternating shapes evict the held entry and stay correct") {
  JitOptions options;
  options.dynamic = Dynamic::off;
  options.capacity = 1;
  options.recompile_limit = 100;
  options.compile.session = std::make_shared<Session>(sync_policy(JitMode::off));
  auto f = kiln::jit(add_one, options);
  for (int round = 0; round < 5; ++round)
    for (int64_t n : {3, 4}) {
      const Tensor y = f(Tensor::full({n}, double(round)));
      CHECK(y.dims() == std::vector<int64_t>{n});
      CHECK(all_equal(y, float(round) + 1.0f));
    }
  CHECK(f.stats().evictions == 9);
  CHECK(f.stats().entries == 1);
}

TEST_CASE("warm calls from threads stay correct while another thread evicts and sets weights") {
  auto session = std::make_shared<Session>(sync_policy(JitMode::automatic, 1), 2);
  session->weights().set("k", Tensor::full({8}, 1.0));
  auto f = compile([](Tensor x) { return x * F::constant_external("k", TensorLayout(DType::f32, {8})); },
                   {.session = session})(TensorLayout(DType::f32, {8}));
  auto g = compile([](Tensor x) { return x - 1.0f; }, {.session = session})(TensorLayout(DType::f32, {"n"}));
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      const Tensor x = Tensor::ones({8});
      while (!stop.load()) {
        const Tensor y = f(x);
        const float v = y.data<float>()[0];
        if (!all_equal(y, v) || (v != 1.0f && v != 2.0f)) ++wrong; // one weight version per call
      }
    });
  for (int i = 0; i < 200; ++i) {
    g(Tensor::ones({1 + i % 5})); // other signatures evict f's entry from the two-entry cache
    if (i % 50 == 0) session->weights().set("k", Tensor::full({8}, 1.0 + (i / 50) % 2));
  }
  stop = true;
  for (std::thread& caller : callers)
    caller.join();
  CHECK(wrong == 0);
  CHECK(session->totals().evictions > 0);
}

TEST_CASE("the grace period waits for the sections begun before it") {
  runtime::GracePeriod period;
  period.wait(); // no section open: returns at once
  std::atomic<bool> entered{false}, release{false}, waited{false};
  std::thread reader([&] {
    runtime::GracePeriod::Section section(period);
    entered = true;
    while (!release)
      std::this_thread::yield();
  });
  while (!entered)
    std::this_thread::yield();
  std::thread writer([&] {
    period.wait();
    waited = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(!waited); // the reader's section is still open
  release = true;
  writer.join();
  CHECK(waited);
  reader.join();
}

TEST_CASE("f(x)'s outputs are 64-byte aligned, fresh per call, and outlive the callable") {
  for (int64_t n : {1, 7, 17, 1023}) {
    CAPTURE(n);
    std::vector<Tensor> kept;
    {
      auto session = std::make_shared<Session>(sync_policy(JitMode::automatic));
      auto f = compile(add_one, {.session = session})(TensorLayout(DType::f32, {n}));
      const Tensor x = Tensor::full({n}, 2.0);
      for (int i = 0; i < 6; ++i) // cold, warm on the interpreter, promoted, warm on the JIT
        kept.push_back(f(x));
    } // the callable and its session are gone; the results hold their own memory
    for (size_t i = 0; i < kept.size(); ++i) {
      CHECK(reinterpret_cast<uintptr_t>(kept[i].raw_data()) % 64 == 0);
      CHECK(kept[i].dims() == std::vector<int64_t>{n});
      CHECK(all_equal(kept[i], 3.0f));
      for (size_t j = 0; j < i; ++j)
        CHECK(kept[i].raw_data() != kept[j].raw_data());
    }
  }
}

TEST_CASE("KILN_DEBUG_NANS checks warm calls too, on both call forms") {
  ScopedEnv debug_nans("KILN_DEBUG_NANS", "1");
  auto session = std::make_shared<Session>(sync_policy(JitMode::off));
  auto f = compile([](const Tensor& x) { return F::log(x); }, {.session = session})(TensorLayout(DType::f32, {4}));
  const Tensor finite = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  const Tensor with_zero = Tensor::from_vector<float>({1, 0, 3, 4}, {4}); // log(0) = -inf
  f(finite);
  std::vector<Tensor> out{Tensor::empty({4})};
  f.call_into(out, finite); // both forms warm now
  CHECK(std::abs(out[0].data<float>()[1] - std::log(2.0f)) < 1e-6f);
  CHECK_THROWS_WITH_AS(f(with_zero), doctest::Contains("KILN_DEBUG_NANS"), Error);
  CHECK_THROWS_WITH_AS(f.call_into(out, with_zero), doctest::Contains("produced 0 NaN and 1 Inf"), Error);
}
