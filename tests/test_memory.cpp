// Memory a user can plan: call_into's caller-provided outputs, a caller-owned arena checked when a
// signature is built, the arena/weight/constant figures in the statistics.
#include "kiln_config.h"
#include "scoped_env.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <string>

using namespace kiln;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

std::shared_ptr<Session> interp_session() { return std::make_shared<Session>(TierPolicy{.mode = JitMode::off}); }

const TensorLayout kWeightLayout(DType::f32, {16, 32});

// x @ w.T + 1, then relu: two outputs (the sum and the relu), one intermediate in the arena.
CompiledCallable<std::vector<Tensor>> compile_layer(const CompileOptions& options) {
  StagedGraph staged = stage(
      [](Tensor x) {
        Tensor h = F::matmul(x, F::transpose(F::constant_external("w", kWeightLayout), 0, 1)) + 1.0f;
        return std::vector<Tensor>{h, F::relu(h * 2.0f)};
      },
      {.name = "layer"})(TensorLayout(DType::f32, {"batch", 32}));
  return compile_staged(staged, options);
}

// The naive reference of compile_layer's first output, element (row, col).
float layer_reference(const Tensor& x, const Tensor& w, int64_t row, int64_t col) {
  double sum = 0;
  for (int64_t p = 0; p < 32; ++p)
    sum += double(x.data<float>()[row * 32 + p]) * double(w.data<float>()[col * 32 + p]);
  return float(sum + 1.0);
}

struct Aligned {
  explicit Aligned(size_t bytes) : storage(bytes + 64) {}
  std::span<std::byte> span(size_t bytes, size_t offset = 0) {
    auto base = (reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64;
    return {reinterpret_cast<std::byte*>(base) + offset, bytes};
  }
  std::vector<std::byte> storage;
};

} // namespace

TEST_CASE("call_into writes what operator() returns into the caller's tensors") {
  const Tensor w = Tensor::randn({16, 32}, 3);
  auto layer = compile_layer({.weights = {{"w", w}}, .session = interp_session()});
  for (int64_t batch : {1, 7, 17}) {
    CAPTURE(batch);
    const Tensor x = Tensor::randn({batch, 32}, uint64_t(batch));
    std::vector<Tensor> outputs{Tensor::full({batch, 16}, NAN), Tensor::full({batch, 16}, NAN)};
    layer.call_into(outputs, x);
    const std::vector<Tensor> fresh = layer(x);
    for (int64_t i = 0; i < batch * 16; ++i) {
      CHECK(outputs[0].data<float>()[i] == fresh[0].data<float>()[i]);
      CHECK(outputs[1].data<float>()[i] == fresh[1].data<float>()[i]);
      CHECK(outputs[1].data<float>()[i] == std::max(0.0f, 2.0f * outputs[0].data<float>()[i]));
    }
    CHECK(std::abs(outputs[0].data<float>()[batch * 16 - 1] - layer_reference(x, w, batch - 1, 15)) <= 1e-4f);
  }
}

TEST_CASE("call_into names the output that cannot take the result") {
  auto layer = compile_layer({.weights = {{"w", Tensor::randn({16, 32}, 3)}}, .session = interp_session()});
  Tensor x = Tensor::randn({4, 32}, 1);
  std::vector<Tensor> one{Tensor::zeros({4, 16})};
  CHECK(message_of([&] { layer.call_into(one, x); }) ==
        "spec error: @layer has 2 outputs, 1 output tensors were given");
  std::vector<Tensor> wrong_shape{Tensor::zeros({4, 16}), Tensor::zeros({4, 17})};
  CHECK(message_of([&] { layer.call_into(wrong_shape, x); }) ==
        "spec error: output 1: expected f32 [4, 16], got f32 [4, 17]");
  std::vector<Tensor> wrong_dtype{Tensor::zeros({4, 16}, DType::f64), Tensor::zeros({4, 16})};
  CHECK(message_of([&] { layer.call_into(wrong_dtype, x); }) ==
        "spec error: output 0: expected f32 [4, 16], got f64 [4, 16]");
  std::vector<Tensor> undefined{Tensor(), Tensor::zeros({4, 16})};
  CHECK(message_of([&] { layer.call_into(undefined, x); }) ==
        "spec error: output 0: expected a concrete tensor f32 [4, 16]");
  Tensor both = Tensor::zeros({4, 16});
  std::vector<Tensor> shared{both, both};
  CHECK(message_of([&] { layer.call_into(shared, x); }) == "spec error: output 1: shares memory with output 0");
  // An output laid over the input: the kernel would overwrite x while still reading it.
  Tensor wide = Tensor::zeros({4, 32});
  Tensor over_input = Tensor::wrap(wide.raw_data(), {4, 16}, DType::f32);
  std::vector<Tensor> aliasing{over_input, Tensor::zeros({4, 16})};
  CHECK(message_of([&] { layer.call_into(aliasing, wide); }) ==
        "spec error: output 0: shares memory with argument 0 (outputs are written while inputs are still read)");
  std::vector<Tensor> fine{Tensor::zeros({4, 16}), Tensor::zeros({4, 16})};
  CHECK(message_of([&] { layer.call_into(fine, Tensor::zeros({4, 31})); }).find("argument 0") != std::string::npos);
}

TEST_CASE("a caller-owned arena too small for a signature's plan fails when that signature is built") {
  const Tensor w = Tensor::randn({16, 32}, 3);
  auto probe = compile_layer({.weights = {{"w", w}}, .session = interp_session()});
  probe(Tensor::randn({64, 32}, 1));
  const size_t needed = probe.session().stats().at(0).arena_bytes;
  REQUIRE(needed >= size_t(64 * 16 * 4)); // the intermediate h * 2 lives in the arena
  Aligned memory(needed);
  auto layer = compile_layer({.weights = {{"w", w}}, .session = interp_session(), .arena = memory.span(needed - 64)});
  const std::string message = message_of([&] { layer(Tensor::randn({64, 32}, 1)); });
  CHECK(message.find("memory error: @layer(") == 0);
  CHECK(message.find("on the interp tier needs an arena of " + std::to_string(needed / 1024) + ".") !=
        std::string::npos);
  CHECK(message.find("(" + std::to_string(needed) + " bytes), the caller's arena (CompileOptions::arena) holds " +
                     std::to_string((needed - 64) / 1024) + ".") != std::string::npos);
  // A smaller signature fits and runs in it.
  const Tensor x = Tensor::randn({2, 32}, 2);
  CHECK(std::abs(layer(x).at(0).data<float>()[0] - layer_reference(x, w, 0, 0)) <= 1e-4f);
}

TEST_CASE("calls run in the caller's arena") {
  const Tensor w = Tensor::randn({16, 32}, 3);
  Aligned memory(64 * 1024);
  const std::span<std::byte> arena = memory.span(64 * 1024);
  std::fill(arena.begin(), arena.end(), std::byte{0xAB});
  auto layer = compile_layer({.weights = {{"w", w}}, .session = interp_session(), .arena = arena});
  const Tensor x = Tensor::randn({8, 32}, 4);
  const std::vector<Tensor> out = layer(x);
  // The intermediate h * 2 was written there: the first floats are no longer the fill pattern.
  CHECK(std::count(arena.begin(), arena.begin() + 8 * 16 * 4, std::byte{0xAB}) < 8 * 16 * 4);
  for (int64_t i = 0; i < 8 * 16; ++i)
    CHECK(out[1].data<float>()[i] == std::max(0.0f, 2.0f * out[0].data<float>()[i]));
  CHECK(std::abs(out[0].data<float>()[5 * 16 + 3] - layer_reference(x, w, 5, 3)) <= 1e-4f);
}

TEST_CASE("a caller-owned arena must be 64-byte aligned") {
  Aligned memory(1024);
  CHECK(message_of([&] {
          compile_layer({.weights = {{"w", Tensor::randn({16, 32}, 3)}},
                         .session = interp_session(),
                         .arena = memory.span(512, 8)});
        }) == "memory error: CompileOptions::arena must be aligned to 64 bytes (alignas(64) or std::aligned_alloc); "
              "it starts at 8 bytes past a 64-byte boundary");
}

TEST_CASE("statistics report the arena's peak, the weights' bytes and the constants' bytes") {
  ScopedEnv no_packing("KILN_PACK_WEIGHTS", "0");
  auto session = interp_session();
  session->weights().set("w", Tensor::randn({16, 32}, 3));
  auto layer = compile_layer({.session = session});
  layer(Tensor::randn({8, 32}, 1));
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.weight_bytes == size_t(16 * 32 * 4));
  // The constants: the two f32 scalars 1 and 2, and the transpose of the weight, precomputed.
  CHECK(stats.constant_bytes == size_t(2 * 4 + 16 * 32 * 4));
  CHECK(stats.arena_bytes >= size_t(8 * 16 * 4));
  CHECK(session->stats_table().find("weight bytes") != std::string::npos);
}
