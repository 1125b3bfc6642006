#pragma once
#include "runtime/weight_forms.hpp"
#include <optional>
#include <string>

namespace kiln::jitc::dnnl_ops {

// A constant operand (a weight) given at creation instead of at execute, laid out exactly like the
// operand it replaces. A primitive reads it in place when that layout is already the one it
// prefers (the buffer must then outlive the primitive), else from a copy reordered once: a form of
// the weight in `forms` under `key`, shared by every primitive of the session that wants the same
// layout, or the primitive's own when either is missing (an embedded constant).
struct ConstantWeight {
  const float* data = nullptr;
  std::string name{}; // for messages: the weight's name, or the constant's value ("%3")
  runtime::WeightForms* forms = nullptr;
  std::optional<runtime::WeightFormKey> key{};
};

} // namespace kiln::jitc::dnnl_ops
