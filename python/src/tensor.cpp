// kiln.Tensor: factories, the buffer protocol, DLPack both ways (zero-copy), operators; torch's
// methods are in tensor_methods.cpp.
#include "bindings.hpp"
#include <dlpack/dlpack.h>
#include <sstream>

namespace kiln::python {
namespace {

// DLPack's type code, bits and lanes of a kiln dtype; kDLBool is DLPack >= 0.8's code 6, which
// torch writes and Debian's 0.6 header does not name yet.
constexpr uint8_t kDLPackBool = 6;

DLDataType dlpack_dtype(DType dtype) {
  auto code = [&]() -> uint8_t {
    switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::f16: return kDLFloat;
    case DType::bf16: return kDLBfloat;
    case DType::i8:
    case DType::i32:
    case DType::i64: return kDLInt;
    case DType::u8: return kDLUInt;
    case DType::boolean: return kDLPackBool;
    }
    return kDLFloat;
  };
  return DLDataType{code(), uint8_t(dtype_size(dtype) * 8), 1};
}

DType dtype_from_dlpack(const DLDataType& t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::f32;
    if (t.code == kDLFloat && t.bits == 64) return DType::f64;
    if (t.code == kDLFloat && t.bits == 16) return DType::f16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::bf16;
    if (t.code == kDLInt && t.bits == 8) return DType::i8;
    if (t.code == kDLInt && t.bits == 32) return DType::i32;
    if (t.code == kDLInt && t.bits == 64) return DType::i64;
    if (t.code == kDLUInt && t.bits == 8) return DType::u8;
    if (t.code == kDLPackBool && t.bits == 8) return DType::boolean;
  }
  throw Error(ErrorKind::dtype, "DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) +
                                    " bits, " + std::to_string(t.lanes) + " lanes) has no kiln dtype");
}

// What a DLManagedTensor we hand out owns: the tensor (sharing storage) and its dims.
struct Exported {
  Tensor tensor;
  std::vector<int64_t> dims;
  DLManagedTensor managed{};
};

// numpy and DLPack share host memory only: an accelerator tensor's values are copied on request.
void require_host(const Tensor& t, const std::string& what) {
  if (t.is_concrete() && t.device().kind != DeviceKind::cpu)
    throw Error(ErrorKind::unsupported, what + " of a tensor on " + t.device().to_string() +
                                            ": its values are on the device; copy them to the host with "
                                            "t.to(kiln.CPU()) first");
}

py::capsule to_dlpack(const Tensor& t) {
  if (!t.is_concrete()) throw Error(ErrorKind::spec, "__dlpack__: a symbolic tensor has no memory to share");
  require_host(t, "__dlpack__");
  auto* state = new Exported{t, t.dims(), {}};
  DLTensor& dl = state->managed.dl_tensor;
  dl.data = const_cast<void*>(t.raw_data());
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = int(state->dims.size());
  dl.dtype = dlpack_dtype(t.dtype());
  dl.shape = state->dims.data();
  dl.strides = nullptr; // compact, C order
  dl.byte_offset = 0;
  state->managed.manager_ctx = state;
  state->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); };
  // A capsule nobody consumed still owns the tensor; a consumer renames it to used_dltensor.
  return py::capsule(&state->managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      managed->deleter(managed);
    }
  });
}

Tensor from_dlpack_capsule(const py::capsule& capsule, const std::string& what) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw Error(ErrorKind::spec, what + ": __dlpack__ gave a capsule that is not an unused dltensor");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  // From here on we own it: the keep-alive below calls its deleter when the last kiln handle goes.
  std::shared_ptr<void> keep_alive(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost)
    throw Error(ErrorKind::unsupported, what + ": memory on DLPack device type " +
                                            std::to_string(dl.device.device_type) + "; kiln runs on the CPU");
  const DType dtype = dtype_from_dlpack(dl.dtype);
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  if (dl.strides) {
    int64_t expected = 1;
    for (int d = dl.ndim - 1; d >= 0; --d) {
      if (dims[size_t(d)] != 1 && dl.strides[d] != expected)
        throw Error(ErrorKind::spec, what + ": kiln needs C-contiguous memory, got strides that are not (call "
                                            ".contiguous() or numpy.ascontiguousarray first)");
      expected *= dims[size_t(d)];
    }
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return Tensor::wrap(data, dims, dtype, std::move(keep_alive));
}

std::string buffer_format(DType dtype) {
  switch (dtype) {
  case DType::f32: return "f";
  case DType::f64: return "d";
  case DType::f16: return "e";
  case DType::i8: return "b";
  case DType::i32: return "i";
  case DType::i64: return "q";
  case DType::u8: return "B";
  case DType::boolean: return "?";
  case DType::bf16: break;
  }
  throw Error(ErrorKind::dtype, "bf16 has no Python buffer format: use __dlpack__ (torch.from_dlpack) for bf16");
}

py::buffer_info buffer_of(Tensor& t) {
  if (!t.is_concrete()) throw Error(ErrorKind::spec, "a symbolic tensor has no memory to view");
  require_host(t, "the buffer protocol (numpy)");
  std::vector<py::ssize_t> dims, strides;
  const std::vector<int64_t> d = t.dims();
  py::ssize_t stride = py::ssize_t(dtype_size(t.dtype()));
  for (size_t i = d.size(); i-- > 0;) {
    strides.insert(strides.begin(), stride);
    stride *= py::ssize_t(d[i]);
  }
  dims.assign(d.begin(), d.end());
  return py::buffer_info(t.raw_data(), py::ssize_t(dtype_size(t.dtype())), buffer_format(t.dtype()),
                         py::ssize_t(d.size()), dims, strides);
}

// pybind11 2.10 calls a buffer getter without catching: an error there (an accelerator tensor, a
// bf16 one) would end the process. This slot raises it as the Python exception (kiln.Error).
int get_buffer_or_raise(PyObject* obj, Py_buffer* view, int flags) {
  try {
    return py::detail::pybind11_getbuffer(obj, view, flags);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    if (!py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators))
      PyErr_SetString(PyExc_BufferError, "kiln.Tensor: its buffer cannot be exported");
  }
  if (view) view->obj = nullptr;
  return -1;
}

std::vector<int64_t> dims_from_py(const py::handle& dims) { return static_dims(shape_from_py(dims)); }

// A binary operator with a tensor or a Python number on either side, recording the caller's line.
template <class TensorOp, class ScalarOp>
py::object binary(const Tensor& a, const py::handle& b, bool reflected, TensorOp tensor_op, ScalarOp scalar_op) {
  PythonCallerLocation where;
  if (is_number(b)) return py::cast(scalar_op(a, scalar_from_py(b), reflected));
  Tensor other = tensor_from_py(b, "operand");
  return py::cast(reflected ? tensor_op(other, a) : tensor_op(a, other));
}

std::string tensor_repr(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

} // namespace

Scalar scalar_from_py(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return Scalar(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return Scalar(value.cast<int64_t>());
  return Scalar(value.cast<double>());
}

bool is_number(const py::handle& v) { return py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v); }

Tensor tensor_from_py(const py::handle& value, const std::string& what) {
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  if (py::isinstance<py::bool_>(value)) return Tensor::full({}, value.cast<bool>(), DType::boolean);
  if (py::isinstance<py::int_>(value)) return Tensor::full({}, double(value.cast<int64_t>()), DType::i64);
  if (py::isinstance<py::float_>(value)) return Tensor::full({}, value.cast<double>(), DType::f32);
  if (py::hasattr(value, "__dlpack__")) return from_dlpack_capsule(value.attr("__dlpack__")(), what);
  throw Error(ErrorKind::spec, what + ": expected a kiln.Tensor or an array with __dlpack__, got " +
                                   std::string(py::str(py::type::of(value).attr("__name__"))));
}

void bind_tensor(py::module_& m) {
  py::class_<Tensor> tensor(m, "Tensor", py::buffer_protocol(),
                            "A concrete tensor (shared, C-contiguous memory) or, while tracing, a graph value.");
  tensor
      .def(py::init([](const py::object& array) { return tensor_from_py(array, "Tensor"); }), py::arg("array"),
           "Shares the memory of a kiln.Tensor or anything with __dlpack__; a number gives a 0-d tensor.")
      .def_buffer([](Tensor& t) { return buffer_of(t); })
      .def_static(
          "zeros",
          [](const py::object& dims, DType dtype, Device device) {
            return Tensor::zeros(dims_from_py(dims), dtype).to(device);
          },
          py::arg("shape"), py::arg("dtype") = DType::f32, py::arg("device") = CPU())
      .def_static(
          "ones",
          [](const py::object& dims, DType dtype, Device device) {
            return Tensor::ones(dims_from_py(dims), dtype).to(device);
          },
          py::arg("shape"), py::arg("dtype") = DType::f32, py::arg("device") = CPU())
      .def_static(
          "full",
          [](const py::object& dims, double value, DType dtype, Device device) {
            return Tensor::full(dims_from_py(dims), value, dtype).to(device);
          },
          py::arg("shape"), py::arg("value"), py::arg("dtype") = DType::f32, py::arg("device") = CPU())
      .def_static(
          "randn", [](const py::object& dims, uint64_t seed) { return Tensor::randn(dims_from_py(dims), seed); },
          py::arg("shape"), py::arg("seed") = 0)
      .def_static(
          "rand",
          [](const py::object& dims, uint64_t seed, float low, float high) {
            return Tensor::rand(dims_from_py(dims), seed, low, high);
          },
          py::arg("shape"), py::arg("seed") = 0, py::arg("low") = 0.0f, py::arg("high") = 1.0f)
      .def_property_readonly("shape", [](const Tensor& t) { return shape_to_py(t.shape()); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("rank", &Tensor::rank)
      .def_property_readonly("layout", &Tensor::layout)
      .def_property_readonly("device", &Tensor::device, "Where the values live: cpu:0, or accelerator:0 after to()")
      .def_property_readonly("is_symbolic", &Tensor::is_symbolic)
      .def("dim_of", &Tensor::dim_of, py::arg("axis"), "The dim of an axis, static or symbolic (torch's x.size(axis)).")
      .def("item", [](const Tensor& t) { return t.item_as_double(0); })
      .def("numpy",
           [](const py::object& self) {
             require_host(self.cast<Tensor>(), "numpy()");
             return py::module_::import("numpy").attr("asarray")(self);
           })
      .def("clone", &Tensor::clone)
      // numpy makes a 0-d object array of what its buffer protocol refuses, unless __array__ says
      // why not: an accelerator tensor, a bf16 one.
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype) {
            require_host(self.cast<Tensor>(), "numpy.asarray");
            py::object array = py::module_::import("numpy").attr("asarray")(py::memoryview(self));
            return dtype.is_none() ? array : array.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def(
          "__dlpack__", [](const Tensor& t, const py::object&) { return to_dlpack(t); }, py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const Tensor& t) {
             const bool host = t.device().kind == DeviceKind::cpu;
             return py::make_tuple(int(host ? kDLCPU : kDLVulkan), host ? 0 : t.device().id);
           })
      .def("__repr__", &tensor_repr)
      .def_property_readonly("T",
                             [](const Tensor& t) {
                               PythonCallerLocation where;
                               std::vector<int64_t> perm;
                               for (int64_t i = t.rank(); i-- > 0;)
                                 perm.push_back(i);
                               return t.permute(perm);
                             })
      .def("cast",
           [](const Tensor& t, DType dtype) {
             PythonCallerLocation where;
             return t.cast(dtype);
           })
      .def("__neg__",
           [](const Tensor& t) {
             PythonCallerLocation where;
             return -t;
           })
      .def("__matmul__",
           [](const Tensor& a, const py::object& b) {
             PythonCallerLocation where;
             return F::matmul(a, tensor_from_py(b, "operand"));
           })
      .def("__rmatmul__", [](const Tensor& a, const py::object& b) {
        PythonCallerLocation where;
        return F::matmul(tensor_from_py(b, "operand"), a);
      });

  // + - * / with tensors or numbers on either side, promoting as PyTorch does.
  struct Operator {
    const char *name, *reflected;
    Tensor (*tensors)(const Tensor&, const Tensor&);
    Tensor (*with_scalar)(const Tensor&, Scalar, bool);
  };
  static const Operator operators[] = {
      {"__add__", "__radd__", [](const Tensor& a, const Tensor& b) { return a + b; },
       [](const Tensor& t, Scalar s, bool r) { return r ? s + t : t + s; }},
      {"__sub__", "__rsub__", [](const Tensor& a, const Tensor& b) { return a - b; },
       [](const Tensor& t, Scalar s, bool r) { return r ? s - t : t - s; }},
      {"__mul__", "__rmul__", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](const Tensor& t, Scalar s, bool r) { return r ? s * t : t * s; }},
      {"__truediv__", "__rtruediv__", [](const Tensor& a, const Tensor& b) { return a / b; },
       [](const Tensor& t, Scalar s, bool r) { return r ? s / t : t / s; }},
  };
  for (const Operator& op : operators) {
    tensor.def(op.name,
               [&op](const Tensor& a, const py::object& b) { return binary(a, b, false, op.tensors, op.with_scalar); });
    tensor.def(op.reflected,
               [&op](const Tensor& a, const py::object& b) { return binary(a, b, true, op.tensors, op.with_scalar); });
  }
  // Comparisons, // and % with a number take it as a 0-d tensor, which promotes as torch's scalars.
  struct Functional {
    const char* name;
    Tensor (*op)(const Tensor&, const Tensor&, F::Loc);
  };
  static const Functional functionals[] = {
      {"__lt__", &F::lt},
      {"__le__", &F::le},
      {"__gt__", &F::gt},
      {"__ge__", &F::ge},
      {"__eq__", &F::eq},
      {"__ne__", &F::ne},
      {"__floordiv__", &F::floor_divide},
      {"__mod__", &F::remainder},
  };
  for (const Functional& f : functionals)
    tensor.def(f.name, [&f](const Tensor& a, const py::object& b) {
      PythonCallerLocation where;
      return f.op(a, tensor_from_py(b, "operand"), F::Loc::current());
    });
  tensor.def("__pow__", [](const Tensor& a, const py::object& b) {
    PythonCallerLocation where;
    if (is_number(b)) return F::pow(a, scalar_from_py(b));
    return F::pow(a, tensor_from_py(b, "exponent"));
  });
  reinterpret_cast<PyTypeObject*>(tensor.ptr())->tp_as_buffer->bf_getbuffer = &get_buffer_or_raise;
  bind_tensor_methods(m, tensor);
  tensor.attr("__hash__") = py::none();
  py::implicitly_convertible<py::object, Tensor>();

  m.def(
      "from_dlpack", [](const py::object& array) { return tensor_from_py(array, "from_dlpack"); }, py::arg("array"),
      "A kiln.Tensor sharing the memory of anything with __dlpack__ (the producer is kept alive).");
}

} // namespace kiln::python
