// Memory a user can plan: call_into's caller-provided outputs, a caller-owned arena checked when a
// signature is built, the arena/weight/constant figures in the statistics, and weights used in
// place from a mapped safetensors file.
#include "error_message.hpp"
#include "kiln_config.h"
#include "scoped_env.hpp"
#include <cmath>
#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <string>
#include <unistd.h>

using namespace kiln;

namespace {

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

// Resident anonymous and file-backed memory of this process (Linux /proc), in bytes.
struct Resident {
  int64_t anonymous = -1, file = -1;
};

Resident resident_now() {
  std::ifstream status("/proc/self/status");
  Resident r;
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (status >> key) {
    if (key == "RssAnon:" && status >> kib >> unit) r.anonymous = kib * 1024;
    if (key == "RssFile:" && status >> kib >> unit) r.file = kib * 1024;
  }
  return r;
}

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
  // The matmul reads the weight through its transpose (no copy); the constants are the two f32
  // scalars 1 and 2.
  CHECK(stats.constant_bytes == size_t(2 * 4));
  CHECK(stats.arena_bytes >= size_t(8 * 16 * 4));
  CHECK(session->stats_table().find("weight bytes") != std::string::npos);
}

TEST_CASE("weights mapped from a safetensors file are used in place, not copied") {
  // 48 MiB of weights; only the interpreter's packed copy (off here: KILN_PACK_WEIGHTS=0) would
  // take anonymous memory of that size.
  ScopedEnv no_packing("KILN_PACK_WEIGHTS", "0");
  constexpr int64_t kOut = 3072, kIn = 4096;
  const size_t weight_bytes = size_t(kOut * kIn * 4);
  const std::string path = "/tmp/kiln-test-mapped-" + std::to_string(::getpid()) + ".safetensors";
  save_safetensors(path, {{"w", Tensor::rand({kOut, kIn}, 9, -1.0f, 1.0f)}});
  auto graph = [](Tensor x) {
    return F::matmul(x, F::transpose(F::constant_external("w", TensorLayout(DType::f32, {kOut, kIn})), 0, 1));
  };
  {
    // The same kernels once on a small weight first, so code paths and pools are warm.
    auto warm = compile(graph, {.weights = {{"w", Tensor::ones({kOut, kIn})}}, .session = interp_session()})(
        TensorLayout(DType::f32, {1, kIn}));
    warm(Tensor::ones({1, kIn}));
  }
  const Resident before = resident_now();
  REQUIRE(before.anonymous >= 0);
  auto session = interp_session();
  session->weights().load_safetensors(path);
  ::unlink(path.c_str()); // the mapping keeps the data
  auto mapped = compile(graph, {.session = session})(TensorLayout(DType::f32, {1, kIn}));
  const Tensor x = Tensor::rand({1, kIn}, 10, -1.0f, 1.0f);
  const Tensor y = mapped(x);
  const Resident after = resident_now();
  const Tensor w = session->weights().get("w");
  for (int64_t col : {int64_t(0), kOut / 2, kOut - 1}) {
    double sum = 0;
    for (int64_t p = 0; p < kIn; ++p)
      sum += double(x.data<float>()[p]) * double(w.data<float>()[col * kIn + p]);
    CHECK(std::abs(y.data<float>()[col] - sum) <= 1e-3);
  }
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.weight_bytes == weight_bytes);
  CHECK(stats.constant_bytes == 0); // the transpose is read in place by the matmul, not precomputed
  MESSAGE("anonymous memory grew by " << (after.anonymous - before.anonymous) / 1024 << " KiB, file-backed by "
                                      << (after.file - before.file) / 1024 << " KiB, weights " << weight_bytes / 1024
                                      << " KiB");
  CHECK(after.anonymous - before.anonymous < int64_t(weight_bytes / 8));
  // The weights were read through the mapping: their pages are resident as file memory.
  CHECK(after.file - before.file >= int64_t(weight_bytes * 9 / 10));
}
