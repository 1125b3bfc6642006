#include "vulkan/accelerator_tier.hpp"
#include "core/environment.hpp"
#include "exec/tier_walks.hpp"
#include "ir/ops.hpp"
#include "runtime/log.hpp"
#include "vulkan/device_region.hpp"
#include "vulkan/op_kernels.hpp"
#include <algorithm>
#include <set>

namespace kiln::vulkan {

namespace {

// Ops that make the plan's bound values (weights, literals, filled tensors, ranges): the plan makes
// them on the host once, so they are never the device's, and they do not end a region.
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
  Storage storage = Storage::f32; // of every region's values
  std::vector<exec::PlannedStep> steps;
  std::map<std::string, int> ops_per_lowering;
  std::vector<exec::ImplementationWalk> walks;
  std::vector<std::shared_ptr<DeviceRegion>> regions; // their constants are bound once the plan is built
};

// An op of a region and the kernel op_kernel made for it.
struct RegionOp {
  ir::OpId id;
  OpKernel kernel;
};

// The values ops [first, last] of `graph` make and that an op after `last` reads, or the graph
// returns.
std::vector<ir::ValueId> read_after(const ir::Function& graph, std::span<const ir::OpId> ops) {
  std::set<ir::ValueId> later(graph.outputs.begin(), graph.outputs.end());
  for (size_t id = ops.back() + 1; id < graph.ops.size(); ++id)
    later.insert(graph.ops[id].operands.begin(), graph.ops[id].operands.end());
  std::vector<ir::ValueId> out;
  for (ir::OpId id : ops)
    for (ir::ValueId v : graph.ops[id].results)
      if (later.contains(v)) out.push_back(v);
  return out;
}

// The values `ops` read that none of them makes, each once, in order of first use.
std::vector<ir::ValueId> read_from_outside(const ir::Function& graph, std::span<const ir::OpId> ops) {
  std::set<ir::ValueId> made;
  for (ir::OpId id : ops)
    made.insert(graph.ops[id].results.begin(), graph.ops[id].results.end());
  std::vector<ir::ValueId> in;
  for (ir::OpId id : ops)
    for (ir::ValueId v : graph.ops[id].operands)
      if (!made.contains(v) && std::find(in.begin(), in.end(), v) == in.end()) in.push_back(v);
  return in;
}

// The region's dispatches: each run of two or more consecutive elementwise ops over one iteration
// space becomes one fused kernel (its intermediates never reach memory), every other op its own.
std::vector<DeviceRegion::Kernel> region_kernels(const ir::Function& graph, std::vector<RegionOp> ops) {
  std::vector<DeviceRegion::Kernel> kernels;
  auto single = [&](RegionOp& op) {
    std::vector<ir::ValueId> bindings = graph.ops[op.id].operands;
    bindings.insert(bindings.end(), graph.ops[op.id].results.begin(), graph.ops[op.id].results.end());
    kernels.push_back({{op.id}, std::move(op.kernel), std::move(bindings)});
  };
  auto space = [&](const RegionOp& op) { return graph.type_of(graph.ops[op.id].results.at(0)).shape; };
  for (size_t i = 0; i < ops.size();) {
    size_t end = i + 1;
    if (ops[i].kernel.implementation == "vulkan.elementwise")
      while (end < ops.size() && ops[end].kernel.implementation == "vulkan.elementwise" &&
             space(ops[end]) == space(ops[i]))
        ++end;
    std::vector<ir::OpId> run;
    for (size_t k = i; k < end; ++k)
      run.push_back(ops[k].id);
    if (run.size() > 1) {
      const std::vector<ir::ValueId> inputs = read_from_outside(graph, run), outputs = read_after(graph, run);
      std::variant<OpKernel, std::string> fused = fused_elementwise_kernel(graph, run, inputs, outputs);
      if (OpKernel* kernel = std::get_if<OpKernel>(&fused)) {
        std::vector<ir::ValueId> bindings = inputs;
        bindings.insert(bindings.end(), outputs.begin(), outputs.end());
        kernels.push_back({run, std::move(*kernel), std::move(bindings)});
        i = end;
        continue;
      }
    }
    for (size_t k = i; k < end; ++k)
      single(ops[k]);
    i = end;
  }
  return kernels;
}

// The step of the region `ops` (consecutive device ops): its operands are the values it reads
// that are made outside it, its results the values it makes that are read after it or returned.
// `constant`: values that are the same at every call (uploaded once). Records who took each op.
exec::LoweredStep region_step(const ir::Function& graph, std::vector<RegionOp> ops,
                              const std::set<ir::ValueId>& constant, const std::shared_ptr<Device>& device,
                              Partition& partition) {
  std::vector<ir::OpId> ids;
  for (const RegionOp& op : ops)
    ids.push_back(op.id);
  std::vector<ir::ValueId> inputs = read_from_outside(graph, ids), outputs = read_after(graph, ids);
  std::vector<bool> constant_inputs;
  for (ir::ValueId v : inputs)
    constant_inputs.push_back(constant.contains(v));
  const std::vector<DeviceRegion::Kernel> kernels = region_kernels(graph, std::move(ops));
  for (const DeviceRegion::Kernel& kernel : kernels)
    for (ir::OpId id : kernel.ops) {
      partition.walks[id].push_back({kernel.kernel.implementation, std::nullopt, {}});
      ++partition.ops_per_lowering[kernel.kernel.implementation];
    }
  auto runner = std::make_shared<DeviceRegion>(device, graph, kernels, inputs, outputs, std::move(constant_inputs),
                                               partition.storage);
  partition.regions.push_back(runner);
  return exec::LoweredStep{"vulkan", std::move(inputs), std::move(outputs), ids.front(), std::move(runner)};
}

// How the regions store values: f16 where KILN_ACCELERATOR_STORAGE=f16 asks and the device has 16-bit
// storage and arithmetic; else f32, and KILN_LOG=jit says why when f16 was asked.
Storage storage_for(const Device& device) {
  if (env::accelerator_storage().value_or("f32") != "f16") return Storage::f32;
  if (device.info().shader_float16) return Storage::f16;
  runtime::log_line(runtime::LogChannel::jit, "vulkan: KILN_ACCELERATOR_STORAGE=f16, but " + device.info().name +
                                                  " has no f16 storage and arithmetic; values are stored as f32");
  return Storage::f32;
}

Partition partition_for_device(const ir::Function& graph, const std::shared_ptr<Device>& device) {
  Partition partition;
  partition.storage = storage_for(*device);
  partition.walks.resize(graph.ops.size());
  std::vector<RegionOp> region;
  std::set<ir::ValueId> constant; // weights, literals and what pure ops make of them alone
  // Constants met inside a region: their steps go before it (they read only constants), so a
  // literal between two device ops does not split the region.
  std::vector<exec::PlannedStep> hoisted;
  auto close_region = [&] {
    partition.steps.insert(partition.steps.end(), hoisted.begin(), hoisted.end());
    hoisted.clear();
    if (region.empty()) return;
    partition.steps.push_back(region_step(graph, std::move(region), constant, device, partition));
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
      constant.insert(op.results.begin(), op.results.end());
      std::vector<exec::PlannedStep>& steps = region.empty() ? partition.steps : hoisted;
      steps.emplace_back(std::in_place_type<ir::OpId>, ir::OpId(id));
      partition.walks[id] = {{"vulkan", "a constant the plan computes once on the host", {}}, {"interp", {}, {}}};
      continue;
    }
    std::variant<OpKernel, std::string> kernel = op_kernel(graph, ir::OpId(id));
    if (std::string* refusal = std::get_if<std::string>(&kernel)) {
      close_region();
      partition.steps.emplace_back(std::in_place_type<ir::OpId>, ir::OpId(id));
      // The interpreter's walk replaces the last verdict (exec::walks_through_interpreter).
      partition.walks[id] = {{"vulkan", *refusal, {}}, {"interp", {}, {}}};
      ++partition.ops_per_lowering["interp"];
      continue;
    }
    region.push_back({ir::OpId(id), std::move(std::get<OpKernel>(kernel))});
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
  for (const std::shared_ptr<DeviceRegion>& region : partition.regions)
    region->bind_constants(executable->plan(), weights.forms());
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
