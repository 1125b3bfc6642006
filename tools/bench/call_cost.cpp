// kiln-call-cost FORM TIER CALLS...: warms up one call form on the one-op graph `x + 1` (f32 [16]),
// then runs measured_calls(n) once per CALLS argument. tools/bench/call-cost runs it under
// callgrind, counting instructions only inside measured_calls and dumping a profile after each, so
// the difference of two counts divided by the difference of their calls is the cost of one warm
// call, setup and compiles excluded.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <kiln/kiln.hpp>
#include <string>

namespace {

using namespace kiln;

Tensor add_one(const Tensor& x) { return x + 1.0f; }

struct AddOne : nn::Module {
  Tensor forward(const Tensor& x) override { return add_one(x); }
};

// The callgrind window: its instructions, inclusive, are what tools/bench/call-cost counts.
__attribute__((noinline)) void measured_calls(const std::function<void()>& call, long n) {
  for (long i = 0; i < n; ++i)
    call();
}

TierPolicy policy_of(const std::string& tier) {
  if (tier == "interp") return {JitMode::off, 0, false};
  if (tier == "jit") return {JitMode::always, 0, false};
  throw Error(ErrorKind::spec, "tier '" + tier + "': expected interp or jit");
}

// The call of one form, compiled and warmed up (promoted to the tier) before it is returned.
std::function<void()> warm_call(const std::string& form, const std::shared_ptr<Session>& session) {
  const Tensor x = Tensor::randn({16}, 7);
  const TensorLayout spec(DType::f32, {16});
  CompileOptions compile_options;
  compile_options.session = session;
  JitOptions jit_options;
  jit_options.compile = compile_options;
  std::function<void()> call;
  if (form == "call") {
    auto f = compile(add_one, compile_options)(spec);
    call = [f, x] { f(x); };
  } else if (form == "call_into") {
    auto f = compile(add_one, compile_options)(spec);
    auto out = std::make_shared<std::array<Tensor, 1>>(std::array<Tensor, 1>{Tensor::empty({16})});
    call = [f, x, out] { f.call_into(*out, x); };
  } else if (form == "jit") {
    auto f = kiln::jit(add_one, jit_options);
    call = [f, x] { f(x); };
  } else if (form == "module") {
    auto m = std::make_shared<CompiledModule>(std::make_shared<AddOne>(), jit_options);
    call = [m, x] { (*m)(x); };
  } else {
    throw Error(ErrorKind::spec, "form '" + form + "': expected call, call_into, jit or module");
  }
  for (int i = 0; i < 20; ++i)
    call();
  session->wait_for_promotions();
  return call;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kiln-call-cost call|call_into|jit|module interp|jit CALLS...\n");
    return 2;
  }
  try {
    auto session = std::make_shared<Session>(policy_of(argv[2]));
    const std::function<void()> call = warm_call(argv[1], session);
    for (int i = 3; i < argc; ++i)
      measured_calls(call, std::atol(argv[i]));
    const std::string tier = session->stats().at(0).tier;
    if (tier != argv[2]) {
      std::fprintf(stderr, "kiln-call-cost: the calls ran on the %s tier, not %s\n", tier.c_str(), argv[2]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-call-cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
