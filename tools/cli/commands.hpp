#pragma once
// The `kiln` subcommands, callable in-process (the demo runs `kiln run`'s code path this way).
#include "cli/tier_option.hpp"
#include "ir/graph.hpp"
#include <istream>
#include <kiln/compile.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::tools {

struct RunOptions {
  std::string graph_path;
  std::vector<std::string> weights_paths; // safetensors files loaded into the session's registry
  std::vector<std::string> inputs;        // "NAME=FILE.npy", NAME an argument's name or index: 0, 1, ... or arg0, ...
  std::string output_path;                // first output; output i > 0 goes to <stem>_<i>.npy
  int repeat = 1;
  bool print_stats = false;
  std::string tier = kDefaultTier;
  std::string device = "cpu";          // accelerator: inputs uploaded, hot signatures promoted there (tier_policy)
  std::vector<std::string> extensions; // extension libraries loaded before the graph is read
};

struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<std::string> output_paths;
  std::vector<double> latencies_ms; // one per repetition
  std::string stats_table;          // filled when print_stats was asked for
  std::string tier_note;            // why the tier --tier asked for (jit, accelerator) did not serve
};

// Loads the graph, weights and inputs, runs the graph `repeat` times and writes the outputs of the
// last run. Every check happens before the first output file is written.
RunResult run_graph_file(const RunOptions& options);

// A graph file compiled in a session of its own with its weights, and its inputs (one tensor per
// graph argument, each checked against its argument's type), as `run` and `debug` load them. With
// `inputs_on` an accelerator, the inputs are uploaded there and the callable's spec declares them
// so: it returns device tensors.
struct LoadedGraph {
  std::shared_ptr<Session> session;
  CompiledCallable<std::vector<Tensor>> callable;
  std::vector<Tensor> inputs;
};
LoadedGraph load_graph_file(const std::string& graph_path, const std::vector<std::string>& weights_paths,
                            const std::vector<std::string>& input_specs, const std::vector<std::string>& extensions,
                            const TierPolicy& policy, const Device& inputs_on = CPU());

struct DebugOptions {
  std::string graph_path;
  std::vector<std::string> weights_paths;
  std::vector<std::string> inputs;
  std::vector<std::string> extensions;
  std::string tier = "interp"; // whose values the stepper shows: interp, jit or accelerator (debug::StepperOptions)
};

// `kiln debug`: a REPL over debug::Stepper reading commands from `in` (help lists them); the prompt
// goes to `out` only when `interactive`. Returns 0 at quit or the end of input, 2 at an unknown
// command when not interactive.
int debug_graph_file(const DebugOptions& options, std::istream& in, std::ostream& out, bool interactive);

// output_path for output 0, "<stem>_<i><ext>" for output i: out.npy, out_1.npy, ...
std::string output_path_for(const std::string& output_path, size_t index);

// `kiln devices`: the host CPU, then each accelerator (Vulkan device) with its driver and limits,
// or why there is none.
void print_devices(std::ostream& out);

// `kiln print`: the graph parsed and printed back.
void print_graph_file(const std::string& path, std::ostream& out);
// `kiln verify`: "ok: N ops" (ops of every function); throws on a parse or verification error,
// including a custom op that none of `extensions` (libraries loaded first) registers.
void verify_graph_file(const std::string& path, const std::vector<std::string>& extensions, std::ostream& out);

// `kiln ops`: the ops whose interpreter kernels running `module` takes (after the default passes,
// counting those constant folding runs), sorted by name, without those the plan executor runs itself.
std::vector<std::string> graph_ops(const ir::Module& module);
// Prints graph_ops of the graph file one a line, then "-Dops=a,b,c" (docs/embedded.md).
void print_graph_ops(const std::string& path, const std::vector<std::string>& extensions, std::ostream& out);

struct DemoOptions {
  // Where the files go (made if missing): model.mlir, weights.safetensors, x.npy and out.npy stay
  // there for another build to run and compare (tools/run-tests-aarch64). Empty: a fresh temporary
  // folder.
  std::string out_folder;
};

// `kiln demo`: stages the mlp workload, writes it with its weights and an input to a folder, runs
// it in-process and through run_graph_file (writing out.npy), and returns 0 when both agree to 1e-6.
int run_demo(const DemoOptions& options, std::ostream& out);

struct CompareOptions {
  std::string expected_path, actual_path;
  double atol = 0;
};

// `kiln compare`: prints the max abs difference of two .npy files of one shape; returns 0 when it
// is at most atol, 1 otherwise (NaN in either file counts as over).
int compare_npy_files(const CompareOptions& options, std::ostream& out);

} // namespace kiln::tools
