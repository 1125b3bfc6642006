#pragma once
#include "exec/step_runner.hpp"
#include "ir/graph.hpp"
#include "vulkan/device.hpp"
#include "vulkan/op_kernels.hpp"
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::vulkan {

// A run of consecutive ops of a graph that the accelerator takes, as one step of the plan: its
// inputs are uploaded once per call (values the plan computes once, weights and constants, once
// per runner), its ops run as one submission of dispatches, and only the values read after it are
// downloaded. Every value inside it lives in device memory the runner owns; calls from several
// threads take turns on it.
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
  // `constant_inputs` says which inputs never change between calls (weights, constants).
  DeviceRegion(std::shared_ptr<Device> device, const ir::Function& graph, const std::vector<Kernel>& kernels,
               std::vector<ir::ValueId> inputs, std::vector<ir::ValueId> outputs, std::vector<bool> constant_inputs);

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override;
  // Device memory the region holds: one buffer per value it reads or makes, the copies of its
  // constant inputs among them.
  size_t device_bytes() const override { return device_bytes_; }

private:
  std::shared_ptr<Device> device_;
  std::vector<std::shared_ptr<Buffer>> input_buffers_, output_buffers_;
  std::vector<size_t> input_bytes_, output_bytes_;
  std::vector<bool> constant_inputs_;
  std::vector<std::shared_ptr<Buffer>> buffers_; // every value's, intermediates included
  std::vector<std::shared_ptr<const vulkan::Kernel>> kernels_;
  std::vector<Dispatch> dispatches_;
  size_t device_bytes_ = 0;
  mutable std::mutex mutex_;
  mutable bool constants_uploaded_ = false;
};

} // namespace kiln::vulkan
