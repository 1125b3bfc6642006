#pragma once
#include "ir/graph.hpp"
#include <string>
#include <vector>

namespace kiln::ir {

// Writes `m` in MLIR generic op form with the opaque types !kiln.tensor<[dims], dtype> and
// !kiln.buffer<[dims], dtype>, so that `mlir-opt --allow-unregistered-dialect` accepts it and
// parse_module reads it back exactly. Throws kiln::Error(internal) for a constant attribute that holds
// no concrete data.
std::string print_module(const Module& m);

// The names print_module gives fn's values, by value id: %argI for arguments; an op's results share
// one number, %k for one result, %k#i for several (ops without results take none).
std::vector<std::string> printed_value_names(const Function& fn);

// Each op's line as print_module writes it, without indentation, with fn's values named `names`.
std::vector<std::string> printed_op_lines(const Function& fn, const std::vector<std::string>& names);

} // namespace kiln::ir
