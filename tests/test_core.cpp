#include "core/environment.hpp"
#include "scoped_env.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <memory>
#include <string_view>

using namespace kiln;

TEST_CASE("dtype sizes and MLIR names round trip") {
  for (DType d :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::u8, DType::boolean})
    CHECK(parse_dtype(dtype_name(d)) == d);
  CHECK(dtype_size(DType::f32) == 4);
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(dtype_size(DType::boolean) == 1);
  CHECK(std::string(dtype_name(DType::boolean)) == "i1");
  CHECK(std::string(dtype_name(DType::u8)) == "ui8");
  CHECK_THROWS_WITH_AS(parse_dtype("f12"), "dtype error: unknown dtype 'f12'", Error);
}

TEST_CASE("symbolic dims are identifiers or expressions over them") {
  CHECK(Dim("batch").is_symbolic());
  CHECK(Dim("_b2").name() == "_b2");
  CHECK(Dim(3).is_static());
  for (const char* bad : {"", "2batch", "bat ch", "b-", "x.y"}) {
    CAPTURE(bad);
    try {
      Dim d(bad);
      FAIL("accepted a bad name");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::spec);
      CHECK(e.message().find("invalid symbolic dimension") != std::string::npos);
      CHECK(e.message().find("'" + std::string(bad) + "'") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(Dim(-5), Error);
}

TEST_CASE("layouts print dtype, dims and device") {
  TensorLayout x(DType::f32, {"batch", 2});
  CHECK(x.to_string() == "f32 [batch, 2] on cpu:0");
  BufferLayout b(DType::i64, {3}, CPU());
  CHECK(b.to_string() == "i64 [3] on cpu:0");
  CHECK(shape_to_string({}) == "[]");
}

TEST_CASE("concrete tensors are 64-byte aligned and typed") {
  Tensor t = Tensor::zeros({3, 5});
  CHECK(t.is_concrete());
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  CHECK(t.dims() == std::vector<int64_t>{3, 5});
  CHECK(t.numel() == 15);
  CHECK(t.nbytes() == 60);
  CHECK(t.data<float>()[14] == 0.0f);
  CHECK_THROWS_WITH_AS(t.data<int32_t>(), "dtype error: data<i32>() of a tensor of dtype f32", Error);
}

TEST_CASE("a tensor and its data share one allocation: aligned, zeroed when asked, kept by copies") {
  for (int64_t n : {0, 1, 7, 17, 1023})
    for (DType dtype : {DType::f32, DType::f64, DType::u8, DType::f16}) {
      CAPTURE(n);
      Tensor zeros = Tensor::zeros({n}, dtype), empty = Tensor::empty({n, 3}, dtype);
      CHECK(reinterpret_cast<uintptr_t>(zeros.raw_data()) % 64 == 0);
      CHECK(reinterpret_cast<uintptr_t>(empty.raw_data()) % 64 == 0);
      const auto* bytes = static_cast<const unsigned char*>(zeros.raw_data());
      CHECK(std::all_of(bytes, bytes + zeros.nbytes(), [](unsigned char b) { return b == 0; }));
      std::memset(empty.raw_data(), 0xab, empty.nbytes()); // the whole of it is writable
      Tensor copy = empty;
      empty = Tensor();
      const auto* kept = static_cast<const unsigned char*>(copy.raw_data());
      CHECK(std::all_of(kept, kept + copy.nbytes(), [](unsigned char b) { return b == 0xab; }));
    }
}

TEST_CASE("tensor factories fill the values they promise") {
  Tensor f = Tensor::full({2, 2}, 2.5, DType::f64);
  CHECK(f.data<double>()[3] == 2.5);
  Tensor a = Tensor::arange(5, DType::i32);
  CHECK(a.data<int32_t>()[4] == 4);
  Tensor r = Tensor::arange(1.0, 2.0, 0.25);
  CHECK(r.numel() == 4);
  CHECK(r.data<float>()[3] == doctest::Approx(1.75));
  Tensor v = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(v.item_as_double(5) == 6.0);
  CHECK_THROWS_AS(Tensor::from_vector<float>({1, 2}, {3}), Error);
  Tensor h = Tensor::full({1}, 1.5, DType::f16);
  CHECK(h.item_as_double(0) == 1.5);
  Tensor bf = Tensor::full({1}, -3.0, DType::bf16);
  CHECK(bf.item_as_double(0) == -3.0);
}

TEST_CASE("rand is deterministic per seed and inside its range") {
  Tensor a = Tensor::rand({100}, 7, -2.0f, 3.0f), b = Tensor::rand({100}, 7, -2.0f, 3.0f), c = Tensor::rand({100}, 8);
  bool same = true, differs = false;
  for (int i = 0; i < 100; ++i) {
    same = same && a.data<float>()[i] == b.data<float>()[i];
    differs = differs || a.data<float>()[i] != c.data<float>()[i];
    CHECK(a.data<float>()[i] >= -2.0f);
    CHECK(a.data<float>()[i] < 3.0f);
  }
  CHECK(same);
  CHECK(differs);
}

TEST_CASE("wrap shares user memory without a copy") {
  std::vector<float> memory{1, 2, 3, 4};
  Tensor t = Tensor::wrap(memory.data(), {2, 2}, DType::f32);
  CHECK(t.raw_data() == memory.data());
  memory[3] = 9;
  CHECK(t.data<float>()[3] == 9.0f);
  Tensor c = t.clone();
  CHECK(c.raw_data() != memory.data());
  CHECK(c.data<float>()[3] == 9.0f);
}

TEST_CASE("errors carry their kind and message") {
  Error e(ErrorKind::weight, "weight 'w' is missing");
  CHECK(e.kind() == ErrorKind::weight);
  CHECK(std::string(e.what()) == "weight error: weight 'w' is missing");
  CHECK(e.message() == "weight 'w' is missing");
}

TEST_CASE("an undefined tensor is refused with a clear message") {
  Tensor t;
  CHECK_FALSE(t.defined());
  CHECK_THROWS_WITH_AS(t.shape(), "spec error: use of an undefined (default-constructed) Tensor", Error);
}

namespace {
constexpr const char* kVar = "KILN_TEST_KNOB";
} // namespace

TEST_CASE("environment booleans accept the documented spellings in any case") {
  for (const char* yes : {"1", "true", "TRUE", "On", "yes", " yes "}) {
    ScopedEnv env(kVar, yes);
    CHECK(env::boolean(kVar) == true);
  }
  for (const char* no : {"0", "false", "OFF", "No"}) {
    ScopedEnv env(kVar, no);
    CHECK(env::boolean(kVar) == false);
  }
  CHECK_FALSE(env::boolean(kVar).has_value());
  ScopedEnv empty(kVar, "");
  CHECK_FALSE(env::boolean(kVar).has_value()); // empty means unset
  ScopedEnv bad(kVar, "2");
  CHECK_THROWS_WITH_AS(env::boolean(kVar),
                       "spec error: environment variable KILN_TEST_KNOB='2': expected a boolean: 1/0, true/false, "
                       "on/off or yes/no",
                       Error);
}

TEST_CASE("environment integers are checked against their range") {
  {
    ScopedEnv env(kVar, "12");
    CHECK(env::integer(kVar, 1, 64) == 12);
  }
  for (const char* bad : {"0", "65", "-3", "abc", "1.5", "12abc", "99999999999999999999", "+"}) {
    CAPTURE(bad);
    ScopedEnv env(kVar, bad);
    CHECK_THROWS_WITH_AS(
        env::integer(kVar, 1, 64),
        ("spec error: environment variable KILN_TEST_KNOB='" + std::string(bad) + "': expected an integer from 1 to 64")
            .c_str(),
        Error);
  }
}

TEST_CASE("environment byte sizes take 1024-based suffixes") {
  const std::vector<std::pair<const char*, uint64_t>> cases{{"4096", 4096},         {"1k", 1024},
                                                            {"512M", 512ull << 20}, {"2GiB", 2ull << 30},
                                                            {"3gb", 3ull << 30},    {"1T", 1ull << 40}};
  for (const auto& [text, bytes] : cases) {
    ScopedEnv env(kVar, text);
    CHECK(env::byte_size(kVar) == bytes);
  }
  for (const char* bad : {"0", "-1", "1X", "M", "99999999999T", "1.5G"}) {
    CAPTURE(bad);
    ScopedEnv env(kVar, bad);
    CHECK_THROWS_AS(env::byte_size(kVar), Error);
  }
}

TEST_CASE("environment choices name every accepted value") {
  {
    ScopedEnv env(kVar, "AVX2");
    CHECK(env::choice(kVar, {"avx2", "avx512"}) == "avx2");
  }
  ScopedEnv env(kVar, "avx512f");
  CHECK_THROWS_WITH_AS(env::choice(kVar, {"avx2", "avx512"}),
                       "spec error: environment variable KILN_TEST_KNOB='avx512f': expected avx2 or avx512", Error);
}

TEST_CASE("environment lists check each item") {
  {
    ScopedEnv env(kVar, "Tiers, jit");
    CHECK(env::choices(kVar, {"tiers", "jit"}) == std::vector<std::string>{"tiers", "jit"});
  }
  ScopedEnv env(kVar, "tiers,jitt");
  CHECK_THROWS_AS(env::choices(kVar, {"tiers", "jit"}), Error);
}

// The lines about `names` among unknown_setting_warnings() (the test's environment may hold others).
std::vector<std::string> warnings_about(std::initializer_list<std::string_view> names) {
  std::vector<std::string> lines;
  for (const std::string& line : env::unknown_setting_warnings())
    for (std::string_view name : names)
      if (line.starts_with("kiln: " + std::string(name) + " ")) lines.push_back(line);
  return lines;
}

TEST_CASE("a misspelled KILN_ variable is named with the setting it was probably meant to be") {
  ScopedEnv nan("KILN_DEBUG_NAN", "1"), jit("KILN_JTI", "off"), logs("KILN_LOGS", "all"), threads("KILN_THREADS", "4");
  CHECK(warnings_about({"KILN_DEBUG_NAN", "KILN_JTI", "KILN_LOGS", "KILN_THREADS"}) ==
        std::vector<std::string>{"kiln: KILN_DEBUG_NAN is not a kiln setting; did you mean KILN_DEBUG_NANS?",
                                 "kiln: KILN_JTI is not a kiln setting; did you mean KILN_JIT?",
                                 "kiln: KILN_LOGS is not a kiln setting; did you mean KILN_LOG?",
                                 "kiln: KILN_THREADS is not a kiln setting; did you mean KILN_NUM_THREADS?"});
}

TEST_CASE("a KILN_ variable near no setting is told the settings kiln reads") {
  ScopedEnv far("KILN_XYZZY", "1");
  const std::vector<std::string> lines = warnings_about({"KILN_XYZZY"});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].starts_with("kiln: KILN_XYZZY is not a kiln setting; kiln reads KILN_JIT, KILN_PROMOTE_AFTER, "));
  CHECK(lines[0].ends_with(", KILN_DEBUG_NANS"));
}

TEST_CASE("known settings, the tools' settings and KILN_TEST_ names draw no warning") {
  std::vector<std::unique_ptr<ScopedEnv>> set;
  std::vector<std::string_view> names;
  for (const env::Setting& s : env::known_settings()) {
    set.push_back(std::make_unique<ScopedEnv>(s.name.data(), "1")); // the table's names are literals
    names.push_back(s.name);
  }
  ScopedEnv test_name("KILN_TEST_ANYTHING", "1"), other_prefix("KILNX_DEBUG", "1");
  for (const std::string& line : env::unknown_setting_warnings())
    for (std::string_view name : names)
      CHECK_MESSAGE(!line.starts_with("kiln: " + std::string(name) + " "), line);
  CHECK(warnings_about({"KILN_TEST_ANYTHING", "KILNX_DEBUG"}).empty());
}

TEST_CASE("each runtime setting in the table is the variable its getter reads") {
  for (const env::Setting& s : env::known_settings()) {
    if (!s.parse || s.name == "KILN_JIT_DUMP") continue; // the dump directory takes any text
    CAPTURE(s.name);
    const std::string name(s.name);
    ScopedEnv bad(name.c_str(), "not-a-value");
    CHECK_THROWS_WITH_AS(s.parse(), doctest::Contains(("environment variable " + name + "='not-a-value'").c_str()),
                         Error);
    CHECK_THROWS_AS(env::check_all(), Error);
  }
}

TEST_CASE("allclose follows torch.allclose: atol + rtol * |b|, NaN only with equal_nan, shapes must match") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor a = Tensor::from_vector<float>({1.0f, 100.0f, inf}, {3});
  CHECK(allclose(a, Tensor::from_vector<float>({1.0f + 1e-6f, 100.001f, inf}, {3})));
  CHECK_FALSE(allclose(a, Tensor::from_vector<float>({1.0f + 1e-4f, 100.0f, inf}, {3})));
  CHECK(allclose(a, Tensor::from_vector<float>({1.01f, 100.0f, inf}, {3}), 0.0, 0.02));
  CHECK_FALSE(allclose(a, Tensor::from_vector<float>({1.0f, 100.0f, -inf}, {3})));
  const Tensor with_nan = Tensor::from_vector<float>({nan, 1.0f}, {2});
  CHECK_FALSE(allclose(with_nan, with_nan));
  CHECK(allclose(with_nan, with_nan, 1e-5, 1e-8, true));
  CHECK(allclose(Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor::from_vector<float>({1.0f, 2.0f}, {2})));
  CHECK_THROWS_WITH_AS(allclose(a, with_nan), doctest::Contains("shapes [3] and [2] differ"), Error);
}
