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
  std::vector<std::string> inputs, results; // value names as `kiln print` prints them: "%6", "@block %4"
  std::string mlir;                         // its line as `kiln print` prints it
  std::string function;                     // the function it is in: "@main", or a subgraph "@block"
  std::string callee;                       // standing at a call ("func.call"): the function it calls
  bool fused = false;                       // on the JIT tier: its results live only inside a kernel
  bool done = false;                        // every op has run
};

// One frame of the call stack: a function and the line it stands at (the current op's in the
// innermost frame, the call's in the frames that called it).
struct StackFrame {
  std::string function; // "@main"
  std::string location; // "model.cpp:42:17"
};

// Which tier's values a Stepper shows.
struct StepperOptions {
  // "interp": each op runs on the interpreter's kernels when stepped to. "jit": the call runs once
  // on the JIT tier keeping every value it materialises, and stepping replays it op by op; an op the
  // JIT fused into a kernel shows its result only if the kernel wrote it out (current().fused says
  // it did not). "accelerator" replays a call of the accelerator tier the same way.
  // kiln::Error(unsupported) for a tier this build does not have.
  std::string tier = "interp";
  // Every value stays readable after its last reader, at the memory of all of them at once (by
  // default only those kept, watched or broken on do).
  bool keep_all = false;
};

// Steps one call of a compiled callable op by op (on the interpreter's kernels unless the options
// say "jit"), as pdb steps a program: step() runs the next op, continue_() runs to the next breakpoint or watchpoint
// (or the end). Breakpoints stop before their op runs; watchpoints after the op whose result trips them, with
// stop_reason() saying why ("watch nan: %7 = kiln.log at model.cpp:42:17 produced 3 NaN of 64 values; its input %6 has
// min -1"). Before a subgraph call's first op the stepper stands at the call itself (current().op is "func.call"):
// step() goes into the body, next() runs the whole call; where() gives the call stack. Values are freed once no later
// op reads them, as the executor's arena would reuse them; those kept with keep(), watched or broken on stay readable
// through value(). Values are named as `kiln print` prints the staged graph: "%4", "%3#1", "%arg0", and "@block %4"
// for a value of a subgraph @block; a value the optimizer merged into another answers to both names. Single-threaded:
// one Stepper per thread.
class Stepper {
public:
  template <class Result>
  Stepper(const CompiledCallable<Result>& callable, const std::vector<Tensor>& inputs,
          const StepperOptions& options = {})
      : Stepper(*callable.core(), inputs, options) {}
  ~Stepper();
  Stepper(Stepper&&) noexcept;
  Stepper& operator=(Stepper&&) noexcept;

  // Breakpoints: an op kind ("kiln.matmul"), the op producing a value ("%12", "@block %4"), a source
  // line ("model.cpp:42", matched against the end of the op's file name).
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

  // Runs the next op (or, standing at a call, goes into it); false when every op had already run.
  bool step();
  // As step(), but an op that starts a subgraph call runs the whole call, stopping early (as pdb's
  // next does) at a breakpoint or watchpoint inside it, which stop_reason() then names.
  bool next();
  // Runs until a breakpoint or watchpoint stops it (true) or the graph ends (false). The op it
  // stands at runs first, unless nothing has run yet.
  bool continue_();
  // Runs every remaining op, ignoring breakpoints, and returns the graph's outputs.
  std::vector<Tensor> finish();
  // Goes back to before the first op, with the same inputs, keeping breakpoints, watchpoints and
  // keep()s: a value freed before the stop can be kept and seen on the second run.
  void restart();

  const StepState& current() const;
  // The call stack of the op about to run, outermost first; empty at the end.
  std::vector<StackFrame> where() const;
  // Why the last step() or continue_() stopped where it did; empty after a plain step.
  const std::string& stop_reason() const;
  // A value computed so far and still live or kept ("%12"); kiln::Error naming it otherwise.
  Tensor value(const std::string& value) const;

private:
  Stepper(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs, const StepperOptions& options);
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace kiln::debug
