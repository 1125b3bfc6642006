// kiln.Error, DType, Device, Dim, TensorLayout, BufferLayout, and the caller's Python line.
#include "bindings.hpp"
#include <filesystem>
#include <frameobject.h>

namespace kiln::python {
namespace {

std::string package_dir;

// The innermost frame outside the kiln package: the user's line.
PyFrameObject* user_frame() {
  PyFrameObject* frame = PyEval_GetFrame(); // borrowed
  Py_XINCREF(frame);
  while (frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const std::string file = py::reinterpret_borrow<py::str>(code->co_filename);
    Py_DECREF(code);
    if (package_dir.empty() || file.rfind(package_dir, 0) != 0) return frame;
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return nullptr;
}

} // namespace

void set_package_dir(std::string dir) { package_dir = std::move(dir); }

PythonCallerLocation::PythonCallerLocation() {
  PyFrameObject* frame = user_frame();
  if (!frame) return;
  PyCodeObject* code = PyFrame_GetCode(frame);
  int line = PyFrame_GetLineNumber(frame), column = 0, end_line = 0, end_column = 0, start_line = 0;
  // 0-based columns from the bytecode's position table; source_location's are 1-based.
  if (!PyCode_Addr2Location(code, PyFrame_GetLasti(frame), &start_line, &column, &end_line, &end_column)) column = -1;
  const std::string file = py::reinterpret_borrow<py::str>(code->co_filename);
  Py_DECREF(code);
  Py_DECREF(frame);
  scope_.emplace(std::filesystem::path(file).filename().string(), uint32_t(std::max(line, 0)),
                 uint32_t(std::max(column + 1, 0)));
}

Shape shape_from_py(const py::handle& dims) {
  if (py::isinstance<py::str>(dims) || !py::isinstance<py::sequence>(dims))
    throw Error(ErrorKind::spec, "a shape is a list of ints, dim names or kiln.Dim, got " +
                                     std::string(py::str(py::type::of(dims).attr("__name__"))));
  Shape shape;
  for (const py::handle& d : dims) {
    if (py::isinstance<Dim>(d))
      shape.push_back(d.cast<Dim>());
    else if (py::isinstance<py::str>(d))
      shape.push_back(Dim(d.cast<std::string>()));
    else if (py::isinstance<py::int_>(d) && !py::isinstance<py::bool_>(d))
      shape.push_back(Dim(d.cast<int64_t>()));
    else
      throw Error(ErrorKind::spec, "dim " + std::to_string(shape.size()) +
                                       " of a shape must be an int, a name or "
                                       "kiln.Dim, got " +
                                       std::string(py::str(py::type::of(d).attr("__name__"))));
  }
  return shape;
}

py::list shape_to_py(const Shape& shape) {
  py::list out;
  for (const Dim& d : shape)
    out.append(d.is_static() ? py::object(py::int_(d.size())) : py::object(py::cast(d)));
  return out;
}

void bind_errors(py::module_& m) {
  static py::handle error_type = PyErr_NewExceptionWithDoc(
      "kiln.Error", "A kiln::Error: str() is its message, .kind its kind ('shape', 'dtype', 'spec', ...).",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = error_type;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object error = py::reinterpret_borrow<py::object>(error_type)(e.what());
      error.attr("kind") = error_kind_name(e.kind());
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
}

void bind_types(py::module_& m) {
  py::enum_<DType>(m, "DType", "Element types, named as MAX names them.")
      .value("float32", DType::f32)
      .value("float64", DType::f64)
      .value("float16", DType::f16)
      .value("bfloat16", DType::bf16)
      .value("int8", DType::i8)
      .value("int32", DType::i32)
      .value("int64", DType::i64)
      .value("uint8", DType::u8)
      .value("bool", DType::boolean);

  py::class_<Device>(m, "Device")
      .def_property_readonly("id", [](const Device& d) { return d.id; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__repr__", [](const Device& d) { return d.to_string(); });
  m.def("CPU", &CPU, py::arg("id") = 0, "The host CPU (cpu:0).");
  m.def("Accelerator", &Accelerator, py::arg("id") = 0,
        "The accelerator (accelerator:0, the Vulkan device kiln.devices() lists and KILN_DEVICE picks); "
        "kiln.Error saying what is missing where there is none.");

  py::class_<Dim>(m, "Dim", "A static size or a symbolic dim: a name or an expression such as batch*6.")
      .def(py::init<int64_t>())
      .def(py::init<std::string>())
      .def_property_readonly("is_static", &Dim::is_static)
      .def_property_readonly(
          "size",
          [](const Dim& d) -> py::object { return d.is_static() ? py::object(py::int_(d.size())) : py::none(); })
      .def(
          "__add__", [](const Dim& a, const Dim& b) { return a + b; }, py::is_operator())
      .def(
          "__radd__", [](const Dim& a, const Dim& b) { return b + a; }, py::is_operator())
      .def(
          "__sub__", [](const Dim& a, const Dim& b) { return a - b; }, py::is_operator())
      .def(
          "__rsub__", [](const Dim& a, const Dim& b) { return b - a; }, py::is_operator())
      .def(
          "__mul__", [](const Dim& a, const Dim& b) { return a * b; }, py::is_operator())
      .def(
          "__rmul__", [](const Dim& a, const Dim& b) { return b * a; }, py::is_operator())
      .def(
          "__floordiv__", [](const Dim& a, const Dim& b) { return a / b; }, py::is_operator())
      .def(
          "__eq__", [](const Dim& a, const Dim& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const Dim& d) { return py::hash(py::str(d.to_string())); })
      .def("__str__", &Dim::to_string)
      .def("__repr__", [](const Dim& d) { return "Dim(" + std::string(py::repr(py::str(d.to_string()))) + ")"; });
  py::implicitly_convertible<py::int_, Dim>();
  py::implicitly_convertible<py::str, Dim>();

  py::class_<TensorLayout>(m, "TensorLayout", "MAX's TensorType: a read-only argument's dtype, dims and device.")
      .def(py::init([](DType dtype, const py::object& shape, Device device) {
             return TensorLayout(dtype, shape_from_py(shape), device);
           }),
           py::arg("dtype"), py::arg("shape"), py::arg("device") = CPU())
      .def_readonly("dtype", &TensorLayout::dtype)
      .def_property_readonly("shape", [](const TensorLayout& l) { return shape_to_py(l.shape); })
      .def_readonly("device", &TensorLayout::device)
      .def_property_readonly("rank", &TensorLayout::rank)
      .def("__eq__",
           [](const TensorLayout& a, const TensorLayout& b) {
             return a.dtype == b.dtype && a.shape == b.shape && a.device == b.device;
           })
      .def("__str__", &TensorLayout::to_string)
      .def("__repr__", [](const TensorLayout& l) { return "TensorLayout(" + l.to_string() + ")"; });
  py::class_<BufferLayout, TensorLayout>(m, "BufferLayout", "A mutable buffer argument, written with F.buffer_store.")
      .def(py::init([](DType dtype, const py::object& shape, Device device) {
             return BufferLayout(dtype, shape_from_py(shape), device);
           }),
           py::arg("dtype"), py::arg("shape"), py::arg("device") = CPU())
      .def("__repr__", [](const BufferLayout& l) { return "BufferLayout(" + l.to_string() + ")"; });

  m.def("_set_package_dir", &set_package_dir);
}

} // namespace kiln::python
