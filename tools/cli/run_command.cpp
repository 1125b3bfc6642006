#include "cli/commands.hpp"
#include "cli/tier_option.hpp"
#include "core/byte_size_text.hpp"
#include "ir/graph.hpp"
#include <chrono>
#include <filesystem>
#include <kiln/compile.hpp>
#include <kiln/extension.hpp>
#include <kiln/io.hpp>
#include <kiln/session.hpp>

namespace kiln::tools {

namespace {

using Clock = std::chrono::steady_clock;

// The argument `name` means: one the graph file named (`%x` -> "x"), else an index, "3" or
// "arg3". Anything else is refused naming the --input value and the graph's argument names.
size_t argument_index(const std::string& name, const std::string& input_spec, const ir::Function& entry) {
  for (size_t i = 0; i < entry.arg_names.size(); ++i)
    if (entry.arg_names[i] == name) return i;
  const std::string digits = name.rfind("arg", 0) == 0 ? name.substr(3) : name;
  const bool numeric =
      !digits.empty() && digits.size() < 10 && digits.find_first_not_of("0123456789") == std::string::npos;
  if (numeric) return std::stoul(digits);
  std::string named;
  for (const std::string& arg_name : entry.arg_names)
    if (!arg_name.empty()) named += (named.empty() ? "" : ", ") + arg_name;
  throw Error(ErrorKind::spec, "--input '" + input_spec + "': unknown argument '" + name + "'; " +
                                   (named.empty() ? "this graph names none" : "the graph names " + named) +
                                   ", and every argument has an index: 0, 1, ... or arg0, arg1, ...");
}

// Refuses an input whose dtype (a dtype error), rank or static dims (a shape error) differ from the
// graph argument, naming its file.
void check_input(const Tensor& input, const ir::ValueType& expected, size_t index, const std::string& path) {
  bool same_shape = input.rank() == expected.rank();
  for (size_t d = 0; same_shape && d < expected.shape.size(); ++d)
    same_shape = expected.shape[d].is_symbolic() || expected.shape[d].size() == input.shape()[d].size();
  if (input.dtype() == expected.dtype && same_shape) return;
  const std::string mismatch = "input " + std::to_string(index) + " (" + path + "): expected " +
                               ir::type_to_string(expected) + ", got " + dtype_name(input.dtype()) + " " +
                               shape_to_string(input.shape());
  if (input.dtype() != expected.dtype)
    throw Error(ErrorKind::dtype, mismatch + "; save the array as " + dtype_name(expected.dtype));
  throw Error(ErrorKind::shape, mismatch);
}

// Why a signature asked to run on the promoted tier `tier` is served by the interpreter, or "" when
// it is not.
std::string promotion_refusal(const Session& session, const std::string& tier) {
  for (const SignatureStats& s : session.stats())
    if (s.tier != tier)
      return "the " + std::string(tier == "jit" ? "JIT" : tier) + " tier did not take " + s.callable + "(" +
             s.signature + "), the interpreter ran it" + (s.jit_error.empty() ? std::string() : ": " + s.jit_error);
  return "";
}

// What a device needs per signature, in the units people plan memory in.
std::string memory_summary(const Session& session) {
  std::string summary;
  for (const SignatureStats& s : session.stats())
    summary += "memory of " + s.callable + "(" + s.signature + ") on " + s.tier + ": arena peak " +
               byte_size_text(s.arena_bytes) + ", weights " + byte_size_text(s.weight_bytes) +
               " (read in place), constants and weight copies " + byte_size_text(s.constant_bytes) +
               (s.device_bytes ? ", accelerator memory " + byte_size_text(s.device_bytes) : "") + "\n";
  return summary;
}

// One tensor per graph argument, in argument order, from the NAME=FILE.npy specs.
std::vector<Tensor> load_inputs(const std::vector<std::string>& specs, const ir::Function& entry) {
  const size_t count = entry.args.size();
  std::vector<Tensor> inputs(count);
  std::vector<std::string> sources(count);
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error(ErrorKind::spec, "--input '" + spec + "': expected NAME=FILE.npy");
    const std::string path = spec.substr(eq + 1);
    const size_t index = argument_index(spec.substr(0, eq), spec, entry);
    if (index >= count)
      throw Error(ErrorKind::spec, "--input '" + spec + "': the graph has " + std::to_string(count) + " argument(s)");
    if (!sources[index].empty())
      throw Error(ErrorKind::spec,
                  "argument " + std::to_string(index) + " is given twice: " + sources[index] + " and " + path);
    inputs[index] = load_npy(path);
    sources[index] = path;
    check_input(inputs[index], entry.type_of(entry.args[index]), index, path);
  }
  for (size_t i = 0; i < count; ++i)
    if (!inputs[i].defined())
      throw Error(ErrorKind::spec, "no --input for graph argument " + std::to_string(i) + " (" +
                                       ir::type_to_string(entry.type_of(entry.args[i])) +
                                       "): pass one --input NAME=FILE.npy per argument");
  return inputs;
}

} // namespace

std::string output_path_for(const std::string& output_path, size_t index) {
  if (index == 0) return output_path;
  std::filesystem::path path(output_path);
  const std::string extension = path.extension().string();
  return path.replace_filename(path.stem().string() + "_" + std::to_string(index) + extension).string();
}

LoadedGraph load_graph_file(const std::string& graph_path, const std::vector<std::string>& weights_paths,
                            const std::vector<std::string>& input_specs, const std::vector<std::string>& extensions,
                            const TierPolicy& policy, const Device& inputs_on) {
  for (const std::string& path : extensions)
    load_extension(path); // first, so that parsing checks extension ops against their shape functions
  StagedGraph graph = load_staged(graph_path);
  auto session = std::make_shared<Session>(policy);
  for (const std::string& path : weights_paths)
    session->weights().load_safetensors(path);
  CompileOptions compile_options;
  compile_options.session = session;
  std::vector<Tensor> inputs = load_inputs(input_specs, graph.graph().entry());
  if (inputs_on.kind == DeviceKind::cpu) return {session, compile_staged(graph, compile_options), std::move(inputs)};
  // The spec declares device inputs, so the callable takes and returns device tensors.
  detail::TreeLeaves leaves;
  const ir::Function& entry = graph.graph().entry();
  for (size_t i = 0; i < entry.args.size(); ++i) {
    const ir::ValueType& type = entry.type_of(entry.args[i]);
    leaves.push_back({std::to_string(i),
                      type.is_buffer ? detail::TreeLeaf::Kind::buffer : detail::TreeLeaf::Kind::tensor,
                      TensorLayout(type.dtype, type.shape, inputs_on),
                      {}});
    inputs[i] = inputs[i].to(inputs_on);
  }
  return {session, compile_staged(StagedGraph(graph.module_ptr(), std::move(leaves)), compile_options),
          std::move(inputs)};
}

RunResult run_graph_file(const RunOptions& options) {
  if (options.repeat < 1) throw Error(ErrorKind::spec, "--repeat must be at least 1");
  if (!options.output_path.ends_with(".npy"))
    throw Error(ErrorKind::spec, "--output '" + options.output_path + "': must end in .npy (outputs are .npy files)");
  const TierPolicy policy = tier_policy(options.tier, options.device); // first: says what is missing
  const LoadedGraph loaded =
      load_graph_file(options.graph_path, options.weights_paths, options.inputs, options.extensions, policy,
                      options.device == "accelerator" ? Accelerator() : CPU());
  const Session& session = *loaded.session;
  const auto& callable = loaded.callable;
  const std::vector<Tensor>& inputs = loaded.inputs;

  RunResult result;
  for (int i = 0; i < options.repeat; ++i) {
    const auto start = Clock::now();
    result.outputs = callable(inputs);
    result.latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    result.output_paths.push_back(output_path_for(options.output_path, i));
    result.outputs[i] = result.outputs[i].to(CPU()); // --device accelerator: results come back from the device
    save_npy(result.output_paths.back(), result.outputs[i]);
  }
  if (options.print_stats) result.stats_table = session.stats_table() + memory_summary(session);
  if (options.tier == "jit" || options.tier == "accelerator")
    result.tier_note = promotion_refusal(session, options.tier);
  return result;
}

} // namespace kiln::tools
