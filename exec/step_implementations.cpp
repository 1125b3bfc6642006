#include "exec/step_implementations.hpp"
#include <atomic>
#include <kiln/error.hpp>

namespace kiln::exec {

namespace {
// Constant-initialised, so the installer may run at any point of static initialisation.
std::atomic<const StepImplementations*> g_implementations{nullptr};
} // namespace

const StepImplementations* set_step_implementations(const StepImplementations* implementations) {
  return g_implementations.exchange(implementations);
}

const StepImplementations& step_implementations() {
  const StepImplementations* implementations = g_implementations.load();
  if (!implementations)
    throw Error(ErrorKind::unsupported,
                "planning an executable needs the interpreter's implementation lists, which are not linked");
  return *implementations;
}

} // namespace kiln::exec
