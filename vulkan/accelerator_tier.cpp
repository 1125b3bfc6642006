#include "vulkan/accelerator_tier.hpp"
#include "exec/tier_walks.hpp"
#include "ir/ops.hpp"
#include "runtime/log.hpp"
#include "vulkan/device_region.hpp"
#include "vulkan/op_kernels.hpp"
#include <algorithm>
#include <set>

namespace kiln::vulkan {

namespace {

// Ops that make the plan's bound values (weights, literals, ranges) or that the plan executor runs
// itself: never the device's, and not a reason to end a region's run of ops either.
bool is_host_value(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::constant:
  case ir::OpKind::constant_external:
  case ir::OpKind::full:
  case ir::OpKind::arange: return true;
  default: return false;
  }
}

struct Partition {
  std::vector<exec::PlannedStep> steps;
  std::map<std::string, int> ops_per_lowering;
  std::vector<exec::ImplementationWalk> walks;
};

// The step of the region `ops` (consecutive device ops): its operands are the values it reads
// that are made outside it, its results the values it makes that are read after it or returned.
// `constant`: values that are the same at every call (uploaded once).
exec::LoweredStep region_step(const ir::Function& graph, std::vector<DeviceRegion::Op> ops,
                              const std::set<ir::ValueId>& constant, const std::shared_ptr<Device>& device) {
  std::set<ir::ValueId> made;
  for (const DeviceRegion::Op& op : ops)
    made.insert(graph.ops[op.id].results.begin(), graph.ops[op.id].results.end());
  std::vector<ir::ValueId> inputs;
  std::vector<bool> constant_inputs;
  for (const DeviceRegion::Op& op : ops)
    for (ir::ValueId v : graph.ops[op.id].operands)
      if (!made.contains(v) && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) {
        inputs.push_back(v);
        constant_inputs.push_back(constant.contains(v));
      }
  const ir::OpId last = ops.back().id;
  std::set<ir::ValueId> read_after(graph.outputs.begin(), graph.outputs.end());
  for (size_t id = last + 1; id < graph.ops.size(); ++id)
    read_after.insert(graph.ops[id].operands.begin(), graph.ops[id].operands.end());
  std::vector<ir::ValueId> outputs;
  for (const DeviceRegion::Op& op : ops)
    for (ir::ValueId v : graph.ops[op.id].results)
      if (read_after.contains(v)) outputs.push_back(v);
  const ir::OpId first = ops.front().id;
  auto runner =
      std::make_shared<DeviceRegion>(device, graph, std::move(ops), inputs, outputs, std::move(constant_inputs));
  return exec::LoweredStep{"vulkan", std::move(inputs), std::move(outputs), first, std::move(runner)};
}

Partition partition_for_device(const ir::Function& graph, const std::shared_ptr<Device>& device) {
  Partition partition;
  partition.walks.resize(graph.ops.size());
  std::vector<DeviceRegion::Op> region;
  std::set<ir::ValueId> constant; // weights, literals and what pure ops make of them alone
  auto close_region = [&] {
    if (region.empty()) return;
    partition.steps.push_back(region_step(graph, std::move(region), constant, device));
    region.clear();
  };
  for (size_t id = 0; id < graph.ops.size(); ++id) {
    const ir::Op& op = graph.ops[id];
    // The plan computes a pure op over constants once, when it is built (a weight's transpose):
    // left to it, its result is uploaded once instead of made on the device at every call.
    const bool over_constants =
        !op.operands.empty() && !ir::op_info(op.kind).has(ir::kSideEffects) &&
        std::all_of(op.operands.begin(), op.operands.end(), [&](ir::ValueId v) { return constant.contains(v); });
    if (is_host_value(op.kind) || over_constants) {
      close_region();
      constant.insert(op.results.begin(), op.results.end());
      partition.steps.push_back(ir::OpId(id));
      partition.walks[id] = {{"vulkan", "a constant the plan computes once on the host", {}}, {"interp", {}, {}}};
      continue;
    }
    std::variant<OpKernel, std::string> kernel = op_kernel(graph, ir::OpId(id));
    if (std::string* refusal = std::get_if<std::string>(&kernel)) {
      close_region();
      partition.steps.push_back(ir::OpId(id));
      // The interpreter's walk replaces the last verdict (exec::walks_through_interpreter).
      partition.walks[id] = {{"vulkan", *refusal, {}}, {"interp", {}, {}}};
      ++partition.ops_per_lowering["interp"];
      continue;
    }
    OpKernel& taken = std::get<OpKernel>(kernel);
    partition.walks[id].push_back({taken.implementation, std::nullopt, {}});
    ++partition.ops_per_lowering[taken.implementation];
    region.push_back({ir::OpId(id), std::move(taken)});
  }
  close_region();
  return partition;
}

} // namespace

AcceleratorBuild build_accelerator_executable(std::shared_ptr<const ir::Function> graph,
                                              const runtime::WeightMap& weights, std::shared_ptr<Device> device,
                                              const exec::StepImplementations& interpreter) {
  Partition partition = partition_for_device(*graph, device);
  exec::ExecutableOptions options{"accelerator", partition.steps, partition.ops_per_lowering};
  auto executable = std::make_unique<exec::PlanExecutable>(graph, weights, interpreter, std::move(options));
  std::vector<exec::ImplementationWalk> walks =
      exec::walks_through_interpreter(std::move(partition.walks), partition.steps, executable->plan());
  return {std::move(executable), std::move(walks)};
}

runtime::Tier accelerator_tier(const exec::TierBackend& interpreter) {
  runtime::ExecutableFactory make_executable =
      [&steps = interpreter.steps](std::shared_ptr<const ir::Function> graph,
                                   const runtime::WeightMap& weights) -> std::unique_ptr<runtime::Executable> {
    AcceleratorBuild build = build_accelerator_executable(graph, weights, Device::open_default(), steps);
    if (runtime::log_enabled(runtime::LogChannel::jit)) exec::log_walks(*graph, build.walks);
    return std::move(build.executable);
  };
  return {"accelerator", make_executable, {}};
}

} // namespace kiln::vulkan
