// The kiln command line (run_cli): print, verify, ops, run, demo, compare, bench, debug and devices. Every failure ends
// in one line on stderr, "kiln: error: <message>", and a non-zero exit status.
#include "cli/cli.hpp"
#include "bench/bench.hpp"
#include "cli/commands.hpp"
#include "cli/summary.hpp"
#include "cli/tier_option.hpp"
#include "workloads.hpp"
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <kiln/error.hpp>
#include <unistd.h>

namespace {

using namespace kiln::tools;

constexpr int kUsageError = 2;

std::string one_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

int report_error(const std::string& message, int status) {
  std::cerr << "kiln: error: " << one_line(message) << std::endl;
  return status;
}

void print_run_result(const RunOptions& options, const RunResult& result) {
  for (size_t i = 0; i < result.output_paths.size(); ++i)
    std::cout << "wrote " << result.output_paths[i] << ": " << kiln::dtype_name(result.outputs[i].dtype()) << " "
              << kiln::shape_to_string(result.outputs[i].shape()) << "\n";
  if (options.repeat > 1)
    std::cout << "median latency " << median(result.latencies_ms) << " ms over " << options.repeat << " runs\n";
  std::cout << result.stats_table;
  if (!result.tier_note.empty()) std::cerr << "kiln: warning: " << one_line(result.tier_note) << "\n";
}

struct Commands {
  CLI::App* print = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* ops = nullptr;
  CLI::App* run = nullptr;
  CLI::App* demo = nullptr;
  CLI::App* bench = nullptr;
  CLI::App* debug = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* devices = nullptr;
  DebugOptions debug_options;
  DemoOptions demo_options;
  CompareOptions compare_options;
  std::string graph_path;
  std::vector<std::string> extensions; // kiln verify --extension
  RunOptions run_options;
  BenchOptions bench_options;
};

// The graph file, its weights, inputs and extensions, as `run` and `debug` take them.
void add_graph_file_options(CLI::App& command, std::string& graph, std::vector<std::string>& weights,
                            std::vector<std::string>& inputs, std::vector<std::string>& extensions) {
  command.add_option("graph", graph, "graph in MLIR text form")->required();
  command.add_option("--weights", weights, "safetensors file of the graph's weights (repeatable)")
      ->allow_extra_args(false);
  command
      .add_option("--input", inputs,
                  "NAME=FILE.npy, NAME the argument's name in the graph file (%x: x) or its index: 0, 1, ... "
                  "or arg0, ... (one per graph argument)")
      ->allow_extra_args(false);
  command.add_option("--extension", extensions, "extension library (.so) registering custom ops (repeatable)")
      ->allow_extra_args(false);
}

void add_run(CLI::App& app, Commands& c) {
  c.run = app.add_subcommand("run", "run a graph file on .npy inputs and write its outputs as .npy");
  RunOptions& o = c.run_options;
  add_graph_file_options(*c.run, o.graph_path, o.weights_paths, o.inputs, o.extensions);
  c.run->add_option("--output", o.output_path, "output .npy; further outputs go to <stem>_1.npy, ...")->required();
  c.run->add_option("--repeat", o.repeat, "run this many times (1 to 1000000) and report the median latency")
      ->check(CLI::Range(1, 1'000'000));
  c.run->add_flag("--stats", o.print_stats, "print the session's per-signature statistics");
  c.run->add_option("--tier", o.tier, tier_help())->check(CLI::IsMember(tier_names()));
  c.run->add_option("--device", o.device, device_help())->check(CLI::IsMember(device_names()));
}

void add_bench(CLI::App& app, Commands& c) {
  c.bench = app.add_subcommand(
      "bench", "time the benchmark workloads (mlp, ewchain, attn, cnn, resnet18, mobilenet_v2) and a one-op call");
  BenchOptions& o = c.bench_options;
  c.bench
      ->add_option("--workloads", o.workloads,
                   "comma-separated subset of mlp,ewchain,attn,cnn,resnet18,mobilenet_v2,oneop")
      ->delimiter(',')
      ->check(CLI::IsMember(bench_case_names()));
  c.bench->add_option("--tier", o.tier, tier_help())->check(CLI::IsMember(tier_names()));
  c.bench->add_option("--device", o.device, device_help())->check(CLI::IsMember(device_names()));
  c.bench->add_option("--threads", o.threads, "interpreter threads, KILN_NUM_THREADS (default 2)")
      ->check(CLI::Range(1, 4096));
  c.bench
      ->add_option("--caller-threads", o.caller_threads,
                   "also measure calls/s with 1..N threads calling each case in a loop, beside a control loop without "
                   "kiln (default 0: off)")
      ->check(CLI::Range(0, 256));
  c.bench->add_option("--json", o.json_path, "write the results to this JSON file");
  c.bench->add_option("--time-s", o.time_s, "seconds of timed calls per case (default 2)")->check(CLI::PositiveNumber);
}

void add_debug(CLI::App& app, Commands& c) {
  c.debug = app.add_subcommand("debug", "step a graph file op by op on .npy inputs (commands from stdin; help)");
  DebugOptions& o = c.debug_options;
  add_graph_file_options(*c.debug, o.graph_path, o.weights_paths, o.inputs, o.extensions);
  c.debug
      ->add_option("--tier", o.tier,
                   "interp: each op runs on the interpreter when stepped to; jit or accelerator: that tier's call, "
                   "replayed op by op")
      ->check(CLI::IsMember({"interp", "jit", "accelerator"}));
}

void add_commands(CLI::App& app, Commands& c) {
  c.print = app.add_subcommand("print", "parse a graph file and print it back");
  c.print->add_option("graph", c.graph_path, "graph in MLIR text form")->required();
  c.verify = app.add_subcommand("verify", "parse and verify a graph file");
  c.verify->add_option("graph", c.graph_path, "graph in MLIR text form")->required();
  c.verify->add_option("--extension", c.extensions, "extension library (.so) registering custom ops (repeatable)")
      ->allow_extra_args(false);
  c.ops =
      app.add_subcommand("ops", "list the ops whose kernels running a graph file needs, then the -Dops building them");
  c.ops->add_option("graph", c.graph_path, "graph in MLIR text form")->required();
  c.ops->add_option("--extension", c.extensions, "extension library (.so) registering custom ops (repeatable)")
      ->allow_extra_args(false);
  add_run(app, c);
  c.demo = app.add_subcommand("demo", "stage, save, run and re-run the mlp workload end to end");
  c.demo->add_option("--out", c.demo_options.out_folder,
                     "folder to write model.mlir, weights.safetensors, x.npy and out.npy to (kept; default: a fresh "
                     "temporary folder)");
  c.compare = app.add_subcommand("compare", "compare two .npy files element by element");
  c.compare->add_option("expected", c.compare_options.expected_path, "the reference .npy")->required();
  c.compare->add_option("actual", c.compare_options.actual_path, "the .npy to check")->required();
  c.compare->add_option("--atol", c.compare_options.atol, "largest max abs difference that passes")
      ->required()
      ->check(CLI::NonNegativeNumber);
  add_bench(app, c);
  add_debug(app, c);
  c.devices = app.add_subcommand("devices", "list the CPU and the accelerators (Vulkan devices) kiln can run on");
  app.require_subcommand(1);
}

int dispatch(const Commands& c) {
  if (c.print->parsed()) print_graph_file(c.graph_path, std::cout);
  if (c.verify->parsed()) verify_graph_file(c.graph_path, c.extensions, std::cout);
  if (c.ops->parsed()) print_graph_ops(c.graph_path, c.extensions, std::cout);
  if (c.run->parsed()) print_run_result(c.run_options, run_graph_file(c.run_options));
  if (c.demo->parsed()) return run_demo(c.demo_options, std::cout);
  if (c.compare->parsed()) return compare_npy_files(c.compare_options, std::cout);
  if (c.bench->parsed()) run_bench(c.bench_options, std::cout);
  if (c.devices->parsed()) print_devices(std::cout);
  if (c.debug->parsed()) return debug_graph_file(c.debug_options, std::cin, std::cout, isatty(STDIN_FILENO) == 1);
  return EXIT_SUCCESS;
}

} // namespace

namespace kiln::tools {

int run_cli(int argc, char** argv) {
  CLI::App app("kiln: inspect, run and benchmark staged tensor graphs", "kiln");
  Commands commands;
  add_commands(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& e) {
    return report_error(e.what(), kUsageError);
  }
  try {
    return dispatch(commands);
  } catch (const kiln::Error& e) {
    return report_error(e.what(), EXIT_FAILURE);
  } catch (const std::exception& e) {
    return report_error(e.what(), EXIT_FAILURE);
  }
}

} // namespace kiln::tools
