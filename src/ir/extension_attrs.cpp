#include "ir/extension_attrs.hpp"
#include "ir/ops.hpp"

namespace kiln::ir {

namespace {

kiln_ext_attr make_attr(const std::string& name, kiln_ext_attr_kind kind) {
  kiln_ext_attr attr{};
  attr.name = name.c_str();
  attr.kind = kind;
  return attr;
}

} // namespace

ExtensionAttrs::ExtensionAttrs(const Attrs& attrs) : attrs_(attrs) {
  shapes_.reserve(attrs_.items().size()); // shape data pointers must not move once taken
  for (const auto& [name, attr] : attrs_.items()) {
    if (name == "op") continue;
    const auto& value = attr.value;
    kiln_ext_attr item{};
    if (const bool* b = std::get_if<bool>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_BOOL);
      item.int_value = *b;
    } else if (const int64_t* i = std::get_if<int64_t>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_INT);
      item.int_value = *i;
    } else if (const double* f = std::get_if<double>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_FLOAT);
      item.float_value = *f;
    } else if (const std::string* s = std::get_if<std::string>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_STRING);
      item.string_value = s->c_str();
      item.count = int64_t(s->size());
    } else if (const DType* d = std::get_if<DType>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_STRING);
      item.string_value = dtype_name(*d);
      item.count = int64_t(std::string_view(item.string_value).size());
    } else if (const Attr::Ints* ints = std::get_if<Attr::Ints>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_INTS);
      item.ints = ints->data();
      item.count = int64_t(ints->size());
    } else if (const Attr::Floats* floats = std::get_if<Attr::Floats>(&value)) {
      item = make_attr(name, KILN_EXT_ATTR_FLOATS);
      item.floats = floats->data();
      item.count = int64_t(floats->size());
    } else if (const Shape* shape = std::get_if<Shape>(&value)) {
      if (!shape_is_static(*shape))
        throw InferError("attribute '" + name + "' is the symbolic shape " + shape_to_string(*shape) +
                         "; extensions take static sizes only");
      shapes_.push_back(static_dims(*shape));
      item = make_attr(name, KILN_EXT_ATTR_INTS);
      item.ints = shapes_.back().data();
      item.count = int64_t(shapes_.back().size());
    } else {
      throw InferError("attribute '" + name + "' is a tensor; pass tensors to an extension op as inputs");
    }
    items_.push_back(item);
  }
  view_.items = items_.data();
  view_.count = int32_t(items_.size());
}

} // namespace kiln::ir
