#include "jit/tier/lowering_fault.hpp"
#include <mutex>

namespace kiln::jitc::tier {

namespace {

std::mutex fault_mutex;
std::optional<LoweringFault> current_fault;

} // namespace

void set_lowering_fault(std::optional<LoweringFault> fault) {
  const std::lock_guard lock(fault_mutex);
  current_fault = fault;
}

std::optional<LoweringFault> lowering_fault() {
  const std::lock_guard lock(fault_mutex);
  return current_fault;
}

} // namespace kiln::jitc::tier
