// -Dops: which kernels a build has, the refusal of an op left out and the run of those built in.
// Built in every configuration; the other suites need every kernel (-Dops=all).
#include "interp/op_selection.hpp"
#include "ir/ops.hpp"
#include "kiln_config.h"
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <filesystem>
#include <kiln/kiln.hpp>
#include <sstream>

using namespace kiln;

namespace {

std::vector<std::string> selected_names() {
  std::vector<std::string> names;
  std::stringstream list{std::string(interp::built_ops())};
  for (std::string name; std::getline(list, name, ',');)
    names.push_back(name);
  return names;
}

// The interpreter alone, and where the JIT is built the JIT at once: each signature is planned on
// the interpreter first, so the selection holds for both.
std::vector<std::shared_ptr<Session>> sessions() {
  std::vector<std::shared_ptr<Session>> all{std::make_shared<Session>(TierPolicy{.mode = JitMode::off})};
  if (KILN_HAS_JIT)
    all.push_back(std::make_shared<Session>(TierPolicy{.mode = JitMode::always, .promote_after = 0, .async = false}));
  return all;
}

const Error& error_of(const std::function<void()>& f) {
  static Error caught(ErrorKind::internal, "<no error>");
  try {
    f();
  } catch (const Error& e) {
    caught = e;
  }
  return caught;
}

// The refusal names the op, its line (then a column) and the fix.
void check_refusal(const Error& refused, const std::string& op, const std::string& line) {
  CHECK(refused.kind() == ErrorKind::unsupported);
  const std::string& message = refused.message();
  INFO(message);
  CHECK(message.starts_with("op kiln." + op + " at " + line + ":"));
  CHECK(message.find(" is not built into this kiln (built with -Dops=" + std::string(interp::built_ops()) +
                     "); rebuild with " + op + " listed in -Dops") != std::string::npos);
}

// Source locations name the file without its folder.
const std::string kThisFile = std::filesystem::path(__FILE__).filename().string();

const TensorLayout kConvWeight(DType::f32, {2, 1, 3, 3});

Tensor conv(const Tensor& x) { return F::conv2d(x, F::constant_external("w", kConvWeight), Tensor()); }
const int kConvLine = __LINE__ - 1;

Tensor dense_gelu(const Tensor& x) {
  return F::gelu(F::linear(x, F::constant_external("w", TensorLayout(DType::f32, {3, 4})),
                           F::constant_external("b", TensorLayout(DType::f32, {3}))));
}

} // namespace

TEST_CASE("an op's kernel is built exactly when -Dops selects it; the executor's ops need none") {
  const std::vector<std::string> selected = selected_names();
  const bool all = interp::built_ops() == "all";
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const ir::OpInfo& info = ir::op_info(ir::OpKind(k));
    INFO("kiln." << info.name);
    const bool listed = std::find(selected.begin(), selected.end(), info.name) != selected.end();
    if (info.has(ir::kNoKernel))
      CHECK_FALSE(interp::op_built(info.kind));
    else
      CHECK(interp::op_built(info.kind) == (all || listed));
  }
}

TEST_CASE("a graph needing an op not built in parses, prints and verifies, and is refused when planned") {
  if (interp::op_built(ir::OpKind::conv2d)) {
    MESSAGE("skipped: this build has conv2d (-Dops=" << interp::built_ops() << ")");
    return;
  }
  const StagedGraph staged = stage(conv)(TensorLayout(DType::f32, {1, 1, 5, 5}));
  const StagedGraph parsed = parse_staged(staged.to_mlir(), "model.mlir");
  CHECK(parsed.to_mlir() == staged.to_mlir());
  for (const std::shared_ptr<Session>& session : sessions()) {
    auto run = compile_staged(parsed, {.weights = {{"w", Tensor::randn({2, 1, 3, 3}, 1)}}, .session = session});
    const Error& refused = error_of([&] { run(std::vector<Tensor>{Tensor::randn({1, 1, 5, 5}, 2)}); });
    check_refusal(refused, "conv2d", kThisFile + ":" + std::to_string(kConvLine));
  }
}

TEST_CASE("an op not built in is refused in eager mode too") {
  if (interp::op_built(ir::OpKind::conv2d)) {
    MESSAGE("skipped: this build has conv2d (-Dops=" << interp::built_ops() << ")");
    return;
  }
  const Tensor x = Tensor::randn({1, 1, 5, 5}, 1), w = Tensor::randn({2, 1, 3, 3}, 2);
  const Error& refused = error_of([&] { F::conv2d(x, w, Tensor()); });
  check_refusal(refused, "conv2d", kThisFile + ":" + std::to_string(__LINE__ - 1));
}

TEST_CASE("the ops built in run: linear then gelu, as the mlp's layers") {
  for (ir::OpKind kind : {ir::OpKind::transpose, ir::OpKind::matmul, ir::OpKind::add, ir::OpKind::gelu})
    if (!interp::op_built(kind)) {
      MESSAGE("skipped: this build lacks kiln." << ir::op_info(kind).name);
      return;
    }
  const Tensor x = Tensor::randn({5, 4}, 1), w = Tensor::randn({3, 4}, 2), b = Tensor::randn({3}, 3);
  for (const std::shared_ptr<Session>& session : sessions()) {
    auto run = compile(dense_gelu,
                       {.weights = {{"w", w}, {"b", b}}, .session = session})(TensorLayout(DType::f32, {"batch", 4}));
    const Tensor y = run(x);
    REQUIRE(y.dims() == std::vector<int64_t>{5, 3});
    for (int64_t row = 0; row < 5; ++row)
      for (int64_t col = 0; col < 3; ++col) {
        double v = b.item_as_double(col);
        for (int64_t k = 0; k < 4; ++k)
          v += x.item_as_double(row * 4 + k) * w.item_as_double(col * 4 + k);
        CHECK(y.item_as_double(row * 3 + col) ==
              doctest::Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-5));
      }
  }
}
