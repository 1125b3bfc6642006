#include "core/dim_binding.hpp"
#include "ir/verify.hpp"
#include "trace/builder.hpp"
#include <kiln/extension.hpp>
#include <kiln/functional.hpp>

namespace kiln::detail {

struct TraceSession::State {
  std::shared_ptr<trace::ModuleBuilder> module;
  std::shared_ptr<trace::FunctionBuilder> entry;
  std::unique_ptr<trace::BuilderScope> scope;
};

TraceSession::TraceSession(const StageOptions& options, const std::string& default_name)
    : state_(std::make_unique<State>()) {
  // Extension ops must be registered before the traced function stages them. The public entry point,
  // not the runtime's registry: the tracer sits below the runtime.
  for (const std::string& path : options.custom_extensions)
    load_extension(path);
  StageOptions opts = options;
  if (opts.name.empty()) opts.name = default_name;
  if (!is_valid_symbolic_name(opts.name))
    throw Error(ErrorKind::spec, "graph name '" + opts.name + "' must match [A-Za-z_][A-Za-z0-9_]*");
  state_->module = std::make_shared<trace::ModuleBuilder>(opts);
  state_->module->module().name = opts.name;
  state_->entry = std::make_shared<trace::FunctionBuilder>(*state_->module, opts.name);
  state_->scope = std::make_unique<trace::BuilderScope>(state_->entry);
}

TraceSession::~TraceSession() { state_->entry->finish(); }

std::vector<Tensor> TraceSession::add_inputs(const TreeLeaves& leaves) {
  std::vector<Tensor> args;
  std::vector<ShapeToBind> declared;
  for (const TreeLeaf& leaf : leaves) {
    if (leaf.kind == TreeLeaf::Kind::baked) continue;
    for (const Dim& d : leaf.layout.shape)
      if (d.is_static() && d.size() < 0)
        throw Error(ErrorKind::spec, "argument " + leaf.path + ": dimension -1 is not allowed in a layout " +
                                         shape_to_string(leaf.layout.shape));
    // An accelerator input is the callable's business (it runs on host copies): the graph is the same.
    if (leaf.layout.device.kind == DeviceKind::cpu && leaf.layout.device.id != 0)
      throw Error(ErrorKind::unsupported, "argument " + leaf.path + ": device " + leaf.layout.device.to_string() +
                                              " is not supported; kiln's one CPU device is cpu:0");
    ir::ValueType type{leaf.layout.dtype, leaf.layout.shape, leaf.kind == TreeLeaf::Kind::buffer};
    args.push_back(state_->entry->add_arg(type));
    declared.push_back({&leaf.layout.shape, nullptr, leaf.path});
  }
  check_dims_solvable(declared);
  return args;
}

std::shared_ptr<const ir::Module> TraceSession::finish(const std::vector<Tensor>& outputs) {
  ir::Function& fn = state_->entry->function();
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor out = outputs[i];
    if (!out.defined()) throw Error(ErrorKind::spec, "output " + std::to_string(i) + " is an undefined Tensor");
    if (out.is_concrete())
      out = F::constant(out);
    else if (trace::builder_of(out) != state_->entry.get())
      throw Error(ErrorKind::spec, "output " + std::to_string(i) + " belongs to another graph");
    fn.outputs.push_back(out.impl()->value);
  }
  state_->entry->finish();
  ir::Module& module = state_->module->module();
  module.functions.insert(module.functions.begin(), std::move(fn));
  ir::verify_module(module);
  return std::make_shared<const ir::Module>(std::move(module));
}

} // namespace kiln::detail
