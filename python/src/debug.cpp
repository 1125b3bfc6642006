// kiln.debug: the C++ debugger API (Stepper, compare_tiers, summary) over a compiled callable.
#include "bindings.hpp"
#include <sstream>

namespace kiln::python {
namespace {

using Callable = CompiledCallable<std::vector<Tensor>>;

Callable callable_of(const std::shared_ptr<detail::CallableCore>& core) { return Callable(core, {}); }

} // namespace

void bind_debug(py::module_& parent) {
  py::module_ m = parent.def_submodule("debug", "Step a call op by op, compare the tiers, summarise tensors.");
  py::class_<debug::StepState>(m, "StepState")
      .def_readonly("index", &debug::StepState::index)
      .def_readonly("op", &debug::StepState::op)
      .def_readonly("location", &debug::StepState::location)
      .def_readonly("inputs", &debug::StepState::inputs)
      .def_readonly("results", &debug::StepState::results)
      .def_readonly("mlir", &debug::StepState::mlir)
      .def_readonly("function", &debug::StepState::function)
      .def_readonly("callee", &debug::StepState::callee)
      .def_readonly("fused", &debug::StepState::fused)
      .def_readonly("done", &debug::StepState::done);
  py::class_<debug::StackFrame>(m, "StackFrame")
      .def_readonly("function", &debug::StackFrame::function)
      .def_readonly("location", &debug::StackFrame::location);
  py::class_<debug::Stepper>(m, "_Stepper")
      .def(py::init([](const std::shared_ptr<detail::CallableCore>& core, const std::vector<Tensor>& inputs,
                       const std::string& tier, bool keep_all) {
        return debug::Stepper(callable_of(core), inputs, debug::StepperOptions{tier, keep_all});
      }))
      .def("break_on_kind", &debug::Stepper::break_on_kind)
      .def("break_on_value", &debug::Stepper::break_on_value)
      .def("break_on_line", &debug::Stepper::break_on_line)
      .def("watch_nan", &debug::Stepper::watch_nan)
      .def("watch_inf", &debug::Stepper::watch_inf)
      .def("watch_range", &debug::Stepper::watch_range)
      .def("keep", &debug::Stepper::keep)
      .def("step", &debug::Stepper::step)
      .def("next", &debug::Stepper::next)
      .def("continue_", &debug::Stepper::continue_)
      .def("finish", &debug::Stepper::finish)
      .def("restart", &debug::Stepper::restart)
      .def_property_readonly("current", [](const debug::Stepper& s) { return s.current(); })
      .def("where", &debug::Stepper::where)
      .def_property_readonly("stop_reason", &debug::Stepper::stop_reason)
      .def("value", &debug::Stepper::value);
  py::class_<debug::TierDifference>(m, "TierDifference")
      .def_readonly("op", &debug::TierDifference::op)
      .def_readonly("value", &debug::TierDifference::value)
      .def_readonly("fused_step", &debug::TierDifference::fused_step)
      .def_readonly("narrowed", &debug::TierDifference::narrowed)
      .def_readonly("tier", &debug::TierDifference::tier)
      .def_readonly("interp", &debug::TierDifference::interp)
      .def_readonly("jit", &debug::TierDifference::jit)
      .def_readonly("first_index", &debug::TierDifference::first_index)
      .def_readonly("max_abs_error", &debug::TierDifference::max_abs_error)
      .def_readonly("max_rel_error", &debug::TierDifference::max_rel_error)
      .def("message", &debug::TierDifference::message)
      .def("__str__", &debug::TierDifference::message);
  m.def(
      "_compare_tiers",
      [](const std::shared_ptr<detail::CallableCore>& core, const std::vector<Tensor>& inputs, double tolerance,
         const std::string& tier) { return debug::compare_tiers(callable_of(core), inputs, tolerance, tier); },
      py::call_guard<py::gil_scoped_release>());
  py::class_<debug::TensorSummary>(m, "TensorSummary")
      .def_readonly("dims", &debug::TensorSummary::dims)
      .def_readonly("dtype", &debug::TensorSummary::dtype)
      .def_readonly("numel", &debug::TensorSummary::numel)
      .def_readonly("finite", &debug::TensorSummary::finite)
      .def_readonly("min", &debug::TensorSummary::min)
      .def_readonly("max", &debug::TensorSummary::max)
      .def_readonly("mean", &debug::TensorSummary::mean)
      .def_readonly("std", &debug::TensorSummary::std)
      .def_readonly("nan", &debug::TensorSummary::nan)
      .def_readonly("pos_inf", &debug::TensorSummary::pos_inf)
      .def_readonly("neg_inf", &debug::TensorSummary::neg_inf)
      .def("__str__", [](const debug::TensorSummary& s) { return debug::to_string(s); });
  m.def(
      "summary", [](const Tensor& t) { return debug::summary(t); }, py::arg("tensor"));
}

} // namespace kiln::python
