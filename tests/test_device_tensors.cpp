// Device-resident tensors (docs/accelerator.md): Tensor::to(Accelerator()) and back, the host never
// reading device memory, specs declaring device inputs, and where a callable's results live. The
// cases that need a device skip without one, except where the suite is registered with
// KILN_TEST_REQUIRE_VULKAN=1 (every build with Vulkan): there none is a failure.
#include "error_message.hpp"
#include "kiln_config.h"
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <limits>
#include <sstream>
#include <thread>
#if KILN_HAS_VULKAN
#include "vulkan/device.hpp"
#endif

using namespace kiln;

namespace {

bool require_env(const char* name) {
  const char* value = std::getenv(name);
  return value && std::string(value) == "1";
}

// Whether there is an accelerator to put tensors on.
bool have_device() {
#if KILN_HAS_VULKAN
  std::string why;
  if (!vulkan::list_devices(&why).empty()) return true;
  if (require_env("KILN_TEST_REQUIRE_VULKAN")) FAIL("no Vulkan device, and the suite requires one: " << why);
  MESSAGE("skipped: no Vulkan device: " << why);
#else
  MESSAGE("skipped: this build has no accelerator tier");
#endif
  return false;
}

// Random values of `dtype` with its edge values first (floats: NaN, -0, inf, denormals; integers:
// the extremes).
Tensor values(DType dtype, int64_t n, uint64_t seed) {
  if (dtype == DType::boolean) {
    Tensor t = Tensor::empty({n}, DType::boolean);
    for (int64_t i = 0; i < n; ++i)
      t.data<bool>()[i] = (uint64_t(i) * 7 + seed) % 3 == 0;
    return t;
  }
  Tensor t = Tensor::rand({n}, seed, -1000.0f, 1000.0f).to(dtype);
  auto set_edges = [&](auto... edges) {
    using T = std::common_type_t<decltype(edges)...>;
    const T all[] = {edges...};
    for (int64_t i = 0; i < n && i < int64_t(sizeof...(edges)); ++i)
      t.data<T>()[i] = all[i];
  };
  using F32 = std::numeric_limits<float>;
  if (dtype == DType::f32)
    set_edges(F32::quiet_NaN(), -0.0f, F32::infinity(), -F32::infinity(), F32::denorm_min(), -F32::min() / 4,
              F32::max());
  if (dtype == DType::i32) set_edges(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), -1);
  if (dtype == DType::i64)
    set_edges(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t(-1));
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

Tensor scaled_relu(Tensor x, Tensor y) { return F::relu(x * 2.0 + y) - y; }

} // namespace

TEST_CASE("a host tensor is on cpu:0, and to() its own device returns it unchanged") {
  const Tensor x = Tensor::ones({3});
  CHECK(x.device() == CPU());
  CHECK(x.to(CPU()).same_as(x));
  CHECK(message_of([&] { x.to(CPU(1)); }).find("kiln's one CPU device is cpu:0") != std::string::npos);
}

TEST_CASE("to(Accelerator()) and back is bit-exact for every size and edge value") {
  if (!have_device()) return;
  for (DType dtype : {DType::f32, DType::i32, DType::i64, DType::boolean})
    for (int64_t n : {1, 7, 17, 1023}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(n);
      const Tensor host = values(dtype, n, uint64_t(n));
      const Tensor device = host.to(Accelerator());
      CHECK(device.device() == Accelerator());
      CHECK(device.layout() == TensorLayout(dtype, host.shape(), Accelerator()));
      CHECK(device.to(Accelerator()).same_as(device));
      const Tensor back = device.to(CPU());
      CHECK(back.device() == CPU());
      CHECK_FALSE(back.same_as(host));
      CHECK(same_bytes(back, host));
      CHECK(same_bytes(device.clone().to(CPU()), host)); // a clone stays on the device
      CHECK(device.clone().device() == Accelerator());
    }
  const Tensor empty = Tensor::zeros({0, 4}).to(Accelerator());
  CHECK(empty.to(CPU()).dims() == std::vector<int64_t>{0, 4});
}

TEST_CASE("copy_to uploads and downloads into existing tensors") {
  if (!have_device()) return;
  const Tensor host = Tensor::arange(5);
  Tensor device = Tensor::zeros({5}).to(Accelerator());
  host.copy_to(device);
  Tensor other = Tensor::zeros({5}).to(Accelerator());
  device.copy_to(other);
  Tensor back = Tensor::zeros({5});
  other.copy_to(back);
  CHECK(same_bytes(back, host));
  Tensor wrong = Tensor::zeros({4}).to(Accelerator());
  CHECK(message_of([&] { host.copy_to(wrong); }).find("destination is f32 [4] on accelerator:0") != std::string::npos);
}

TEST_CASE("reading a device tensor on the host is an Error naming the device and to(CPU())") {
  if (!have_device()) return;
  const Tensor x = Tensor::arange(4).to(Accelerator());
  for (const std::string& message : {message_of([&] { x.data<float>(); }), message_of([&] { x.item_as_double(0); }),
                                     message_of([&] { save_npy("/dev/null", x); })}) {
    CAPTURE(message);
    CHECK(message.find("on accelerator:0") != std::string::npos);
    CHECK(message.find(".to(CPU())") != std::string::npos);
  }
  const std::string eager = message_of([&] { F::add(x, x); });
  CHECK(eager.find("kiln.add") != std::string::npos);
  CHECK(eager.find("operand 0 is on accelerator:0") != std::string::npos);
  CHECK(eager.find(".to(CPU())") != std::string::npos);
  CHECK(message_of([&] { (void)(x + 1.0); }).find("on accelerator:0") != std::string::npos);
  std::ostringstream printed;
  printed << x;
  CHECK(printed.str() == "tensor(<f32 [4] on accelerator:0>)");
}

TEST_CASE("a call whose argument is on another device than its spec's is an Error naming both") {
  if (!have_device()) return;
  auto session = std::make_shared<Session>(TierPolicy{JitMode::off});
  auto on_device = compile(scaled_relu, {.session = session})(TensorLayout(DType::f32, {4}, Accelerator()),
                                                              TensorLayout(DType::f32, {4}, Accelerator()));
  const Tensor host = Tensor::ones({4});
  const Tensor device = host.to(Accelerator());
  std::string message = message_of([&] { on_device(host, device); });
  CHECK(message.find("argument 0: expected a tensor on accelerator:0, got one on cpu:0") != std::string::npos);
  on_device(device, device); // a warm call next: the device check must not be skipped
  message = message_of([&] { on_device(device, host); });
  CHECK(message.find("argument 1: expected a tensor on accelerator:0, got one on cpu:0") != std::string::npos);

  auto on_host =
      compile(scaled_relu, {.session = session})(TensorLayout(DType::f32, {4}), TensorLayout(DType::f32, {4}));
  on_host(host, host); // held for the warm call, whose integer check must refuse a device tensor
  message = message_of([&] { on_host(host, device); });
  CHECK(message.find("argument 1: expected a tensor on cpu:0, got one on accelerator:0") != std::string::npos);
  Tensor out = Tensor::zeros({4});
  message = message_of([&] { on_host.call_into(std::span<Tensor>(&out, 1), std::vector<Tensor>{device, host}); });
  CHECK(message.find("argument 0: expected a tensor on cpu:0, got one on accelerator:0") != std::string::npos);
  Tensor device_out = Tensor::zeros({4}).to(Accelerator());
  message = message_of([&] { on_host.call_into(std::span<Tensor>(&device_out, 1), std::vector<Tensor>{host, host}); });
  CHECK(message.find("on accelerator:0") != std::string::npos);
}

TEST_CASE("a device-input callable returns device tensors equal to the interpreter's, before and after promotion") {
  if (!have_device()) return;
  const TensorLayout spec(DType::f32, {2, 17}, Accelerator());
  auto reference_session = std::make_shared<Session>(TierPolicy{JitMode::off});
  auto reference = compile(scaled_relu, {.session = reference_session})(TensorLayout(DType::f32, {2, 17}),
                                                                        TensorLayout(DType::f32, {2, 17}));
  // promote_to stays "jit" here: device inputs take the signature to the accelerator regardless.
  auto session = std::make_shared<Session>(TierPolicy{JitMode::automatic, 3, false});
  auto f = compile(scaled_relu, {.session = session})(spec, spec);
  auto check_calls = [&](uint64_t seed) {
    for (int i = 0; i < 6; ++i) {
      const Tensor x = Tensor::randn({2, 17}, seed + uint64_t(i)), y = Tensor::randn({2, 17}, seed + 100);
      const Tensor expected = reference(x, y);
      const Tensor got = f(x.to(Accelerator()), y.to(Accelerator()));
      CHECK(got.device() == Accelerator());
      CHECK(allclose(got.to(CPU()), expected, 1e-6, 1e-6));
      Tensor into = Tensor::zeros({2, 17}).to(Accelerator());
      f.call_into(std::span<Tensor>(&into, 1), std::vector<Tensor>{x.to(Accelerator()), y.to(Accelerator())});
      CHECK(allclose(into.to(CPU()), expected, 1e-6, 1e-6));
    }
  };
  std::thread other(check_calls, 1000);
  check_calls(1);
  other.join();
  CHECK(f.core()->last_tier() == "accelerator");
  const std::vector<SignatureStats> stats = session->stats();
  REQUIRE(stats.size() == 1);
  CAPTURE(stats[0].jit_error);
  CHECK(stats[0].tier == "accelerator");
  CHECK(stats[0].calls_per_tier.at("interp") >= 3);
  CHECK(stats[0].calls_per_tier.at("accelerator") >= 1);
}

TEST_CASE("the debugging tools refuse a device-input callable rather than read device memory") {
  if (!have_device()) return;
  auto f = compile(scaled_relu, {.session = std::make_shared<Session>(TierPolicy{JitMode::off})})(
      TensorLayout(DType::f32, {4}, Accelerator()), TensorLayout(DType::f32, {4}, Accelerator()));
  const Tensor x = Tensor::ones({4}).to(Accelerator());
  const std::string message = message_of([&] { debug::compare_tiers(f, {x, x}); });
  CHECK(message.find("takes tensors on accelerator:0: compare_tiers and the stepper take host tensors") !=
        std::string::npos);
  CHECK(message_of([&] { debug::Stepper(f, {x, x}); }).find("take host tensors") != std::string::npos);
}

TEST_CASE("a host-input callable promoted to the accelerator still returns host tensors") {
  if (!have_device()) return;
  TierPolicy policy{JitMode::always, 0, false};
  policy.promote_to = "accelerator";
  auto f = compile(scaled_relu, {.session = std::make_shared<Session>(policy)})(TensorLayout(DType::f32, {5}),
                                                                                TensorLayout(DType::f32, {5}));
  const Tensor out = f(Tensor::ones({5}), Tensor::ones({5}));
  CHECK(f.core()->last_tier() == "accelerator");
  CHECK(out.device() == CPU());
  CHECK(out.data<float>()[0] == 2.0f);
}

TEST_CASE("a weight on the accelerator is an Error naming it") {
  if (!have_device()) return;
  auto session = std::make_shared<Session>(TierPolicy{JitMode::off});
  session->weights().set("w", Tensor::ones({3}).to(Accelerator()));
  auto fn = [](Tensor x) { return x + F::constant_external("w", TensorLayout(DType::f32, {3})); };
  CHECK(message_of([&] {
          compile(fn, {.session = session})(TensorLayout(DType::f32, {3}));
        }).find("weight 'w' is on accelerator:0") != std::string::npos);
}

TEST_CASE("without an accelerator, Accelerator() says what is missing") {
  const bool expect_none = require_env("KILN_TEST_EXPECT_NO_VULKAN_DRIVER") || !KILN_HAS_VULKAN;
  if (!expect_none) {
    if (!have_device()) return;
    const std::string message = message_of([] { Accelerator(1); });
    CHECK(message.find("no accelerator:1: kiln uses one accelerator, accelerator:0") != std::string::npos);
    return;
  }
  try {
    Accelerator();
    FAIL("Accelerator() gave a device");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::unsupported);
    CAPTURE(e.message());
#if KILN_HAS_VULKAN
    CHECK(e.message().starts_with("no accelerator:0: no Vulkan driver (ICD) reported a device"));
#else
    CHECK(e.message() == "no accelerator:0: this build has no accelerator tier (-Dvulkan=disabled)");
#endif
  }
  // A device named without Accelerator()'s check fails where a tensor would go to it.
  const Device bypassed{DeviceKind::accelerator, 0};
  CHECK(message_of([&] { Tensor::ones({2}).to(bypassed); }).starts_with("unsupported error: no accelerator:0"));
}
