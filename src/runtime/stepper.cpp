#include "ir/eager_evaluator.hpp"
#include "ir/op_params.hpp"
#include "ir/ops.hpp"
#include "ir/specialize.hpp"
#include "ir/text/printer.hpp"
#include "ir/text/value_labels.hpp"
#include "runtime/executable.hpp"
#include "runtime/tier_set.hpp"
#include "runtime/weight_map.hpp"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <kiln/debug.hpp>
#include <kiln/stepper.hpp>
#include <map>
#include <set>
#include <sstream>

namespace kiln::debug {

namespace {

std::string op_name(const ir::Op& op) { return "kiln." + std::string(ir::op_info(op.kind).name); }

// The lines `kiln print` writes for the staged module's ops, by the label of each op's first result.
std::map<std::string, std::string> staged_lines_by_label(const ir::Module& staged) {
  std::map<std::string, std::string> lines;
  for (const ir::Function& fn : staged.functions) {
    const std::vector<std::vector<std::string>> labels = ir::value_labels(staged, fn);
    const std::vector<std::string> printed = ir::printed_op_lines(fn, ir::printed_value_names(fn));
    for (size_t i = 0; i < fn.ops.size(); ++i)
      if (!fn.ops[i].results.empty()) lines[labels[fn.ops[i].results[0]].front()] = printed[i];
  }
  return lines;
}

// Per op of the graph that runs, the line `kiln print` shows for it; an op the passes made (a folded
// constant) or one without results, which print shows no line for, is written out with value names.
std::vector<std::string> op_lines_of(const ir::Function& graph, const std::vector<std::string>& names,
                                     const std::map<std::string, std::string>& staged_lines) {
  std::vector<std::string> lines = ir::printed_op_lines(graph, names);
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (op.results.empty()) continue;
    const auto staged = staged_lines.find(names[op.results[0]]);
    if (staged != staged_lines.end() && staged->second.find("\"" + op_name(op) + "\"") != std::string::npos)
      lines[i] = staged->second;
  }
  return lines;
}

// "@block  %4 " -> "@block %4"; the entry's own prefix is dropped ("@main %4" -> "%4").
std::string normalized_label(const std::string& written, const std::string& entry) {
  std::istringstream words(written);
  std::string label;
  for (std::string word; words >> word;)
    label += (label.empty() ? "" : " ") + word;
  const std::string prefix = "@" + entry + " ";
  return label.rfind(prefix, 0) == 0 ? label.substr(prefix.size()) : label;
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }

} // namespace

struct Stepper::State {
  std::shared_ptr<const ir::Function> graph;
  ir::InlinedCalls calls;                           // where each op came from: the subgraph calls inlined
  std::vector<std::string> names;                   // per value id: its name as printed (%3, %arg0, @block %4)
  std::multimap<std::string, ir::ValueId> by_label; // labels values answer to: a body called twice, twice
  std::set<std::string> staged_labels;              // every value label of the module as printed
  std::map<std::string, std::string> staged_lines;  // kiln print's op lines, by first result label
  std::vector<std::string> op_lines;                // per op: its printed line
  std::vector<Tensor> inputs;
  runtime::WeightMap weights;
  ir::EagerEvaluator eager;                      // the session's tier set's: runs each op
  std::optional<std::vector<Tensor>> jit_values; // on the JIT tier: the values its call kept
  std::vector<Tensor> values;                    // per value id: computed and not yet freed
  std::vector<int> readers_left;                 // per value id: ops still to read it (outputs never reach 0)
  std::set<ir::ValueId> kept;                    // never freed
  size_t next = 0;                               // the op to run next
  std::vector<bool> entered;                     // per inlined call: the stepper went past its call stop
  bool moved = false;                            // a step, next or continue has run
  bool keep_all = false;                         // StepperOptions::keep_all
  StepState current;
  std::string reason;
  std::set<std::string> kinds, lines;
  std::set<ir::ValueId> values_to_break_on;
  bool nan = false, inf = false;
  std::map<ir::ValueId, std::pair<double, double>> ranges;

  std::string value_name(ir::ValueId v) const { return names.at(v); }

  // The values a label names, in op order: one per call of the subgraph it is in.
  std::vector<ir::ValueId> known_values(const std::string& written) const {
    const std::string label = normalized_label(written, graph->name);
    std::vector<ir::ValueId> found;
    for (auto [at, end] = by_label.equal_range(label); at != end; ++at)
      found.push_back(at->second);
    std::sort(found.begin(), found.end());
    if (!found.empty()) return found;
    if (staged_labels.contains(label))
      throw Error(ErrorKind::spec, "debug::Stepper: " + label +
                                       " is not computed by the graph that runs: the optimizer folded it into a "
                                       "constant or dropped it, as nothing reads it");
    throw Error(ErrorKind::spec, "debug::Stepper: the graph has no value '" + written +
                                     "' (values are named as kiln print prints them: %0, %3#1, %arg0, and "
                                     "@block %4 inside a subgraph @block)");
  }

  // The labels each value answers to: its own, and at an inlined call, the callee's arguments and
  // the call's results, which stand for values of the caller and the callee.
  void index_labels(const ir::Module& staged) {
    const std::vector<std::vector<std::string>> labels = ir::value_labels(*graph);
    for (size_t v = 0; v < labels.size(); ++v)
      for (const std::string& label : labels[v])
        by_label.emplace(label, ir::ValueId(v));
    for (const ir::InlinedCall& c : calls.calls) {
      for (size_t i = 0; i < c.args.size() && i < c.arg_labels.size(); ++i)
        by_label.emplace(c.arg_labels[i], c.args[i]);
      for (size_t i = 0; i < c.results.size() && i < c.result_labels.size(); ++i)
        by_label.emplace(c.result_labels[i], c.results[i]);
    }
    for (const ir::Function& fn : staged.functions)
      for (const std::vector<std::string>& value : ir::value_labels(staged, fn))
        staged_labels.insert(value.begin(), value.end());
  }

  // Back to before the first op, with the call's inputs; breakpoints, watchpoints and keeps stay.
  void reset() {
    next = 0;
    moved = false;
    reason.clear();
    entered.assign(calls.calls.size(), false);
    values.assign(graph->values.size(), Tensor());
    readers_left.assign(graph->values.size(), 0);
    for (size_t i = 0; i < graph->args.size(); ++i)
      values[graph->args[i]] = inputs.at(i);
    for (const ir::Op& op : graph->ops)
      for (ir::ValueId v : op.operands)
        ++readers_left[v];
    describe_next();
  }

  std::string function_of(int32_t call) const { return "@" + (call < 0 ? graph->name : calls.calls[call].callee); }

  // The calls op `index` sits in, innermost first.
  std::vector<int32_t> call_chain(size_t index) const {
    std::vector<int32_t> chain;
    if (index >= calls.op_call.size()) return chain;
    for (int32_t c = calls.op_call[index]; c >= 0; c = calls.calls[c].parent)
      chain.push_back(c);
    return chain;
  }

  // The outermost call the next op is in that the stepper has not entered: it stands at that
  // call (pdb's stop on a call line) before the call's first op. -1: none.
  int32_t pending_call() const {
    int32_t pending = -1;
    for (int32_t c : call_chain(next))
      if (!entered[c]) pending = c;
    return pending;
  }

  void enter_calls_of_next() {
    for (int32_t c : call_chain(next))
      entered[c] = true;
  }

  void describe_call(int32_t call) {
    const ir::InlinedCall& c = calls.calls[call];
    current.op = "func.call";
    current.callee = "@" + c.callee;
    current.location = c.loc.to_string();
    current.function = function_of(c.parent);
    for (ir::ValueId v : c.args)
      current.inputs.push_back(value_name(v));
    current.results = c.result_labels;
    auto joined = [](const std::vector<std::string>& names) {
      std::string out;
      for (const std::string& n : names)
        out += (out.empty() ? "" : ", ") + n;
      return out;
    };
    const auto staged = c.result_labels.empty() ? staged_lines.end() : staged_lines.find(c.result_labels[0]);
    if (staged != staged_lines.end()) {
      current.mlir = staged->second;
      return;
    }
    current.mlir = joined(current.results) + " = func.call " + current.callee + "(" + joined(current.inputs) +
                   ") loc(\"" + c.loc.file + "\":" + std::to_string(c.loc.line) + ":" + std::to_string(c.loc.column) +
                   ")";
  }

  void describe_next() {
    current = StepState{};
    current.index = next;
    current.done = next >= graph->ops.size();
    if (current.done) return;
    if (const int32_t call = pending_call(); call >= 0) return describe_call(call);
    const ir::Op& op = graph->ops[next];
    current.op = op_name(op);
    current.location = op.loc.to_string();
    current.mlir = next < op_lines.size() ? op_lines[next] : "";
    current.function = function_of(calls.op_call.at(next));
    current.fused = jit_values && !op.results.empty() && !jit_values->at(op.results[0]).defined();
    for (ir::ValueId v : op.operands)
      current.inputs.push_back(value_name(v));
    for (ir::ValueId v : op.results)
      current.results.push_back(value_name(v));
  }

  std::optional<std::string> breakpoint_at(const ir::Op& op) const {
    if (kinds.contains(op_name(op))) return "break " + op_name(op);
    for (ir::ValueId v : op.results)
      if (values_to_break_on.contains(v)) return "break " + value_name(v);
    const std::string file_line = op.loc.file + ":" + std::to_string(op.loc.line);
    for (const std::string& line : lines)
      if (file_line.size() >= line.size() && file_line.compare(file_line.size() - line.size(), line.size(), line) == 0)
        return "break " + line;
    return std::nullopt;
  }

  std::vector<Tensor> run(const ir::Op& op) {
    if (jit_values) { // replayed: undefined where a kernel kept the value to itself
      std::vector<Tensor> results;
      for (ir::ValueId v : op.results)
        results.push_back(jit_values->at(v));
      return results;
    }
    std::vector<Tensor> inputs;
    for (ir::ValueId v : op.operands) {
      if (!values.at(v).defined()) throw Error(ErrorKind::internal, "debug::Stepper: " + value_name(v) + " was freed");
      inputs.push_back(values[v]);
    }
    // The ops the plan executor runs itself (kNoKernel); calls are inlined and custom ops run
    // through the eager evaluator like every other kind.
    if (op.kind == ir::OpKind::constant) return {ir::params_of<ir::ConstantParams>(op).value};
    if (op.kind == ir::OpKind::constant_external) {
      const auto found = weights.find(ir::params_of<ir::ExternalParams>(op).name);
      if (found == weights.end()) throw Error(ErrorKind::weight, "debug::Stepper: " + op_name(op) + " has no weight");
      return {found->second};
    }
    if (op.kind == ir::OpKind::buffer_store) {
      const size_t bytes = size_t(inputs[1].numel()) * dtype_size(inputs[1].dtype());
      std::memmove(inputs[0].raw_data(), inputs[1].raw_data(), bytes);
      return {};
    }
    std::vector<ir::ValueType> result_types;
    for (ir::ValueId v : op.results)
      result_types.push_back(graph->type_of(v));
    return ir::evaluate_eagerly(eager, op.kind, op.attrs, inputs, result_types, op.loc);
  }

  // Why a watchpoint trips on the results of `op`, or nullopt.
  std::optional<std::string> watchpoint_after(const ir::Op& op) const {
    for (ir::ValueId v : op.results) {
      const Tensor& t = values[v];
      if (!t.defined()) continue; // fused away on the JIT tier
      const auto range = ranges.find(v);
      if (!is_float(t.dtype()) && range == ranges.end()) continue;
      const TensorSummary s = summary(t);
      const std::string what = value_name(v) + " = " + ir::op_place(op);
      std::string why;
      if (nan && s.nan > 0)
        why = "watch nan: " + what + " produced " + std::to_string(s.nan) + " NaN";
      else if (inf && s.pos_inf + s.neg_inf > 0)
        why = "watch inf: " + what + " produced " + std::to_string(s.pos_inf + s.neg_inf) + " Inf";
      else if (range != ranges.end() && (s.min < range->second.first || s.max > range->second.second || s.nan > 0))
        why = "watch range: " + what + " left [" + format(range->second.first) + ", " + format(range->second.second) +
              "] (min " + format(s.min) + ", max " + format(s.max) + ")";
      if (why.empty()) continue;
      why += " of " + std::to_string(s.numel) + " values";
      for (ir::ValueId input : op.operands) {
        if (!values[input].defined() || values[input].numel() == 0 || !is_float(values[input].dtype())) continue;
        const TensorSummary input_summary = summary(values[input]);
        why += "; its input " + value_name(input) + " has min " + format(input_summary.min) + ", max " +
               format(input_summary.max);
      }
      if (const std::string fused = fused_into(op); !fused.empty())
        why += "; the JIT computed it in one kernel with " + fused + " (tier interp steps them one by one)";
      return why;
    }
    return std::nullopt;
  }

  // On the JIT tier: the ops fused into the kernel that made op's results, whose own results it kept
  // to itself ("kiln.sub %4, kiln.log %5"); empty when none.
  std::string fused_into(const ir::Op& op) const {
    if (!jit_values) return "";
    std::set<int32_t> fused;
    std::vector<ir::ValueId> pending(op.operands.begin(), op.operands.end());
    while (!pending.empty()) {
      const ir::ValueId v = pending.back();
      pending.pop_back();
      const int32_t def = graph->values[v].def_op;
      if (def == ir::kNoOp || jit_values->at(v).defined() || !fused.insert(def).second) continue;
      pending.insert(pending.end(), graph->ops[def].operands.begin(), graph->ops[def].operands.end());
    }
    std::string list;
    for (int32_t def : fused)
      list += (list.empty() ? "" : ", ") + op_name(graph->ops[def]) + " " + value_name(graph->ops[def].results.at(0));
    return list;
  }

  static std::string format(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
  }

  // Runs ops while `keep_going` says so, going into calls, stopping early at a breakpoint (before
  // its op) or a watchpoint (after its op); true when one stopped it. The op it stands at is not
  // broken on when `skip_first_break`.
  template <class KeepGoing> bool run_while(KeepGoing keep_going, bool skip_first_break) {
    reason.clear();
    moved = true;
    for (bool check = !skip_first_break; !current.done && keep_going(); check = true) {
      enter_calls_of_next();
      if (check)
        if (auto why = breakpoint_at(graph->ops[next])) {
          reason = *why + ": " + ir::op_place(graph->ops[next]);
          describe_next();
          return true;
        }
      run_next();
      if (!reason.empty()) return true;
    }
    return false;
  }

  bool watched(ir::ValueId v) const {
    return keep_all || kept.contains(v) || values_to_break_on.contains(v) || ranges.contains(v);
  }

  // Runs the next op and frees what no later op reads; a tripped watchpoint sets `reason`.
  void run_next() {
    const ir::Op& op = graph->ops[next];
    std::vector<Tensor> results = run(op);
    for (size_t i = 0; i < op.results.size() && i < results.size(); ++i)
      values[op.results[i]] = std::move(results[i]);
    if (auto why = watchpoint_after(op)) reason = *why; // while its inputs are still there
    for (ir::ValueId v : op.operands)
      if (--readers_left[v] == 0 && !watched(v)) values[v] = Tensor();
    ++next;
    describe_next();
  }
};

Stepper::Stepper(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs, const StepperOptions& options)
    : state_(std::make_unique<State>()) {
  if (options.tier != "interp" && options.tier != "jit" && options.tier != "accelerator")
    throw Error(ErrorKind::spec, "debug::Stepper: no tier '" + options.tier + "' (interp, jit or accelerator)");
  const runtime::TierSet& tiers = core.session().tiers();
  // A promoted tier's call is run once keeping every value it materialises, then replayed.
  const runtime::ExecutableFactory* jit = options.tier == "interp" ? nullptr : tiers.find(options.tier);
  if (options.tier == "jit" && !jit)
    throw Error(ErrorKind::unsupported, "debug::Stepper: this build has no JIT tier (-Djit=disabled)");
  if (options.tier == "accelerator" && !jit)
    throw Error(ErrorKind::unsupported, "debug::Stepper: this build has no accelerator tier (-Dvulkan=disabled)");
  State& s = *state_;
  s.eager = tiers.eager();
  const kiln::detail::TreeLeaves args = core.tensor_arguments(inputs);
  core.inspect_signature(args, inputs,
                         [&](const std::shared_ptr<const ir::Function>& graph, const runtime::WeightMap& weights,
                             const ir::InlinedCalls& calls) {
                           s.graph = graph;
                           s.weights = weights;
                           s.calls = calls;
                         });
  const ir::Module& staged = *core.module();
  s.names = ir::value_names(*s.graph);
  s.index_labels(staged);
  s.staged_lines = staged_lines_by_label(staged);
  s.op_lines = op_lines_of(*s.graph, s.names, s.staged_lines);
  if (jit) {
    s.jit_values.emplace();
    (*jit)(s.graph, s.weights)->run(inputs, {.preserved = &*s.jit_values});
  }
  s.inputs = inputs;
  for (ir::ValueId v : s.graph->outputs)
    s.kept.insert(v);
  s.keep_all = options.keep_all;
  s.reset();
}

Stepper::~Stepper() = default;
Stepper::Stepper(Stepper&&) noexcept = default;
Stepper& Stepper::operator=(Stepper&&) noexcept = default;

void Stepper::break_on_kind(const std::string& kind) {
  const std::string bare = kind.rfind("kiln.", 0) == 0 ? kind.substr(5) : kind;
  if (!ir::op_kind_from_name(bare))
    throw Error(ErrorKind::spec, "debug::Stepper: no op kind '" + kind + "' (write it as kiln.matmul)");
  state_->kinds.insert("kiln." + bare);
}
void Stepper::break_on_value(const std::string& value) {
  for (ir::ValueId v : state_->known_values(value))
    state_->values_to_break_on.insert(v);
}
void Stepper::break_on_line(const std::string& file_and_line) {
  const size_t colon = file_and_line.rfind(':');
  if (colon == std::string::npos || colon + 1 == file_and_line.size() ||
      file_and_line.find_first_not_of("0123456789", colon + 1) != std::string::npos)
    throw Error(ErrorKind::spec, "debug::Stepper: '" + file_and_line + "' is not file:line such as model.cpp:42");
  state_->lines.insert(file_and_line);
}
void Stepper::watch_nan() { state_->nan = true; }
void Stepper::watch_inf() { state_->inf = true; }
void Stepper::watch_range(const std::string& value, double lo, double hi) {
  if (!(lo <= hi)) throw Error(ErrorKind::spec, "debug::Stepper: watch_range needs lo <= hi");
  for (ir::ValueId v : state_->known_values(value))
    state_->ranges[v] = {lo, hi};
}
void Stepper::keep(const std::string& value) {
  for (ir::ValueId v : state_->known_values(value))
    state_->kept.insert(v);
}

bool Stepper::step() {
  State& s = *state_;
  s.reason.clear();
  s.moved = true;
  if (s.current.done) return false;
  if (s.pending_call() >= 0) { // into the call: no op runs
    s.entered[s.pending_call()] = true;
    s.describe_next();
    return true;
  }
  s.run_next();
  return true;
}

bool Stepper::next() {
  State& s = *state_;
  const int32_t call = s.pending_call();
  if (call < 0) return step();
  auto in_call = [&] {
    const std::vector<int32_t> chain = s.call_chain(s.next);
    return std::find(chain.begin(), chain.end(), call) != chain.end();
  };
  s.run_while(in_call, false);
  return true;
}

bool Stepper::continue_() {
  State& s = *state_;
  return s.run_while([] { return true; }, s.moved && s.pending_call() < 0);
}

void Stepper::restart() { state_->reset(); }

std::vector<Tensor> Stepper::finish() {
  State& s = *state_;
  while (!s.current.done) {
    s.enter_calls_of_next();
    s.run_next();
  }
  s.reason.clear();
  std::vector<Tensor> outputs;
  for (ir::ValueId v : s.graph->outputs)
    outputs.push_back(s.values.at(v));
  return outputs;
}

const StepState& Stepper::current() const { return state_->current; }

std::vector<StackFrame> Stepper::where() const {
  const State& s = *state_;
  if (s.current.done) return {};
  // The innermost frame stands at the current op (or call); each outer one at its call into the next.
  std::vector<StackFrame> frames{{s.current.function, s.current.location}};
  for (int32_t c : s.call_chain(s.next))
    if (s.entered[c]) frames.push_back({s.function_of(s.calls.calls[c].parent), s.calls.calls[c].loc.to_string()});
  std::reverse(frames.begin(), frames.end());
  return frames;
}

const std::string& Stepper::stop_reason() const { return state_->reason; }

Tensor Stepper::value(const std::string& name) const {
  const State& s = *state_;
  auto computed = [&](ir::ValueId v) {
    const int32_t def = s.graph->values[v].def_op;
    return def == ir::kNoOp || size_t(def) < s.next;
  };
  // Of a body called several times, the call's value computed last.
  const std::vector<ir::ValueId> named = s.known_values(name);
  ir::ValueId v = named.front();
  for (ir::ValueId candidate : named)
    if (computed(candidate)) v = candidate;
  if (!s.values[v].defined()) {
    const bool fused = s.jit_values && !s.jit_values->at(v).defined();
    throw Error(ErrorKind::spec,
                "debug::Stepper: " + name +
                    (!computed(v) ? " is not computed yet"
                     : fused      ? " lives only inside the JIT kernel its op was fused into: step on the interpreter"
                                    " to see it"
                                  : " was freed after its last reader: keep() it before it is computed"));
  }
  return s.values[v];
}

} // namespace kiln::debug
