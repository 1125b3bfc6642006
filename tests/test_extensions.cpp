// Extension ops: shared libraries registering ops through the C ABI of kiln/extension.h. The
// libraries are built from tests/extension/ (plain C) and passed in by path.
#include "ir/custom_ops.hpp"
#include "kiln_config.h"
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

const std::string kExtension = KILN_TEST_EXTENSION;

struct Failure {
  ErrorKind kind = ErrorKind::internal;
  std::string message; // what(): "<kind> error: ..."
};

Failure failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  FAIL("expected a kiln::Error");
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  MESSAGE("'" << part << "' is not in: " << text);
  return false;
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 16);
}

std::vector<float> values_of(const Tensor& t) {
  const float* data = t.data<float>();
  return std::vector<float>(data, data + t.numel());
}

// The references: naive loops written here, never the extension's own code.
std::vector<float> scale_add_reference(const Tensor& x, const Tensor& y, float alpha) {
  std::vector<float> out(size_t(x.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = x.data<float>()[i] + alpha * y.data<float>()[i];
  return out;
}

std::vector<float> concat_last_axis_reference(const Tensor& a, const Tensor& b) {
  const int64_t a_cols = a.dims().back(), b_cols = b.dims().back(), rows = a.numel() / a_cols;
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < a_cols; ++c)
      out.push_back(a.data<float>()[r * a_cols + c]);
    for (int64_t c = 0; c < b_cols; ++c)
      out.push_back(b.data<float>()[r * b_cols + c]);
  }
  return out;
}

Tensor scale_add(const Tensor& x, const Tensor& y, double alpha) {
  return F::custom("kiln_test.scale_add", {x, y}, {{"alpha", alpha}}).at(0);
}

// A fresh folder per test, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "kiln-test-extensions-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Scratch() { fs::remove_all(dir); }
  fs::path operator/(const std::string& name) const { return dir / name; }
};

} // namespace

TEST_CASE("loading an extension registers its ops; loading it again, by any path, is a no-op") {
  load_extension(kExtension);
  load_extension(kExtension);
  const std::vector<std::string> names = extension_op_names();
  for (const char* name : {"kiln_test.scale_add", "kiln_test.pairwise_concat", "kiln_test.minmax",
                           "kiln_test.checked_sqrt", "kiln_test.fill"})
    CHECK(std::count(names.begin(), names.end(), name) == 1);

  Scratch scratch;
  fs::create_symlink(kExtension, scratch / "alias.so");
  load_extension((scratch / "alias.so").string());
  CHECK(extension_op_names() == names);
}

TEST_CASE("an extension op traces, compiles and matches a naive loop") {
  TensorLayout row(DType::f32, {"batch", 3});
  TensorLayout extra(DType::f32, {"batch", 2});
  auto fn = [](Tensor x, Tensor y, Tensor z) {
    Tensor sum = scale_add(F::relu(x), y, 0.5);
    return F::custom("kiln_test.pairwise_concat", {sum, z}).at(0) * 2.0;
  };
  auto run = compile(fn, {.custom_extensions = {kExtension}, .session = session_in(JitMode::off)})(row, row, extra);
  for (int64_t batch : {1, 4}) {
    Tensor x = Tensor::randn({batch, 3}, 1), y = Tensor::randn({batch, 3}, 2), z = Tensor::randn({batch, 2}, 3);
    Tensor out = run(x, y, z);
    REQUIRE(out.dims() == std::vector<int64_t>{batch, 5});
    Tensor relu_x = Tensor::from_vector(values_of(x), {batch, 3});
    for (int64_t i = 0; i < relu_x.numel(); ++i)
      relu_x.data<float>()[i] = std::max(relu_x.data<float>()[i], 0.0f);
    Tensor sum = Tensor::from_vector(scale_add_reference(relu_x, y, 0.5f), {batch, 3});
    std::vector<float> expected = concat_last_axis_reference(sum, z);
    for (float& v : expected)
      v *= 2;
    CHECK(values_of(out) == expected);
  }
}

TEST_CASE("a symbolic dim passes through the shape function and binds at the call") {
  TensorLayout row(DType::f32, {"batch", 3});
  auto staged =
      stage([](Tensor x, Tensor y) { return scale_add(x, y, 1.0); }, {.custom_extensions = {kExtension}})(row, row);
  CHECK(contains(staged.to_mlir(), "-> !kiln.tensor<[batch, 3], f32>"));

  auto fn = [](Tensor a, Tensor b) { return F::custom("kiln_test.pairwise_concat", {a, b}).at(0); };
  Failure f = failure_of([&] { stage(fn)(TensorLayout(DType::f32, {3, "n"}), TensorLayout(DType::f32, {3, 2})); });
  CHECK(f.kind == ErrorKind::shape);
  CHECK(contains(f.message, "kiln.custom 'kiln_test.pairwise_concat' at test_extensions.cpp:"));
  CHECK(contains(f.message, "the last axis must be static to concatenate along it"));
}

TEST_CASE("an extension op may have several results and typed attributes") {
  load_extension(kExtension);
  TensorLayout type(DType::f32, {2, 3});
  auto fn = [](Tensor a, Tensor b) {
    std::vector<Tensor> low_high = F::custom("kiln_test.minmax", {a, b});
    Tensor filled = F::custom("kiln_test.fill", {},
                              {{"shape", std::vector<int64_t>{2, 3}}, {"value", 7}, {"negate", true}, {"dtype", "i32"}})
                        .at(0);
    return std::make_tuple(low_high.at(0), low_high.at(1), filled);
  };
  auto run = compile(fn, {.session = session_in(JitMode::off)})(type, type);
  Tensor a = Tensor::randn({2, 3}, 4), b = Tensor::randn({2, 3}, 5);
  auto [low, high, filled] = run(a, b);
  for (int64_t i = 0; i < 6; ++i) {
    CHECK(low.data<float>()[i] == std::min(a.data<float>()[i], b.data<float>()[i]));
    CHECK(high.data<float>()[i] == std::max(a.data<float>()[i], b.data<float>()[i]));
  }
  REQUIRE(filled.dtype() == DType::i32);
  REQUIRE(filled.dims() == std::vector<int64_t>{2, 3});
  for (int64_t i = 0; i < 6; ++i)
    CHECK(filled.data<int32_t>()[i] == -7);
}

TEST_CASE("extension ops run eagerly on concrete tensors") {
  load_extension(kExtension);
  Tensor x = Tensor::randn({3, 4}, 6), y = Tensor::randn({3, 4}, 7);
  Tensor out = scale_add(x, y, -2.0);
  CHECK(values_of(out) == scale_add_reference(x, y, -2.0f));
  Tensor filled =
      F::custom("kiln_test.fill", {}, {{"shape", std::vector<int64_t>{2}}, {"value", 1.5}, {"dtype", "f32"}}).at(0);
  CHECK(values_of(filled) == std::vector<float>{1.5f, 1.5f});
}

TEST_CASE("a staged graph with an extension op prints, parses back and runs") {
  TensorLayout type(DType::f32, {"batch", 4});
  auto staged =
      stage([](Tensor x, Tensor y) { return scale_add(x, y, 0.25); }, {.custom_extensions = {kExtension}})(type, type);
  const std::string text = staged.to_mlir();
  CHECK(contains(text, "\"kiln.custom\"(%arg0, %arg1) {alpha = 0.25 : f64, op = \"kiln_test.scale_add\"}"));
  StagedGraph parsed = parse_staged(text, "model.mlir");
  CHECK(parsed.to_mlir() == text);

  auto run = compile_staged(parsed, {.custom_extensions = {kExtension}, .session = session_in(JitMode::off)});
  Tensor x = Tensor::randn({5, 4}, 8), y = Tensor::randn({5, 4}, 9);
  CHECK(values_of(run(std::vector<Tensor>{x, y}).at(0)) == scale_add_reference(x, y, 0.25f));
}

TEST_CASE("parsing checks an extension op's written types against its shape function") {
  load_extension(kExtension);
  const std::string text = R"(module @m {
  func.func @m(%arg0: !kiln.tensor<[2, 3], f32>, %arg1: !kiln.tensor<[2, 3], f32>) -> !kiln.tensor<[2, 4], f32> {
    %0 = "kiln.custom"(%arg0, %arg1) {op = "kiln_test.scale_add"} : (!kiln.tensor<[2, 3], f32>, !kiln.tensor<[2, 3], f32>) -> !kiln.tensor<[2, 4], f32>
    return %0 : !kiln.tensor<[2, 4], f32>
  }
}
)";
  Failure f = failure_of([&] { parse_staged(text, "model.mlir"); });
  CHECK(f.kind == ErrorKind::parse);
  CHECK(contains(f.message, "model.mlir:3:"));
  CHECK(contains(f.message, "f32 [2, 3]"));
}

TEST_CASE("the shape function's error names the op and the user's line") {
  load_extension(kExtension);
  auto fn = [](Tensor x, Tensor y) { return scale_add(x, y, 1.0); };
  Failure f = failure_of([&] { stage(fn)(TensorLayout(DType::f32, {2, 3}), TensorLayout(DType::f32, {2, 4})); });
  CHECK(f.kind == ErrorKind::shape);
  CHECK(contains(f.message, "kiln.custom 'kiln_test.scale_add' at test_extensions.cpp:"));
  CHECK(contains(f.message, "inputs must have the same shape"));
}

TEST_CASE("a kernel error becomes a kiln::Error with the extension's message") {
  TensorLayout type(DType::f32, {4});
  auto fn = [](Tensor x) { return F::custom("kiln_test.checked_sqrt", {x}).at(0); };
  auto run = compile(fn, {.custom_extensions = {kExtension}, .session = session_in(JitMode::off)})(type);
  Tensor good = Tensor::from_vector<float>({0, 1, 4, 9}, {4});
  CHECK(values_of(run(good)) == std::vector<float>{0, 1, 2, 3});

  Tensor bad = Tensor::from_vector<float>({1, -4, 9, 16}, {4});
  Failure f = failure_of([&] { run(bad); });
  CHECK(f.kind == ErrorKind::extension);
  CHECK(contains(f.message, "kiln.custom 'kiln_test.checked_sqrt' at test_extensions.cpp:"));
  CHECK(contains(f.message, "the kernel failed: negative input -4 at element 1"));
  CHECK(values_of(run(good)) == std::vector<float>{0, 1, 2, 3}); // the callable still serves

  Failure eager = failure_of([&] { fn(bad); });
  CHECK(eager.kind == ErrorKind::extension);
  CHECK(contains(eager.message, "negative input -4 at element 1"));
}

TEST_CASE("an op no loaded extension registers is refused when traced, compiled or verified") {
  TensorLayout type(DType::f32, {2});
  Failure traced = failure_of([&] { stage([](Tensor x) { return F::custom("nobody.op", {x}).at(0); })(type); });
  CHECK(traced.kind == ErrorKind::unsupported);
  CHECK(contains(traced.message, "custom op 'nobody.op' is not registered by any loaded extension"));
  CHECK(contains(traced.message, "test_extensions.cpp:"));

  // Parsing keeps an unknown custom op opaque (printing a graph needs no extension); compiling refuses it.
  const std::string text = R"(module @m {
  func.func @m(%arg0: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.custom"(%arg0) {op = "nobody.op"} : (!kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> loc("model.cpp":7:3)
    return %0 : !kiln.tensor<[2], f32>
  }
}
)";
  StagedGraph parsed = parse_staged(text);
  Failure compiled = failure_of([&] { compile_staged(parsed, {.session = session_in(JitMode::off)}); });
  CHECK(compiled.kind == ErrorKind::unsupported);
  CHECK(contains(compiled.message,
                 "kiln.custom at model.cpp:7:3: custom op 'nobody.op' is not registered by any loaded extension"));
}

TEST_CASE("the attribute name 'op' is reserved for the op name") {
  load_extension(kExtension);
  Tensor x = Tensor::ones({2});
  Failure f = failure_of([&] { F::custom("kiln_test.scale_add", {x, x}, {{"op", "other"}}); });
  CHECK(f.kind == ErrorKind::spec);
  CHECK(contains(f.message, "the attribute name 'op' is reserved"));
}

TEST_CASE("a library that cannot be opened is an io error naming the path") {
  Failure f = failure_of([] { load_extension("/nonexistent/libnothing.so"); });
  CHECK(f.kind == ErrorKind::io);
  CHECK(contains(f.message, "cannot load extension '/nonexistent/libnothing.so': "));
  CHECK(contains(f.message, "No such file"));

  Failure staged = failure_of([] {
    stage([](Tensor x) { return x; },
          {.custom_extensions = {"/nonexistent/libnothing.so"}})(TensorLayout(DType::f32, {2}));
  });
  CHECK(staged.kind == ErrorKind::io);
}

TEST_CASE("a library without kiln_register_extension is refused naming the symbol and the path") {
  Failure f = failure_of([] { load_extension(KILN_TEST_BAD_NO_SYMBOL); });
  CHECK(f.kind == ErrorKind::extension);
  CHECK(contains(f.message,
                 std::string("extension '") + KILN_TEST_BAD_NO_SYMBOL + "' does not export kiln_register_extension"));
}

TEST_CASE("an op built for another extension ABI version is refused") {
  Failure f = failure_of([] { load_extension(KILN_TEST_BAD_ABI_MISMATCH); });
  CHECK(f.kind == ErrorKind::extension);
  CHECK(contains(f.message, "op 0 was built for extension ABI 999, this kiln speaks ABI 1"));
}

TEST_CASE("a library whose registration fails says why and registers nothing") {
  Failure refused = failure_of([] { load_extension(KILN_TEST_BAD_REFUSES); });
  CHECK(refused.kind == ErrorKind::extension);
  CHECK(contains(refused.message, "kiln_register_extension returned 3: this extension needs a GPU"));

  Failure reserved = failure_of([] { load_extension(KILN_TEST_BAD_RESERVED_NAME); });
  CHECK(contains(reserved.message, "op 'jit.sneaky': the namespace 'jit' is kiln's own"));

  load_extension(kExtension);
  Failure duplicate = failure_of([] { load_extension(KILN_TEST_BAD_DUPLICATE); });
  CHECK(duplicate.kind == ErrorKind::extension);
  CHECK(contains(duplicate.message, "op 'kiln_test.scale_add' is already registered by '" + kExtension + "'"));
  const std::vector<std::string> names = extension_op_names();
  CHECK(std::count(names.begin(), names.end(), "kiln_test_dup.extra") == 0);
}

TEST_CASE("an extension op serves many threads at once") {
  TensorLayout type(DType::f32, {"batch", 8});
  auto run = compile([](Tensor x, Tensor y) { return scale_add(x, y, 3.0); },
                     {.custom_extensions = {kExtension}, .session = session_in(JitMode::off)})(type, type);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Tensor x = Tensor::randn({1 + (t + i) % 5, 8}, uint64_t(t * 100 + i));
        Tensor y = Tensor::randn(x.dims(), uint64_t(t * 100 + i + 7));
        if (values_of(run(x, y)) != scale_add_reference(x, y, 3.0f)) ++mismatches;
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  CHECK(mismatches == 0);
}

#if KILN_HAS_JIT
TEST_CASE("a graph promoted to the JIT tier still runs its extension op through the extension's kernel") {
  TensorLayout x_type(DType::f32, {4, 8});
  TensorLayout w_type(DType::f32, {8, 8});
  auto fn = [&](Tensor x) {
    Tensor h = F::relu(F::matmul(x, F::constant_external("w", w_type)));
    return F::tanh(scale_add(h, x, 0.5)) * 2.0 + 1.0;
  };
  Tensor w = Tensor::randn({8, 8}, 10);
  auto session = session_in(JitMode::always);
  auto run = compile(fn, {.weights = {{"w", w}}, .custom_extensions = {kExtension}, .session = session})(x_type);
  Tensor x = Tensor::randn({4, 8}, 11);
  Tensor out = run(x);

  const std::vector<SignatureStats> stats = session->stats();
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].jit_error == "");
  CHECK(stats[0].tier == "jit");
  // The extension op is a plan step of its own between what the JIT lowered.
  REQUIRE(stats[0].ops_per_lowering.count("extension") == 1);
  CHECK(stats[0].ops_per_lowering.at("extension") == 1);
  CHECK(stats[0].ops_per_lowering.count("dnnl.matmul") + stats[0].ops_per_lowering.count("xbyak") >= 1);

  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      double h = 0;
      for (int64_t k = 0; k < 8; ++k)
        h += double(x.data<float>()[r * 8 + k]) * w.data<float>()[k * 8 + c];
      const double expected = std::tanh(std::max(h, 0.0) + 0.5 * x.data<float>()[r * 8 + c]) * 2 + 1;
      CHECK(out.data<float>()[r * 8 + c] == doctest::Approx(expected).epsilon(1e-4));
    }
}
#endif

#ifdef KILN_TEST_CLI
namespace {

// KILN_TEST_EXEC_PREFIX: qemu-aarch64 and its sysroot in the aarch64 cross build, else "".
const std::string kKiln = KILN_TEST_EXEC_PREFIX KILN_BUILD_DIR "/tools/kiln";

struct CommandResult {
  int status = -1;
  std::string err;
};

CommandResult run_kiln(const Scratch& scratch, const std::string& args) {
  const std::string command = kKiln + " " + args + " >/dev/null 2>'" + (scratch / "stderr.txt").string() + "'";
  const int raw = std::system(command.c_str());
  std::ifstream in(scratch / "stderr.txt");
  std::stringstream err;
  err << in.rdbuf();
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, err.str()};
}

} // namespace

TEST_CASE("kiln run and kiln verify load extensions with --extension") {
  Scratch scratch;
  TensorLayout type(DType::f32, {"batch", 3});
  stage([](Tensor x, Tensor y) { return scale_add(x, y, 2.0); }, {.custom_extensions = {kExtension}})(type, type)
      .save((scratch / "model.mlir").string());
  Tensor x = Tensor::randn({2, 3}, 12), y = Tensor::randn({2, 3}, 13);
  save_npy((scratch / "x.npy").string(), x);
  save_npy((scratch / "y.npy").string(), y);
  const std::string model = "'" + (scratch / "model.mlir").string() + "'";
  const std::string extension = " --extension '" + kExtension + "'";

  CommandResult unverified = run_kiln(scratch, "verify " + model);
  CHECK(unverified.status != 0);
  CHECK(contains(unverified.err, "custom op 'kiln_test.scale_add' is not registered by any loaded extension"));
  CHECK(run_kiln(scratch, "verify " + model + extension).status == 0);

  const std::string io = " --input 0='" + (scratch / "x.npy").string() + "' --input 1='" +
                         (scratch / "y.npy").string() + "' --output '" + (scratch / "out.npy").string() + "'";
  CommandResult refused = run_kiln(scratch, "run " + model + io);
  CHECK(refused.status != 0);
  CHECK(!fs::exists(scratch / "out.npy"));
  CommandResult ran = run_kiln(scratch, "run " + model + io + extension);
  REQUIRE(ran.status == 0);
  CHECK(values_of(load_npy((scratch / "out.npy").string())) == scale_add_reference(x, y, 2.0f));
}
#endif
