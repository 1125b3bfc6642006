#pragma once
// The mlp, attn and cnn workloads of /work/shared/bench/WORKLOADS.md written as kiln::nn modules, whose
// parameter names are the reference weights.safetensors' names, so the files load unchanged.
#include <kiln/nn.hpp>
#include <memory>
#include <string>

namespace kiln::tools {

// The module form of a workload, or null when it has none (ewchain has no weights; resnet18 and
// mobilenet_v2 are written with the functional API only).
std::shared_ptr<nn::Module> workload_module(const std::string& name);

} // namespace kiln::tools
