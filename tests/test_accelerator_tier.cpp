// The accelerator tier on a Vulkan device (lavapipe where there is no GPU): a signature starts on
// the interpreter and moves to the device when hot, in the same cache entry with the same weights;
// ops the device refuses run on the CPU between device regions; weight changes, threads and the
// debugging tools work on it. Every op's agreement with the interpreter is the tier-differential
// suite's (tier_differential_accelerator).
#include "runtime/weight_forms.hpp"
#include "scoped_env.hpp"
#include "vulkan/device.hpp"
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <thread>

using namespace kiln;

namespace {

// Whether a device is there. Where the suite is registered with KILN_TEST_REQUIRE_VULKAN=1 (every
// build with Vulkan), none is a failure, not a skip.
bool have_device() {
  std::string why;
  if (!vulkan::list_devices(&why).empty()) return true;
  const char* require = std::getenv("KILN_TEST_REQUIRE_VULKAN");
  if (require && std::string(require) == "1") FAIL("no Vulkan device, and the suite requires one: " << why);
  MESSAGE("skipped: no Vulkan device: " << why);
  return false;
}

std::shared_ptr<Session> device_session(JitMode mode = JitMode::always, int promote_after = 0) {
  TierPolicy policy{mode, promote_after, false};
  policy.promote_to = "accelerator";
  return std::make_shared<Session>(policy);
}

Tensor interpreted(const auto& fn, const TensorLayout& spec, const Tensor& x, const std::shared_ptr<Session>& from) {
  auto session = std::make_shared<Session>(TierPolicy{JitMode::off});
  for (const std::string& name : from->weights().names())
    session->weights().set(name, from->weights().get(name));
  return compile(fn, {.session = session})(spec)(x);
}

// Largest |a - b| over the elements, NaN where either has one.
double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dims() == b.dims());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return worst;
}

Tensor mlp(const Tensor& x) {
  const Tensor w1 = F::constant_external("w1", TensorLayout(DType::f32, {33, 17}));
  const Tensor b1 = F::constant_external("b1", TensorLayout(DType::f32, {33}));
  const Tensor w2 = F::constant_external("w2", TensorLayout(DType::f32, {5, 33}));
  return F::softmax(F::matmul(F::gelu(F::linear(x, w1, b1)), F::transpose(w2, 0, 1)), -1);
}

void set_mlp_weights(Session& session, uint64_t seed) {
  session.weights().set("w1", Tensor::randn({33, 17}, seed));
  session.weights().set("b1", Tensor::randn({33}, seed + 1));
  session.weights().set("w2", Tensor::randn({5, 33}, seed + 2));
}

} // namespace

TEST_CASE("a traced graph runs on the interpreter, then on the accelerator in the same cache entry") {
  if (!have_device()) return;
  auto session = device_session(JitMode::automatic, 2);
  set_mlp_weights(*session, 1);
  const TensorLayout spec(DType::f32, {7, 17});
  auto f = compile(mlp, {.session = session})(spec);
  const Tensor x = Tensor::randn({7, 17}, 11);
  const Tensor want = interpreted(mlp, spec, x, session);
  for (int call = 0; call < 4; ++call) {
    CAPTURE(call);
    CHECK(max_difference(f(x), want) < 1e-5);
    CHECK(f.core()->last_tier() == (call < 2 ? "interp" : "accelerator"));
  }
  REQUIRE(session->stats().size() == 1); // one entry: the promotion replaced its executable
  const SignatureStats stats = session->stats()[0];
  CHECK(stats.tier == "accelerator");
  CHECK(stats.jit_error.empty());
  CHECK(stats.calls_per_tier == std::map<std::string, uint64_t>{{"interp", 2}, {"accelerator", 2}});
  CHECK(stats.ops_per_lowering.at("vulkan.matmul") == 2);
  // One region: the device copies of its constants, the weights' transposes [17, 33] and [33, 5]
  // (precomputed on the host) and b1 [33], and its arena. The arena holds x [7, 17], the first
  // matmul [7, 33], gelu [7, 33] (the bias add before it stays inside the fused kernel), the second
  // matmul [7, 5] and softmax [7, 5]; at most two [7, 33] blocks are live at once (the fused kernel
  // reads one and writes the other), and every other value fits beside one of them, so its peak is
  // two of them, each rounded up to the device's binding alignment.
  const size_t alignment = std::max<size_t>(vulkan::Device::open_default()->info().storage_offset_alignment, 64);
  const size_t block = (7 * 33 * 4 + alignment - 1) / alignment * alignment;
  CHECK(stats.device_bytes == (17 * 33 + 33 * 5 + 33) * 4 + 2 * block);
  CHECK(stats.ops_per_lowering.at("vulkan.fused") == 2); // the bias add and gelu, one kernel
  CHECK(stats.ops_per_lowering.count("vulkan.softmax") + stats.ops_per_lowering.count("vulkan.normalization") == 1);
}

TEST_CASE("ops the device refuses run on the CPU between device regions, with the same results") {
  if (!have_device()) return;
  // compare and where make and read booleans, which the device leaves to the CPU.
  auto fn = [](const Tensor& x) {
    const Tensor e = F::exp(x * 0.5);
    return F::where(e.gt(F::full({17}, 1.0)), F::tanh(e), e * 2.0) + 1.0;
  };
  const TensorLayout spec(DType::f32, {17});
  auto session = device_session();
  auto f = compile(fn, {.session = session})(spec);
  const Tensor x = Tensor::randn({17}, 3);
  CHECK(max_difference(f(x), interpreted(fn, spec, x, session)) < 1e-5);
  const SignatureStats stats = session->stats().at(0);
  CHECK(stats.tier == "accelerator");
  CHECK(stats.ops_per_lowering.at("interp") == 2);             // compare, where
  CHECK(stats.ops_per_lowering.at("vulkan.fused") == 4);       // mul and exp; tanh and mul
  CHECK(stats.ops_per_lowering.at("vulkan.elementwise") == 1); // the add after where, alone
}

TEST_CASE("a fused run of elementwise ops agrees with the interpreter at odd sizes and edge values") {
  if (!have_device()) return;
  // Broadcast operands (a row, a scalar), an intermediate read twice, two results read after.
  auto fn = [](const Tensor& x, const Tensor& row) {
    const Tensor h = F::gelu(x * row + 0.5);
    const Tensor g = F::tanh(h) - F::sigmoid(h) * 3.0;
    return std::vector<Tensor>{F::maximum(g, x), F::exp(F::clamp(h, -30.0, 30.0))};
  };
  const std::vector<float> edges{0.0f, -0.0f, 1.0f, -1.0f, 1e30f, -1e30f, NAN, INFINITY, -INFINITY, 1e-40f, 88.0f};
  for (int64_t n : {1, 7, 17, 1023}) {
    CAPTURE(n);
    Tensor x = Tensor::randn({3, n}, uint64_t(n));
    for (int64_t i = 0; i < std::min<int64_t>(x.numel(), int64_t(edges.size())); ++i)
      x.data<float>()[i * 2 % x.numel()] = edges[size_t(i)];
    const Tensor row = Tensor::randn({n}, uint64_t(n) + 1);
    const TensorLayout x_spec(DType::f32, {3, n}), row_spec(DType::f32, {n});
    auto session = device_session();
    const std::vector<Tensor> got = compile(fn, {.session = session})(x_spec, row_spec)(x, row);
    const std::vector<Tensor> want =
        compile(fn, {.session = std::make_shared<Session>(TierPolicy{JitMode::off})})(x_spec, row_spec)(x, row);
    const SignatureStats stats = session->stats().at(0);
    CHECK(stats.ops_per_lowering == std::map<std::string, int>{{"vulkan.fused", 10}}); // one kernel
    for (size_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < want[r].numel(); ++i) {
        const float a = want[r].data<float>()[i], b = got[r].data<float>()[i];
        INFO("result " << r << " element " << i << ": interpreter " << a << ", accelerator " << b);
        CHECK((std::isnan(a) ? std::isnan(b) : std::isinf(a) ? a == b : std::fabs(a - b) <= 1e-5 * (1 + std::fabs(a))));
      }
  }
}

// The mlp as the accelerator computes it with KILN_ACCELERATOR_STORAGE=f16: in f32, each value
// rounded to f16 where a kernel stores it (the input and weights on upload, each matmul's result,
// the fused bias add and gelu's, the softmax's).
Tensor mlp_stored_as_f16(const Tensor& x) {
  auto r = [](const Tensor& t) { return F::cast(F::cast(t, DType::f16), DType::f32); };
  const Tensor w1 = r(F::constant_external("w1", TensorLayout(DType::f32, {33, 17})));
  const Tensor b1 = r(F::constant_external("b1", TensorLayout(DType::f32, {33})));
  const Tensor w2 = r(F::constant_external("w2", TensorLayout(DType::f32, {5, 33})));
  const Tensor h = r(F::matmul(r(x), F::transpose(w1, 0, 1)));
  const Tensor g = r(F::gelu(h + b1));
  return r(F::softmax(r(F::matmul(g, F::transpose(w2, 0, 1))), -1));
}

TEST_CASE("with f16 storage the device rounds each stored value to f16 and holds half the memory") {
  if (!have_device()) return;
  if (!vulkan::Device::open_default()->info().shader_float16) {
    MESSAGE("skipped: the device has no f16 storage and arithmetic");
    return;
  }
  const TensorLayout spec(DType::f32, {7, 17});
  const Tensor x = Tensor::randn({7, 17}, 31);
  auto f32_session = device_session();
  set_mlp_weights(*f32_session, 1);
  compile(mlp, {.session = f32_session})(spec)(x);
  const size_t f32_bytes = f32_session->stats().at(0).device_bytes;

  const ScopedEnv f16("KILN_ACCELERATOR_STORAGE", "f16");
  auto session = device_session();
  set_mlp_weights(*session, 1);
  const Tensor got = compile(mlp, {.session = session})(spec)(x);
  CHECK(session->stats().at(0).tier == "accelerator");
  const Tensor exact = interpreted(mlp, spec, x, session);
  const Tensor want = interpreted(mlp_stored_as_f16, spec, x, session);
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float a = want.data<float>()[i], b = got.data<float>()[i];
    INFO("element " << i << ": interpreter with f16 rounding " << a << ", accelerator " << b);
    CHECK(std::fabs(a - b) <= std::fabs(a) * 0x1p-10f + 1e-7f); // one f16 rounding step apart at most
  }
  CHECK(max_difference(got, exact) > 0); // f16 really was the storage
  CHECK(max_difference(got, exact) < 5e-3);
  const size_t bytes = session->stats().at(0).device_bytes;
  CHECK(bytes < f32_bytes * 6 / 10);
  CHECK(bytes >= (17 * 33 + 33 * 5 + 33) * 2 + 2 * 7 * 33 * 2); // the constants, two [7, 33] values live at once
}

TEST_CASE("with f16 storage, values beyond f16's range become infinite and tiny ones zero") {
  if (!have_device() || !vulkan::Device::open_default()->info().shader_float16) return;
  const ScopedEnv f16("KILN_ACCELERATOR_STORAGE", "f16");
  const std::vector<float> in{1e5f, -0.0f, NAN, 65504.0f, 1e-8f, 0.1f, -INFINITY};
  // IEEE binary16: 65504 is its largest finite value, 1e-8 is below half its smallest subnormal
  // (2^-24), and 0.1 rounds to 0x2E66.
  const std::vector<float> want{-INFINITY, 0.0f, NAN, -65504.0f, -0.0f, -0.0999755859375f, INFINITY};
  Tensor x = Tensor::empty({int64_t(in.size())});
  std::copy(in.begin(), in.end(), x.data<float>());
  auto session = device_session();
  const Tensor got = compile([](const Tensor& t) { return F::neg(t); }, {.session = session})(x.layout())(x);
  CHECK(session->stats().at(0).tier == "accelerator");
  for (size_t i = 0; i < in.size(); ++i) {
    const float g = got.data<float>()[i];
    INFO("element " << i << ": " << in[i] << " gave " << g);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(g));
    } else {
      CHECK(g == want[i]);
      CHECK(std::signbit(g) == std::signbit(want[i]));
    }
  }
}

TEST_CASE("a weight set() rebuilds the accelerator's readers, whose next call reads the new value") {
  if (!have_device()) return;
  auto session = device_session();
  set_mlp_weights(*session, 1);
  const TensorLayout spec(DType::f32, {3, 17});
  auto f = compile(mlp, {.session = session})(spec);
  const Tensor x = Tensor::randn({3, 17}, 5);
  CHECK(max_difference(f(x), interpreted(mlp, spec, x, session)) < 1e-5);
  set_mlp_weights(*session, 100);
  const Tensor after = f(x);
  CHECK(max_difference(after, interpreted(mlp, spec, x, session)) < 1e-5);
  CHECK(f.core()->last_tier() == "accelerator");
}

TEST_CASE("signatures over one weight version share its device copies; set() uploads the new version once") {
  if (!have_device()) return;
  const TensorLayout seven(DType::f32, {7, 17}), nine(DType::f32, {9, 17});
  const Tensor x7 = Tensor::randn({7, 17}, 21), x9 = Tensor::randn({9, 17}, 22);
  // The forms an interpreter-only session makes for the same graph: the weights' transposes (and
  // packed copies where a packed GEMM runs).
  auto host_only = std::make_shared<Session>(TierPolicy{JitMode::off});
  host_only->weights().set("w1", Tensor::randn({33, 17}, 1));
  host_only->weights().set("b1", Tensor::randn({33}, 2));
  host_only->weights().set("w2", Tensor::randn({5, 33}, 3));
  compile(mlp, {.session = host_only})(seven)(x7);
  const uint64_t host_forms = host_only->weights().forms()->forms_made();

  auto session = device_session();
  set_mlp_weights(*session, 1);
  auto f7 = compile(mlp, {.session = session})(seven);
  auto f9 = compile(mlp, {.session = session})(nine);
  CHECK(max_difference(f7(x7), interpreted(mlp, seven, x7, session)) < 1e-5);
  const uint64_t made = session->weights().forms()->forms_made();
  // Besides the host's: w1's and w2's transposes materialised on the host for the device region
  // (matmuls on the host read them in place), and the device copies of those and of b1.
  CHECK(made == host_forms + 2 + 3);
  CHECK(max_difference(f9(x9), interpreted(mlp, nine, x9, session)) < 1e-5);
  CHECK(session->weights().forms()->forms_made() == made); // the second signature made none
  CHECK(f9.core()->last_tier() == "accelerator");

  set_mlp_weights(*session, 50); // new versions: each form is made again, once for both signatures
  CHECK(max_difference(f7(x7), interpreted(mlp, seven, x7, session)) < 1e-5);
  CHECK(max_difference(f9(x9), interpreted(mlp, nine, x9, session)) < 1e-5);
  CHECK(session->weights().forms()->forms_made() == 2 * made);
}

TEST_CASE("threads calling one accelerator callable at once all get correct results") {
  if (!have_device()) return;
  auto session = device_session();
  set_mlp_weights(*session, 2);
  const TensorLayout spec(DType::f32, {2, 17});
  auto f = compile(mlp, {.session = session})(spec);
  std::vector<Tensor> inputs, wants;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(Tensor::randn({2, 17}, uint64_t(20 + t)));
    wants.push_back(interpreted(mlp, spec, inputs.back(), session));
  }
  f(inputs[0]);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i)
        if (max_difference(f(inputs[size_t(t)]), wants[size_t(t)]) >= 1e-5) ++wrong;
    });
  for (std::thread& thread : threads)
    thread.join();
  CHECK(wrong.load() == 0);
  CHECK(session->stats().at(0).calls_per_tier.at("accelerator") == 101);
}

TEST_CASE("compare_tiers and the stepper work on the accelerator tier") {
  if (!have_device()) return;
  auto session = device_session();
  set_mlp_weights(*session, 3);
  auto f = compile(mlp, {.session = session})(TensorLayout(DType::f32, {4, 17}));
  const Tensor x = Tensor::randn({4, 17}, 9);
  const std::optional<debug::TierDifference> difference = debug::compare_tiers(f, {x}, 1e-4);
  CHECK_MESSAGE(!difference, (difference ? difference->message() : ""));
  debug::Stepper stepper(f, {x}, {.tier = "accelerator"});
  const std::vector<Tensor> replayed = stepper.finish();
  CHECK(max_difference(replayed.at(0), f(x)) == 0);
  // A region keeps its intermediates to itself, as a JIT kernel does: at least one op was fused.
  debug::Stepper again(f, {x}, {.tier = "accelerator"});
  bool fused = false;
  do
    fused = fused || again.current().fused;
  while (again.step());
  CHECK(fused);
}

TEST_CASE("KILN_DEBUG_NANS names the device region whose results hold NaN or Inf") {
  if (!have_device()) return;
  setenv("KILN_DEBUG_NANS", "1", 1);
  auto session = device_session();
  auto f = compile([](const Tensor& x) { return F::log(x - 1.0) * 2.0; },
                   {.session = session})(TensorLayout(DType::f32, {4}));
  CHECK_THROWS_WITH_AS(f(Tensor::ones({4})), doctest::Contains("KILN_DEBUG_NANS"), Error);
  unsetenv("KILN_DEBUG_NANS");
  CHECK(session->stats().at(0).tier == "accelerator");
}

TEST_CASE("empty tensors and f64 graphs stay on the CPU inside the accelerator tier") {
  if (!have_device()) return;
  auto session = device_session();
  auto empty =
      compile([](const Tensor& x) { return F::relu(x) + 1.0; }, {.session = session})(TensorLayout(DType::f32, {0, 4}));
  CHECK(empty(Tensor::zeros({0, 4})).dims() == std::vector<int64_t>{0, 4});
  auto wide = compile([](const Tensor& x) { return F::exp(x); }, {.session = session})(TensorLayout(DType::f64, {3}));
  const Tensor y = wide(Tensor::full({3}, 1.0, DType::f64));
  CHECK(y.data<double>()[2] == std::exp(1.0));
  for (const SignatureStats& s : session->stats()) {
    CHECK(s.tier == "accelerator");
    CHECK(s.ops_per_lowering.count("interp") == 1);
  }
}
