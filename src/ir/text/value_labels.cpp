#include "ir/text/value_labels.hpp"
#include "ir/text/printer.hpp"

namespace kiln::ir {

namespace {

std::vector<std::vector<std::string>> labels_with_prefix(const Function& fn, const std::string& prefix) {
  const std::vector<std::string> printed = printed_value_names(fn);
  std::vector<std::vector<std::string>> labels(fn.values.size());
  for (size_t v = 0; v < fn.values.size(); ++v)
    labels[v] = fn.values[v].labels.empty() ? std::vector<std::string>{prefix + printed[v]} : fn.values[v].labels;
  return labels;
}

} // namespace

std::vector<std::vector<std::string>> value_labels(const Module& module, const Function& fn) {
  return labels_with_prefix(fn, &fn == &module.entry() ? "" : "@" + fn.name + " ");
}

std::vector<std::vector<std::string>> value_labels(const Function& fn) { return labels_with_prefix(fn, ""); }

void label_values(Module& module) {
  for (Function& fn : module.functions) {
    std::vector<std::vector<std::string>> labels = value_labels(module, fn);
    for (size_t v = 0; v < fn.values.size(); ++v)
      fn.values[v].labels = std::move(labels[v]);
  }
}

std::vector<std::string> value_names(const Function& fn) {
  std::vector<std::string> names = printed_value_names(fn);
  for (size_t v = 0; v < fn.values.size(); ++v)
    if (!fn.values[v].labels.empty()) names[v] = fn.values[v].labels.front();
  return names;
}

std::string value_name(const Function& fn, ValueId v) {
  if (v < fn.values.size() && !fn.values[v].labels.empty()) return fn.values[v].labels.front();
  const std::vector<std::string> printed = printed_value_names(fn);
  return v < printed.size() ? printed[v] : "%<value " + std::to_string(v) + ">";
}

std::string op_name(const Function& fn, OpId id) {
  const Op& op = fn.ops.at(id);
  if (op.results.empty()) return "op " + std::to_string(id);
  const std::string first = value_name(fn, op.results.front());
  return op.results.size() == 1 ? first : first.substr(0, first.rfind('#'));
}

} // namespace kiln::ir
