// Tensor files: safetensors (zero-copy mapped) and .npy, as the C++ API reads and writes them.
#include "bindings.hpp"

namespace kiln::python {

void bind_io(py::module_& m) {
  m.def(
      "load_safetensors", [](const std::string& path) { return load_safetensors(path).tensors; }, py::arg("path"),
      "Every tensor of a .safetensors file by name, viewing a private mapping of it (no copy).");
  m.def(
      "save_safetensors",
      [](const std::string& path, const py::dict& tensors) {
        std::map<std::string, Tensor> out;
        for (const auto& [name, value] : tensors)
          out[name.cast<std::string>()] = tensor_from_py(value, "tensor '" + name.cast<std::string>() + "'");
        save_safetensors(path, out);
      },
      py::arg("path"), py::arg("tensors"));
  m.def("load_npy", &load_npy, py::arg("path"));
  m.def(
      "save_npy", [](const std::string& path, const py::object& t) { save_npy(path, tensor_from_py(t, "save_npy")); },
      py::arg("path"), py::arg("tensor"));
}

} // namespace kiln::python
