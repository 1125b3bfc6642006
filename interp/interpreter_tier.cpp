#include "exec/plan_executable.hpp"

namespace kiln::interp {

namespace {

std::unique_ptr<runtime::Executable> make_interpreter_executable(std::shared_ptr<const ir::Function> graph,
                                                                 const runtime::WeightMap& weights) {
  return std::make_unique<exec::PlanExecutable>(std::move(graph), weights);
}

struct InterpreterTierRegistrar {
  InterpreterTierRegistrar() { runtime::register_tier("interp", &make_interpreter_executable); }
} const registrar;

} // namespace

} // namespace kiln::interp
