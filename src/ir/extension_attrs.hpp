#pragma once
#include "ir/attr.hpp"
#include <kiln/extension.h>
#include <vector>

namespace kiln::ir {

// An op's attributes as the C ABI passes them (kiln_ext_attrs), built once per op and reused by
// every call: strings and arrays point into this object's own copy of the attributes. The op name
// attribute ("op") is left out. Not copyable or movable, since the C view points into it.
class ExtensionAttrs {
public:
  // Throws InferError for an attribute the ABI cannot carry (a tensor, a symbolic shape).
  explicit ExtensionAttrs(const Attrs& attrs);
  ExtensionAttrs(const ExtensionAttrs&) = delete;
  ExtensionAttrs& operator=(const ExtensionAttrs&) = delete;

  const kiln_ext_attrs* view() const { return &view_; }

private:
  Attrs attrs_;
  std::vector<std::vector<int64_t>> shapes_; // Shape attributes as sizes
  std::vector<kiln_ext_attr> items_;
  kiln_ext_attrs view_{};
};

} // namespace kiln::ir
