#include "jit/elementwise/register_allocator.hpp"
#include <algorithm>
#include <kiln/error.hpp>
#include <limits>

namespace kiln::jitc {

namespace {
constexpr size_t kNever = std::numeric_limits<size_t>::max();
}

RegisterAllocator::RegisterAllocator(const Region& region, int num_registers, Listener& listener)
    : region_(region), listener_(listener), uses_(region.nodes.size() + region.inputs.size()),
      holder_(size_t(num_registers), -1), pinned_(size_t(num_registers), false), register_of_(uses_.size(), -1),
      spilled_(uses_.size(), false) {
  for (size_t i = 0; i < region.nodes.size(); ++i)
    for (int32_t arg : region.nodes[i].args)
      uses_[size_t(value_of_arg(arg))].push_back(i);
}

int RegisterAllocator::value_of_arg(int32_t arg) const {
  if (arg >= 0) return arg;
  return int(region_.nodes.size()) + int(-int64_t(arg) - 1);
}

bool RegisterAllocator::rematerialisable(int value) const {
  return size_t(value) >= region_.nodes.size() || region_.nodes[size_t(value)].kind == ir::OpKind::constant;
}

size_t RegisterAllocator::next_use(int value, size_t position) const {
  const auto& uses = uses_[size_t(value)];
  auto it = std::lower_bound(uses.begin(), uses.end(), position);
  return it == uses.end() ? kNever : *it;
}

int RegisterAllocator::acquire(size_t position) {
  int victim = -1;
  size_t victim_use = 0;
  for (size_t r = 0; r < holder_.size(); ++r) {
    if (pinned_[r]) continue;
    if (holder_[r] < 0) {
      victim = int(r);
      break;
    }
    size_t use = next_use(holder_[r], position);
    if (victim < 0 || use > victim_use) {
      victim = int(r);
      victim_use = use;
    }
  }
  if (victim < 0) throw Error(ErrorKind::internal, "jit elementwise: an op needs more vector registers than exist");
  int value = holder_[size_t(victim)];
  if (value >= 0) {
    if (!rematerialisable(value) && !spilled_[size_t(value)] && next_use(value, position) != kNever) {
      listener_.spill(victim, value);
      spilled_[size_t(value)] = true;
    }
    register_of_[size_t(value)] = -1;
    holder_[size_t(victim)] = -1;
  }
  pinned_[size_t(victim)] = true;
  return victim;
}

int RegisterAllocator::materialise(int value, size_t position) {
  int reg = register_of_[size_t(value)];
  if (reg < 0) {
    reg = acquire(position);
    listener_.load(reg, value);
    bind(reg, value);
  }
  pinned_[size_t(reg)] = true;
  return reg;
}

void RegisterAllocator::bind(int reg, int value) {
  holder_[size_t(reg)] = value;
  register_of_[size_t(value)] = reg;
}

void RegisterAllocator::release(int reg) {
  int value = holder_[size_t(reg)];
  if (value >= 0) register_of_[size_t(value)] = -1;
  holder_[size_t(reg)] = -1;
  pinned_[size_t(reg)] = false;
}

void RegisterAllocator::release_if_dead(int value, size_t position) {
  int reg = register_of_[size_t(value)];
  if (reg >= 0 && next_use(value, position) == kNever) release(reg);
}

void RegisterAllocator::unpin_all() { std::fill(pinned_.begin(), pinned_.end(), false); }

} // namespace kiln::jitc
