#pragma once
#include <kiln/compile.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::debug {

// The op a Stepper stands before, or has just run.
struct StepState {
  size_t index = 0;                         // in the static graph's op order
  std::string op;                           // "kiln.log"
  std::string location;                     // the user's source line: "model.cpp:42:17"
  std::vector<std::string> inputs, results; // value names as the graph prints them: "%6", "%arg0"
  std::string mlir;                         // its printed line
  bool done = false;                        // every op has run
};

// Steps one call of a compiled callable op by op on the interpreter's kernels, as pdb steps a
// program: step() runs the next op, continue_() runs to the next breakpoint or watchpoint (or the
// end). Breakpoints stop before their op runs; watchpoints after the op whose result trips them,
// with stop_reason() saying why ("watch nan: %7 = kiln.log at model.cpp:42:17 produced 3 NaN of
// 64 values; its input %6 has min -1"). Subgraph calls are inlined, so stepping goes through their
// bodies. Values are freed once no later op reads them, as the executor's arena would reuse them;
// those kept with keep(), watched or broken on stay readable through value(). Single-threaded: one
// Stepper per thread.
class Stepper {
public:
  template <class Result>
  Stepper(const CompiledCallable<Result>& callable, const std::vector<Tensor>& inputs)
      : Stepper(*callable.core(), inputs) {}
  ~Stepper();
  Stepper(Stepper&&) noexcept;
  Stepper& operator=(Stepper&&) noexcept;

  // Breakpoints: an op kind ("kiln.matmul"), the op producing a value ("%12"), a source line
  // ("model.cpp:42", matched against the end of the op's file name).
  void break_on_kind(const std::string& kind);
  void break_on_value(const std::string& value);
  void break_on_line(const std::string& file_and_line);
  // Watchpoints over every floating-point result: the first NaN, the first infinity; or one value
  // leaving [lo, hi].
  void watch_nan();
  void watch_inf();
  void watch_range(const std::string& value, double lo, double hi);
  // Keeps a value readable after its last reader has run.
  void keep(const std::string& value);

  // Runs the next op; false when every op had already run.
  bool step();
  // Runs until a breakpoint or watchpoint stops it (true) or the graph ends (false).
  bool continue_();
  // Runs every remaining op, ignoring breakpoints, and returns the graph's outputs.
  std::vector<Tensor> finish();

  const StepState& current() const;
  // Why the last step() or continue_() stopped where it did; empty after a plain step.
  const std::string& stop_reason() const;
  // A value computed so far and still live or kept ("%12"); kiln::Error naming it otherwise.
  Tensor value(const std::string& value) const;

private:
  Stepper(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs);
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace kiln::debug
