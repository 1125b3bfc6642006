#include "tests/scoped_env.hpp"
#include "vulkan/device.hpp"
#include "vulkan/vulkan_api.hpp"
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <kiln/error.hpp>
#include <limits>
#include <thread>

using namespace kiln;
using namespace kiln::vulkan;

namespace {

// The device, or null (with a note) where this machine has none. Where the suite is registered
// with KILN_TEST_REQUIRE_VULKAN=1 (every build with Vulkan), none is a failure, not a skip.
std::shared_ptr<Device> device_or_skip() {
  std::string why;
  if (list_devices(&why).empty()) {
    const char* require = std::getenv("KILN_TEST_REQUIRE_VULKAN");
    if (require && std::string(require) == "1") FAIL("no Vulkan device, and the suite requires one: " << why);
    MESSAGE("skipped: no Vulkan device: " << why);
    return nullptr;
  }
  return Device::open_default();
}

std::vector<std::byte> push_of(std::initializer_list<uint32_t> words) {
  std::vector<std::byte> out(words.size() * 4);
  std::memcpy(out.data(), std::data(words), out.size());
  return out;
}

template <class T> std::shared_ptr<Buffer> buffer_with(Device& device, const std::vector<T>& values) {
  std::shared_ptr<Buffer> buffer = device.allocate(values.size() * sizeof(T));
  device.upload(*buffer, 0, values.data(), values.size() * sizeof(T));
  return buffer;
}

template <class T> std::vector<T> read(Device& device, const Buffer& buffer, size_t count) {
  std::vector<T> out(count);
  device.download(buffer, 0, out.data(), count * sizeof(T));
  return out;
}

BufferRange whole(const std::shared_ptr<Buffer>& buffer) { return {buffer.get(), 0, buffer->bytes()}; }

uint32_t groups_of(size_t n, size_t local = 64) { return uint32_t((n + local - 1) / local); }

// c = a + b over the first n (a push constant) elements.
const char* const kAdd = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) c[i] = a[i] + b[i];
}
)";

// out[i] = in[n - 1 - i] * scale + shift: each workgroup reads what other workgroups of the
// dispatch before it wrote, so a missing barrier shows.
const char* const kReverseScale = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Push { uint n; float scale; float shift; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = x[p.n - 1 - i] * p.scale + p.shift;
}
)";

bool is_denormal(float x) { return std::fpclassify(x) == FP_SUBNORMAL; }
float flushed(float x) { return is_denormal(x) ? std::copysign(0.0f, x) : x; }

// The device's sum agrees with the host's: the same bits, or both NaN. Vulkan lets a device flush
// denormal inputs and results to zero (without shaderDenormPreserveFloat32), and a zero from a
// flush may take either sign, so where a denormal is involved the flushed sum is accepted too.
bool same_sum(float device, float a, float b) {
  const float host = a + b;
  if (std::isnan(host)) return std::isnan(device);
  if (std::bit_cast<uint32_t>(device) == std::bit_cast<uint32_t>(host)) return true;
  if (!is_denormal(a) && !is_denormal(b) && !is_denormal(host)) return false;
  const float flushed_host = flushed(flushed(a) + flushed(b));
  return device == flushed_host && (flushed_host != 0.0f || device == 0.0f);
}

std::vector<float> edge_values() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min(), smallest = std::numeric_limits<float>::min();
  return {0.0f, -0.0f, nan, inf, -inf, tiny, -tiny, smallest / 2, smallest, 1.0f, -1.5f, 3.0e38f, -3.0e38f};
}

} // namespace

TEST_CASE("list_devices describes each device with its name, API version and limits") {
  std::string why;
  const std::vector<DeviceInfo> devices = list_devices(&why);
  const char* require = std::getenv("KILN_TEST_REQUIRE_VULKAN");
  if (require && std::string(require) == "1") REQUIRE_MESSAGE(!devices.empty(), why);
  if (devices.empty()) {
    CHECK_FALSE(why.empty());
    MESSAGE("skipped: no Vulkan device: " << why);
    return;
  }
  CHECK(why.empty());
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    CAPTURE(d.name);
    CHECK(d.index == int(i));
    CHECK_FALSE(d.name.empty());
    CHECK_FALSE(d.driver.empty());
    CHECK(d.api.starts_with("1."));
    CHECK(std::count(d.api.begin(), d.api.end(), '.') == 2);
    CHECK(d.max_workgroup_invocations >= 128); // Vulkan's minimum
    CHECK(d.max_workgroup_count[0] >= 65535);
    CHECK(d.max_storage_buffer_range >= (1u << 27));
    CHECK(d.storage_offset_alignment >= 1);
    CHECK(d.storage_offset_alignment <= 256);
    CHECK(std::string("cpu discrete-gpu integrated-gpu virtual-gpu other").find(d.type) != std::string::npos);
  }
  std::shared_ptr<Device> device = Device::open_default();
  CHECK(device->info().name == devices[0].name);
  CHECK(Device::open_default() == device);
}

TEST_CASE("KILN_DEVICE picks a listed device and names the devices when it names none") {
  std::vector<DeviceInfo> devices(2);
  devices[0] = {.index = 0, .name = "first gpu", .type = "integrated-gpu"};
  devices[1] = {.index = 1, .name = "second gpu", .type = "discrete-gpu"};
  {
    ScopedEnv unset("KILN_DEVICE", nullptr);
    CHECK(select_device(devices) == 1); // unset: a discrete GPU first
    const std::vector<DeviceInfo> cpu_first{{.index = 0, .name = "llvmpipe", .type = "cpu"},
                                            {.index = 1, .name = "gpu", .type = "integrated-gpu"}};
    CHECK(select_device(cpu_first) == 1); // a CPU driver only when it is all there is
    CHECK(select_device({cpu_first[0]}) == 0);
  }
  {
    ScopedEnv second("KILN_DEVICE", "1");
    CHECK(select_device(devices) == 1);
  }
  for (const char* bad : {"99", "2", "-1", "gpu"}) {
    CAPTURE(bad);
    ScopedEnv env("KILN_DEVICE", bad);
    try {
      select_device(devices);
      FAIL("KILN_DEVICE=" << bad << " was taken");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::spec);
      const std::string message = e.what();
      CHECK_MESSAGE(message.find(std::string("KILN_DEVICE='") + bad + "'") != std::string::npos, message);
      CHECK_MESSAGE(message.find("0: first gpu (integrated-gpu)") != std::string::npos, message);
      CHECK_MESSAGE(message.find("1: second gpu (discrete-gpu)") != std::string::npos, message);
    }
  }
}

TEST_CASE("a kernel adds buffers of 1, 7, 17 and 1023 floats, edge values included, as the host does") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  std::shared_ptr<const Kernel> add = device->kernel(kAdd, 3, 4);
  CHECK(add->bindings() == 3);
  CHECK(add->push_bytes() == 4);
  const std::vector<float> edges = edge_values();
  for (size_t n : {1, 7, 17, 1023}) {
    CAPTURE(n);
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = i < edges.size() * edges.size() ? edges[i % edges.size()] : float(i) * 0.25f - 100.0f;
      b[i] = i < edges.size() * edges.size() ? edges[i / edges.size()] : 1.0f / float(i + 1);
    }
    auto ba = buffer_with(*device, a), bb = buffer_with(*device, b);
    auto bc = buffer_with(*device, std::vector<float>(n, 12345.0f));
    const Dispatch dispatch{add.get(), {whole(ba), whole(bb), whole(bc)}, push_of({uint32_t(n)}), {groups_of(n), 1, 1}};
    device->run({&dispatch, 1});
    const std::vector<float> c = read<float>(*device, *bc, n);
    for (size_t i = 0; i < n; ++i)
      CHECK_MESSAGE(same_sum(c[i], a[i], b[i]), "element " << i << ": " << a[i] << " + " << b[i] << " gave " << c[i]);
  }
}

TEST_CASE("the same source, bindings and push bytes give the same kernel") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  CHECK(device->kernel(kAdd, 3, 4) == device->kernel(kAdd, 3, 4));
  CHECK(device->kernel(kAdd, 3, 4) != device->kernel(kAdd, 3, 8));
}

TEST_CASE("a second dispatch of one run reads what the first wrote") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  std::shared_ptr<const Kernel> step = device->kernel(kReverseScale, 2, 12);
  const size_t n = 1023;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = float(i);
  auto bx = buffer_with(*device, x), by = device->allocate(n * 4), bz = device->allocate(n * 4);
  auto push = [&](float scale, float shift) {
    return push_of({uint32_t(n), std::bit_cast<uint32_t>(scale), std::bit_cast<uint32_t>(shift)});
  };
  const std::array<uint32_t, 3> groups{groups_of(n), 1, 1};
  const std::vector<Dispatch> dispatches{{step.get(), {whole(bx), whole(by)}, push(2.0f, 1.0f), groups},
                                         {step.get(), {whole(by), whole(bz)}, push(0.5f, -3.0f), groups}};
  for (int repeat = 0; repeat < 5; ++repeat) {
    device->upload(*bz, 0, std::vector<float>(n, -1.0f).data(), n * 4);
    device->run(dispatches);
    const std::vector<float> y = read<float>(*device, *by, n), z = read<float>(*device, *bz, n);
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(y[i] == x[n - 1 - i] * 2.0f + 1.0f);
      REQUIRE(z[i] == y[n - 1 - i] * 0.5f - 3.0f); // = x[i] + 0.5 - 3
    }
  }
}

TEST_CASE("push constants reach the dispatch they are given to") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  std::shared_ptr<const Kernel> step = device->kernel(kReverseScale, 2, 12);
  const size_t n = 17;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = float(i) - 8.0f;
  auto bx = buffer_with(*device, x), by = device->allocate(n * 4);
  for (float scale : {1.0f, -2.0f, 0.125f}) {
    const Dispatch d{step.get(),
                     {whole(bx), whole(by)},
                     push_of({uint32_t(n), std::bit_cast<uint32_t>(scale), std::bit_cast<uint32_t>(scale + 1.0f)}),
                     {1, 1, 1}};
    device->run({&d, 1});
    const std::vector<float> y = read<float>(*device, *by, n);
    for (size_t i = 0; i < n; ++i)
      CHECK(y[i] == x[n - 1 - i] * scale + (scale + 1.0f));
  }
}

TEST_CASE("a binding may be part of a buffer, from an aligned offset") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  std::shared_ptr<const Kernel> add = device->kernel(kAdd, 3, 4);
  const size_t n = 7, offset = 256; // a multiple of every device's storage alignment
  auto pool = device->allocate(offset * 3 + n * 4);
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = 100.0f * float(i);
  }
  device->upload(*pool, 0, a.data(), n * 4);
  device->upload(*pool, offset, b.data(), n * 4);
  const Dispatch d{add.get(),
                   {{pool.get(), 0, n * 4}, {pool.get(), offset, n * 4}, {pool.get(), 2 * offset, 0}},
                   push_of({7}),
                   {1, 1, 1}};
  device->run({&d, 1});
  std::vector<float> c(n);
  device->download(*pool, 2 * offset, c.data(), n * 4);
  for (size_t i = 0; i < n; ++i)
    CHECK(c[i] == 101.0f * float(i));
}

TEST_CASE("a shader that does not compile is a kiln::Error with glslang's log and the line") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  const std::string source = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  float x = 1.0 +;\n}\n";
  try {
    device->kernel(source, 0, 0);
    FAIL("the shader compiled");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::internal);
    const std::string message = e.what();
    CHECK_MESSAGE(message.find("ERROR: 0:4:") != std::string::npos, message);
    CHECK_MESSAGE(message.find("4>|   float x = 1.0 +;") != std::string::npos, message);
  }
  // Not cached as a failure: the same text fails the same way again.
  CHECK_THROWS_AS(device->kernel(source, 0, 0), Error);
}

TEST_CASE("out-of-range copies and malformed dispatches are kiln::Errors naming the problem") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  auto buffer = device->allocate(64);
  CHECK(buffer->bytes() == 64);
  CHECK(device->allocate(0)->bytes() == 1);
  for (size_t huge : {size_t(1) << 50, SIZE_MAX}) {
    CAPTURE(huge);
    try {
      device->allocate(huge);
      FAIL("allocated");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::memory);
      CHECK_MESSAGE(std::string(e.what()).find("allocating " + std::to_string(huge) + " bytes") != std::string::npos,
                    e.what());
    }
  }
  std::vector<std::byte> host(128);
  CHECK_THROWS_WITH_AS(device->upload(*buffer, 0, host.data(), 65), doctest::Contains("bytes [0, 65) is outside"),
                       Error);
  CHECK_THROWS_WITH_AS(device->download(*buffer, 60, host.data(), 8), doctest::Contains("bytes [60, 68) is outside"),
                       Error);
  CHECK_THROWS_AS(device->download(*buffer, SIZE_MAX, host.data(), 2), Error);
  device->upload(*buffer, 64, host.data(), 0);

  std::shared_ptr<const Kernel> add = device->kernel(kAdd, 3, 4);
  auto run = [&](Dispatch d) { device->run({&d, 1}); };
  const BufferRange all = whole(buffer);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, all}, push_of({1}), {1, 1, 1}}),
                       doctest::Contains("dispatch 0: 2 buffers for a kernel of 3 bindings"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, all, all}, {}, {1, 1, 1}}),
                       doctest::Contains("0 bytes of push constants for a kernel of 4"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, all, all}, push_of({1}), {0, 1, 1}}),
                       doctest::Contains("0 workgroups along x"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, all, all}, push_of({1}), {1, 1, UINT32_MAX}}),
                       doctest::Contains("workgroups along z"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, all, {buffer.get(), 0, 65}}, push_of({1}), {1, 1, 1}}),
                       doctest::Contains("binding 2: bytes [0, 65) is outside its buffer of 64 bytes"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, {buffer.get(), 64, 0}, all}, push_of({1}), {1, 1, 1}}),
                       doctest::Contains("binding 1"), Error);
  CHECK_THROWS_WITH_AS(run({nullptr, {}, {}, {1, 1, 1}}), doctest::Contains("dispatch 0: no kernel"), Error);
  CHECK_THROWS_WITH_AS(run({add.get(), {all, {nullptr, 0, 4}, all}, push_of({1}), {1, 1, 1}}),
                       doctest::Contains("binding 1: no buffer"), Error);
  CHECK_THROWS_WITH_AS(device->kernel(kAdd, 3, 132), doctest::Contains("push constants are 132 bytes"), Error);
  CHECK_THROWS_WITH_AS(device->kernel(kAdd, 3, 6), doctest::Contains("a multiple of 4"), Error);
  if (device->info().storage_offset_alignment > 1)
    CHECK_THROWS_WITH_AS(run({add.get(), {all, {buffer.get(), 1, 4}, all}, push_of({1}), {1, 1, 1}}),
                         doctest::Contains("offset 1 is not a multiple"), Error);
  // The device still runs after the refusals.
  auto one = buffer_with(*device, std::vector<float>{2.5f});
  run({add.get(), {whole(one), whole(one), whole(one)}, push_of({1}), {1, 1, 1}});
  CHECK(read<float>(*device, *one, 1)[0] == 5.0f);
}

TEST_CASE("threads that compile and run at once each get their own right results") {
  std::shared_ptr<Device> device = device_or_skip();
  if (!device) return;
  constexpr int kThreads = 4, kRuns = 50;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        // A source of its own, so the threads compile at once too (glslang and the driver).
        std::string own_add = kAdd;
        own_add.replace(own_add.find("a[i] + b[i]"), 11, "a[i] + b[i] + " + std::to_string(t) + ".0");
        std::shared_ptr<const Kernel> add = device->kernel(own_add, 3, 4);
        std::shared_ptr<const Kernel> step = device->kernel(kReverseScale, 2, 12);
        for (int r = 0; r < kRuns && failures[t].empty(); ++r) {
          const size_t n = 1 + size_t(t * 37 + r * 11) % 300;
          std::vector<float> a(n), b(n);
          for (size_t i = 0; i < n; ++i) {
            a[i] = float(t * 1000 + r);
            b[i] = float(i);
          }
          auto ba = buffer_with(*device, a), bb = buffer_with(*device, b), bc = device->allocate(n * 4);
          auto bd = device->allocate(n * 4);
          const std::vector<Dispatch> dispatches{
              {add.get(), {whole(ba), whole(bb), whole(bc)}, push_of({uint32_t(n)}), {groups_of(n), 1, 1}},
              {step.get(),
               {whole(bc), whole(bd)},
               push_of({uint32_t(n), std::bit_cast<uint32_t>(1.0f), std::bit_cast<uint32_t>(0.0f)}),
               {groups_of(n), 1, 1}}};
          device->run(dispatches);
          const std::vector<float> d = read<float>(*device, *bd, n);
          for (size_t i = 0; i < n; ++i)
            if (d[i] != a[n - 1 - i] + b[n - 1 - i] + float(t)) {
              failures[t] = "thread " + std::to_string(t) + " run " + std::to_string(r) + " element " +
                            std::to_string(i) + ": " + std::to_string(d[i]);
              break;
            }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  for (const std::string& failure : failures)
    CHECK_MESSAGE(failure.empty(), failure);
}

TEST_CASE("a missing loader is named, with the packages that bring it") {
  const Loader missing = open_loader({"libvulkan-kiln-test-missing.so.1"});
  const bool resolved = missing.functions.vkGetInstanceProcAddr != nullptr;
  CHECK_FALSE(resolved);
  CHECK(missing.why == "libvulkan-kiln-test-missing.so.1 not found: apt-get install libvulkan1 mesa-vulkan-drivers");
}

// Run by the suite vulkan_device_no_driver, where VK_ICD_FILENAMES names no driver.
TEST_CASE("without a driver there is no device, and open_default says why") {
  const char* expect = std::getenv("KILN_TEST_EXPECT_NO_VULKAN_DRIVER");
  if (!expect || std::string(expect) != "1") return;
  std::string why;
  CHECK(list_devices(&why).empty());
  CHECK_MESSAGE(why.starts_with("no Vulkan driver (ICD) reported a device"), why);
  try {
    Device::open_default();
    FAIL("a device was opened");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::unsupported);
    CHECK(e.message() == why);
  }
}
