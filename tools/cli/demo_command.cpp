#include "cli/commands.hpp"
#include "cli/summary.hpp"
#include "ir/graph.hpp"
#include "runtime/executable.hpp"
#include "runtime/executable_cache.hpp"
#include "workload_modules.hpp"
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

template <class Callable> double median_latency_ms(const Callable& callable, const Tensor& x, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    callable(x);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

// The implementation that ran each matmul of one call of `executable`, in run order: the executor's
// hooks name each step, and the executable says what ran it (its implementation list's choice).
std::vector<std::string> matmul_implementations(const runtime::Executable& executable, const Tensor& x) {
  std::vector<std::string> names;
  runtime::OpHooks hooks;
  hooks.before = [&](size_t step, const ir::Op& op, std::span<const Tensor>) {
    if (op.kind == ir::OpKind::matmul) names.push_back(executable.step_implementation(step));
  };
  executable.run(std::span(&x, 1), {.hooks = &hooks});
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

// "batch 8 matmuls: interp packed_gemm, ...; jit dnnl.matmul, ...": what each tier's executable of
// the batch's signature ran each matmul with, so the timings that follow compare what really ran
// (on a CPU without AVX-512 both tiers run the same GEMM).
void print_matmul_implementations(Session& session, int64_t batch, const Tensor& x, std::ostream& out) {
  const std::string shape = "[" + std::to_string(batch) + ", 256]";
  for (const std::shared_ptr<runtime::CacheEntry>& entry : session.cache().entries()) {
    if (entry->signature.find(shape) == std::string::npos) continue;
    const std::vector<std::string> interp = matmul_implementations(*entry->interp, x);
    const std::shared_ptr<const runtime::Executable> jit = entry->jit.load();
    const std::vector<std::string> jitted = jit ? matmul_implementations(*jit, x) : std::vector<std::string>{};
    out << "  batch " << batch << " matmuls: interp " << joined(interp) << "; jit "
        << (jit ? joined(jitted) : "not built") << "\n";
    if (jit && interp == jitted) out << "  (both tiers multiply with the same code here; KILN_LOG=jit says why)\n";
  }
}

// kiln's main job: the mlp as an nn::Module, compiled at call time with a symbolic batch, served by
// the interpreter until its signature is hot, then by the JIT tier. True when the tiers agree.
bool demo_compiled_module(const std::map<std::string, Tensor>& weights, std::ostream& out) {
  const TierPolicy tiered{.mode = JitMode::automatic, .promote_after = 3, .async = false};
  auto model = workload_module("mlp");
  model->load_state_dict(weights);
  JitOptions options;
  options.dynamic = Dynamic::on;
  options.name = "mlp";
  options.compile.session = std::make_shared<Session>(tiered);
  auto compiled = compile(model, options);
  auto interpreted = compile(model, [] {
    JitOptions o;
    o.dynamic = Dynamic::on;
    o.compile.session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
    return o;
  }());
  out << "\ncompile(mlp module, {.dynamic = Dynamic::on}), promoted to the JIT tier after " << tiered.promote_after
      << " calls of a signature:\n";
  bool agree = true;
  for (int64_t batch : {8, 64}) {
    const Tensor x = Tensor::randn({batch, 256}, kInputSeed + uint64_t(batch));
    for (int call = 1; call <= tiered.promote_after + 1; ++call) {
      const Tensor y = compiled(x);
      out << "  batch " << batch << " call " << call << ": served by " << compiled.stats().per_entry.at(0).tier << "\n";
      agree = agree && max_abs_difference(y, interpreted(x)) <= 1e-4;
    }
    for (const SignatureStats& signature : compiled.session().stats())
      if (signature.signature.find(std::to_string(batch) + ", 256") != std::string::npos &&
          signature.jit_compile_ms > 0)
        out << "  batch " << batch << ": promotion took " << signature.jit_compile_ms << " ms\n";
    print_matmul_implementations(compiled.session(), batch, x, out);
    // Interleaved, so drift hits both tiers alike.
    std::vector<double> fast, reference;
    for (int round = 0; round < 5; ++round) {
      fast.push_back(median_latency_ms(compiled, x, kTimedRuns / 4));
      reference.push_back(median_latency_ms(interpreted, x, kTimedRuns / 4));
    }
    out << "  batch " << batch << ": " << compiled.stats().per_entry.at(0).tier << " " << median(fast)
        << " ms, interpreter " << median(reference) << " ms per call (medians)\n";
  }
  const JitStats stats = compiled.stats();
  out << "entries " << stats.entries << " (" << stats.per_entry.at(0).signature << "), hits " << stats.hits
      << ", misses " << stats.misses << "; tiers agree within 1e-4: " << (agree ? "yes" : "NO") << "\n";
  return agree;
}

} // namespace

int run_demo(const DemoOptions& options, std::ostream& out) {
  const fs::path folder = options.out_folder.empty() ? make_fresh_folder() : fs::path(options.out_folder);
  std::error_code made_error;
  fs::create_directories(folder, made_error);
  if (made_error) throw Error(ErrorKind::io, folder.string() + ": cannot create the folder: " + made_error.message());
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
  const bool tiers_agree = demo_compiled_module(weights, out);
  return agree && tiers_agree ? EXIT_SUCCESS : EXIT_FAILURE;
}

} // namespace kiln::tools
