#include "ir/text/printer.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <kiln/error.hpp>
#include <variant>

namespace kiln::ir {
namespace {

const char kHexDigits[] = "0123456789ABCDEF";

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte >= 0x20 && byte < 0x7F) {
      out += c;
    } else {
      out += '\\';
      out += kHexDigits[byte >> 4];
      out += kHexDigits[byte & 15];
    }
  }
  return out + "\"";
}

// MLIR's bare-id: (letter | _) (letter | digit | _ | $ | .)*
bool is_bare_id(std::string_view s) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !letter(s[0])) return false;
  for (char c : s)
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '$' && c != '.') return false;
  return true;
}

std::string symbol(std::string_view name) { return "@" + (is_bare_id(name) ? std::string(name) : quoted(name)); }
std::string attr_name(std::string_view name) { return is_bare_id(name) ? std::string(name) : quoted(name); }

std::string type_text(const ValueType& type) {
  return std::string(type.is_buffer ? "!kiln.buffer<" : "!kiln.tensor<") + shape_to_string(type.shape) + ", " +
         dtype_name(type.dtype) + ">";
}

std::string type_list(const std::vector<ValueType>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i)
    out += (i ? ", " : "") + type_text(types[i]);
  return out;
}

// One result prints bare; none or several print parenthesised, as MLIR's function types do.
std::string result_types_text(const std::vector<ValueType>& types) {
  return types.size() == 1 ? type_text(types[0]) : "(" + type_list(types) + ")";
}

std::string hex_bits(double v) {
  auto bits = std::bit_cast<uint64_t>(v);
  std::string out = "0x";
  for (int shift = 60; shift >= 0; shift -= 4)
    out += kHexDigits[(bits >> shift) & 15];
  return out;
}

// Shortest round-trip decimal; MLIR's float literal needs a '.', and has no spelling for NaN or Inf
// other than the hex bit pattern.
std::string float_text(double v) {
  if (!std::isfinite(v)) return hex_bits(v);
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string s(buffer, result.ptr);
  if (s.find('.') == std::string::npos) s.insert(std::min(s.find('e'), s.size()), ".0");
  return s;
}

template <class T, class Format>
std::string array_text(const char* element, const std::vector<T>& values, Format format) {
  std::string out = std::string("array<") + element;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : ": ") + format(values[i]);
  return out + ">";
}

std::string shape_attr_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + (shape[i].is_symbolic() ? quoted(shape[i].name()) : std::to_string(shape[i].size()));
  return out + "]";
}

// Raw little-endian element bytes; bool packs one bit per element, least significant bit first, which is
// how MLIR reads i1 hex data.
std::string dense_bytes(const Tensor& t) {
  auto data = static_cast<const unsigned char*>(t.raw_data());
  if (t.dtype() != DType::boolean) return std::string(reinterpret_cast<const char*>(data), t.nbytes());
  std::string packed((t.numel() + 7) / 8, '\0');
  for (int64_t i = 0; i < t.numel(); ++i)
    if (data[i]) packed[i / 8] = static_cast<char>(packed[i / 8] | (1 << (i % 8)));
  return packed;
}

std::string tensor_attr_text(const Tensor& t) {
  if (!t.is_concrete())
    throw Error(ErrorKind::internal, "a tensor attribute without concrete data cannot be printed as dense<...>");
  std::string bytes = dense_bytes(t);
  std::string out = "dense<";
  if (!bytes.empty()) {
    out += "\"0x";
    for (char c : bytes) {
      out += kHexDigits[static_cast<unsigned char>(c) >> 4];
      out += kHexDigits[static_cast<unsigned char>(c) & 15];
    }
    out += '"';
  }
  out += "> : tensor<";
  for (int64_t d : t.dims())
    out += std::to_string(d) + "x";
  return out + dtype_name(t.dtype()) + ">";
}

struct AttrText {
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(int64_t v) const { return std::to_string(v) + " : i64"; }
  std::string operator()(double v) const { return float_text(v) + " : f64"; }
  std::string operator()(const std::string& v) const { return quoted(v); }
  std::string operator()(const Attr::Ints& v) const {
    return array_text("i64", v, [](int64_t x) { return std::to_string(x); });
  }
  std::string operator()(const Attr::Floats& v) const { return array_text("f64", v, float_text); }
  std::string operator()(const Shape& v) const { return shape_attr_text(v); }
  std::string operator()(DType v) const { return dtype_name(v); }
  std::string operator()(const Tensor& v) const { return tensor_attr_text(v); }
};

// ` {a = 1 : i64, b = true}`, or nothing when no attribute but `skipped` is present.
std::string attr_dict_text(const Attrs& attrs, std::string_view skipped) {
  std::string out;
  for (const auto& [name, value] : attrs.items()) {
    if (name == skipped) continue;
    out += (out.empty() ? " {" : ", ") + attr_name(name) + " = " + std::visit(AttrText{}, value.value);
  }
  return out.empty() ? out : out + "}";
}

std::string loc_text(const SourceLoc& loc) {
  if (!loc.known()) return "";
  return " loc(" + quoted(loc.file) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ")";
}

class FunctionPrinter {
public:
  FunctionPrinter(const Function& fn, std::vector<std::string> names) : fn_(fn), names_(std::move(names)) {}
  std::string print() const;
  std::string op_text(const Op& op) const;

private:
  std::string operand_list(const std::vector<ValueId>& ids) const;
  std::vector<ValueType> types_of(const std::vector<ValueId>& ids) const;
  std::string return_text() const;

  const Function& fn_;
  std::vector<std::string> names_;
};

std::string FunctionPrinter::operand_list(const std::vector<ValueId>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + names_.at(ids[i]);
  return out;
}

std::vector<ValueType> FunctionPrinter::types_of(const std::vector<ValueId>& ids) const {
  std::vector<ValueType> types;
  for (ValueId id : ids)
    types.push_back(fn_.type_of(id));
  return types;
}

std::string FunctionPrinter::op_text(const Op& op) const {
  std::string out;
  if (!op.results.empty()) {
    std::string first = names_.at(op.results[0]);
    out += op.results.size() == 1 ? first : first.substr(0, first.find('#')) + ":" + std::to_string(op.results.size());
    out += " = ";
  }
  bool is_call = op.kind == OpKind::call;
  if (is_call) {
    out += "func.call " + symbol(params_of<CallParams>(op).callee) + "(" + operand_list(op.operands) + ")";
  } else {
    out += "\"kiln." + std::string(op_info(op.kind).name) + "\"(" + operand_list(op.operands) + ")";
  }
  out += attr_dict_text(op.attrs, is_call ? "callee" : "");
  out += " : (" + type_list(types_of(op.operands)) + ") -> " + result_types_text(types_of(op.results));
  return out + loc_text(op.loc);
}

std::string FunctionPrinter::return_text() const {
  if (fn_.outputs.empty()) return "    return\n";
  return "    return " + operand_list(fn_.outputs) + " : " + type_list(types_of(fn_.outputs)) + "\n";
}

std::string FunctionPrinter::print() const {
  std::string out = std::string("  func.func ") + (fn_.is_private ? "private " : "") + symbol(fn_.name) + "(";
  for (size_t i = 0; i < fn_.args.size(); ++i)
    out += (i ? ", " : "") + names_.at(fn_.args[i]) + ": " + type_text(fn_.type_of(fn_.args[i]));
  out += ") -> " + result_types_text(types_of(fn_.outputs)) + " {\n";
  for (const Op& op : fn_.ops)
    out += "    " + op_text(op) + "\n";
  return out + return_text() + "  }\n";
}

} // namespace

std::vector<std::string> printed_value_names(const Function& fn) {
  std::vector<std::string> names(fn.values.size());
  for (size_t i = 0; i < fn.args.size(); ++i)
    names.at(fn.args[i]) = fn.arg_names.at(i).empty() ? "%arg" + std::to_string(i) : "%" + fn.arg_names[i];
  int next_number = 0;
  for (const Op& op : fn.ops) {
    if (op.results.empty()) continue;
    std::string base = "%" + std::to_string(next_number++);
    for (size_t i = 0; i < op.results.size(); ++i)
      names.at(op.results[i]) = op.results.size() == 1 ? base : base + "#" + std::to_string(i);
  }
  return names;
}

std::vector<std::string> printed_op_lines(const Function& fn, const std::vector<std::string>& names) {
  const FunctionPrinter printer(fn, names);
  std::vector<std::string> lines;
  for (const Op& op : fn.ops)
    lines.push_back(printer.op_text(op));
  return lines;
}

std::string print_module(const Module& m) {
  std::string out = "module " + symbol(m.name) + " {\n";
  for (const Function& fn : m.functions)
    out += FunctionPrinter(fn, printed_value_names(fn)).print();
  return out + "}\n";
}

} // namespace kiln::ir
