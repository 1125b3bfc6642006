#include "cli/commands.hpp"
#include "cli/summary.hpp"
#include "workloads.hpp"
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>

namespace kiln::tools {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr uint64_t kWeightSeed = 2024, kInputSeed = 7;
constexpr int kTimedRuns = 20;
constexpr double kAgreement = 1e-6;

fs::path make_fresh_folder() {
  std::string pattern = (fs::temp_directory_path() / "kiln-demo-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(ErrorKind::io, pattern + ": cannot create a temporary folder");
  return pattern;
}

double median_latency_ms(const CompiledCallable<std::vector<Tensor>>& callable, const Tensor& x, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    callable(x);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

} // namespace

int run_demo(std::ostream& out) {
  const fs::path folder = make_fresh_folder();
  const std::string graph_path = (folder / "model.mlir").string(),
                    weights_path = (folder / "weights.safetensors").string(), input_path = (folder / "x.npy").string(),
                    output_path = (folder / "out.npy").string();

  StagedGraph staged = stage_workload("mlp");
  const std::map<std::string, Tensor> weights = deterministic_weights("mlp", kWeightSeed);
  const Tensor x = Tensor::randn({8, 256}, kInputSeed);
  staged.save(graph_path);
  save_safetensors(weights_path, weights);
  save_npy(input_path, x);
  out << "staged the mlp workload into " << folder.string() << ":\n\n" << staged << "\n";

  CompileOptions interpreter;
  interpreter.weights = weights;
  interpreter.session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
  auto callable = compile_staged(staged, interpreter);
  const Tensor y = callable(x).at(0);
  out << "interpreter output: " << summarize_tensor(y) << "\n";
  out << "latency: " << median_latency_ms(callable, x, kTimedRuns) << " ms (median of " << kTimedRuns << " runs)\n\n";

  out << "kiln run " << graph_path << " --weights " << weights_path << " --input 0=" << input_path << " --output "
      << output_path << " --tier interp\n";
  RunResult from_files = run_graph_file({.graph_path = graph_path,
                                         .weights_paths = {weights_path},
                                         .inputs = {"0=" + input_path},
                                         .output_path = output_path,
                                         .tier = "interp"});
  const double difference = max_abs_difference(y, from_files.outputs.at(0));
  out << "wrote " << output_path << ": " << summarize_tensor(from_files.outputs.at(0)) << "\n";
  const bool agree = difference <= kAgreement;
  out << "max abs difference between the two runs: " << difference << (agree ? " (ok)" : " (MISMATCH)") << "\n";
  return agree ? EXIT_SUCCESS : EXIT_FAILURE;
}

} // namespace kiln::tools
