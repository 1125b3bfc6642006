// kiln-check-workloads DIR [--tier interp|jit|auto]: runs the four benchmark workloads on the reference
// cases of DIR (/work/shared/bench/data layout: <name>/weights.safetensors, <name>/b<batch>_input.npy and
// b<batch>_output.npy) and fails when any output is further than 1e-4 from PyTorch's.
#include "cli/summary.hpp"
#include "cli/tier_option.hpp"
#include "workloads.hpp"
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>

namespace {

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::tools;

constexpr double kTolerance = 1e-4;
constexpr int kFailed = 1, kMissingData = 2;

struct ReferenceCase {
  std::string label; // "b8"
  fs::path input, output;
};

// Every <label>_input.npy of the folder with its <label>_output.npy, sorted by label.
std::vector<ReferenceCase> reference_cases(const fs::path& folder) {
  const std::string suffix = "_input.npy";
  std::vector<ReferenceCase> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= suffix.size() || file[0] != 'b' || !file.ends_with(suffix)) continue;
    const std::string label = file.substr(0, file.size() - suffix.size());
    cases.push_back({label, entry.path(), folder / (label + "_output.npy")});
  }
  // b1 < b8 < b64: shorter labels first, then alphabetical.
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) {
    return std::pair(a.label.size(), a.label) < std::pair(b.label.size(), b.label);
  });
  return cases;
}

// Checks one workload; prints one line per case and returns whether all passed.
bool check_workload(const std::string& name, const fs::path& folder, const std::string& tier) {
  auto session = std::make_shared<Session>(tier_policy(tier));
  if (!workload_weight_layouts(name).empty())
    session->weights().load_safetensors((folder / "weights.safetensors").string());
  auto forward = [name](const Tensor& x) { return workload_forward(name, x); };
  CompileOptions compile_options;
  compile_options.name = name;
  compile_options.session = session;
  auto callable = compile(forward, compile_options)(workload_input_layout(name));
  const std::vector<ReferenceCase> cases = reference_cases(folder);
  if (cases.empty()) throw Error(ErrorKind::io, folder.string() + ": no b*_input.npy reference cases");
  bool passed = true;
  for (const ReferenceCase& c : cases) {
    const Tensor input = load_npy(c.input.string()), expected = load_npy(c.output.string());
    const double error = max_abs_difference(callable(input), expected);
    const bool ok = error <= kTolerance;
    passed = passed && ok;
    std::printf("%-8s %-4s %-18s max abs error %.3g  %s\n", name.c_str(), c.label.c_str(),
                shape_to_string(input.shape()).c_str(), error, ok ? "ok" : "FAILED (tolerance 1e-4)");
  }
  session->wait_for_promotions();
  for (const SignatureStats& s : session->stats())
    if (tier == "jit" && s.tier != "jit")
      std::printf("%-8s note: %s ran in the interpreter: %s\n", name.c_str(), s.signature.c_str(),
                  s.jit_error.empty() ? "not promoted" : s.jit_error.c_str());
  return passed;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app("Checks kiln's four benchmark workloads against PyTorch's reference outputs", "kiln-check-workloads");
  std::string data_dir, tier = "interp";
  app.add_option("dir", data_dir, "reference data folder (like /work/shared/bench/data)")->required();
  app.add_option("--tier", tier, "interp (default), jit or auto")->check(CLI::IsMember(tier_names()));
  CLI11_PARSE(app, argc, argv);

  if (!fs::is_directory(data_dir)) {
    std::cerr << "kiln-check-workloads: error: reference data folder " << data_dir << " is missing\n";
    return kMissingData;
  }
  bool passed = true;
  for (const std::string& name : workload_names()) {
    try {
      passed = check_workload(name, fs::path(data_dir) / name, tier) && passed;
    } catch (const std::exception& e) {
      std::printf("%-8s FAILED: %s\n", name.c_str(), e.what());
      passed = false;
    }
  }
  std::printf("%s\n", passed ? "all workloads match the reference outputs" : "some workloads FAILED");
  return passed ? EXIT_SUCCESS : kFailed;
}
