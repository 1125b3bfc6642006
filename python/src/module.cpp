#include "bindings.hpp"
#include "kiln_config.h"

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ core; import kiln, not this module";
  kiln::python::bind_errors(m);
  kiln::python::bind_types(m);
  kiln::python::bind_tensor(m);
  kiln::python::bind_functional(m);
  kiln::python::bind_compile(m);
  kiln::python::bind_io(m);
  kiln::python::bind_debug(m);
  m.attr("has_jit") = bool(KILN_HAS_JIT);
}
