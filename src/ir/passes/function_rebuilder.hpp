#pragma once
#include "ir/graph.hpp"
#include <vector>

namespace kiln::ir {

// Builds a fresh Function from a source function, op by op, remapping value ids. Passes never
// mutate their input: they copy the ops they keep, emit the ops they create and map the results of
// the ops they drop onto values already in the new function.
class FunctionRebuilder {
public:
  // Copies name, visibility and arguments; source argument i maps to target argument i.
  explicit FunctionRebuilder(const Function& source);

  const Function& source() const { return source_; }
  const Function& target() const { return target_; }

  // The target value standing for a source value (the source value must already be mapped).
  ValueId lookup(ValueId source_value) const;
  // The source op's operands, mapped into the target.
  std::vector<ValueId> mapped_operands(const Op& source_op) const;
  // Maps a source value onto an existing target value.
  void map(ValueId source_value, ValueId target_value);

  // Copies a source op with its operands remapped; its results map to the copy's results.
  OpId copy(const Op& source_op);
  // Emits a new op on target values (operands already mapped); returns the new op id.
  OpId emit(OpKind kind, std::vector<ValueId> operands, const std::vector<ValueType>& result_types, Attrs attrs,
            SourceLoc loc);
  // The op defining a target value, or null for an argument; valid until the next emit or copy.
  const Op* defining_op(ValueId target_value) const;

  // Maps the source outputs and hands the new function over.
  Function finish();

private:
  const Function& source_;
  Function target_;
  std::vector<ValueId> mapping_; // source value id -> target value id
  std::vector<bool> mapped_;
};

} // namespace kiln::ir
