#pragma once
#include "exec/plan.hpp"
#include "exec/step_runner.hpp"
#include "ir/graph.hpp"
#include "runtime/weight_forms.hpp"
#include "vulkan/device.hpp"
#include "vulkan/op_kernels.hpp"
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::vulkan {

// A run of consecutive ops of a graph that the accelerator takes, as one step of the plan: its
// inputs are uploaded once per call (values the plan computes once, weights and constants, once:
// see bind_constants), its ops run as one submission of dispatches, and only the values read after
// it are downloaded. The values it uploads, makes and downloads live in one device arena, placed by
// the interpreter's arena planner over the dispatches (values never live at once share bytes);
// calls from several threads take turns on it.
class DeviceRegion final : public exec::StepRunner {
public:
  // One dispatch: the kernel of one op, or of a fused run of elementwise ops; binding i of its
  // shader is bindings[i] (an op's operands then results; a fused run's inputs then outputs).
  struct Kernel {
    std::vector<ir::OpId> ops;
    OpKernel kernel;
    std::vector<ir::ValueId> bindings;
  };
  // `inputs` and `outputs` are the step's operands and results (values of `graph`) in order;
  // `constant_inputs` says which inputs never change between calls (weights, constants). Values
  // are stored in device memory as `storage` says (f16: converted on upload and download).
  DeviceRegion(std::shared_ptr<Device> device, const ir::Function& graph, const std::vector<Kernel>& kernels,
               std::vector<ir::ValueId> inputs, std::vector<ir::ValueId> outputs, std::vector<bool> constant_inputs,
               Storage storage = Storage::f32);

  // Gives each constant input the device copy of its value in `plan`: a weight's (or what the plan
  // computed from weights alone) is shared through `forms` under its key, so every signature and
  // executable reading one weight version uploads it once; an embedded constant's is the region's
  // own. Called once, after the plan is built and before any run; constants it did not give (no
  // call) are uploaded at the first run instead.
  void bind_constants(const exec::ExecutionPlan& plan, runtime::WeightForms* forms);

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override;
  // Device memory the region holds: its arena's peak and the copies of its constant inputs (shared
  // ones included).
  size_t device_bytes() const override;
  size_t arena_bytes() const { return arena_bytes_; }

private:
  struct Placed { // where a value lives on the device
    const Buffer* buffer = nullptr;
    size_t offset = 0, bytes = 0;
  };
  size_t stored_bytes(const ir::Function& graph, ir::ValueId value) const;
  void place_in_arena(const ir::Function& graph, const std::vector<Kernel>& kernels);
  // Host f32 elements to and from device memory, converted under f16 storage.
  void upload(const Placed& place, const void* data) const;
  void download(const Placed& place, void* data) const;
  void bind_dispatches(); // each dispatch's buffer ranges from places_

  std::shared_ptr<Device> device_;
  Storage storage_;
  std::vector<ir::ValueId> inputs_, outputs_;
  std::vector<bool> constant_inputs_;
  std::map<ir::ValueId, Placed> places_; // every value it binds, uploads or downloads
  std::shared_ptr<Buffer> arena_;
  size_t arena_bytes_ = 0;
  std::vector<std::shared_ptr<const Buffer>> constants_; // constant inputs' copies, shared or own
  std::vector<std::shared_ptr<const vulkan::Kernel>> kernels_;
  std::vector<Dispatch> dispatches_;
  std::vector<std::vector<ir::ValueId>> dispatch_values_; // each dispatch's bindings
  mutable std::mutex mutex_;
  mutable bool constants_uploaded_ = false;
  mutable std::vector<uint16_t> staging_; // f16 storage: a value converted on the host
};

} // namespace kiln::vulkan
