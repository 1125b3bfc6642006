#pragma once
#include "ir/graph.hpp"
#include <string>
#include <vector>

namespace kiln::ir {

// The one name every tool gives a value (errors, KILN_DEBUG_NANS, KILN_LOG, debug::Stepper,
// compare_tiers, profile, `kiln debug`): the name `kiln print` gives it in the module the user
// staged ("%4", "%3#1", "%arg0", "%x"), after the function it lives in when that is not the entry
// ("@block %4"). A tier runs that module optimised and inlined, with value ids of its own, so
// label_values stamps the printed names on the staged module's values before the passes run, and
// the passes and specialize carry them (ValueInfo::labels).

// Stamps every unlabelled value of `module` with the label it prints with.
void label_values(Module& module);

// Per value of fn, one of `module`'s functions: its labels, or for an unlabelled value, the label
// it prints with there.
std::vector<std::vector<std::string>> value_labels(const Module& module, const Function& fn);
// Per value of a function standing alone (the static graph a tier runs, the entry of its module):
// its labels, or for an unlabelled value, the name it prints with in fn.
std::vector<std::vector<std::string>> value_labels(const Function& fn);

// The name tools give each value of a function standing alone: its first label.
std::vector<std::string> value_names(const Function& fn);
std::string value_name(const Function& fn, ValueId v);
// How tools refer to op `id` of a function standing alone: by what it makes ("%5"; "%3" for an op
// making %3#0 and %3#1), or "op 7" for one that makes nothing.
std::string op_name(const Function& fn, OpId id);

} // namespace kiln::ir
