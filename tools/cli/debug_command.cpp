// `kiln debug FILE.mlir --weights W --input 0=x.npy`: a line-oriented REPL over debug::Stepper.
#include "cli/command_reader.hpp"
#include "cli/commands.hpp"
#include <kiln/debug.hpp>
#include <kiln/session.hpp>
#include <sstream>

namespace kiln::tools {

namespace {

constexpr const char* kHelp = R"(commands:
  step [N]                 run the next op (N ops); at a subgraph call, go into it
  next [N]                 as step, but run a subgraph call as one step
  continue                 run to the next breakpoint or watchpoint, or the end
  restart                  back to the first op, keeping breakpoints, watchpoints and keeps
  break KIND|%N|FILE:LINE  stop before an op of that kind (kiln.log), the op making %N, or a source line
  watch nan|inf            stop after the first op producing NaN / Inf
  watch range %N LO HI     stop when %N leaves [LO, HI]
  keep %N                  keep %N readable after its last reader
  print %N                 the value and its summary
values are named as kiln print prints them: %4, %3#1, %arg0, and @block %4 in a subgraph @block
  where                    the call stack and the op about to run
  list                     its line in the printed graph (kiln print)
  compare                  the first op where the JIT tier and the interpreter differ
  profile                  each step's time, bytes and implementation on each tier
  finish                   run to the end and print the outputs
  help, quit
)";

struct Session {
  debug::Stepper& stepper;
  CompiledCallable<std::vector<Tensor>>& callable;
  const std::vector<Tensor>& inputs;
  std::ostream& out;
};

void print_where(const Session& s) {
  const debug::StepState& at = s.stepper.current();
  if (at.done) {
    s.out << "at the end: every op has run\n";
    return;
  }
  s.out << "at op " << at.index;
  if (s.stepper.where().size() > 1) s.out << " in " << at.function;
  s.out << ": ";
  for (size_t i = 0; i < at.results.size(); ++i)
    s.out << (i ? ", " : "") << at.results[i];
  s.out << (at.results.empty() ? "" : " = ") << at.op << (at.callee.empty() ? "" : " " + at.callee) << "(";
  for (size_t i = 0; i < at.inputs.size(); ++i)
    s.out << (i ? ", " : "") << at.inputs[i];
  s.out << ") at " << at.location << (at.fused ? " (fused by the JIT: its result stays inside the kernel)" : "")
        << "\n";
}

// pdb's where: the outermost frame first, each at its line.
void print_stack(const Session& s) {
  const std::vector<debug::StackFrame> frames = s.stepper.where();
  for (size_t i = 0; i < frames.size(); ++i)
    s.out << "#" << i << " " << frames[i].function << " at " << frames[i].location << "\n";
  print_where(s);
}

void report_stop(const Session& s) {
  if (!s.stepper.stop_reason().empty()) s.out << "stopped: " << s.stepper.stop_reason() << "\n";
  print_where(s);
}

// A value as kiln print names it: "%4", or "@block %4" (two words) inside a subgraph; "" when none.
std::string read_value(std::istringstream& args) {
  std::string value;
  args >> value;
  std::string in_function;
  if (value.starts_with("@") && args >> in_function) value += " " + in_function;
  return value;
}

void watch(const Session& s, std::istringstream& args) {
  std::string what;
  args >> what;
  if (what == "nan") return s.stepper.watch_nan();
  if (what == "inf") return s.stepper.watch_inf();
  const std::string value = what == "range" ? read_value(args) : "";
  double lo = 0, hi = 0;
  if (value.empty() || !(args >> lo >> hi)) throw Error(ErrorKind::spec, "watch takes nan, inf or range %N LO HI");
  s.stepper.watch_range(value, lo, hi);
}

void compare(const Session& s) {
  const auto difference = debug::compare_tiers(s.callable, s.inputs);
  s.out << (difference ? difference->message() : "the tiers agree on every value") << "\n";
}

// One command; false at quit. kiln::Error for a command it cannot carry out.
bool execute(const Session& s, const std::string& line) {
  std::istringstream args(line);
  std::string command;
  if (!(args >> command)) return true;
  if (command == "quit" || command == "exit") return false;
  if (command == "help") {
    s.out << kHelp;
  } else if (command == "step" || command == "s" || command == "next" || command == "n") {
    int count = 1;
    if (!(args >> count)) count = 1;
    const bool over_calls = command[0] == 'n';
    for (int i = 0; i < count && (over_calls ? s.stepper.next() : s.stepper.step()) && s.stepper.stop_reason().empty();
         ++i) {
    }
    report_stop(s);
  } else if (command == "continue" || command == "c") {
    s.stepper.continue_();
    report_stop(s);
  } else if (command == "restart") {
    s.stepper.restart();
    report_stop(s);
  } else if (command == "break" || command == "b") {
    const std::string where = read_value(args);
    if (where.rfind("kiln.", 0) == 0)
      s.stepper.break_on_kind(where);
    else if (!where.empty() && (where[0] == '%' || where[0] == '@'))
      s.stepper.break_on_value(where);
    else
      s.stepper.break_on_line(where);
    s.out << "breakpoint: " << where << "\n";
  } else if (command == "watch") {
    watch(s, args);
    s.out << "watchpoint: " << line.substr(line.find("watch") + 6) << "\n";
  } else if (command == "keep") {
    s.stepper.keep(read_value(args));
  } else if (command == "print" || command == "p") {
    const std::string value = read_value(args);
    const Tensor t = s.stepper.value(value);
    s.out << value << " = " << t << "\n  " << debug::summary(t) << "\n";
  } else if (command == "where" || command == "bt") {
    print_stack(s);
  } else if (command == "list") {
    s.out << (s.stepper.current().done ? "at the end" : s.stepper.current().mlir) << "\n";
  } else if (command == "compare") {
    compare(s);
  } else if (command == "profile") {
    s.out << debug::profile(s.callable, s.inputs).table();
  } else if (command == "finish") {
    const std::vector<Tensor> outputs = s.stepper.finish();
    for (size_t i = 0; i < outputs.size(); ++i)
      s.out << "output " << i << " = " << outputs[i] << "\n";
  }
  return true;
}

bool is_command(const std::string& line) {
  std::istringstream args(line);
  std::string command;
  if (!(args >> command)) return true;
  for (const char* known :
       {"quit", "exit",  "help", "step",  "s", "next",  "n",  "continue", "c",       "restart", "break",
        "b",    "watch", "keep", "print", "p", "where", "bt", "list",     "compare", "profile", "finish"})
    if (command == known) return true;
  return false;
}

} // namespace

int debug_graph_file(const DebugOptions& options, std::istream& in, std::ostream& out, bool interactive) {
  LoadedGraph loaded = load_graph_file(options.graph_path, options.weights_paths, options.inputs, options.extensions,
                                       TierPolicy{.mode = JitMode::off});
  auto& callable = loaded.callable;
  const std::vector<Tensor>& inputs = loaded.inputs;
  debug::Stepper stepper(callable, inputs, {.tier = options.tier});
  const Session s{stepper, callable, inputs, out};
  print_where(s);
  CommandReader reader(in, out, interactive);
  while (true) {
    const std::optional<std::string> next = reader.next_line("(kiln) ");
    if (!next) return 0;
    const std::string& line = *next;
    if (!is_command(line)) {
      out << "error: unknown command '" << line << "' (help lists them)\n";
      if (!interactive) return 2; // a script with a typo must not pass for one that ran
      continue;
    }
    try {
      if (!execute(s, line)) return 0;
    } catch (const Error& e) {
      out << "error: " << e.what() << "\n";
    }
  }
}

} // namespace kiln::tools
