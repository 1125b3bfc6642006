// torch.Tensor's common methods on kiln.Tensor, with torch's Python signatures (dim, keepdim,
// varargs shapes, (values, indices) named tuples), each forwarding to kiln::Tensor's C++ method.
#include "bindings.hpp"

namespace kiln::python {
namespace {

#define LOCATED(body)                                                                                                  \
  [&] {                                                                                                                \
    PythonCallerLocation where;                                                                                        \
    return body;                                                                                                       \
  }()

// torch's dim argument of reductions: None (every dim), an int, or a tuple or list of ints.
std::vector<int64_t> dims_from_py(const py::object& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return dim.cast<std::vector<int64_t>>();
}

// torch's varargs shapes: x.view(2, 3), x.view((2, 3)) and x.view([2, 3]) alike.
py::object varargs_or_sequence(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]) && !py::isinstance<py::str>(args[0]) &&
      !py::isinstance<Dim>(args[0]))
    return args[0];
  return py::object(args);
}

std::vector<int64_t> ints_from_varargs(const py::args& args) {
  return varargs_or_sequence(args).cast<std::vector<int64_t>>();
}

// torch.return_types' (values, indices): a named tuple, so `v, i = x.max(1)` and `.values` both work.
// Made once, at import (kept for the process: a static py::object would outlive the interpreter).
py::handle values_and_indices_type() {
  static py::handle type =
      py::module_::import("collections")
          .attr("namedtuple")("ValuesAndIndices", py::make_tuple("values", "indices"), py::arg("module") = "kiln")
          .release();
  return type;
}

py::object values_and_indices(const ValuesAndIndices& r) { return values_and_indices_type()(r.values, r.indices); }

std::optional<Scalar> bound_from_py(const py::object& bound) {
  if (bound.is_none()) return std::nullopt;
  return scalar_from_py(bound);
}

// torch's clamp(min=None, max=None): numbers, or tensors (x's dtype, broadcasting).
Tensor clamp(const Tensor& x, const py::object& lo, const py::object& hi) {
  if ((lo.is_none() || is_number(lo)) && (hi.is_none() || is_number(hi)))
    return x.clamp(bound_from_py(lo), bound_from_py(hi));
  if (lo.is_none()) return x.minimum(tensor_from_py(hi, "clamp max"));
  if (hi.is_none()) return x.maximum(tensor_from_py(lo, "clamp min"));
  return x.clamp(tensor_from_py(lo, "clamp min"), tensor_from_py(hi, "clamp max"));
}

// What torch's to(...) asks for: a dtype (a kiln.DType, a torch dtype by name), a device (a
// kiln.Device, "cpu", "accelerator" or "accelerator:N"), or another tensor's dtype and device.
struct ToTarget {
  std::optional<DType> dtype;
  std::optional<Device> device;
};

void read_to_argument(const py::handle& arg, ToTarget& target) {
  if (py::isinstance<DType>(arg)) {
    target.dtype = arg.cast<DType>();
    return;
  }
  if (py::isinstance<Tensor>(arg)) {
    target.dtype = arg.cast<Tensor>().dtype();
    target.device = arg.cast<Tensor>().device();
    return;
  }
  if (py::isinstance<Device>(arg)) {
    target.device = arg.cast<Device>();
    return;
  }
  const std::string text = py::str(arg);
  if (text == "cpu" || text == "cpu:0") {
    target.device = CPU();
    return;
  }
  if (text == "accelerator" || text.starts_with("accelerator:")) {
    target.device = Accelerator(text == "accelerator" ? 0 : std::stoi(text.substr(12)));
    return;
  }
  static const std::pair<const char*, DType> torch_names[] = {
      {"torch.float32", DType::f32},   {"torch.float64", DType::f64}, {"torch.float16", DType::f16},
      {"torch.bfloat16", DType::bf16}, {"torch.int8", DType::i8},     {"torch.int32", DType::i32},
      {"torch.int64", DType::i64},     {"torch.uint8", DType::u8},    {"torch.bool", DType::boolean},
  };
  for (const auto& [name, dtype] : torch_names)
    if (text == name) {
      target.dtype = dtype;
      return;
    }
  throw Error(ErrorKind::spec, "Tensor.to: expected a kiln.DType, a device or a tensor, got " + text);
}

// A cast runs on the host: before an upload, after a download.
Tensor to(const Tensor& x, const py::args& args, const py::kwargs& kwargs) {
  ToTarget target;
  for (const py::handle& arg : args)
    read_to_argument(arg, target);
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    if (name == "dtype" || name == "device" || name == "other") {
      read_to_argument(value, target);
    } else if (name != "non_blocking" && name != "copy") {
      throw Error(ErrorKind::spec, "Tensor.to: unexpected keyword '" + name + "'");
    }
  }
  Tensor out = x;
  if (target.device && target.device->kind == DeviceKind::cpu) out = out.to(*target.device);
  if (target.dtype && *target.dtype != out.dtype()) out = LOCATED(out.to(*target.dtype));
  if (target.device) out = out.to(*target.device);
  return out;
}

// x + 2 and x.add(2) alike: numbers promote as torch's Python scalars.
template <class TensorOp, class ScalarOp>
Tensor arithmetic(const Tensor& x, const py::object& other, TensorOp tensor_op, ScalarOp scalar_op) {
  PythonCallerLocation where;
  if (is_number(other)) return scalar_op(x, scalar_from_py(other));
  return tensor_op(x, tensor_from_py(other, "operand"));
}

void bind_elementwise(py::class_<Tensor>& t) {
#define KILN_BIND_UNARY(name) t.def(#name, [](const Tensor& x) { return LOCATED(x.name()); });
  KILN_BIND_UNARY(relu)
  KILN_BIND_UNARY(sigmoid)
  KILN_BIND_UNARY(tanh)
  KILN_BIND_UNARY(exp)
  KILN_BIND_UNARY(log)
  KILN_BIND_UNARY(sqrt)
  KILN_BIND_UNARY(rsqrt)
  KILN_BIND_UNARY(abs)
  KILN_BIND_UNARY(neg)
  KILN_BIND_UNARY(sin)
  KILN_BIND_UNARY(cos)
  KILN_BIND_UNARY(erf)
  KILN_BIND_UNARY(floor)
  KILN_BIND_UNARY(ceil)
  KILN_BIND_UNARY(round)
  KILN_BIND_UNARY(sign)
  KILN_BIND_UNARY(log1p)
  KILN_BIND_UNARY(expm1)
#undef KILN_BIND_UNARY
  t.def("__abs__", [](const Tensor& x) { return LOCATED(x.abs()); });

  t.def("add", [](const Tensor& x, const py::object& o) {
    return arithmetic(
        x, o, [](const Tensor& a, const Tensor& b) { return a + b; }, [](const Tensor& a, Scalar b) { return a + b; });
  });
  t.def("sub", [](const Tensor& x, const py::object& o) {
    return arithmetic(
        x, o, [](const Tensor& a, const Tensor& b) { return a - b; }, [](const Tensor& a, Scalar b) { return a - b; });
  });
  t.def("mul", [](const Tensor& x, const py::object& o) {
    return arithmetic(
        x, o, [](const Tensor& a, const Tensor& b) { return a * b; }, [](const Tensor& a, Scalar b) { return a * b; });
  });
  t.def("div", [](const Tensor& x, const py::object& o) {
    return arithmetic(
        x, o, [](const Tensor& a, const Tensor& b) { return a / b; }, [](const Tensor& a, Scalar b) { return a / b; });
  });
  t.def("pow", [](const Tensor& x, const py::object& e) {
    return arithmetic(
        x, e, [](const Tensor& a, const Tensor& b) { return a.pow(b); },
        [](const Tensor& a, Scalar b) { return a.pow(b); });
  });
  t.def("__rpow__",
        [](const Tensor& x, const py::object& base) { return LOCATED(tensor_from_py(base, "base").pow(x)); });
  t.def("matmul", [](const Tensor& x, const py::object& o) { return LOCATED(x.matmul(tensor_from_py(o, "other"))); });
#define KILN_BIND_BINARY(name)                                                                                         \
  t.def(#name, [](const Tensor& x, const py::object& o) { return LOCATED(x.name(tensor_from_py(o, "other"))); });
  KILN_BIND_BINARY(maximum)
  KILN_BIND_BINARY(minimum)
  KILN_BIND_BINARY(eq)
  KILN_BIND_BINARY(ne)
  KILN_BIND_BINARY(lt)
  KILN_BIND_BINARY(le)
  KILN_BIND_BINARY(gt)
  KILN_BIND_BINARY(ge)
#undef KILN_BIND_BINARY

  t.def(
      "clamp", [](const Tensor& x, const py::object& lo, const py::object& hi) { return LOCATED(clamp(x, lo, hi)); },
      py::arg("min") = py::none(), py::arg("max") = py::none());
  t.def(
      "clip", [](const Tensor& x, const py::object& lo, const py::object& hi) { return LOCATED(clamp(x, lo, hi)); },
      py::arg("min") = py::none(), py::arg("max") = py::none());
  t.def(
      "clamp_min", [](const Tensor& x, const py::object& lo) { return LOCATED(clamp(x, lo, py::none())); },
      py::arg("min"));
  t.def(
      "clamp_max", [](const Tensor& x, const py::object& hi) { return LOCATED(clamp(x, py::none(), hi)); },
      py::arg("max"));
  t.def(
      "where",
      [](const Tensor& x, const py::object& cond, const py::object& other) {
        return LOCATED(x.where(tensor_from_py(cond, "condition"), tensor_from_py(other, "other")));
      },
      py::arg("condition"), py::arg("other"));
  t.def(
      "masked_fill",
      [](const Tensor& x, const py::object& mask, double value) {
        return LOCATED(x.masked_fill(tensor_from_py(mask, "mask"), value));
      },
      py::arg("mask"), py::arg("value"));
}

void bind_dtypes(py::class_<Tensor>& t) {
  t.def("to", &to);
  struct Conversion {
    const char* name;
    DType dtype;
  };
  static const Conversion conversions[] = {
      {"float", DType::f32},     {"double", DType::f64}, {"half", DType::f16},
      {"bfloat16", DType::bf16}, {"int", DType::i32},    {"long", DType::i64},
      {"char", DType::i8},       {"byte", DType::u8},    {"bool", DType::boolean},
  };
  for (const Conversion& c : conversions)
    t.def(c.name, [&c](const Tensor& x) { return x.dtype() == c.dtype ? x : LOCATED(x.to(c.dtype)); });
}

void bind_reductions(py::class_<Tensor>& t) {
  // dtype casts first, as torch's sum(dtype=...) and mean(dtype=...) do.
  auto cast_first = [](const Tensor& x, const std::optional<DType>& dtype) {
    return dtype && *dtype != x.dtype() ? x.to(*dtype) : x;
  };
  t.def(
      "sum",
      [cast_first](const Tensor& x, const py::object& dim, bool keepdim, std::optional<DType> dtype) {
        return LOCATED(cast_first(x, dtype).sum(dims_from_py(dim), keepdim));
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def(
      "mean",
      [cast_first](const Tensor& x, const py::object& dim, bool keepdim, std::optional<DType> dtype) {
        return LOCATED(cast_first(x, dtype).mean(dims_from_py(dim), keepdim));
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def(
      "prod",
      [](const Tensor& x, const std::optional<int64_t>& dim, bool keepdim) {
        return LOCATED(dim ? x.prod(*dim, keepdim) : x.prod());
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  // max() the global maximum, max(dim) (values, indices), max(other) the elementwise maximum.
  t.def(
      "max",
      [](const Tensor& x, const py::object& dim, bool keepdim) -> py::object {
        PythonCallerLocation where;
        if (dim.is_none()) return py::cast(x.max());
        if (!py::isinstance<py::int_>(dim)) return py::cast(x.maximum(tensor_from_py(dim, "other")));
        return values_and_indices(x.max(dim.cast<int64_t>(), keepdim));
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  t.def(
      "min",
      [](const Tensor& x, const py::object& dim, bool keepdim) -> py::object {
        PythonCallerLocation where;
        if (dim.is_none()) return py::cast(x.min());
        if (!py::isinstance<py::int_>(dim)) return py::cast(x.minimum(tensor_from_py(dim, "other")));
        return values_and_indices(x.min(dim.cast<int64_t>(), keepdim));
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  t.def(
      "amax",
      [](const Tensor& x, const py::object& dim, bool keepdim) { return LOCATED(x.amax(dims_from_py(dim), keepdim)); },
      py::arg("dim") = py::tuple(), py::arg("keepdim") = false);
  t.def(
      "amin",
      [](const Tensor& x, const py::object& dim, bool keepdim) { return LOCATED(x.amin(dims_from_py(dim), keepdim)); },
      py::arg("dim") = py::tuple(), py::arg("keepdim") = false);
  t.def(
      "argmax",
      [](const Tensor& x, const std::optional<int64_t>& dim, bool keepdim) {
        return LOCATED(dim ? x.argmax(*dim, keepdim) : x.argmax());
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  t.def(
      "argmin",
      [](const Tensor& x, const std::optional<int64_t>& dim, bool keepdim) {
        return LOCATED(dim ? x.argmin(*dim, keepdim) : x.argmin());
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  t.def(
      "var",
      [](const Tensor& x, const py::object& dim, int64_t correction, bool keepdim) {
        return LOCATED(x.var(dims_from_py(dim), correction, keepdim));
      },
      py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1, py::arg("keepdim") = false);
  t.def(
      "std",
      [](const Tensor& x, const py::object& dim, int64_t correction, bool keepdim) {
        return LOCATED(x.std(dims_from_py(dim), correction, keepdim));
      },
      py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1, py::arg("keepdim") = false);
  t.def(
      "cumsum", [](const Tensor& x, int64_t dim) { return LOCATED(x.cumsum(dim)); }, py::arg("dim"));
  t.def(
      "topk",
      [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
        return values_and_indices(LOCATED(x.topk(k, dim, largest, sorted)));
      },
      py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true);
  t.def(
      "softmax", [](const Tensor& x, int64_t dim) { return LOCATED(x.softmax(dim)); }, py::arg("dim"));
  t.def(
      "log_softmax", [](const Tensor& x, int64_t dim) { return LOCATED(x.log_softmax(dim)); }, py::arg("dim"));
  t.def(
      "tril", [](const Tensor& x, int64_t diagonal) { return LOCATED(x.tril(diagonal)); }, py::arg("diagonal") = 0);
  t.def(
      "triu", [](const Tensor& x, int64_t diagonal) { return LOCATED(x.triu(diagonal)); }, py::arg("diagonal") = 0);
}

void bind_shapes(py::class_<Tensor>& t) {
  t.def("reshape", [](const Tensor& x, const py::args& shape) {
    return LOCATED(x.reshape(shape_from_py(varargs_or_sequence(shape))));
  });
  t.def("view", [](const Tensor& x, const py::args& shape) {
    return LOCATED(x.view(shape_from_py(varargs_or_sequence(shape))));
  });
  t.def("permute", [](const Tensor& x, const py::args& dims) { return LOCATED(x.permute(ints_from_varargs(dims))); });
  t.def("expand", [](const Tensor& x, const py::args& sizes) { return LOCATED(x.expand(ints_from_varargs(sizes))); });
  t.def(
      "transpose", [](const Tensor& x, int64_t a, int64_t b) { return LOCATED(x.transpose(a, b)); }, py::arg("dim0"),
      py::arg("dim1"));
  t.def("t", [](const Tensor& x) { return LOCATED(x.t()); });
  t.def_property_readonly("mT", [](const Tensor& x) { return LOCATED(x.mT()); });
  t.def(
      "flatten", [](const Tensor& x, int64_t start, int64_t end) { return LOCATED(x.flatten(start, end)); },
      py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  t.def(
      "unsqueeze", [](const Tensor& x, int64_t dim) { return LOCATED(x.unsqueeze(dim)); }, py::arg("dim"));
  t.def(
      "squeeze",
      [](const Tensor& x, const std::optional<int64_t>& dim) { return LOCATED(dim ? x.squeeze(*dim) : x.squeeze()); },
      py::arg("dim") = py::none());
  t.def(
      "split",
      [](const Tensor& x, const py::object& size_or_sizes, int64_t dim) {
        PythonCallerLocation where;
        if (py::isinstance<py::int_>(size_or_sizes))
          return py::tuple(py::cast(x.split(size_or_sizes.cast<int64_t>(), dim)));
        return py::tuple(py::cast(x.split(size_or_sizes.cast<std::vector<int64_t>>(), dim)));
      },
      py::arg("split_size_or_sections"), py::arg("dim") = 0);
  t.def(
      "chunk",
      [](const Tensor& x, int64_t chunks, int64_t dim) { return py::tuple(py::cast(LOCATED(x.chunk(chunks, dim)))); },
      py::arg("chunks"), py::arg("dim") = 0);
  t.def(
      "contiguous", [](const Tensor& x) { return x; }, "The tensor itself: kiln tensors are always contiguous.");
}

void bind_sizes(py::class_<Tensor>& t) {
  // torch's size() and size(dim): the shape, or one dim (an int, or a kiln.Dim while symbolic).
  t.def(
      "size",
      [](const Tensor& x, const std::optional<int64_t>& dim) -> py::object {
        if (!dim) return shape_to_py(x.shape());
        const Dim d = x.dim_of(*dim);
        return d.is_static() ? py::object(py::int_(d.size())) : py::cast(d);
      },
      py::arg("dim") = py::none());
  t.def("dim", &Tensor::rank, "The number of dims (torch's dim()).");
  t.def_property_readonly("ndim", &Tensor::rank);
  t.def("numel", &Tensor::numel);
  t.def("tolist", [](const py::object& self) { return self.attr("numpy")().attr("tolist")(); });
}

} // namespace

void bind_tensor_methods(py::module_& m, py::class_<Tensor>& tensor) {
  m.attr("ValuesAndIndices") = values_and_indices_type();
  bind_elementwise(tensor);
  bind_dtypes(tensor);
  bind_reductions(tensor);
  bind_shapes(tensor);
  bind_sizes(tensor);
}

} // namespace kiln::python
