#pragma once
#include "core/tensor_impl.hpp"
#include "ir/graph.hpp"
#include <kiln/stage.hpp>
#include <kiln/subgraph.hpp>
#include <map>
#include <memory>
#include <source_location>
#include <type_traits>

namespace kiln::trace {

// A symbolic tensor names its value by a plain integer (core does not include the IR); this is the
// one place that relies on it being an ir::ValueId.
static_assert(std::is_same_v<decltype(detail::TensorImpl::value), ir::ValueId>);

class ModuleBuilder;

// Builds one function body while the user's code runs. Symbolic tensors point at their builder
// (TensorImpl::graph; builder_of).
class FunctionBuilder : public detail::StagingGraph, public std::enable_shared_from_this<FunctionBuilder> {
public:
  FunctionBuilder(ModuleBuilder& module, std::string name) : module_(&module) { fn_.name = std::move(name); }

  Tensor add_arg(const ir::ValueType& type);
  // Stages one op; operands must be symbolic values of this builder (callers convert constants).
  std::vector<Tensor> add_op(ir::OpKind kind, const std::vector<ir::ValueId>& operands,
                             const std::vector<ir::ValueType>& types, ir::Attrs attrs, ir::SourceLoc loc);
  Tensor symbolic(ir::ValueId v);
  ir::Function& function() { return fn_; }
  ModuleBuilder& module() { return *module_; }
  bool active() const { return active_; }
  void finish() { active_ = false; }

private:
  ModuleBuilder* module_;
  ir::Function fn_;
  bool active_ = true;
};

// The module being traced: the entry function, subgraph bodies and their cache.
class ModuleBuilder {
public:
  explicit ModuleBuilder(StageOptions options) : options_(std::move(options)) {}
  const StageOptions& options() const { return options_; }
  ir::Module& module() { return module_; }
  // Subgraph bodies already traced, by boundary signature.
  std::map<std::string, detail::SubgraphBody>& subgraphs() { return subgraphs_; }
  std::string unique_function_name(const std::string& base);

private:
  StageOptions options_;
  ir::Module module_;
  std::map<std::string, detail::SubgraphBody> subgraphs_;
};

// The builder whose value a symbolic tensor is; null for a concrete or undefined one.
FunctionBuilder* builder_of(const Tensor& tensor);

// The thread's stack of functions being traced (subgraphs push onto it).
std::vector<std::shared_ptr<FunctionBuilder>>& builder_stack();
std::shared_ptr<FunctionBuilder> current_builder(); // null outside a trace

struct BuilderScope {
  explicit BuilderScope(std::shared_ptr<FunctionBuilder> b) { builder_stack().push_back(std::move(b)); }
  ~BuilderScope() { builder_stack().pop_back(); }
  BuilderScope(const BuilderScope&) = delete;
  BuilderScope& operator=(const BuilderScope&) = delete;
};

ir::SourceLoc to_source_loc(const std::source_location& loc);

// Stages (symbolic operands) or runs eagerly (all concrete). Concrete tensors mixed with symbolic
// ones become embedded constants.
std::vector<Tensor> apply(ir::OpKind kind, const std::vector<Tensor>& operands, ir::Attrs attrs,
                          const std::source_location& loc);
Tensor apply1(ir::OpKind kind, const std::vector<Tensor>& operands, ir::Attrs attrs, const std::source_location& loc);

} // namespace kiln::trace
