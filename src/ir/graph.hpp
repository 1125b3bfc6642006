#pragma once
#include "ir/attr.hpp"
#include "ir/op_kind.hpp"
#include "ir/op_params.hpp"
#include <cstdint>
#include <kiln/layout.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

using ValueId = uint32_t;
using OpId = uint32_t;
inline constexpr int32_t kNoOp = -1;

// The type of an SSA value: element type and dims (static or symbolic). Buffers are marked.
struct ValueType {
  DType dtype = DType::f32;
  Shape shape;
  bool is_buffer = false;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  friend bool operator==(const ValueType&, const ValueType&) = default;
};
std::string type_to_string(const ValueType& type); // "f32 [batch, 2]"

struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  bool known() const { return line != 0; }
  std::string to_string() const; // "file:line:col" or "<unknown>"
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

struct ValueInfo {
  ValueType type;
  int32_t def_op = kNoOp; // kNoOp: a function argument
  uint32_t def_index = 0; // result index in def_op, or argument index
  // What debugging tools and errors call it (ir/text/value_labels.hpp): the name `kiln print` gave
  // it in the staged module ("%4", "@block %4"), carried through passes and inlining; after it, the
  // labels of values the passes merged into it. Empty: its printed name in its own function.
  std::vector<std::string> labels;
};

// An operation: kind, operands and results as value ids, attributes and the user's source line.
// `params` are the attributes decoded (op_params.hpp); Function::add_op keeps the two in step.
struct Op {
  OpKind kind;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  Attrs attrs;
  SourceLoc loc;
  OpParams params;
};

[[noreturn]] void throw_params_mismatch(const Op& op);
// The op's typed parameters; kiln::Error(internal) when the op holds another kind (or attributes
// that did not decode, which verify_module reports first).
template <class P> const P& params_of(const Op& op) {
  if (const P* params = std::get_if<P>(&op.params)) return *params;
  throw_params_mismatch(op);
}

// One function body: flat arrays of values and ops in program (topological) order.
struct Function {
  std::string name;
  bool is_private = false;
  std::vector<ValueInfo> values;
  std::vector<Op> ops;
  std::vector<ValueId> args;
  // One per argument: the name a graph file gave it (`%x` -> "x"), "" where it is positional
  // (`%arg0`). The CLI's --input accepts these names; the printer writes them back.
  std::vector<std::string> arg_names;
  std::vector<ValueId> outputs;

  ValueId add_arg(ValueType type, std::string name = "");
  // Appends an op and creates one result value per type; returns the op id. Attributes that do
  // not decode are kept as InvalidParams for verify_module to report.
  OpId add_op(OpKind kind, std::vector<ValueId> operands, const std::vector<ValueType>& result_types, Attrs attrs = {},
              SourceLoc loc = {});
  const ValueType& type_of(ValueId v) const { return values.at(v).type; }
  std::vector<ValueType> arg_types() const;
  std::vector<ValueType> output_types() const;
};

// A module: the entry function first, then private subgraph bodies called with func.call.
struct Module {
  std::string name = "main";
  std::vector<Function> functions;

  Function& entry() { return functions.at(0); }
  const Function& entry() const { return functions.at(0); }
  const Function* find(const std::string& name) const;
  Function* find(const std::string& name);
};

} // namespace kiln::ir
