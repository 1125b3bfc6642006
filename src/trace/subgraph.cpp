#include "ir/verify.hpp"
#include "trace/builder.hpp"
#include <kiln/functional.hpp>
#include <kiln/subgraph.hpp>

namespace kiln::detail {

namespace {

trace::FunctionBuilder& current() {
  auto b = trace::current_builder();
  if (!b) throw Error(ErrorKind::internal, "subgraph outside a trace");
  return *b;
}

} // namespace

bool subgraphs_enabled() {
  auto b = trace::current_builder();
  return b && b->module().options().allow_subgraphs;
}

std::string subgraph_key(const std::string& name, const char* fn_type, const TreeLeaves& leaves) {
  std::string key = name + "|" + fn_type;
  for (const TreeLeaf& leaf : leaves)
    key += "|" + leaf.path + ":" + std::to_string(int(leaf.kind)) + ":" + leaf.layout.to_string() + ":" + leaf.baked;
  return key;
}

const SubgraphBody* find_subgraph(const std::string& key) {
  auto& bodies = current().module().subgraphs();
  auto it = bodies.find(key);
  return it == bodies.end() ? nullptr : &it->second;
}

std::vector<Tensor> begin_subgraph(const std::string& name, const TreeLeaves& leaves) {
  trace::ModuleBuilder& module = current().module();
  if (!is_valid_symbolic_name(name))
    throw Error(ErrorKind::spec, "subgraph name '" + name + "' must match [A-Za-z_][A-Za-z0-9_]*");
  auto body = std::make_shared<trace::FunctionBuilder>(module, module.unique_function_name(name));
  body->function().is_private = true;
  trace::builder_stack().push_back(body);
  std::vector<Tensor> params;
  for (const TreeLeaf& leaf : leaves) {
    if (leaf.kind == TreeLeaf::Kind::baked) continue;
    params.push_back(body->add_arg({leaf.layout.dtype, leaf.layout.shape, false}));
  }
  // Reserve the name now so nested bodies pick distinct names.
  module.module().functions.push_back(ir::Function{body->function().name, true, {}, {}, {}, {}});
  return params;
}

namespace {
ir::Function& reserved_slot(trace::ModuleBuilder& module, const std::string& name) {
  ir::Function* slot = module.module().find(name);
  if (!slot) throw Error(ErrorKind::internal, "subgraph slot @" + name + " disappeared");
  return *slot;
}
} // namespace

const SubgraphBody& end_subgraph(const std::string& key, const std::vector<Tensor>& outputs,
                                 std::shared_ptr<void> result_template) {
  auto body = trace::current_builder();
  ir::Function& fn = body->function();
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor out = outputs[i];
    if (out.is_concrete()) out = F::constant(out);
    if (trace::builder_of(out) != body.get())
      throw Error(ErrorKind::spec,
                  "subgraph @" + fn.name + " output " + std::to_string(i) + " is not a value of its body");
    fn.outputs.push_back(out.impl()->value);
  }
  body->finish();
  trace::builder_stack().pop_back();
  trace::ModuleBuilder& module = body->module();
  std::string name = fn.name;
  reserved_slot(module, name) = std::move(fn);
  return module.subgraphs()[key] = SubgraphBody{name, std::move(result_template)};
}

void abandon_subgraph() {
  auto body = trace::current_builder();
  body->finish();
  trace::builder_stack().pop_back();
  auto& fns = body->module().module().functions;
  std::erase_if(fns, [&](const ir::Function& f) { return f.name == body->function().name; });
}

std::vector<Tensor> emit_call(const std::string& function, const std::vector<Tensor>& args,
                              const std::source_location& location) {
  trace::FunctionBuilder& caller = current();
  ir::SourceLoc loc = trace::to_source_loc(location);
  std::vector<ir::ValueId> ids;
  std::vector<ir::ValueType> types;
  for (Tensor a : args) {
    if (a.is_concrete()) a = F::constant(a, location);
    if (trace::builder_of(a) != &caller)
      throw Error(ErrorKind::spec, "func.call @" + function + " at " + loc.to_string() +
                                       ": arguments must be tensors of the calling graph");
    ids.push_back(a.impl()->value);
    types.push_back(caller.function().type_of(a.impl()->value));
    types.back().is_buffer = false;
  }
  auto results = ir::infer_call(caller.module().module(), function, types, loc);
  return caller.add_op(ir::OpKind::call, ids, results, ir::encode_params(ir::CallParams{function}), loc);
}

} // namespace kiln::detail
