#pragma once
// The benchmark workloads of /work/shared/bench/WORKLOADS.md (mlp, ewchain, attn, cnn, and
// torchvision's resnet18 and mobilenet_v2 with BatchNorm kept as ops) written with kiln's API. Weights are
// F::constant_external under PyTorch's state_dict names and layouts, so the reference weights.safetensors files load
// into a registry unchanged.
#include <cstdint>
#include <kiln/kiln.hpp>
#include <map>
#include <string>
#include <vector>

namespace kiln::tools {

// "mlp", "ewchain", "attn", "cnn", "resnet18", "mobilenet_v2", in that order.
const std::vector<std::string>& workload_names();
// Throws kiln::Error(spec) naming the known workloads when `name` is not one of them.
void check_workload_name(const std::string& name);

// The input spec: symbolic "batch" leading dim (ewchain: symbolic "rows" and "width", since its
// reference case and its benchmark case differ in width).
TensorLayout workload_input_layout(const std::string& name);
// Every weight the workload declares, by PyTorch name (empty for ewchain).
std::map<std::string, TensorLayout> workload_weight_layouts(const std::string& name);

// The forward function: builds the workload's graph on x (symbolic while tracing).
Tensor workload_forward(const std::string& name, const Tensor& x);
// stage(workload_forward)(workload_input_layout(name)), named after the workload.
StagedGraph stage_workload(const std::string& name);

// Random weights with PyTorch's default initialisation ranges (uniform ±1/sqrt(fan_in); LayerNorm
// and BatchNorm weight 1, bias 0; BatchNorm running mean 0, variance 1), the same for the same seed.
std::map<std::string, Tensor> deterministic_weights(const std::string& name, uint64_t seed);

// Concrete input dims of the benchmark cases: mlp b1/b8/b64, ewchain [64, 65536], attn b1/b8, cnn b1/b8,
// resnet18 and mobilenet_v2 b1/b4 at 224x224.
std::vector<std::vector<int64_t>> benchmark_input_dims(const std::string& name);

} // namespace kiln::tools
