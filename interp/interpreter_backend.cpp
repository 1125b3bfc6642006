#include "interp/interpreter_backend.hpp"
#include "interp/eager.hpp"
#include "interp/implementation_table.hpp"
#include "interp/kernel_table.hpp"

namespace kiln::interp {

const exec::TierBackend& interpreter_backend() {
  static const exec::TierBackend& backend = *new exec::TierBackend{
      {&interp_implementations, &interp_cpu_isa, &kernel_for, &kernel_scratch_bytes, &prepare_kernel}, &run_eager_op};
  return backend;
}

} // namespace kiln::interp
