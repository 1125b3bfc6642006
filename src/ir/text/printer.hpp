#pragma once
#include "ir/graph.hpp"
#include <string>

namespace kiln::ir {

// Writes `m` in MLIR generic op form with the opaque types !kiln.tensor<[dims], dtype> and
// !kiln.buffer<[dims], dtype>, so that `mlir-opt --allow-unregistered-dialect` accepts it and
// parse_module reads it back exactly. Throws kiln::Error(internal) for a constant attribute that holds
// no concrete data.
std::string print_module(const Module& m);

} // namespace kiln::ir
