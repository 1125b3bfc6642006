#pragma once
#include <kiln/compile.hpp>
#include <string>
#include <vector>

namespace kiln::debug {

// One step of one tier's executable: an op, or the ops a JIT lowering fused (named by the first).
struct StepProfile {
  std::string tier;           // "interp" or "jit"
  size_t step = 0;            // in the executable's run order
  std::string op;             // "%4 = kiln.matmul at model.cpp:42:17", named as `kiln print` does
  std::string implementation; // what ran it: "interp", "packed_gemm", "dnnl.matmul", "xbyak", ...
  double ms = 0;              // median over the timed calls
  int64_t bytes = 0;          // of its inputs and outputs: what it reads and writes at least
};

struct Profile {
  std::vector<StepProfile> steps; // the interpreter's, then the JIT tier's (when it is built)
  std::string table() const;      // one line per step, slowest first within each tier
};

namespace detail {
Profile profile(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs, int calls);
}

// Times one call's steps on each tier for the signature of `inputs` (one tensor per argument leaf):
// `calls` timed calls after one warm-up call, each step's median. The callable's cache and
// statistics are untouched. Per-step timing adds a clock read around every step.
template <class Result>
Profile profile(const CompiledCallable<Result>& callable, const std::vector<Tensor>& inputs, int calls = 10) {
  return detail::profile(*callable.core(), inputs, calls);
}

} // namespace kiln::debug
