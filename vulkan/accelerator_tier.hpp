#pragma once
#include "exec/implementation_list.hpp"
#include "exec/plan_executable.hpp"
#include "exec/tier_backend.hpp"
#include "runtime/tier_set.hpp"
#include "vulkan/device.hpp"
#include <memory>
#include <vector>

namespace kiln::vulkan {

// The accelerator tier's executable of a static graph: the interpreter's plan executor over steps
// where each run of consecutive ops the device takes (op_kernels.hpp) is one DeviceRegion, and every
// other op runs on the CPU, as the interpreter's list picks (`interpreter`: that backend's lists),
// with the region's inputs and outputs crossing between them. `walks`: per op, the device's verdict
// and, for an op left to the CPU, the interpreter's walk after it (KILN_LOG=jit prints them).
struct AcceleratorBuild {
  std::unique_ptr<exec::PlanExecutable> executable;
  std::vector<exec::ImplementationWalk> walks;
};
AcceleratorBuild build_accelerator_executable(std::shared_ptr<const ir::Function> graph,
                                              const runtime::WeightMap& weights, std::shared_ptr<Device> device,
                                              const exec::StepImplementations& interpreter);

// The tier "accelerator" on the device KILN_DEVICE picks (Device::open_default when it first
// builds; where there is none, each build is a kiln::Error(unsupported) saying why, so promotion
// fails and the interpreter keeps serving).
runtime::Tier accelerator_tier(const exec::TierBackend& interpreter);

} // namespace kiln::vulkan
