#include "workloads.hpp"
#include <cmath>

namespace kiln::tools {

namespace {

using Loc = std::source_location;

enum class Init { uniform_fan_in, ones, zeros };

struct WeightSpec {
  std::string name;
  std::vector<int64_t> dims;
  int64_t fan_in = 1; // PyTorch initialises Linear and Conv2d uniformly in ±1/sqrt(fan_in)
  Init init = Init::uniform_fan_in;
};

void add_linear(std::vector<WeightSpec>& specs, const std::string& name, int64_t in, int64_t out) {
  specs.push_back({name + ".weight", {out, in}, in});
  specs.push_back({name + ".bias", {out}, in});
}

void add_conv(std::vector<WeightSpec>& specs, const std::string& name, int64_t in, int64_t out, int64_t k) {
  specs.push_back({name + ".weight", {out, in, k, k}, in * k * k});
  specs.push_back({name + ".bias", {out}, in * k * k});
}

void add_layer_norm(std::vector<WeightSpec>& specs, const std::string& name, int64_t width) {
  specs.push_back({name + ".weight", {width}, 1, Init::ones});
  specs.push_back({name + ".bias", {width}, 1, Init::zeros});
}

constexpr int64_t kAttnSeq = 128, kAttnModel = 256, kAttnHeads = 4, kAttnHeadDim = 64, kAttnFfn = 1024;

std::vector<WeightSpec> weight_specs(const std::string& name) {
  check_workload_name(name);
  std::vector<WeightSpec> specs;
  if (name == "mlp") {
    add_linear(specs, "fc1", 256, 1024);
    add_linear(specs, "fc2", 1024, 1024);
    add_linear(specs, "fc3", 1024, 10);
  } else if (name == "attn") {
    add_linear(specs, "qkv", kAttnModel, 3 * kAttnModel);
    add_linear(specs, "out", kAttnModel, kAttnModel);
    add_layer_norm(specs, "ln1", kAttnModel);
    add_linear(specs, "ff1", kAttnModel, kAttnFfn);
    add_linear(specs, "ff2", kAttnFfn, kAttnModel);
    add_layer_norm(specs, "ln2", kAttnModel);
  } else if (name == "cnn") {
    add_conv(specs, "c1", 3, 32, 3);
    add_conv(specs, "c2", 32, 64, 3);
    add_conv(specs, "c3", 64, 64, 3);
    add_linear(specs, "fc", 64, 10);
  }
  return specs;
}

// Declares the workload's weights by name, recording the caller's line in the graph.
class Weights {
public:
  explicit Weights(const std::string& workload) : layouts_(workload_weight_layouts(workload)) {}
  Tensor operator()(const std::string& name, Loc loc = Loc::current()) const {
    return F::constant_external(name, layouts_.at(name), loc);
  }
  Tensor linear(const Tensor& x, const std::string& layer, Loc loc = Loc::current()) const {
    return F::linear(x, (*this)(layer + ".weight", loc), (*this)(layer + ".bias", loc), loc);
  }
  Tensor layer_norm(const Tensor& x, const std::string& layer, Loc loc = Loc::current()) const {
    return F::layer_norm(x, (*this)(layer + ".weight", loc), (*this)(layer + ".bias", loc), 1e-5, -1, loc);
  }
  Tensor conv2d(const Tensor& x, const std::string& layer, const F::Conv2dOptions& options,
                Loc loc = Loc::current()) const {
    return F::conv2d(x, (*this)(layer + ".weight", loc), (*this)(layer + ".bias", loc), options, loc);
  }

private:
  std::map<std::string, TensorLayout> layouts_;
};

Tensor mlp_forward(const Tensor& x) {
  Weights w("mlp");
  Tensor h = F::gelu(w.linear(x, "fc1"));
  h = F::gelu(w.linear(h, "fc2"));
  return w.linear(h, "fc3");
}

Tensor ewchain_forward(const Tensor& x) { return F::tanh(x * 1.5 + 0.25) * F::sigmoid(x) - 0.1 * x; }

// Multi-head self-attention of WORKLOADS.md, before the output projection: [batch, S, D] -> [batch, S, D].
Tensor attention_context(const Weights& w, const Tensor& x) {
  Tensor qkv = w.linear(x, "qkv").reshape({"batch", kAttnSeq, 3, kAttnHeads, kAttnHeadDim});
  std::vector<Tensor> parts = F::split(qkv.permute({2, 0, 3, 1, 4}), {1, 1, 1}, 0); // each [1, batch, H, S, dh]
  Tensor q = F::squeeze(parts[0], {0}), k = F::squeeze(parts[1], {0}), v = F::squeeze(parts[2], {0});
  Tensor scores = F::matmul(q, k.transpose(2, 3)) * (1.0 / std::sqrt(double(kAttnHeadDim)));
  Tensor context = F::matmul(F::softmax(scores, -1), v); // [batch, H, S, dh]
  return context.transpose(1, 2).reshape({"batch", kAttnSeq, kAttnModel});
}

Tensor attn_forward(const Tensor& x) {
  Weights w("attn");
  Tensor h = w.layer_norm(x + w.linear(attention_context(w, x), "out"), "ln1");
  Tensor ffn = w.linear(F::relu(w.linear(h, "ff1")), "ff2");
  return w.layer_norm(h + ffn, "ln2");
}

Tensor cnn_forward(const Tensor& x) {
  Weights w("cnn");
  Tensor h = F::relu(w.conv2d(x, "c1", {.padding = {1, 1}}));
  h = F::relu(w.conv2d(h, "c2", {.stride = {2, 2}, .padding = {1, 1}}));
  h = F::relu(w.conv2d(h, "c3", {.padding = {1, 1}}));
  return w.linear(F::mean(h, {2, 3}), "fc"); // global average pool: [batch, 64]
}

// A per-weight seed that depends on the weight's name, so adding a weight does not reseed the others.
uint64_t weight_seed(uint64_t seed, const std::string& name) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : name)
    hash = (hash ^ c) * 1099511628211ull;
  return seed ^ hash;
}

} // namespace

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> names{"mlp", "ewchain", "attn", "cnn"};
  return names;
}

void check_workload_name(const std::string& name) {
  for (const std::string& known : workload_names())
    if (known == name) return;
  throw Error(ErrorKind::spec, "unknown workload '" + name + "': expected one of mlp, ewchain, attn, cnn");
}

TensorLayout workload_input_layout(const std::string& name) {
  check_workload_name(name);
  if (name == "mlp") return TensorLayout(DType::f32, {"batch", 256});
  if (name == "ewchain") return TensorLayout(DType::f32, {"rows", "width"});
  if (name == "attn") return TensorLayout(DType::f32, {"batch", kAttnSeq, kAttnModel});
  return TensorLayout(DType::f32, {"batch", 3, 64, 64});
}

std::map<std::string, TensorLayout> workload_weight_layouts(const std::string& name) {
  std::map<std::string, TensorLayout> layouts;
  for (const WeightSpec& spec : weight_specs(name))
    layouts.emplace(spec.name, TensorLayout(DType::f32, shape_from_dims(spec.dims)));
  return layouts;
}

Tensor workload_forward(const std::string& name, const Tensor& x) {
  check_workload_name(name);
  if (name == "mlp") return mlp_forward(x);
  if (name == "ewchain") return ewchain_forward(x);
  if (name == "attn") return attn_forward(x);
  return cnn_forward(x);
}

StagedGraph stage_workload(const std::string& name) {
  auto forward = [name](const Tensor& x) { return workload_forward(name, x); };
  StageOptions options;
  options.name = name;
  return stage(forward, options)(workload_input_layout(name));
}

std::map<std::string, Tensor> deterministic_weights(const std::string& name, uint64_t seed) {
  std::map<std::string, Tensor> weights;
  for (const WeightSpec& spec : weight_specs(name)) {
    const float bound = float(1.0 / std::sqrt(double(spec.fan_in)));
    switch (spec.init) {
    case Init::uniform_fan_in:
      weights[spec.name] = Tensor::rand(spec.dims, weight_seed(seed, spec.name), -bound, bound);
      break;
    case Init::ones: weights[spec.name] = Tensor::ones(spec.dims); break;
    case Init::zeros: weights[spec.name] = Tensor::zeros(spec.dims); break;
    }
  }
  return weights;
}

std::vector<std::vector<int64_t>> benchmark_input_dims(const std::string& name) {
  check_workload_name(name);
  if (name == "mlp") return {{1, 256}, {8, 256}, {64, 256}};
  if (name == "ewchain") return {{64, 65536}};
  if (name == "attn") return {{1, kAttnSeq, kAttnModel}, {8, kAttnSeq, kAttnModel}};
  return {{1, 3, 64, 64}, {8, 3, 64, 64}};
}

} // namespace kiln::tools
