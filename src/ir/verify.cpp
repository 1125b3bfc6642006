#include "ir/verify.hpp"
#include "core/checked_arithmetic.hpp"
#include "ir/custom_ops.hpp"
#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include <algorithm>
#include <unordered_map>

namespace kiln::ir {

namespace {

std::string op_place(const Function& fn, OpId id) {
  const Op& op = fn.ops[id];
  return "@" + fn.name + " op " + std::to_string(id) + " (kiln." + std::string(op_info(op.kind).name) + " at " +
         op.loc.to_string() + ")";
}

void check_value(const Function& fn, ValueId v, size_t defined_before, const std::string& where) {
  if (v >= fn.values.size() || v >= defined_before)
    throw Error(ErrorKind::internal, where + ": uses value " + value_name(fn, v) + " before it is defined");
}

// Values are numbered so that everything an op may use was created before its first result.
size_t first_result_id(const Function& fn, OpId id) {
  const Op& op = fn.ops[id];
  if (!op.results.empty()) return op.results.front();
  for (OpId next = id + 1; next < fn.ops.size(); ++next)
    if (!fn.ops[next].results.empty()) return fn.ops[next].results.front();
  return fn.values.size();
}

bool is_registered_custom(const Op& op) { return op.kind == OpKind::custom && custom_op_is_registered(op.attrs); }

// Static sizes only: a symbolic dim is checked once a call binds it (specialize).
void check_value_size(const Function& fn, ValueId v, const std::string& what) {
  checked_static_byte_size(fn.type_of(v).shape, fn.type_of(v).dtype, what);
}

// Depth-first over the call graph without recursion (a hostile module may chain many functions).
class CallGraphWalk {
public:
  explicit CallGraphWalk(const Module& module)
      : module_(module), state_(module.functions.size(), State::unseen), height_(module.functions.size(), 0) {
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < module.functions.size(); ++i)
      index.emplace(module.functions[i].name, i);
    for (const Function& fn : module.functions)
      calls_.push_back(calls_of(fn, index));
  }

  std::optional<CallProblem> run() {
    for (size_t root = 0; root < state_.size(); ++root)
      if (state_[root] == State::unseen)
        if (auto problem = walk_from(root)) return problem;
    return std::nullopt;
  }

private:
  enum class State { unseen, on_path, done };
  using Calls = std::vector<std::pair<OpId, size_t>>; // (call op, callee index)
  struct Frame {
    size_t function;
    size_t next_call = 0;
  };

  // Unknown callees are left to infer_call, which names them.
  static Calls calls_of(const Function& fn, const std::unordered_map<std::string, size_t>& index) {
    Calls calls;
    for (OpId id = 0; id < fn.ops.size(); ++id) {
      if (fn.ops[id].kind != OpKind::call) continue;
      auto callee = index.find(params_of<CallParams>(fn.ops[id]).callee);
      if (callee != index.end()) calls.emplace_back(id, callee->second);
    }
    return calls;
  }

  std::optional<CallProblem> walk_from(size_t root) {
    std::vector<Frame> path{{root}};
    state_[root] = State::on_path;
    while (!path.empty()) {
      Frame& frame = path.back();
      if (frame.next_call == calls_[frame.function].size()) {
        state_[frame.function] = State::done;
        const size_t finished = frame.function;
        path.pop_back();
        if (path.empty()) break;
        const Frame& caller = path.back();
        if (auto problem = add_height(caller.function, calls_[caller.function][caller.next_call - 1].first, finished))
          return problem;
        continue;
      }
      const auto [op, callee] = calls_[frame.function][frame.next_call++];
      if (state_[callee] == State::on_path) return cycle(path, op, callee);
      if (state_[callee] == State::done) {
        if (auto problem = add_height(frame.function, op, callee)) return problem;
        continue;
      }
      state_[callee] = State::on_path;
      path.push_back({callee});
    }
    return std::nullopt;
  }

  // The call `op` of `function` reaches `callee`, whose nesting height is final.
  std::optional<CallProblem> add_height(size_t function, OpId op, size_t callee) {
    height_[function] = std::max(height_[function], height_[callee] + 1);
    if (height_[function] <= kMaxCallDepth) return std::nullopt;
    return CallProblem{function, op, "calls nest deeper than " + std::to_string(kMaxCallDepth)};
  }

  CallProblem cycle(const std::vector<Frame>& path, OpId op, size_t callee) const {
    std::string chain;
    auto from = std::find_if(path.begin(), path.end(), [&](const Frame& f) { return f.function == callee; });
    for (auto it = from; it != path.end(); ++it)
      chain += "@" + module_.functions[it->function].name + " -> ";
    chain += "@" + module_.functions[callee].name;
    return {path.back().function, op, "calls form a cycle " + chain + "; recursion is not supported"};
  }

  const Module& module_;
  std::vector<Calls> calls_;
  std::vector<State> state_;
  std::vector<int> height_;
};

} // namespace

std::optional<CallProblem> find_call_problem(const Module& module) { return CallGraphWalk(module).run(); }

void verify_calls(const Module& module) {
  std::optional<CallProblem> problem = find_call_problem(module);
  if (!problem) return;
  const Op& op = module.functions[problem->function].ops[problem->op];
  throw Error(ErrorKind::unsupported, "func.call @" + params_of<CallParams>(op).callee + " at " + op.loc.to_string() +
                                          " in @" + module.functions[problem->function].name + ": " + problem->what);
}

std::vector<ValueType> infer_call(const Module& module, const std::string& callee, std::span<const ValueType> operands,
                                  const SourceLoc& loc) {
  const Function* target = module.find(callee);
  std::string where = "func.call @" + callee + " at " + loc.to_string() + ": ";
  if (!target) throw Error(ErrorKind::shape, where + "no function named @" + callee);
  std::vector<ValueType> params = target->arg_types();
  if (params.size() != operands.size())
    throw Error(ErrorKind::shape, where + "takes " + std::to_string(params.size()) + " arguments, got " +
                                      std::to_string(operands.size()));
  for (size_t i = 0; i < params.size(); ++i)
    if (!(params[i] == operands[i]))
      throw Error(ErrorKind::shape, where + "argument " + std::to_string(i) + " is " + type_to_string(operands[i]) +
                                        ", expected " + type_to_string(params[i]));
  return target->output_types();
}

void verify_function(const Module& module, const Function& fn) {
  for (size_t i = 0; i < fn.args.size(); ++i) {
    if (fn.values.at(fn.args[i]).def_op != kNoOp)
      throw Error(ErrorKind::internal, "@" + fn.name + ": argument " + std::to_string(i) + " is not an argument value");
    check_value_size(fn, fn.args[i], "@" + fn.name + " argument " + std::to_string(i));
  }
  for (OpId id = 0; id < fn.ops.size(); ++id) {
    const Op& op = fn.ops[id];
    size_t limit = first_result_id(fn, id);
    std::vector<ValueType> in;
    for (ValueId v : op.operands) {
      check_value(fn, v, limit, op_place(fn, id));
      in.push_back(fn.type_of(v));
    }
    for (size_t r = 0; r < op.results.size(); ++r) {
      const ValueInfo& info = fn.values.at(op.results[r]);
      if (info.def_op != int32_t(id) || info.def_index != r)
        throw Error(ErrorKind::internal, op_place(fn, id) + ": result " + std::to_string(r) + " is not owned by it");
      check_value_size(fn, op.results[r], op_place(fn, id) + " result " + std::to_string(r));
    }
    if (const auto* invalid = std::get_if<InvalidParams>(&op.params))
      throw Error(invalid->kind, op_place(fn, id) + ": " + invalid->reason);
    std::vector<ValueType> expected;
    if (op.kind == OpKind::call)
      expected = infer_call(module, params_of<CallParams>(op).callee, in, op.loc);
    else if (op_info(op.kind).infer || is_registered_custom(op))
      expected = infer_op(op.kind, in, op.attrs, op.loc);
    else
      continue; // constant_external, and custom ops opaque to the IR
    if (expected.size() != op.results.size())
      throw Error(ErrorKind::shape, op_place(fn, id) + ": has " + std::to_string(op.results.size()) +
                                        " results, expected " + std::to_string(expected.size()));
    for (size_t r = 0; r < expected.size(); ++r)
      if (!(expected[r] == fn.type_of(op.results[r])))
        throw Error(ErrorKind::shape, op_place(fn, id) + ": result " + std::to_string(r) + " is " +
                                          type_to_string(fn.type_of(op.results[r])) + ", inferred " +
                                          type_to_string(expected[r]));
  }
  for (ValueId v : fn.outputs)
    check_value(fn, v, fn.values.size(), "@" + fn.name + " return");
}

void verify_module(const Module& module) {
  if (module.functions.empty()) throw Error(ErrorKind::spec, "module @" + module.name + " has no functions");
  for (const Function& fn : module.functions)
    verify_function(module, fn);
  verify_calls(module);
}

} // namespace kiln::ir
