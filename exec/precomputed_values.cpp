#include "exec/precomputed_values.hpp"
#include "ir/ops.hpp"
#include <charconv>

namespace kiln::exec {

namespace {

std::string number_text(double v) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, v).ptr); // shortest exact
}

template <class T, class Text> std::string list_text(const std::vector<T>& items, Text text) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + text(items[i]);
  return out + "]";
}

// An attribute value spelled so that different values never read alike; nullopt for a tensor.
struct AttrText {
  std::optional<std::string> operator()(bool v) const { return v ? "true" : "false"; }
  std::optional<std::string> operator()(int64_t v) const { return std::to_string(v); }
  std::optional<std::string> operator()(double v) const { return number_text(v); }
  std::optional<std::string> operator()(const std::string& v) const {
    return std::to_string(v.size()) + ":" + v; // length-prefixed: no quoting to get wrong
  }
  std::optional<std::string> operator()(const ir::Attr::Ints& v) const {
    return list_text(v, [](int64_t x) { return std::to_string(x); });
  }
  std::optional<std::string> operator()(const ir::Attr::Floats& v) const { return list_text(v, number_text); }
  std::optional<std::string> operator()(const Shape& v) const { return shape_to_string(v); }
  std::optional<std::string> operator()(DType v) const { return std::string(dtype_name(v)); }
  std::optional<std::string> operator()(const Tensor&) const { return std::nullopt; }
};

} // namespace

std::optional<runtime::WeightFormKey> precomputed_key(const ir::Op& op, const std::vector<ValuePlan>& values) {
  std::vector<const runtime::WeightFormKey*> operands;
  for (ir::ValueId v : op.operands) {
    if (!values[v].bound_key) return std::nullopt;
    operands.push_back(&*values[v].bound_key);
  }
  std::string how = "kiln." + std::string(ir::op_info(op.kind).name) + "{";
  for (const auto& [name, attr] : op.attrs.items()) {
    std::optional<std::string> text = std::visit(AttrText{}, attr.value);
    if (!text) return std::nullopt;
    how += name + " = " + *text + "; ";
  }
  how += "} ->";
  for (ir::ValueId v : op.results)
    how += " " + std::string(dtype_name(values[v].dtype)) +
           list_text(values[v].dims, [](int64_t d) { return std::to_string(d); });
  return runtime::derived_key(how, operands);
}

std::optional<runtime::WeightFormKey> precomputed_result_key(const std::optional<runtime::WeightFormKey>& results,
                                                             size_t index) {
  if (!results) return std::nullopt;
  return runtime::derived_key("result " + std::to_string(index), {&*results});
}

} // namespace kiln::exec
