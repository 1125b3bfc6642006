#pragma once
#include <kiln/compile.hpp>
#include <optional>
#include <string>
#include <vector>

// Why does the fast tier disagree? One call of a compiled callable's signature on the interpreter
// and on a promoted tier (the JIT or the accelerator), every value each tier materialises compared
// in graph order; inside a fused step, op by op.
namespace kiln::debug {

struct TierDifference {
  std::string op;           // the op whose result differs first: "kiln.softmax at model.cpp:42:17"
  std::string value;        // its result: "%7"
  std::string tier = "jit"; // the tier compared with the interpreter: "jit" or "accelerator"
  // When the difference showed in the result of a step the tier fused from several ops: the step's
  // ops ("kiln.mul %3, kiln.sin %4, kiln.add %5"), empty otherwise. `narrowed`: `op` is the first
  // of them whose result differs when the step's ops up to it run on the JIT alone (their inputs
  // the interpreter's values); false when no shorter run differs, and `op` is the step's last.
  std::string fused_step;
  bool narrowed = false;
  Tensor interp, jit;                          // the value on the interpreter and on `tier`
  int64_t first_index = 0;                     // the first element that differs
  double max_abs_error = 0, max_rel_error = 0; // over the finite elements both tiers give
  std::string message() const;                 // all of the above in one paragraph
};

namespace detail {
std::optional<TierDifference> compare_tiers(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs,
                                            double tolerance, const std::string& tier);
}

// Runs the signature of `inputs` (one tensor per argument of the callable) on the interpreter and
// on `tier` ("jit" or "accelerator"; empty: the tier the callable promotes to, TierPolicy::
// promote_to) and returns the first op whose result differs beyond `tolerance` * (1 + |interpreter
// value|), NaN only matching NaN and an infinity only the same infinity; nullopt when the tiers
// agree. The callable's cache and statistics are untouched. kiln::Error(unsupported) in a build
// without that tier.
template <class Result>
std::optional<TierDifference> compare_tiers(const CompiledCallable<Result>& callable, const std::vector<Tensor>& inputs,
                                            double tolerance = 1e-4, const std::string& tier = "") {
  return detail::compare_tiers(*callable.core(), inputs, tolerance, tier);
}

} // namespace kiln::debug
