#pragma once
#include "ir/graph.hpp"
#include <string>
#include <string_view>

namespace kiln::ir {

// Reads the text form that print_module writes (whitespace and `//` comments are free). Types are taken
// as written; every op is checked against the op table (name, operand count, and where the op has an
// inference function, the written result types must equal the inferred ones); func.call callees must
// be functions of the module with matching types. Errors throw kiln::Error(parse) with the message
// "<source_name>:<line>:<col>: <what was found>, expected <what was expected>".
Module parse_module(std::string_view text, const std::string& source_name = "<input>");

} // namespace kiln::ir
