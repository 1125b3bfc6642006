#include "ir/specialize.hpp"
#include "core/checked_arithmetic.hpp"
#include "core/dim_binding.hpp"
#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "ir/verify.hpp"

namespace kiln::ir {

Shape bind_shape(const Shape& shape, const DimBindings& bindings) {
  Shape out = shape;
  for (Dim& d : out) {
    if (!d.is_symbolic()) continue;
    if (d.is_symbol()) {
      auto it = bindings.find(d.name());
      if (it != bindings.end()) d = Dim(it->second);
    } else {
      d = dim_expr::dim_of(dim_expr::poly_of(d).substitute(bindings));
    }
  }
  return out;
}

namespace {

DimBindings bind_arguments(const Function& entry, std::span<const ValueType> args) {
  if (args.size() != entry.args.size())
    throw Error(ErrorKind::spec, "graph @" + entry.name + " takes " + std::to_string(entry.args.size()) +
                                     " arguments, got " + std::to_string(args.size()));
  std::vector<ShapeToBind> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueType& declared = entry.type_of(entry.args[i]);
    if (declared.rank() != args[i].rank() || declared.dtype != args[i].dtype)
      throw Error(ErrorKind::spec, "argument " + std::to_string(i) + ": expected " + type_to_string(declared) +
                                       ", got " + type_to_string(args[i]));
    checked_static_byte_size(args[i].shape, args[i].dtype, "argument " + std::to_string(i));
    for (size_t d = 0; d < declared.shape.size(); ++d) {
      const Dim& want = declared.shape[d];
      int64_t got = args[i].shape[d].size();
      if (want.is_static() && want.size() != got)
        throw Error(ErrorKind::spec, "argument " + std::to_string(i) + " dim " + std::to_string(d) + ": expected " +
                                         std::to_string(want.size()) + ", got " + std::to_string(got));
    }
    shapes.push_back({&declared.shape, &args[i].shape, std::to_string(i)});
  }
  return bind_dims(shapes);
}

Attrs bind_attrs(const Attrs& attrs, const DimBindings& bindings) {
  Attrs out = attrs;
  for (const auto& [name, value] : attrs.items())
    if (const Shape* s = std::get_if<Shape>(&value.value)) out.set(name, Attr::of_shape(bind_shape(*s, bindings)));
  return out;
}

class Inliner {
public:
  Inliner(const Module& module, const DimBindings& bindings, InlinedCalls* calls)
      : module_(module), bindings_(bindings), calls_(calls) {}

  // Emits fn's ops into out with its arguments mapped to `args`; returns its outputs there. The
  // recursion ends: specialize refused call cycles and deep nesting first.
  std::vector<ValueId> emit(const Function& fn, const std::vector<ValueId>& args) {
    const std::vector<std::vector<std::string>> labels = value_labels(module_, fn);
    std::vector<ValueId> map(fn.values.size(), ValueId(-1));
    for (size_t i = 0; i < fn.args.size(); ++i)
      map[fn.args[i]] = args[i];
    for (const Op& op : fn.ops) {
      std::vector<ValueId> operands;
      for (ValueId v : op.operands)
        operands.push_back(map[v]);
      std::vector<ValueId> results =
          op.kind == OpKind::call ? inline_call(op, operands, labels) : emit_op(fn, op, std::move(operands));
      for (size_t r = 0; r < op.results.size(); ++r) {
        map[op.results[r]] = results[r];
        if (op.kind != OpKind::call) out.values[results[r]].labels = labels[op.results[r]];
      }
    }
    std::vector<ValueId> outs;
    for (ValueId v : fn.outputs)
      outs.push_back(map[v]);
    return outs;
  }

  Function out;

private:
  std::vector<ValueId> inline_call(const Op& op, const std::vector<ValueId>& operands,
                                   const std::vector<std::vector<std::string>>& caller_labels) {
    const Function* callee = module_.find(params_of<CallParams>(op).callee);
    if (!callee) throw Error(ErrorKind::shape, "call at " + op.loc.to_string() + ": unknown function");
    if (!calls_) return emit(*callee, operands);
    const int32_t caller = current_call_;
    current_call_ = int32_t(calls_->calls.size());
    calls_->calls.push_back({callee->name, op.loc, caller, operands, {}, {}, {}});
    const std::vector<std::vector<std::string>> callee_labels = value_labels(module_, *callee);
    for (ValueId a : callee->args)
      calls_->calls[current_call_].arg_labels.push_back(callee_labels[a].front());
    for (ValueId r : op.results)
      calls_->calls[current_call_].result_labels.push_back(caller_labels[r].front());
    std::vector<ValueId> results = emit(*callee, operands);
    calls_->calls[current_call_].results = results;
    current_call_ = caller;
    return results;
  }

  std::vector<ValueId> emit_op(const Function& fn, const Op& op, std::vector<ValueId> operands) {
    Attrs attrs = bind_attrs(op.attrs, bindings_);
    std::vector<ValueType> in;
    for (ValueId v : operands)
      in.push_back(out.type_of(v));
    const std::string where = "kiln." + std::string(op_info(op.kind).name) + " at " + op.loc.to_string();
    std::vector<ValueType> types;
    if (op_info(op.kind).infer) {
      types = infer_op(op.kind, in, attrs, op.loc);
      check_traced_types(fn, op, types, where);
    } else {
      for (ValueId r : op.results) {
        ValueType t = fn.type_of(r);
        t.shape = bind_shape(t.shape, bindings_);
        types.push_back(std::move(t));
      }
    }
    for (size_t r = 0; r < types.size(); ++r) {
      if (!shape_is_static(types[r].shape))
        throw Error(ErrorKind::shape,
                    where + ": result " + shape_to_string(types[r].shape) + " has a dim no argument binds");
      // Bound symbols make the sizes concrete only now (inferred results were checked by infer_op).
      checked_static_byte_size(types[r].shape, types[r].dtype, where + ": result " + std::to_string(r));
    }
    OpId id = out.add_op(op.kind, std::move(operands), types, std::move(attrs), op.loc);
    if (calls_) calls_->op_call.push_back(current_call_);
    return out.ops[id].results;
  }

  // Symbolic inference assumed what the concrete sizes must now confirm (x[:, -1] on an axis seq is
  // seq-1..seq, which an empty axis does not have; batch*6 reshaped to -1, 4 needs an even batch).
  void check_traced_types(const Function& fn, const Op& op, const std::vector<ValueType>& types,
                          const std::string& where) const {
    for (size_t r = 0; r < types.size() && r < op.results.size(); ++r) {
      const Shape& traced = fn.type_of(op.results[r]).shape;
      if (shape_is_static(traced)) continue;
      Shape bound;
      try {
        bound = bind_shape(traced, bindings_);
      } catch (const Error& e) {
        throw Error(e.kind(), where + ": result " + shape_to_string(traced) + ": " + e.message());
      }
      if (shape_is_static(bound) && bound != types[r].shape)
        throw Error(ErrorKind::shape, where + ": the graph's result " + shape_to_string(traced) + " is " +
                                          shape_to_string(bound) + " for these inputs, but the op gives " +
                                          shape_to_string(types[r].shape));
    }
  }

  const Module& module_;
  const DimBindings& bindings_;
  InlinedCalls* calls_;
  int32_t current_call_ = -1;
};

} // namespace

Function specialize(const Module& module, std::span<const ValueType> concrete_args, InlinedCalls* calls) {
  verify_calls(module);
  const Function& entry = module.entry();
  DimBindings bindings = bind_arguments(entry, concrete_args);
  if (calls) *calls = {};
  Inliner inliner(module, bindings, calls);
  inliner.out.name = entry.name;
  const std::vector<std::vector<std::string>> entry_labels = value_labels(module, entry);
  std::vector<ValueId> args;
  for (size_t i = 0; i < concrete_args.size(); ++i) {
    ValueType t = concrete_args[i];
    t.is_buffer = entry.type_of(entry.args[i]).is_buffer;
    args.push_back(inliner.out.add_arg(t));
    inliner.out.values[args.back()].labels = entry_labels[entry.args[i]];
  }
  inliner.out.outputs = inliner.emit(entry, args);
  return std::move(inliner.out);
}

} // namespace kiln::ir
