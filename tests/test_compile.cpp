#include "error_message.hpp"
#include "kiln_config.h"
#include <algorithm>
#include <atomic>
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <thread>

using namespace kiln;

namespace {

std::shared_ptr<Session> interp_session() {
  TierPolicy p;
  p.mode = JitMode::off;
  return std::make_shared<Session>(p, 16);
}

} // namespace

TEST_CASE("the README example: compile with a weight, call with any batch") {
  TensorLayout w_type(DType::f32, {2});
  TensorLayout x_type(DType::f32, {"batch", 2}, CPU());
  auto layer = [&](Tensor x) { return x * F::constant_external("w", w_type); };
  Tensor w = Tensor::ones({2}) * 3.0f;
  CHECK(w.data<float>()[1] == 3.0f);
  auto run = compile(layer, {.weights = {{"w", w}}, .session = interp_session()})(x_type);
  for (int64_t batch : {1, 4, 7}) {
    Tensor x = Tensor::arange(0.0, double(batch * 2), 1.0).reshape({batch, 2});
    Tensor out = run(x);
    REQUIRE(out.dims() == std::vector<int64_t>{batch, 2});
    for (int64_t i = 0; i < batch * 2; ++i)
      CHECK(out.data<float>()[i] == 3.0f * float(i));
  }
}

TEST_CASE("missing or mismatched weights fail when the callable is built") {
  TensorLayout w_type(DType::f32, {2});
  auto layer = [&](Tensor x) { return x * F::constant_external("fc1.weight", w_type); };
  TensorLayout x_type(DType::f32, {2});
  CHECK(message_of([&] { compile(layer, {.session = interp_session()})(x_type); }) ==
        "weight error: weight 'fc1.weight' is not in the registry");
  CHECK(message_of([&] {
          compile(layer, {.weights = {{"fc1.weight", Tensor::ones({3})}}, .session = interp_session()})(x_type);
        }) == "weight error: weight 'fc1.weight': expected f32 [2], got f32 [3]");
  CHECK(message_of([&] {
          compile(layer,
                  {.weights = {{"fc1.weight", Tensor::ones({2}, DType::f64)}}, .session = interp_session()})(x_type);
        }) == "weight error: weight 'fc1.weight': expected f32 [2], got f64 [2]");
}

TEST_CASE("the session registry supplies weights and updates are picked up") {
  auto session = interp_session();
  session->weights().set("w", Tensor::full({2}, 2.0));
  auto run = compile([](Tensor x) { return x + F::constant_external("w", TensorLayout(DType::f32, {2})); },
                     {.session = session})(TensorLayout(DType::f32, {2}));
  CHECK(run(Tensor::zeros({2})).data<float>()[0] == 2.0f);
  uint64_t v = session->weights().version("w");
  session->weights().set("w", Tensor::full({2}, 5.0));
  CHECK(session->weights().version("w") > v);
  CHECK(run(Tensor::zeros({2})).data<float>()[0] == 5.0f);
}

// A cache entry depends on the versions of the weights its graph reads and nothing else.
TEST_CASE("setting a weight a callable does not read keeps its executables; one it reads rebuilds them") {
  auto session = interp_session();
  session->weights().set("w", Tensor::full({2}, 2.0));
  session->weights().set("unrelated", Tensor::ones({3}));
  auto run = compile([](Tensor x) { return x + F::constant_external("w", TensorLayout(DType::f32, {2})); },
                     {.session = session})(TensorLayout(DType::f32, {2}));
  CHECK(run(Tensor::zeros({2})).data<float>()[0] == 2.0f);
  session->weights().set("unrelated", Tensor::zeros({3}));
  CHECK(run(Tensor::zeros({2})).data<float>()[0] == 2.0f);
  CHECK(session->totals().signatures_compiled == 1);
  session->weights().set("w", Tensor::full({2}, 7.0));
  CHECK(run(Tensor::zeros({2})).data<float>()[0] == 7.0f);
  CHECK(session->totals().signatures_compiled == 2);
}

TEST_CASE("entries built on an old version of a weight leave the cache at the next call") {
  auto session = interp_session();
  session->weights().set("w", Tensor::ones({4}));
  session->weights().set("u", Tensor::ones({4}));
  auto reads_w = compile([](Tensor x) { return x * F::constant_external("w", TensorLayout(DType::f32, {4})); },
                         {.name = "reads_w", .session = session})(TensorLayout(DType::f32, {"n", 4}));
  auto reads_u = compile([](Tensor x) { return x * F::constant_external("u", TensorLayout(DType::f32, {4})); },
                         {.name = "reads_u", .session = session})(TensorLayout(DType::f32, {4}));
  reads_u(Tensor::ones({4}));
  for (int i = 2; i < 7; ++i) {
    session->weights().set("w", Tensor::full({4}, double(i)));
    CHECK(reads_w(Tensor::ones({1, 4})).data<float>()[0] == float(i));
    CHECK(reads_w(Tensor::ones({3, 4})).data<float>()[0] == float(i));
  }
  // Without retiring, the old versions' entries (and their packed weights) would stay until evicted:
  // 10 of reads_w here. Now the two current signatures of reads_w and the one of reads_u remain.
  CHECK(session->stats().size() == 3);
  CHECK(session->totals().signatures_compiled == 11);
  CHECK(session->totals().evictions == 8);
}

TEST_CASE("a convolution's column buffer is part of the arena, so arena_bytes is the call's peak") {
  auto session = interp_session();
  session->weights().set("w", Tensor::randn({8, 3, 3, 3}, 5));
  auto conv = compile(
      [](Tensor x) {
        return F::conv2d(x, F::constant_external("w", TensorLayout(DType::f32, {8, 3, 3, 3})), {}, {.padding = {1, 1}});
      },
      {.session = session})(TensorLayout(DType::f32, {1, 3, 16, 16}));
  const Tensor y = conv(Tensor::randn({1, 3, 16, 16}, 6));
  CHECK(y.dims() == std::vector<int64_t>{1, 8, 16, 16});
  // The input is an argument and the result is written straight into the output tensor: the arena
  // holds the im2col matrix, [3 * 3 * 3, 16 * 16] floats (one image: one buffer), then the GEMM's
  // packed blocks of the weights and of the columns, at most [8, 27] and [27, 256] floats.
  REQUIRE(session->stats().size() == 1);
  CHECK(session->stats()[0].arena_bytes > size_t(27 * 256 * 4));
  CHECK(session->stats()[0].arena_bytes <= size_t((27 * 256 + 8 * 27 + 27 * 256) * 4 + 3 * 64));
}

TEST_CASE("every call checks its arguments and names the offender") {
  TensorLayout s(DType::f32, {"batch", 2});
  auto run = compile([](Tensor a, std::map<std::string, Tensor> m) { return a + m.at("lo") + m.at("hi"); },
                     {.session = interp_session()})(s, std::map<std::string, TensorLayout>{{"lo", s}, {"hi", s}});
  Tensor good = Tensor::ones({4, 2});
  CHECK(run(good, std::map<std::string, Tensor>{{"lo", good}, {"hi", good}}).data<float>()[0] == 3.0f);
  CHECK(message_of([&] {
          run(good, std::map<std::string, Tensor>{{"lo", Tensor::ones({4, 3})}, {"hi", good}});
        }) == "spec error: argument 1.lo: expected f32 [batch, 2] on cpu:0, got f32 [4, 3] on cpu:0");
  CHECK(message_of([&] {
          run(good, std::map<std::string, Tensor>{{"lo", Tensor::ones({3, 2})}, {"hi", good}});
        }) == "spec error: symbolic dimension 'batch' is 4 in argument 0 but 3 in argument 1.lo");
  CHECK(message_of([&] {
          run(good, std::map<std::string, Tensor>{{"lo", good}});
        }).find("the arguments do not match the callable's inputs at leaf ") != std::string::npos);
  CHECK(message_of([&] {
          run(Tensor::ones({4, 2}, DType::f64), std::map<std::string, Tensor>{{"lo", good}, {"hi", good}});
        }) == "dtype error: argument 0: expected f32 [batch, 2] on cpu:0, got f64 [4, 2] on cpu:0");
}

TEST_CASE("baked scalars must match at every call") {
  TensorLayout s(DType::f32, {2});
  auto run = compile([](Tensor x, int k) { return x * double(k); }, {.session = interp_session()})(s, 2);
  CHECK(run(Tensor::ones({2}), 2).data<float>()[0] == 2.0f);
  CHECK(message_of([&] { run(Tensor::ones({2}), 3); }) ==
        "spec error: tree structure mismatch at '1': expected 2, got 3");
}

TEST_CASE("outputs are rebuilt in the traced structure, non-tensor leaves as traced") {
  TensorLayout s(DType::f32, {3});
  auto run = compile(
      [](Tensor x) {
        return std::make_tuple(x * 2.0, std::string("tag"), std::vector<Tensor>{-x, x});
      },
      {.session = interp_session()})(s);
  auto [doubled, tag, pair] = run(Tensor::full({3}, 1.5));
  CHECK(doubled.data<float>()[2] == 3.0f);
  CHECK(tag == "tag");
  CHECK(pair[0].data<float>()[0] == -1.5f);
  CHECK(pair[1].data<float>()[0] == 1.5f);
}

TEST_CASE("tensor arguments are never modified; buffers are written in place") {
  auto run = compile([](Tensor buf, Tensor x) { F::buffer_store(buf, x + 1.0); },
                     {.session = interp_session()})(BufferLayout(DType::f32, {3}), TensorLayout(DType::f32, {3}));
  Tensor buf = Tensor::zeros({3}), x = Tensor::full({3}, 4.0);
  run(buf, x);
  CHECK(buf.data<float>()[1] == 5.0f);
  CHECK(x.data<float>()[1] == 4.0f);
}

TEST_CASE("subgraph calls execute") {
  auto run = compile(
      [](Tensor x) {
        auto block = F::as_subgraph("block", [](Tensor y) { return y * 2.0 + 1.0; });
        return block(block(x));
      },
      {.session = interp_session()})(TensorLayout(DType::f32, {"n"}));
  Tensor out = run(Tensor::full({5}, 1.0));
  CHECK(out.data<float>()[4] == 7.0f); // (1*2+1)*2+1
}

TEST_CASE("one cache entry per signature, with statistics") {
  auto session = interp_session();
  auto run = compile([](Tensor x) { return F::exp(x); },
                     {.name = "expo", .session = session})(TensorLayout(DType::f32, {"batch", 4}));
  for (int i = 0; i < 3; ++i)
    run(Tensor::zeros({2, 4}));
  run(Tensor::zeros({5, 4}));
  auto stats = session->stats();
  REQUIRE(stats.size() == 2);
  uint64_t calls = 0;
  for (const auto& s : stats) {
    CHECK(s.callable == "expo");
    CHECK(s.tier == "interp");
    calls += s.calls;
    CHECK(s.median_ms >= 0.0);
  }
  CHECK(calls == 4);
  CHECK(session->stats_table().find("expo") != std::string::npos);
}

TEST_CASE("callables of one graph with different tier policies do not share cache entries") {
  auto session = interp_session();
  auto fn = [](Tensor x) { return F::exp(x) + 1.0; };
  TierPolicy jit_always;
  jit_always.mode = JitMode::always;
  jit_always.async = false;
  auto on_interp = compile(fn, {.name = "f", .session = session})(TensorLayout(DType::f32, {4}));
  auto on_jit = compile(fn, {.name = "f", .session = session, .tiers = jit_always})(TensorLayout(DType::f32, {4}));
  const Tensor x = Tensor::rand({4}, 7, -1.0f, 1.0f);
  const Tensor a = on_interp(x), b = on_jit(x);
  for (int64_t i = 0; i < 4; ++i)
    CHECK(b.data<float>()[i] == doctest::Approx(a.data<float>()[i]).epsilon(1e-5));
  std::vector<std::string> tiers;
  for (const SignatureStats& s : session->stats())
    tiers.push_back(s.tier);
  std::sort(tiers.begin(), tiers.end());
  // Without a JIT tier linked, the always-JIT entry stays on the interpreter, but it is its own.
  CHECK(tiers == std::vector<std::string>{"interp", KILN_HAS_JIT ? "jit" : "interp"});
}

TEST_CASE("the cache evicts least recently used signatures beyond its capacity") {
  TierPolicy p;
  p.mode = JitMode::off;
  auto session = std::make_shared<Session>(p, 2);
  auto run = compile([](Tensor x) { return x + 1.0; }, {.session = session})(TensorLayout(DType::f32, {"n"}));
  for (int64_t n : {1, 2, 3})
    run(Tensor::zeros({n}));
  CHECK(session->stats().size() == 2);
}

TEST_CASE("many threads call one callable at once and agree with a naive loop") {
  auto run = compile([](Tensor a, Tensor b) { return F::matmul(a, b) + 1.0; }, {.session = interp_session()})(
      TensorLayout(DType::f32, {"m", 8}), TensorLayout(DType::f32, {8, 3}));
  Tensor a = Tensor::rand({17, 8}, 1), b = Tensor::rand({8, 3}, 2);
  std::vector<float> expected(17 * 3);
  for (int i = 0; i < 17; ++i)
    for (int j = 0; j < 3; ++j) {
      double acc = 1.0;
      for (int k = 0; k < 8; ++k)
        acc += double(a.data<float>()[i * 8 + k]) * b.data<float>()[k * 3 + j];
      expected[size_t(i * 3 + j)] = float(acc);
    }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int it = 0; it < 50; ++it) {
        Tensor out = run(a, b);
        for (int i = 0; i < 17 * 3; ++i)
          if (std::abs(out.data<float>()[i] - expected[size_t(i)]) > 1e-5f) ++mismatches;
      }
    });
  for (auto& t : threads)
    t.join();
  CHECK(mismatches.load() == 0);
}

TEST_CASE("staged graphs compile from their text form") {
  auto staged = stage([](Tensor x, Tensor y) { return x * y + 2.0; })(TensorLayout(DType::f32, {"n"}),
                                                                      TensorLayout(DType::f32, {"n"}));
  StagedGraph parsed = parse_staged(staged.to_mlir());
  auto run = compile_staged(parsed, {.session = interp_session()});
  // One argument per graph argument, as the callable from stage() takes them; one vector of them
  // works too.
  auto out = run(Tensor::full({3}, 2.0), Tensor::full({3}, 4.0));
  REQUIRE(out.size() == 1);
  CHECK(out[0].data<float>()[2] == 10.0f);
  CHECK(run(std::vector<Tensor>{Tensor::full({3}, 2.0), Tensor::full({3}, 4.0)})[0].data<float>()[2] == 10.0f);
  CHECK_THROWS_WITH_AS(run(Tensor::full({3}, 2.0)),
                       doctest::Contains("at leaf 1: expected '1' (a tensor), got nothing"), Error);
}
