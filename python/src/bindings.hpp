#pragma once
// kiln's Python bindings (the _kiln extension module): one bind_* per concept, sharing the
// conversions below. Nothing here reimplements kiln; each binding forwards to the C++ API.
#include <kiln/kiln.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <string>

namespace kiln::python {

namespace py = pybind11;

// A shape from a Python sequence of ints, strings ("batch", "n*2") and kiln.Dim.
Shape shape_from_py(const py::handle& dims);
py::list shape_to_py(const Shape& shape);

// A kiln Tensor viewing anything with __dlpack__ (numpy arrays, torch tensors) without a copy, or
// the Tensor itself; Python numbers become 0-d tensors. kiln::Error(spec) naming `what` otherwise.
Tensor tensor_from_py(const py::handle& value, const std::string& what);

// A Python bool, int or float as a kiln::Scalar of that kind (torch's scalar promotion needs the kind).
Scalar scalar_from_py(const py::handle& value);
bool is_number(const py::handle& value);

// While alive, ops record the Python line that called into kiln (outside the kiln package).
class PythonCallerLocation {
public:
  PythonCallerLocation();

private:
  std::optional<detail::ScopedSourceLocation> scope_;
};
// The kiln package's directory: frames inside it are skipped when finding the caller's line.
void set_package_dir(std::string dir);

void bind_errors(py::module_& m);
void bind_types(py::module_& m);
void bind_tensor(py::module_& m);
// torch.Tensor's methods (relu, sum, max, flatten, to, ...) on kiln.Tensor.
void bind_tensor_methods(py::module_& m, py::class_<Tensor>& tensor);
void bind_functional(py::module_& m);
void bind_compile(py::module_& m);
void bind_io(py::module_& m);
void bind_debug(py::module_& m);

} // namespace kiln::python
