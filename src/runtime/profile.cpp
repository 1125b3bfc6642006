#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "runtime/executable.hpp"
#include "runtime/tier_set.hpp"
#include "runtime/weight_map.hpp"
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <kiln/profile.hpp>
#include <sstream>

namespace kiln::debug {

namespace {

using Clock = std::chrono::steady_clock;

int64_t bytes_of(std::span<const Tensor> tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors)
    bytes += t.numel() * int64_t(dtype_size(t.dtype()));
  return bytes;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// "%4 = kiln.sqrt at model.cpp:3:9", the value named as `kiln print` prints it.
std::string step_op(const std::vector<std::string>& names, const ir::Op& op) {
  std::string made;
  for (ir::ValueId v : op.results)
    made += (made.empty() ? "" : ", ") + names.at(v);
  return (made.empty() ? "" : made + " = ") + ir::op_place(op);
}

// Every step of `exe` (which runs `graph`) timed over `calls` calls (after one untimed call).
std::vector<StepProfile> profile_tier(const ir::Function& graph, const runtime::Executable& exe,
                                      const std::vector<Tensor>& inputs, int calls) {
  const std::vector<std::string> names = ir::value_names(graph);
  struct Timing {
    std::string op;
    int64_t bytes = 0;
    std::vector<double> ms;
  };
  std::vector<Timing> timings;
  Clock::time_point started;
  runtime::OpHooks hooks;
  hooks.before = [&](size_t, const ir::Op&, std::span<const Tensor>) { started = Clock::now(); };
  hooks.after = [&](size_t index, const ir::Op& op, std::span<const Tensor> in, std::span<const Tensor> out) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    if (timings.size() <= index) timings.resize(index + 1);
    Timing& t = timings[index];
    t.op = step_op(names, op);
    t.bytes = bytes_of(in) + bytes_of(out);
    t.ms.push_back(ms);
  };
  exe.run(inputs, {});
  for (int i = 0; i < calls; ++i)
    exe.run(inputs, {.hooks = &hooks});
  std::vector<StepProfile> steps;
  for (size_t i = 0; i < timings.size(); ++i)
    if (!timings[i].ms.empty())
      steps.push_back({std::string(exe.tier()), i, timings[i].op, exe.step_implementation(i), median(timings[i].ms),
                       timings[i].bytes});
  return steps;
}

} // namespace

std::string Profile::table() const {
  std::vector<StepProfile> sorted = steps;
  std::stable_sort(sorted.begin(), sorted.end(), [](const StepProfile& a, const StepProfile& b) {
    return a.tier != b.tier ? a.tier < b.tier : a.ms > b.ms; // "interp" before "jit"
  });
  std::ostringstream out;
  out << std::left << std::setw(7) << "tier" << std::setw(6) << "step" << std::setw(11) << "ms" << std::setw(12)
      << "bytes" << std::setw(16) << "implementation"
      << "op\n";
  for (const StepProfile& s : sorted)
    out << std::left << std::setw(7) << s.tier << std::setw(6) << s.step << std::setw(11) << std::setprecision(4)
        << s.ms << std::setw(12) << s.bytes << std::setw(16) << s.implementation << s.op << "\n";
  return out.str();
}

namespace detail {

Profile profile(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs, int calls) {
  if (calls < 1) throw Error(ErrorKind::spec, "debug::profile: calls must be at least 1, got " + std::to_string(calls));
  Profile result;
  core.inspect_signature(core.tensor_arguments(inputs), inputs,
                         [&](const std::shared_ptr<const ir::Function>& graph, const runtime::WeightMap& weights,
                             const ir::InlinedCalls&) {
                           for (const char* tier : {"interp", "jit"}) {
                             const runtime::ExecutableFactory* factory = core.session().tiers().find(tier);
                             if (!factory) continue; // an interpreter-only build
                             const std::vector<StepProfile> steps =
                                 profile_tier(*graph, *(*factory)(graph, weights), inputs, calls);
                             result.steps.insert(result.steps.end(), steps.begin(), steps.end());
                           }
                         });
  return result;
}

} // namespace detail

} // namespace kiln::debug
