// One weight identity: the forms tiers derive from weights (packed, reordered, precomputed) live in
// the session's WeightForms under (weights, versions, form), made once and shared by every plan,
// signature and tier; set() makes a new version, an in-place change without set() is not seen.
#include "core/environment.hpp"
#include "exec/plan_executable.hpp"
#include "interp/interpreter_backend.hpp"
#include "interp/packed_matmul.hpp"
#include "ir/ops.hpp"
#include "kiln_config.h"
#include "runtime/weight_forms.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>

using namespace kiln;
using exec::PlanExecutable;
using ir::OpKind;
using ir::ValueId;
using runtime::WeightForms;
using runtime::WeightMap;

namespace {

// Whether matmuls by bound weights run the packed GEMM here (interp/packed_matmul.hpp).
bool packs_weights() { return interp::cpu_runs_packed_gemm() && env::pack_weights().value_or(true); }

// Registry weights, each at `version`, their forms shared through `forms`.
WeightMap registry_weights(const std::shared_ptr<WeightForms>& forms, const std::map<std::string, Tensor>& tensors,
                           uint64_t version) {
  WeightMap weights(forms);
  for (const auto& [name, tensor] : tensors)
    weights.bind(name, tensor, {0, name, version});
  return weights;
}

// out = x [rows, k] @ transpose(w), w [n, k] a weight (what F::linear stages), or an embedded
// constant when `embedded`; with `negated`, of -w: a neg the plan precomputes (op 1), since the
// transpose itself is read through by the matmul.
std::unique_ptr<PlanExecutable> linear_plan(int64_t rows, const Tensor& w, const WeightMap& weights,
                                            bool embedded = false, bool negated = false) {
  auto fn = std::make_shared<ir::Function>();
  auto add = [&](OpKind kind, std::vector<ValueId> operands, ir::Attrs attrs) {
    std::vector<ir::ValueType> types;
    for (ValueId v : operands)
      types.push_back(fn->type_of(v));
    std::vector<ir::ValueType> results = ir::infer_op(kind, types, attrs, {});
    return fn->ops[fn->add_op(kind, operands, results, std::move(attrs))].results.at(0);
  };
  ValueId x = fn->add_arg(ir::ValueType{DType::f32, shape_from_dims({rows, w.dims()[1]}), false});
  ValueId b = embedded
                  ? add(OpKind::constant, {}, {{"value", ir::Attr::of_tensor(w)}})
                  : fn->ops[fn->add_op(OpKind::constant_external, {}, {ir::ValueType{DType::f32, w.shape(), false}},
                                       {{"name", ir::Attr::of_string("w")}})]
                        .results.at(0);
  if (negated) b = add(OpKind::neg, {b}, {});
  ValueId wt = add(OpKind::transpose, {b}, {{"perm", ir::Attr::of_ints({1, 0})}});
  fn->outputs = {add(OpKind::matmul, {x, wt}, {})};
  return std::make_unique<PlanExecutable>(fn, weights, interp::interpreter_backend().steps);
}

// x @ transpose(w) in double precision, rounded to float.
std::vector<float> naive_linear(const Tensor& x, const Tensor& w) {
  const int64_t k = w.dims()[1], n = w.dims()[0], rows = x.numel() / k;
  std::vector<float> out(size_t(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(x.data<float>()[r * k + p]) * double(w.data<float>()[j * k + p]);
      out[size_t(r * n + j)] = float(sum);
    }
  return out;
}

float max_abs_diff(const Tensor& got, const std::vector<float>& want) {
  REQUIRE(got.numel() == int64_t(want.size()));
  float worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::fabs(got.data<float>()[i] - want[i]));
  return worst;
}

const void* bound_data(const PlanExecutable& exe, size_t op) {
  return exe.plan().values()[exe.plan().graph().ops.at(op).results.at(0)].bound.raw_data();
}

} // namespace

TEST_CASE("a weight form is made once while some executable holds it, and again after the last one goes") {
  WeightForms forms;
  const runtime::WeightFormKey key = runtime::derived_key("test.copy", {}, "a");
  int made = 0;
  auto make = [&] { return ++made; };
  auto first = forms.get<int>(key, make);
  auto second = forms.get<int>(key, make);
  CHECK(first == second);
  CHECK(forms.forms_made() == 1);
  CHECK(forms.live_forms() == 1);
  first.reset();
  second.reset();
  CHECK(forms.live_forms() == 0); // the cache keeps nothing alive
  CHECK(*forms.get<int>(key, make) == 2);
  CHECK(forms.forms_made() == 2);
}

TEST_CASE("setting a weight forgets the forms of its older versions and of nothing else") {
  Session session(TierPolicy{.mode = JitMode::off});
  WeightForms& forms = *session.weights().forms();
  session.weights().set("w", Tensor::ones({2}));
  session.weights().set("v", Tensor::ones({2}));
  const runtime::WeightFormKey w = runtime::weight_key({0, "w", session.weights().version("w")});
  const runtime::WeightFormKey v = runtime::weight_key({0, "v", session.weights().version("v")});
  const runtime::WeightFormKey both = runtime::derived_key("test.concat", {&w, &v});
  auto held_w = forms.get<int>(runtime::derived_key("test.copy", {&w}), [] { return 1; });
  auto held_v = forms.get<int>(runtime::derived_key("test.copy", {&v}), [] { return 2; });
  auto held_both = forms.get<int>(both, [] { return 3; });
  CHECK(forms.live_forms() == 3);
  session.weights().set("w", Tensor::zeros({2}));
  CHECK(forms.live_forms() == 1); // v's own form stays; the forms made from the old w are not asked for again
  CHECK(*held_w == 1);            // executables built on them keep them
  CHECK(*forms.get<int>(both, [] { return 4; }) == 4);
}

TEST_CASE("plans over one weight version share its precomputed and packed forms; other weights get their own") {
  // Each signature and tier builds a plan; all of them over one weight hold one negated copy and
  // one packed copy.
  auto forms = std::make_shared<WeightForms>();
  const Tensor w = Tensor::randn({3, 2}, 1), other = Tensor::randn({3, 2}, 2);
  auto one = linear_plan(1, w, registry_weights(forms, {{"w", w}}, 1), false, true);
  const uint64_t made = forms->forms_made();
  CHECK(made == (packs_weights() ? 2 : 1)); // the neg, and the packed B where a packed GEMM runs
  auto four = linear_plan(4, w, registry_weights(forms, {{"w", w}}, 1), false, true);
  CHECK(forms->forms_made() == made);
  CHECK(bound_data(*four, 1) == bound_data(*one, 1));
  auto newer = linear_plan(1, other, registry_weights(forms, {{"w", other}}, 2), false, true);
  CHECK(forms->forms_made() == 2 * made);
  CHECK(bound_data(*newer, 1) != bound_data(*one, 1));
  // Each still computes with its own weight.
  const Tensor x = Tensor::randn({1, 2}, 3), x4 = Tensor::randn({4, 2}, 4);
  CHECK(max_abs_diff(one->run(std::vector<Tensor>{x}, {}).at(0), naive_linear(x, F::neg(w))) <= 1e-5f);
  CHECK(max_abs_diff(four->run(std::vector<Tensor>{x4}, {}).at(0), naive_linear(x4, F::neg(w))) <= 1e-5f);
  CHECK(max_abs_diff(newer->run(std::vector<Tensor>{x}, {}).at(0), naive_linear(x, F::neg(other))) <= 1e-5f);
}

TEST_CASE("a weight's transpose that only matmuls read is not copied: they read the weight in place") {
  auto forms = std::make_shared<WeightForms>();
  const Tensor w = Tensor::randn({33, 17}, 8);
  auto plan = linear_plan(7, w, registry_weights(forms, {{"w", w}}, 1));
  const exec::ValuePlan& transposed = plan->plan().values()[plan->plan().graph().ops.at(1).results.at(0)];
  CHECK(transposed.read_through);
  CHECK(!transposed.bound.defined());
  CHECK(forms->forms_made() == (packs_weights() ? 1 : 0)); // only the packed B, where a packed GEMM runs
  CHECK(plan->memory().weight_bytes == size_t(33 * 17 * 4));
  CHECK(plan->memory().constant_bytes == (packs_weights() ? size_t(17 * 48 * 4) : 0)); // 3 panels of 16
  const Tensor x = Tensor::randn({7, 17}, 9);
  CHECK(max_abs_diff(plan->run(std::vector<Tensor>{x}, {}).at(0), naive_linear(x, w)) <= 1e-5f);
}

TEST_CASE("plans over one weight at different batch sizes each compute their own product") {
  // The packed copy of w is shared while any plan holds it; dropping one plan must not affect
  // the other, and a plan built after both are gone packs w again.
  auto forms = std::make_shared<WeightForms>();
  const Tensor w = Tensor::randn({64, 48}, 5);
  const WeightMap weights = registry_weights(forms, {{"w", w}}, 1);
  auto check_plan = [&](PlanExecutable& exe, int64_t rows) {
    const Tensor x = Tensor::randn({rows, 48}, uint64_t(rows));
    CHECK(max_abs_diff(exe.run(std::vector<Tensor>{x}, {}).at(0), naive_linear(x, w)) <= 1e-4f);
  };
  auto small = linear_plan(1, w, weights);
  auto large = linear_plan(33, w, weights);
  const uint64_t made = forms->forms_made();
  check_plan(*small, 1);
  small.reset();
  check_plan(*large, 33);
  large.reset();
  CHECK(forms->live_forms() == 0);
  auto again = linear_plan(5, w, weights);
  CHECK(forms->forms_made() == 2 * made);
  check_plan(*again, 5);
}

TEST_CASE("an embedded constant's precomputed and packed forms belong to its plan") {
  // A kiln.constant has no name or version: each plan computes its own, once, when it is built.
  auto forms = std::make_shared<WeightForms>();
  const Tensor c = Tensor::randn({8, 4}, 6);
  auto one = linear_plan(2, c, WeightMap(forms), true, true);
  auto two = linear_plan(2, c, WeightMap(forms), true, true);
  CHECK(forms->forms_made() == 0);
  CHECK(bound_data(*one, 1) != bound_data(*two, 1));
  const Tensor x = Tensor::randn({2, 4}, 7);
  CHECK(max_abs_diff(one->run(std::vector<Tensor>{x}, {}).at(0), naive_linear(x, F::neg(c))) <= 1e-5f);
}

namespace {

// One session, three callables of x @ wᵀ + b reading the registry: one per tier policy. Their
// names differ so that each has its own executables; the weight forms are the session's.
struct TieredLinear {
  static constexpr int64_t kIn = 24, kOut = 40;
  std::shared_ptr<Session> session;
  const std::vector<std::string> names{"interp", "always", "automatic"};
  std::vector<CompiledCallable<Tensor>> callables; // one per name

  explicit TieredLinear(const Tensor& w) {
    TierPolicy policy{.mode = JitMode::automatic, .promote_after = 1, .async = false};
    session = std::make_shared<Session>(policy, 64);
    session->weights().set("w", w); // zero-copy: the registry holds w's memory
    session->weights().set("b", Tensor::randn({kOut}, 11));
    session->weights().set("other", Tensor::ones({3}));
    const JitMode modes[] = {JitMode::off, JitMode::always, JitMode::automatic};
    for (size_t i = 0; i < names.size(); ++i) {
      TierPolicy tiers = policy;
      tiers.mode = modes[i];
      auto fn = [](Tensor x) {
        return F::linear(x, F::constant_external("w", TensorLayout(DType::f32, {kOut, kIn})),
                         F::constant_external("b", TensorLayout(DType::f32, {kOut})));
      };
      callables.push_back(compile(fn, {.name = names[i], .session = session, .tiers = tiers})(
          TensorLayout(DType::f32, {"batch", kIn})));
    }
  }

  // Each callable called twice (the automatic one is promoted on its second call); the last results.
  std::vector<Tensor> run_all(const Tensor& x) {
    std::vector<Tensor> out;
    for (const auto& callable : callables) {
      callable(x);
      out.push_back(callable(x));
    }
    return out;
  }

  std::vector<float> expected(const Tensor& x, const Tensor& w) const {
    std::vector<float> out = naive_linear(x, w);
    const Tensor b = *session->weights().find("b");
    for (size_t i = 0; i < out.size(); ++i)
      out[i] += b.data<float>()[i % size_t(kOut)];
    return out;
  }

  // The tier serving each callable's signature of batch `rows`.
  std::vector<std::string> tiers(int64_t rows) const {
    std::vector<std::string> out(callables.size());
    const std::string signature = "f32[" + std::to_string(rows) + ", " + std::to_string(kIn) + "]";
    for (const SignatureStats& s : session->stats())
      for (size_t i = 0; i < callables.size(); ++i)
        if (s.callable == names[i] && s.signature == signature) out[i] = s.tier;
    return out;
  }
};

// What each tier serves in this build: the JIT where it is linked.
const std::vector<std::string> kJitTiers = KILN_HAS_JIT ? std::vector<std::string>{"interp", "jit", "jit"}
                                                        : std::vector<std::string>{"interp", "interp", "interp"};

} // namespace

TEST_CASE("setting a weight a callable reads gives new results on both tiers and derives each form once") {
  const Tensor w1 = Tensor::randn({TieredLinear::kOut, TieredLinear::kIn}, 13);
  TieredLinear t(w1);
  const Tensor x = Tensor::randn({5, TieredLinear::kIn}, 12);
  for (const Tensor& out : t.run_all(x))
    CHECK(max_abs_diff(out, t.expected(x, w1)) <= 1e-4f);
  CHECK(t.tiers(5) == kJitTiers);
  WeightForms& forms = *t.session->weights().forms();
  const uint64_t forms_per_version = forms.forms_made();
  CHECK(forms_per_version > 0);
  t.run_all(x);
  CHECK(forms.forms_made() == forms_per_version); // calls derive nothing

  const Tensor w2 = Tensor::randn({TieredLinear::kOut, TieredLinear::kIn}, 14);
  t.session->weights().set("w", w2);
  for (const Tensor& out : t.run_all(x))
    CHECK(max_abs_diff(out, t.expected(x, w2)) <= 1e-4f);
  CHECK(t.tiers(5) == kJitTiers);
  CHECK(forms.forms_made() == 2 * forms_per_version); // every form of w once more, shared by all tiers

  // Another batch size reuses the interpreter's forms of this version.
  const Tensor x3 = Tensor::randn({3, TieredLinear::kIn}, 15);
  const uint64_t before = forms.forms_made();
  CHECK(max_abs_diff(t.callables[0](x3), t.expected(x3, w2)) <= 1e-4f);
  CHECK(forms.forms_made() == before);

  // A weight no callable reads: nothing is rebuilt or derived again.
  const uint64_t compiled = t.session->totals().signatures_compiled;
  t.session->weights().set("other", Tensor::zeros({3}));
  for (const Tensor& out : t.run_all(x))
    CHECK(max_abs_diff(out, t.expected(x, w2)) <= 1e-4f);
  CHECK(t.session->totals().signatures_compiled == compiled);
  CHECK(forms.forms_made() == before);
}

TEST_CASE("a weight changed in place without set() gives the same results on every tier until set()") {
  // Unsupported, but consistent: every tier keeps the forms it derived from the version (the
  // interpreter's transposed and packed w, the JIT's reordered w), so none sees the change.
  Tensor w = Tensor::randn({TieredLinear::kOut, TieredLinear::kIn}, 17);
  const Tensor original = w.clone();
  TieredLinear t(w);
  const Tensor x = Tensor::randn({5, TieredLinear::kIn}, 16);
  t.run_all(x);
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = 0.5f - 2.0f * w.data<float>()[i];

  for (const Tensor& out : t.run_all(x))
    CHECK(max_abs_diff(out, t.expected(x, original)) <= 1e-4f);
  CHECK(t.tiers(5) == kJitTiers);
  // A signature first compiled after the change reuses the interpreter's forms of the version too.
  const Tensor x3 = Tensor::randn({3, TieredLinear::kIn}, 18);
  CHECK(max_abs_diff(t.callables[0](x3), t.expected(x3, original)) <= 1e-4f);

  t.session->weights().set("w", w); // the same tensor: a new version, derived again
  for (const Tensor& out : t.run_all(x))
    CHECK(max_abs_diff(out, t.expected(x, w)) <= 1e-4f);
  CHECK(t.tiers(5) == kJitTiers);
}

TEST_CASE("two callables of one graph, each with its own weight of one name, compute with their own") {
  auto session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
  auto fn = [](Tensor x) { return x * F::constant_external("w", TensorLayout(DType::f32, {2})); };
  auto ones = compile(fn, {.weights = {{"w", Tensor::ones({2})}}, .session = session})(TensorLayout(DType::f32, {2}));
  auto fives =
      compile(fn, {.weights = {{"w", Tensor::full({2}, 5.0)}}, .session = session})(TensorLayout(DType::f32, {2}));
  CHECK(ones(Tensor::ones({2})).data<float>()[0] == 1.0f);
  CHECK(fives(Tensor::ones({2})).data<float>()[0] == 5.0f);
  CHECK(session->totals().signatures_compiled == 2);
}

TEST_CASE("a callable's own weights share forms across its signatures, never with another callable's") {
  auto session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
  auto fn = [](Tensor x) {
    return F::matmul(x, F::transpose(F::constant_external("w", TensorLayout(DType::f32, {6, 4})), 0, 1));
  };
  const Tensor w = Tensor::randn({6, 4}, 19), v = Tensor::randn({6, 4}, 20);
  auto first = compile(fn, {.weights = {{"w", w}}, .session = session})(TensorLayout(DType::f32, {"batch", 4}));
  auto second = compile(fn, {.weights = {{"w", v}}, .session = session})(TensorLayout(DType::f32, {"batch", 4}));
  const Tensor x1 = Tensor::randn({1, 4}, 21), x7 = Tensor::randn({7, 4}, 22);
  CHECK(max_abs_diff(first(x1), naive_linear(x1, w)) <= 1e-5f);
  WeightForms& forms = *session->weights().forms();
  const uint64_t made = forms.forms_made();
  CHECK(max_abs_diff(first(x7), naive_linear(x7, w)) <= 1e-5f);
  CHECK(forms.forms_made() == made);
  CHECK(max_abs_diff(second(x1), naive_linear(x1, v)) <= 1e-5f);
  CHECK(forms.forms_made() == 2 * made);
  // Setting a registry weight of the same name leaves the own weights' forms alone.
  session->weights().set("w", Tensor::zeros({6, 4}));
  CHECK(max_abs_diff(first(Tensor::randn({2, 4}, 23)), naive_linear(Tensor::randn({2, 4}, 23), w)) <= 1e-5f);
  CHECK(forms.forms_made() == 2 * made);
}
