#pragma once
// The workloads of /work/shared/bench/WORKLOADS.md that have weights written as kiln::nn modules, whose
// parameter names are the reference weights.safetensors' names (torchvision's for resnet18 and
// mobilenet_v2), so the files load unchanged.
#include <kiln/nn.hpp>
#include <memory>
#include <string>

namespace kiln::tools {

// The module form of a workload, or null when it has none (ewchain, which has no weights).
std::shared_ptr<nn::Module> workload_module(const std::string& name);

} // namespace kiln::tools
