// kiln.functional: the C++ F:: API, each op recording the Python line that called it.
#include "bindings.hpp"

namespace kiln::python {
namespace {

using OptionalTensor = std::optional<Tensor>;
Tensor or_undefined(const OptionalTensor& t) { return t ? *t : Tensor(); }

// Axes as torch takes them: None (all), one int, or a list.
std::vector<int64_t> axes_from_py(const py::object& axes) {
  if (axes.is_none()) return {};
  if (py::isinstance<py::int_>(axes)) return {axes.cast<int64_t>()};
  return axes.cast<std::vector<int64_t>>();
}

std::vector<int64_t> pair_from_py(const py::object& v) {
  if (py::isinstance<py::int_>(v)) return {v.cast<int64_t>(), v.cast<int64_t>()};
  return v.cast<std::vector<int64_t>>();
}

// A conv1d hyperparameter as torch takes it: an int, or a sequence of one.
int64_t one_from_py(const py::object& v, const char* name) {
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  const auto values = v.cast<std::vector<int64_t>>();
  if (values.size() != 1)
    throw Error(ErrorKind::spec,
                std::string("kiln.conv1d: ") + name + " needs 1 value, got " + std::to_string(values.size()));
  return values[0];
}

// A slice bound: an int (negative counts from the end), a kiln.Dim, or None (the axis' end).
Dim bound_from_py(const py::object& v, bool is_end) {
  if (v.is_none()) return is_end ? Dim(INT64_MAX) : Dim(0);
  return v.cast<Dim>();
}

#define LOCATED(body)                                                                                                  \
  [&] {                                                                                                                \
    PythonCallerLocation where;                                                                                        \
    return body;                                                                                                       \
  }()

} // namespace

void bind_functional(py::module_& parent) {
  py::module_ m = parent.def_submodule("functional", "Graph-building functions (kiln's F::), eager on concrete "
                                                     "tensors, staged while tracing.");
#define KILN_BIND_UNARY(name)                                                                                          \
  m.def(                                                                                                               \
      #name, [](const Tensor& x) { return LOCATED(F::name(x)); }, py::arg("x"));
  KILN_UNARY_FUNCTIONS(KILN_BIND_UNARY)
#undef KILN_BIND_UNARY
  m.def(
      "gelu", [](const Tensor& x, const std::string& a) { return LOCATED(F::gelu(x, a)); }, py::arg("x"),
      py::arg("approximate") = "none");
  m.def(
      "leaky_relu", [](const Tensor& x, double s) { return LOCATED(F::leaky_relu(x, s)); }, py::arg("x"),
      py::arg("negative_slope") = 0.01);
  m.def(
      "elu", [](const Tensor& x, double a) { return LOCATED(F::elu(x, a)); }, py::arg("x"), py::arg("alpha") = 1.0);
  m.def(
      "softplus", [](const Tensor& x, double b, double t) { return LOCATED(F::softplus(x, b, t)); }, py::arg("x"),
      py::arg("beta") = 1.0, py::arg("threshold") = 20.0);

#define KILN_BIND_BINARY(name)                                                                                         \
  m.def(                                                                                                               \
      #name, [](const Tensor& a, const Tensor& b) { return LOCATED(F::name(a, b)); }, py::arg("a"), py::arg("b"));
  KILN_BIND_BINARY(add)
  KILN_BIND_BINARY(sub)
  KILN_BIND_BINARY(mul)
  KILN_BIND_BINARY(div)
  KILN_BIND_BINARY(pow)
  KILN_BIND_BINARY(maximum)
  KILN_BIND_BINARY(minimum)
  KILN_BIND_BINARY(floor_divide)
  KILN_BIND_BINARY(remainder)
  KILN_BIND_BINARY(eq)
  KILN_BIND_BINARY(ne)
  KILN_BIND_BINARY(lt)
  KILN_BIND_BINARY(le)
  KILN_BIND_BINARY(gt)
  KILN_BIND_BINARY(ge)
  KILN_BIND_BINARY(matmul)
#undef KILN_BIND_BINARY

  m.def(
      "where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return LOCATED(F::where(c, a, b)); },
      py::arg("cond"), py::arg("a"), py::arg("b"));
  m.def(
      "cast", [](const Tensor& x, DType d) { return LOCATED(F::cast(x, d)); }, py::arg("x"), py::arg("dtype"));
  m.def(
      "clamp",
      [](const Tensor& x, const py::object& lo, const py::object& hi) {
        if (is_number(lo) && is_number(hi)) return LOCATED(F::clamp(x, scalar_from_py(lo), scalar_from_py(hi)));
        return LOCATED(F::clamp(x, tensor_from_py(lo, "clamp lo"), tensor_from_py(hi, "clamp hi")));
      },
      py::arg("x"), py::arg("min"), py::arg("max"));
  m.def(
      "masked_fill", [](const Tensor& x, const Tensor& mask, double v) { return LOCATED(F::masked_fill(x, mask, v)); },
      py::arg("x"), py::arg("mask"), py::arg("value"));

#define KILN_BIND_REDUCTION(name)                                                                                      \
  m.def(                                                                                                               \
      #name,                                                                                                           \
      [](const Tensor& x, const py::object& axes, bool k) { return LOCATED(F::name(x, axes_from_py(axes), k)); },      \
      py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  KILN_BIND_REDUCTION(sum)
  KILN_BIND_REDUCTION(mean)
  KILN_BIND_REDUCTION(max)
  KILN_BIND_REDUCTION(min)
  KILN_BIND_REDUCTION(prod)
#undef KILN_BIND_REDUCTION
  m.def(
      "var",
      [](const Tensor& x, const py::object& axes, int64_t c, bool k) {
        return LOCATED(F::var(x, axes_from_py(axes), c, k));
      },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("correction") = 1, py::arg("keepdims") = false);
  m.def(
      "std",
      [](const Tensor& x, const py::object& axes, int64_t c, bool k) {
        return LOCATED(F::std(x, axes_from_py(axes), c, k));
      },
      py::arg("x"), py::arg("axis") = py::none(), py::arg("correction") = 1, py::arg("keepdims") = false);
  m.def(
      "argmax", [](const Tensor& x, int64_t a, bool k) { return LOCATED(F::argmax(x, a, k)); }, py::arg("x"),
      py::arg("axis"), py::arg("keepdims") = false);
  m.def(
      "argmin", [](const Tensor& x, int64_t a, bool k) { return LOCATED(F::argmin(x, a, k)); }, py::arg("x"),
      py::arg("axis"), py::arg("keepdims") = false);
  m.def(
      "cumsum", [](const Tensor& x, int64_t a) { return LOCATED(F::cumsum(x, a)); }, py::arg("x"), py::arg("axis"));
  m.def(
      "tril", [](const Tensor& x, int64_t d) { return LOCATED(F::tril(x, d)); }, py::arg("x"), py::arg("diagonal") = 0);
  m.def(
      "triu", [](const Tensor& x, int64_t d) { return LOCATED(F::triu(x, d)); }, py::arg("x"), py::arg("diagonal") = 0);
  m.def(
      "softmax", [](const Tensor& x, int64_t a) { return LOCATED(F::softmax(x, a)); }, py::arg("x"),
      py::arg("axis") = -1);
  m.def(
      "log_softmax", [](const Tensor& x, int64_t a) { return LOCATED(F::log_softmax(x, a)); }, py::arg("x"),
      py::arg("axis") = -1);

  m.def(
      "layer_norm",
      [](const Tensor& x, const OptionalTensor& w, const OptionalTensor& b, double eps, int64_t axis) {
        return LOCATED(F::layer_norm(x, or_undefined(w), or_undefined(b), eps, axis));
      },
      py::arg("x"), py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("eps") = 1e-5,
      py::arg("axis") = -1);
  m.def(
      "rms_norm",
      [](const Tensor& x, const OptionalTensor& w, double eps, int64_t axis) {
        return LOCATED(F::rms_norm(x, or_undefined(w), eps, axis));
      },
      py::arg("x"), py::arg("weight") = py::none(), py::arg("eps") = 1e-6, py::arg("axis") = -1);
  m.def(
      "batch_norm",
      [](const Tensor& x, const Tensor& mean, const Tensor& var, const OptionalTensor& w, const OptionalTensor& b,
         double eps) { return LOCATED(F::batch_norm(x, mean, var, or_undefined(w), or_undefined(b), eps)); },
      py::arg("x"), py::arg("running_mean"), py::arg("running_var"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, const OptionalTensor& b) {
        return LOCATED(F::linear(x, w, or_undefined(b)));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none());
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const OptionalTensor& b, const py::object& stride, const py::object& padding,
         const py::object& dilation, int64_t groups) {
        F::Conv2dOptions o{pair_from_py(stride), pair_from_py(padding), pair_from_py(dilation), groups};
        return LOCATED(F::conv2d(x, w, or_undefined(b), o));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, const OptionalTensor& b, const py::object& stride, const py::object& padding,
         const py::object& dilation, int64_t groups) {
        const F::Conv1dOptions o{one_from_py(stride, "stride"), one_from_py(padding, "padding"),
                                 one_from_py(dilation, "dilation"), groups};
        return LOCATED(F::conv1d(x, w, or_undefined(b), o));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1);
  auto pool_options = [](const py::object& kernel, const py::object& stride, const py::object& padding, bool include) {
    return F::Pool2dOptions{pair_from_py(kernel), stride.is_none() ? std::vector<int64_t>{} : pair_from_py(stride),
                            pair_from_py(padding), include};
  };
  m.def(
      "max_pool2d",
      [pool_options](const Tensor& x, const py::object& k, const py::object& s, const py::object& p) {
        return LOCATED(F::max_pool2d(x, pool_options(k, s, p, false)));
      },
      py::arg("x"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0);
  m.def(
      "avg_pool2d",
      [pool_options](const Tensor& x, const py::object& k, const py::object& s, const py::object& p, bool include) {
        return LOCATED(F::avg_pool2d(x, pool_options(k, s, p, include)));
      },
      py::arg("x"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("count_include_pad") = false);

  // The ops issue 14 added: attention, selection, lowerings and the vision ops.
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const OptionalTensor& mask, bool causal,
         std::optional<double> scale) {
        return LOCATED(F::scaled_dot_product_attention(q, k, v, or_undefined(mask), causal, scale));
      },
      py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
      py::arg("is_causal") = false, py::arg("scale") = py::none());
  m.def(
      "topk",
      [](const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted) {
        return LOCATED(F::topk(x, k, axis, largest, sorted));
      },
      py::arg("x"), py::arg("k"), py::arg("axis") = -1, py::arg("largest") = true, py::arg("sorted") = true);
  m.def(
      "embedding", [](const Tensor& i, const Tensor& w) { return LOCATED(F::embedding(i, w)); }, py::arg("indices"),
      py::arg("weight"));
  m.def(
      "expand", [](const Tensor& x, const std::vector<int64_t>& s) { return LOCATED(F::expand(x, s)); }, py::arg("x"),
      py::arg("sizes"));
  m.def(
      "einsum",
      [](const std::string& equation, const py::args& operands) {
        std::vector<Tensor> tensors;
        for (const py::handle& o : operands)
          tensors.push_back(tensor_from_py(o, "einsum operand"));
        return LOCATED(F::einsum(equation, tensors));
      },
      py::arg("equation"));
  m.def(
      "group_norm",
      [](const Tensor& x, int64_t groups, const OptionalTensor& w, const OptionalTensor& b, double eps) {
        return LOCATED(F::group_norm(x, groups, or_undefined(w), or_undefined(b), eps));
      },
      py::arg("x"), py::arg("num_groups"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
      py::arg("eps") = 1e-5);
  m.def(
      "instance_norm",
      [](const Tensor& x, const OptionalTensor& w, const OptionalTensor& b, double eps) {
        return LOCATED(F::instance_norm(x, or_undefined(w), or_undefined(b), eps));
      },
      py::arg("x"), py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  m.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, const py::object& size) { return LOCATED(F::adaptive_avg_pool2d(x, pair_from_py(size))); },
      py::arg("x"), py::arg("output_size"));
  m.def(
      "conv_transpose2d",
      [](const Tensor& x, const Tensor& w, const OptionalTensor& b, const py::object& stride, const py::object& padding,
         const py::object& output_padding, int64_t groups, const py::object& dilation) {
        F::ConvTranspose2dOptions o{pair_from_py(stride), pair_from_py(padding), pair_from_py(output_padding), groups,
                                    pair_from_py(dilation)};
        return LOCATED(F::conv_transpose2d(x, w, or_undefined(b), o));
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::arg("dilation") = 1);
  m.def(
      "interpolate",
      [](const Tensor& x, const py::object& size, const py::object& scale_factor, const std::string& mode,
         bool align_corners) {
        F::InterpolateOptions o;
        if (!size.is_none()) o.size = pair_from_py(size);
        if (!scale_factor.is_none())
          o.scale_factor = py::isinstance<py::sequence>(scale_factor)
                               ? scale_factor.cast<std::vector<double>>()
                               : std::vector<double>{scale_factor.cast<double>(), scale_factor.cast<double>()};
        o.mode = mode;
        o.align_corners = align_corners;
        return LOCATED(F::interpolate(x, o));
      },
      py::arg("x"), py::arg("size") = py::none(), py::arg("scale_factor") = py::none(), py::arg("mode") = "nearest",
      py::arg("align_corners") = false);

  m.def(
      "reshape", [](const Tensor& x, const py::object& s) { return LOCATED(F::reshape(x, shape_from_py(s))); },
      py::arg("x"), py::arg("shape"));
  m.def(
      "permute", [](const Tensor& x, const std::vector<int64_t>& p) { return LOCATED(F::permute(x, p)); }, py::arg("x"),
      py::arg("perm"));
  m.def(
      "transpose", [](const Tensor& x, int64_t a, int64_t b) { return LOCATED(F::transpose(x, a, b)); }, py::arg("x"),
      py::arg("a"), py::arg("b"));
  m.def(
      "broadcast_to",
      [](const Tensor& x, const py::object& s) { return LOCATED(F::broadcast_to(x, shape_from_py(s))); }, py::arg("x"),
      py::arg("shape"));
  m.def(
      "concat", [](const std::vector<Tensor>& xs, int64_t a) { return LOCATED(F::concat(xs, a)); }, py::arg("xs"),
      py::arg("axis") = 0);
  m.def(
      "split", [](const Tensor& x, const std::vector<int64_t>& s, int64_t a) { return LOCATED(F::split(x, s, a)); },
      py::arg("x"), py::arg("sizes"), py::arg("axis") = 0);
  m.def(
      "slice",
      [](const Tensor& x, int64_t axis, const py::object& start, const py::object& end, int64_t step) {
        return LOCATED(F::slice(x, axis, bound_from_py(start, false), bound_from_py(end, true), step));
      },
      py::arg("x"), py::arg("axis"), py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("step") = 1);
  m.def(
      "squeeze", [](const Tensor& x, const py::object& a) { return LOCATED(F::squeeze(x, axes_from_py(a))); },
      py::arg("x"), py::arg("axes"));
  m.def(
      "unsqueeze", [](const Tensor& x, const py::object& a) { return LOCATED(F::unsqueeze(x, axes_from_py(a))); },
      py::arg("x"), py::arg("axes"));
  m.def(
      "flatten", [](const Tensor& x, int64_t s) { return LOCATED(F::flatten(x, s)); }, py::arg("x"),
      py::arg("start_axis") = 1);
  m.def(
      "gather", [](const Tensor& d, const Tensor& i, int64_t a) { return LOCATED(F::gather(d, i, a)); },
      py::arg("data"), py::arg("indices"), py::arg("axis"));
  m.def(
      "pad", [](const Tensor& x, const std::vector<int64_t>& p, double v) { return LOCATED(F::pad(x, p, v)); },
      py::arg("x"), py::arg("pads"), py::arg("value") = 0.0);

  m.def(
      "constant", [](const Tensor& v) { return LOCATED(F::constant(v)); }, py::arg("value"));
  m.def(
      "constant_external",
      [](const std::string& name, const TensorLayout& layout) { return LOCATED(F::constant_external(name, layout)); },
      py::arg("name"), py::arg("type"));
  m.def(
      "full", [](const py::object& s, double v, DType d) { return LOCATED(F::full(shape_from_py(s), v, d)); },
      py::arg("shape"), py::arg("value"), py::arg("dtype") = DType::f32);
  m.def(
      "arange",
      [](const py::object& start, const py::object& stop, double step, const std::optional<DType>& dtype) {
        if (stop.is_none()) return LOCATED(F::arange(start.cast<Dim>(), dtype.value_or(DType::i64)));
        return LOCATED(F::arange(start.cast<double>(), stop.cast<double>(), step, dtype.value_or(DType::f32)));
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1.0, py::arg("dtype") = py::none());
  m.def(
      "buffer_store",
      [](const Tensor& buffer, const Tensor& value) {
        PythonCallerLocation where;
        F::buffer_store(buffer, value);
      },
      py::arg("buffer"), py::arg("value"));
  m.def(
      "custom",
      [](const std::string& name, const std::vector<Tensor>& inputs,
         const std::map<std::string, F::CustomAttr>& attrs) { return LOCATED(F::custom(name, inputs, attrs)); },
      py::arg("name"), py::arg("inputs"), py::arg("attrs") = std::map<std::string, F::CustomAttr>{});
}

} // namespace kiln::python
