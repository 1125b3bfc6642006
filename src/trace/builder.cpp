#include "trace/builder.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include <filesystem>

namespace kiln::trace {

Tensor FunctionBuilder::add_arg(const ir::ValueType& type) { return symbolic(fn_.add_arg(type)); }

std::vector<Tensor> FunctionBuilder::add_op(ir::OpKind kind, const std::vector<ir::ValueId>& operands,
                                            const std::vector<ir::ValueType>& types, ir::Attrs attrs,
                                            ir::SourceLoc loc) {
  ir::OpId id = fn_.add_op(kind, operands, types, std::move(attrs), std::move(loc));
  std::vector<Tensor> results;
  for (ir::ValueId v : fn_.ops[id].results)
    results.push_back(symbolic(v));
  return results;
}

Tensor FunctionBuilder::symbolic(ir::ValueId v) {
  auto impl = std::make_shared<detail::TensorImpl>();
  const ir::ValueType& type = fn_.type_of(v);
  impl->layout = TensorLayout(type.dtype, type.shape);
  impl->graph = shared_from_this();
  impl->value = v;
  return Tensor(std::move(impl));
}

FunctionBuilder* builder_of(const Tensor& tensor) {
  return tensor.is_symbolic() ? static_cast<FunctionBuilder*>(tensor.impl()->graph.get()) : nullptr;
}

std::string ModuleBuilder::unique_function_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; module_.find(name) || name == options_.name; ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

std::vector<std::shared_ptr<FunctionBuilder>>& builder_stack() {
  thread_local std::vector<std::shared_ptr<FunctionBuilder>> stack;
  return stack;
}

std::shared_ptr<FunctionBuilder> current_builder() {
  auto& stack = builder_stack();
  return stack.empty() ? nullptr : stack.back();
}

namespace {
thread_local const ir::SourceLoc* source_override = nullptr;
} // namespace

ir::SourceLoc to_source_loc(const std::source_location& loc) {
  if (source_override) return *source_override;
  return {std::filesystem::path(loc.file_name()).filename().string(), uint32_t(loc.line()), uint32_t(loc.column())};
}

namespace {

// The builder every symbolic operand belongs to; all must agree and be the innermost active one.
std::shared_ptr<FunctionBuilder> owning_builder(const std::vector<Tensor>& operands, const ir::SourceLoc& loc,
                                                ir::OpKind kind) {
  std::shared_ptr<FunctionBuilder> owner;
  for (const Tensor& t : operands) {
    if (!t.defined())
      throw Error(ErrorKind::spec, "kiln." + std::string(ir::op_info(kind).name) + " at " + loc.to_string() +
                                       ": an operand is an undefined Tensor");
    if (!t.is_symbolic()) continue;
    FunctionBuilder* b = builder_of(t);
    std::shared_ptr<FunctionBuilder> current = current_builder();
    if (!b->active() || b != current.get())
      throw Error(ErrorKind::spec, "kiln." + std::string(ir::op_info(kind).name) + " at " + loc.to_string() +
                                       ": an operand belongs to another graph (a finished trace or an "
                                       "enclosing function of a subgraph); pass it as an argument instead");
    owner = std::move(current);
  }
  return owner;
}

ir::ValueId embed_constant(FunctionBuilder& builder, const Tensor& value, const ir::SourceLoc& loc) {
  ir::ValueType type{value.dtype(), value.shape(), false};
  auto results = builder.add_op(ir::OpKind::constant, {}, {type}, ir::encode_params(ir::ConstantParams{value}), loc);
  return results[0].impl()->value;
}

} // namespace

std::vector<Tensor> apply(ir::OpKind kind, const std::vector<Tensor>& operands, ir::Attrs attrs,
                          const std::source_location& location) {
  ir::SourceLoc loc = to_source_loc(location);
  for (size_t i = 0; i < operands.size(); ++i) // ops read host values, eagerly or as a graph's constants
    if (operands[i].is_concrete() && operands[i].device().kind != DeviceKind::cpu)
      throw Error(ErrorKind::spec, "kiln." + std::string(ir::op_info(kind).name) + " at " + loc.to_string() +
                                       ": operand " + std::to_string(i) + " is on " + operands[i].device().to_string() +
                                       "; ops run on host tensors: copy it with .to(CPU()) first");
  std::shared_ptr<FunctionBuilder> builder = owning_builder(operands, loc, kind);
  if (!builder && operands.empty()) builder = current_builder(); // creation ops inside a trace
  std::vector<ir::ValueType> in_types;
  for (const Tensor& t : operands) {
    ir::ValueType type{t.dtype(), t.shape(), false};
    if (t.is_symbolic()) type.is_buffer = builder->function().type_of(t.impl()->value).is_buffer;
    in_types.push_back(std::move(type));
  }
  std::vector<ir::ValueType> out_types = ir::infer_op(kind, in_types, attrs, loc);
  if (!builder) return ir::evaluate_eagerly(ir::default_eager_evaluator(), kind, attrs, operands, out_types, loc);
  std::vector<ir::ValueId> ids;
  for (const Tensor& t : operands)
    ids.push_back(t.is_symbolic() ? t.impl()->value : embed_constant(*builder, t, loc));
  return builder->add_op(kind, ids, out_types, std::move(attrs), std::move(loc));
}

Tensor apply1(ir::OpKind kind, const std::vector<Tensor>& operands, ir::Attrs attrs, const std::source_location& loc) {
  return apply(kind, operands, std::move(attrs), loc).at(0);
}

} // namespace kiln::trace

namespace kiln::detail {

struct ScopedSourceLocation::Saved {
  ir::SourceLoc loc;
  const ir::SourceLoc* previous;
};

ScopedSourceLocation::ScopedSourceLocation(std::string file, uint32_t line, uint32_t column)
    : saved_(std::make_unique<Saved>(Saved{{std::move(file), line, column}, trace::source_override})) {
  trace::source_override = &saved_->loc;
}

ScopedSourceLocation::~ScopedSourceLocation() { trace::source_override = saved_->previous; }

} // namespace kiln::detail
