// kiln::jit and compile(module): traced per signature at call time, with the recompile policy
// users rely on. Outputs are checked against the eager forward or naive loops computed here.
#include "captured_stderr.hpp"
#include "kiln_config.h"
#include "scoped_env.hpp"
#include <atomic>
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;

namespace {

std::shared_ptr<Session> quiet_session(JitMode mode = JitMode::off) {
  return std::make_shared<Session>(TierPolicy{.mode = mode, .promote_after = 2, .async = false}, 64);
}

JitOptions with(Dynamic dynamic, std::shared_ptr<Session> session = quiet_session()) {
  JitOptions options;
  options.dynamic = dynamic;
  options.compile.session = std::move(session);
  return options;
}

// y = tanh(x * 2) + 1, computed here.
Tensor reference(const Tensor& x) {
  Tensor y = Tensor::empty(x.dims());
  for (int64_t i = 0; i < x.numel(); ++i)
    y.data<float>()[i] = std::tanh(x.data<float>()[i] * 2.0f) + 1.0f;
  return y;
}

void check_close(const Tensor& got, const Tensor& want, double tolerance = 1e-5) {
  REQUIRE(got.dims() == want.dims());
  for (int64_t i = 0; i < want.numel(); ++i)
    CHECK(got.data<float>()[i] == doctest::Approx(want.data<float>()[i]).epsilon(tolerance));
}

auto tanh_fn = [](const Tensor& x) { return F::tanh(x * 2.0) + 1.0; };

// Two-layer perceptron with PyTorch's names: fc1 [16, 8], fc2 [4, 16].
struct Mlp : nn::Module {
  Mlp() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(8, 16));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 4));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

// relu(x W1ᵀ + b1) W2ᵀ + b2 by loops over a state_dict.
Tensor mlp_reference(const std::map<std::string, Tensor>& w, const Tensor& x) {
  auto linear = [](const Tensor& in, const Tensor& weight, const Tensor& bias, bool relu) {
    const int64_t rows = in.dim(0), k = in.dim(1), n = weight.dim(0);
    Tensor out = Tensor::empty({rows, n});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double acc = bias.data<float>()[j];
        for (int64_t i = 0; i < k; ++i)
          acc += double(in.data<float>()[r * k + i]) * weight.data<float>()[j * k + i];
        out.data<float>()[r * n + j] = relu ? float(std::max(acc, 0.0)) : float(acc);
      }
    return out;
  };
  return linear(linear(x, w.at("fc1.weight"), w.at("fc1.bias"), true), w.at("fc2.weight"), w.at("fc2.bias"), false);
}

} // namespace

TEST_CASE("five identical calls: one entry, five counted calls") {
  auto f = kiln::jit(tanh_fn, with(Dynamic::automatic));
  const Tensor x = Tensor::randn({3, 5}, 1);
  for (int i = 0; i < 5; ++i)
    check_close(f(x), reference(x));
  const JitStats stats = f.stats();
  CHECK(stats.entries == 1);
  CHECK(stats.misses == 1);
  CHECK(stats.hits == 4);
  REQUIRE(stats.per_entry.size() == 1);
  CHECK(stats.per_entry[0].calls == 5);
  CHECK(stats.per_entry[0].signature == "0=f32[3, 5]");
  CHECK(stats.per_entry[0].tier == "interp");
}

TEST_CASE("batch sizes 1, 2, 3, 4: four entries with off, one with on, two with automatic") {
  for (auto [dynamic, entries] : {std::pair{Dynamic::off, 4}, {Dynamic::on, 1}, {Dynamic::automatic, 2}}) {
    CAPTURE(int(dynamic));
    auto f = kiln::jit(tanh_fn, with(dynamic));
    for (int64_t batch : {1, 2, 3, 4}) {
      const Tensor x = Tensor::randn({batch, 6}, uint64_t(batch));
      check_close(f(x), reference(x));
    }
    CHECK(f.stats().entries == size_t(entries));
    CHECK(f.stats().misses == uint64_t(entries));
  }
  // With automatic, the second entry has the batch symbolic and serves sizes 0 and 1 too.
  auto f = kiln::jit(tanh_fn, with(Dynamic::automatic));
  f(Tensor::randn({2, 6}, 1));
  f(Tensor::randn({3, 6}, 2));
  CHECK(f.stats().per_entry.at(0).signature == "0=f32[s0, 6]");
  check_close(f(Tensor::randn({1, 6}, 3)), reference(Tensor::randn({1, 6}, 3)));
  CHECK(f(Tensor::zeros({0, 6})).dims() == std::vector<int64_t>{0, 6});
  CHECK(f.stats().entries == 2);
}

TEST_CASE("a different baked scalar is a new entry; f(x, x) and f(a, b) are two entries") {
  auto scaled = kiln::jit([](const Tensor& x, double alpha) { return x * alpha; }, with(Dynamic::off));
  const Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  CHECK(scaled(x, 2.0).data<float>()[2] == 6.0f);
  CHECK(scaled(x, 3.0).data<float>()[2] == 9.0f);
  CHECK(scaled(x, 2.0).data<float>()[1] == 4.0f);
  CHECK(scaled.stats().entries == 2);

  auto added = kiln::jit([](const Tensor& a, const Tensor& b) { return a + b * 2.0; }, with(Dynamic::off));
  const Tensor b = Tensor::from_vector<float>({10, 20, 30}, {3});
  CHECK(added(x, x).data<float>()[1] == 6.0f);
  CHECK(added(x, b).data<float>()[1] == 42.0f);
  CHECK(added(b, b).data<float>()[0] == 30.0f); // aliased again: the first entry
  CHECK(added.stats().entries == 2);
  CHECK(added.stats().hits == 1);
}

TEST_CASE("clear_cache resets the entries and the counts") {
  auto f = kiln::jit(tanh_fn, with(Dynamic::off));
  f(Tensor::randn({2, 2}, 1));
  f(Tensor::randn({2, 2}, 2));
  f.clear_cache();
  const JitStats cleared = f.stats();
  CHECK(cleared.entries == 0);
  CHECK(cleared.hits == 0);
  CHECK(cleared.misses == 0);
  check_close(f(Tensor::randn({2, 2}, 3)), reference(Tensor::randn({2, 2}, 3)));
  CHECK(f.stats().misses == 1);
}

TEST_CASE("past the recompile limit outputs stay correct, run uncached, and the count stops growing") {
  JitOptions options = with(Dynamic::off);
  options.recompile_limit = 3;
  auto f = kiln::jit(tanh_fn, options);
  CapturedStderr log;
  for (int64_t n = 1; n <= 6; ++n) {
    const Tensor x = Tensor::randn({n}, uint64_t(n));
    check_close(f(x), reference(x));
  }
  const JitStats stats = f.stats();
  CHECK(stats.entries == 3);
  CHECK(stats.misses == 3);
  CHECK(stats.uncached_calls == 3);
  check_close(f(Tensor::randn({2}, 2)), reference(Tensor::randn({2}, 2))); // an entry still serves
  CHECK(f.stats().hits == 1);
  const std::string text = log.text();
  CHECK(text.find("fn reached its recompile limit (3)") != std::string::npos);
  CHECK(text.find("reached its recompile limit", text.find("reached its recompile limit") + 1) == std::string::npos);
}

TEST_CASE("35 signatures against capacity 32: LRU evicts, an evicted signature recompiles correctly") {
  JitOptions options = with(Dynamic::off);
  options.recompile_limit = 100;
  auto f = kiln::jit(tanh_fn, options);
  for (int64_t n = 1; n <= 35; ++n)
    f(Tensor::randn({n}, uint64_t(n)));
  JitStats stats = f.stats();
  CHECK(stats.entries == 32);
  CHECK(stats.evictions == 3);
  const Tensor evicted = Tensor::randn({1}, 1); // the least recently used
  check_close(f(evicted), reference(evicted));
  stats = f.stats();
  CHECK(stats.misses == 36);
  CHECK(stats.per_entry.at(0).signature == "0=f32[1]");
  f(Tensor::randn({35}, 35)); // recently used: still there
  CHECK(f.stats().hits == 1);
}

TEST_CASE("KILN_LOG=recompiles prints one line per miss, naming what changed") {
  ScopedEnv env("KILN_LOG", "recompiles");
  JitOptions options = with(Dynamic::off);
  options.name = "mlp";
  options.argument_names = {"x"};
  auto f = kiln::jit(tanh_fn, options);
  CapturedStderr log;
  f(Tensor::randn({8, 3}, 1));
  f(Tensor::randn({8, 3}, 2));
  f(Tensor::randn({16, 3}, 3));
  f(Tensor::randn({16, 3}, 4).cast(DType::f64));
  const std::string text = log.text();
  CAPTURE(text);
  CHECK(text.find("recompiling mlp (entry 1 of 8): first call") != std::string::npos);
  CHECK(text.find("recompiling mlp (entry 2 of 8): argument 0 ('x') dim 0 changed: expected 8, got 16") !=
        std::string::npos);
  CHECK(text.find("recompiling mlp (entry 3 of 8): argument 0 ('x') dtype changed: expected f32, got f64") !=
        std::string::npos);
  CHECK(text.find("entry 4") == std::string::npos);
}

TEST_CASE("fail_on_recompile turns a miss after warm-up into a kiln::Error naming the change") {
  auto f = kiln::jit(tanh_fn, with(Dynamic::off));
  f(Tensor::randn({4}, 1));
  f.set_fail_on_recompile(true);
  f(Tensor::randn({4}, 2)); // a hit is fine
  CHECK_THROWS_WITH_AS(f(Tensor::randn({5}, 3)),
                       doctest::Contains("fn would recompile, and fail_on_recompile is set: argument 0 dim 0 "
                                         "changed: expected 4, got 5"),
                       Error);
  f.set_fail_on_recompile(false);
  CHECK(f(Tensor::randn({5}, 3)).numel() == 5);
}

TEST_CASE("an op that cannot be batch-polymorphic falls back to per-shape entries, never an error") {
  // A static size read off the batch axis (x.dim(0), not x.dim_of(0)): refused with dynamic on.
  auto flat = kiln::jit([](const Tensor& x) { return F::split(x, {x.dim(0) - 1, 1}, 0)[1] * 2.0; }, with(Dynamic::on));
  ScopedEnv env("KILN_LOG", "recompiles");
  CapturedStderr log;
  for (int64_t batch : {2, 3, 3}) {
    const Tensor out = flat(Tensor::ones({batch, 3}));
    CHECK(out.dims() == std::vector<int64_t>{1, 3});
    CHECK(out.data<float>()[0] == 2.0f);
  }
  CHECK(flat.stats().entries == 2);
  const std::string text = log.text();
  CAPTURE(text);
  CHECK(text.find("fn cannot be traced with symbolic dims, so it gets one entry per shape") != std::string::npos);
  CHECK(text.find("dimension 's0' is symbolic") != std::string::npos);
  CHECK(text.find("cannot be traced", text.find("cannot be traced") + 1) == std::string::npos); // once
}

TEST_CASE("the fallback to per-shape entries is logged only under KILN_LOG=recompiles") {
  ScopedEnv env("KILN_LOG", nullptr);
  auto flat = kiln::jit([](const Tensor& x) { return F::split(x, {x.dim(0) - 1, 1}, 0)[1] * 2.0; }, with(Dynamic::on));
  CapturedStderr log;
  CHECK(flat(Tensor::ones({2, 3})).dims() == std::vector<int64_t>{1, 3});
  CHECK(log.text().empty());
}

TEST_CASE("conv graphs share one entry across batch sizes with dynamic on") {
  auto conv = kiln::jit(
      [](const Tensor& x) {
        const Tensor w = F::constant(Tensor::randn({4, 3, 3, 3}, 5));
        return F::relu(F::conv2d(x, w, Tensor(), {.padding = {1, 1}}));
      },
      with(Dynamic::on));
  for (int64_t batch : {1, 2, 5})
    CHECK(conv(Tensor::randn({batch, 3, 8, 8}, uint64_t(batch))).dims() == std::vector<int64_t>{batch, 4, 8, 8});
  CHECK(conv.stats().entries == 1);
}

TEST_CASE("a compiled module delegates to its module and equals the eager forward and the loops") {
  auto model = std::make_shared<Mlp>();
  auto compiled = compile(model, with(Dynamic::on));
  const Tensor x = Tensor::randn({5, 8}, 11);
  check_close(compiled(x), mlp_reference(model->state_dict(), x), 1e-4);
  check_close(compiled(x), (*model)(x), 1e-5);
  CHECK(compiled.parameters().size() == 4);
  CHECK(compiled.state_dict().contains("fc2.bias"));
  // The plain compile(fn) path over the same module gives the same numbers.
  auto plain = kiln::compile([&](const Tensor& in) { return (*model)(in); },
                             {.weights = model->state_dict(), .session = quiet_session()})(
      TensorLayout(DType::f32, {"batch", 8}));
  check_close(compiled(x), plain(x), 1e-6);
  CHECK(compiled.session().weights().names().size() == 4);
}

TEST_CASE("load_state_dict changes the outputs and keeps the entries, in both tiers") {
  for (JitMode mode : {JitMode::off, JitMode::automatic}) {
    CAPTURE(int(mode));
    auto model = std::make_shared<Mlp>();
    auto compiled = compile(model, with(Dynamic::on, quiet_session(mode)));
    const Tensor x = Tensor::randn({3, 8}, 4);
    for (int i = 0; i < 3; ++i) // until promoted, where the JIT tier is built
      compiled(x);
    const std::string tier = compiled.stats().per_entry.at(0).tier;
    CHECK(tier == (mode == JitMode::automatic && KILN_HAS_JIT ? "jit" : "interp"));
    std::map<std::string, Tensor> other;
    for (const auto& [name, value] : model->state_dict())
      other[name] = Tensor::randn(value.dims(), 99) * 0.5;
    compiled.load_state_dict(other);
    // The tiers rebuild their forms of the new weights (the JIT's again after promote_after calls);
    // every call computes with them, and nothing is traced again.
    for (int i = 0; i < 3; ++i)
      check_close(compiled(x), mlp_reference(other, x), 1e-4);
    CHECK(compiled.stats().entries == 1);
    CHECK(compiled.stats().misses == 1);
    CHECK(compiled.stats().per_entry.at(0).tier == tier);
  }
}

TEST_CASE("8 threads call one compiled module with mixed batches while it recompiles") {
  auto model = std::make_shared<Mlp>();
  auto compiled = compile(model, with(Dynamic::off, quiet_session(JitMode::automatic)));
  const std::map<std::string, Tensor> weights = model->state_dict();
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const int64_t batch = 1 + (t + i) % 5;
        const Tensor x = Tensor::randn({batch, 8}, uint64_t(t * 100 + i));
        try {
          const Tensor got = compiled(x), want = mlp_reference(weights, x);
          for (int64_t k = 0; k < want.numel(); ++k)
            if (std::fabs(got.data<float>()[k] - want.data<float>()[k]) >
                1e-4f * (1 + std::fabs(want.data<float>()[k])))
              ++wrong;
        } catch (const Error&) {
          ++failed;
        }
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  CHECK(wrong == 0);
  CHECK(failed == 0);
  // One trace per batch size: a thread missing on a signature another is tracing waits for it.
  CHECK(compiled.stats().entries == 5);
  CHECK(compiled.stats().misses == 5);
  CHECK(compiled.stats().uncached_calls == 0);
  CHECK(compiled.stats().hits + compiled.stats().misses == 96);
}
