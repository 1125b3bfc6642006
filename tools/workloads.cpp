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

void add_conv_without_bias(std::vector<WeightSpec>& specs, const std::string& name, int64_t in, int64_t out, int64_t k,
                           int64_t groups = 1) {
  specs.push_back({name + ".weight", {out, in / groups, k, k}, in / groups * k * k});
}

// Identity statistics and affine, so deterministic weights keep activations in range.
void add_batch_norm(std::vector<WeightSpec>& specs, const std::string& name, int64_t channels) {
  specs.push_back({name + ".weight", {channels}, 1, Init::ones});
  specs.push_back({name + ".bias", {channels}, 1, Init::zeros});
  specs.push_back({name + ".running_mean", {channels}, 1, Init::zeros});
  specs.push_back({name + ".running_var", {channels}, 1, Init::ones});
}

void add_layer_norm(std::vector<WeightSpec>& specs, const std::string& name, int64_t width) {
  specs.push_back({name + ".weight", {width}, 1, Init::ones});
  specs.push_back({name + ".bias", {width}, 1, Init::zeros});
}

// torchvision's BasicBlock of resnet18: layer<n>.<i>, with a 1x1 downsample when the shape changes.
struct BasicBlock {
  std::string prefix;
  int64_t in, out, stride;
  bool downsample() const { return stride != 1 || in != out; }
};

std::vector<BasicBlock> resnet18_blocks() {
  std::vector<BasicBlock> blocks;
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const std::string name = "layer" + std::to_string(layer + 1);
    blocks.push_back({name + ".0", in, widths[layer], layer == 0 ? 1 : 2});
    blocks.push_back({name + ".1", widths[layer], widths[layer], 1});
    in = widths[layer];
  }
  return blocks;
}

void add_resnet18(std::vector<WeightSpec>& specs) {
  add_conv_without_bias(specs, "conv1", 3, 64, 7);
  add_batch_norm(specs, "bn1", 64);
  for (const BasicBlock& b : resnet18_blocks()) {
    add_conv_without_bias(specs, b.prefix + ".conv1", b.in, b.out, 3);
    add_batch_norm(specs, b.prefix + ".bn1", b.out);
    add_conv_without_bias(specs, b.prefix + ".conv2", b.out, b.out, 3);
    add_batch_norm(specs, b.prefix + ".bn2", b.out);
    if (!b.downsample()) continue;
    add_conv_without_bias(specs, b.prefix + ".downsample.0", b.in, b.out, 1);
    add_batch_norm(specs, b.prefix + ".downsample.1", b.out);
  }
  add_linear(specs, "fc", 512, 1000);
}

// torchvision's InvertedResidual of mobilenet_v2: features.<n>, expansion 1 having no expand conv.
struct InvertedResidual {
  std::string prefix;
  int64_t in, hidden, out, stride;
  bool expands() const { return hidden != in; }
  bool residual() const { return stride == 1 && in == out; }
  // Sub-modules of `prefix.conv`, numbered after the optional expand conv.
  std::string module(int index) const { return prefix + ".conv." + std::to_string(index + (expands() ? 1 : 0)); }
  std::string depthwise() const { return module(0); }
  std::string project_conv() const { return module(1); }
  std::string project_norm() const { return module(2); }
};

constexpr int64_t kMobileNetStem = 32, kMobileNetLast = 1280;

// torchvision 0.14's inverted_residual_setting (t, c, n, s) at width 1.0.
std::vector<InvertedResidual> mobilenet_v2_blocks() {
  struct Stage {
    int64_t expansion, channels, repeats, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::vector<InvertedResidual> blocks;
  int64_t in = kMobileNetStem;
  for (const Stage& s : stages)
    for (int64_t i = 0; i < s.repeats; ++i) {
      const std::string prefix = "features." + std::to_string(blocks.size() + 1);
      blocks.push_back({prefix, in, in * s.expansion, s.channels, i == 0 ? s.stride : 1});
      in = s.channels;
    }
  return blocks;
}

std::string mobilenet_v2_last_conv() { return "features." + std::to_string(mobilenet_v2_blocks().size() + 1); }

void add_mobilenet_v2(std::vector<WeightSpec>& specs) {
  add_conv_without_bias(specs, "features.0.0", 3, kMobileNetStem, 3);
  add_batch_norm(specs, "features.0.1", kMobileNetStem);
  for (const InvertedResidual& b : mobilenet_v2_blocks()) {
    if (b.expands()) {
      add_conv_without_bias(specs, b.prefix + ".conv.0.0", b.in, b.hidden, 1);
      add_batch_norm(specs, b.prefix + ".conv.0.1", b.hidden);
    }
    add_conv_without_bias(specs, b.depthwise() + ".0", b.hidden, b.hidden, 3, b.hidden);
    add_batch_norm(specs, b.depthwise() + ".1", b.hidden);
    add_conv_without_bias(specs, b.project_conv(), b.hidden, b.out, 1);
    add_batch_norm(specs, b.project_norm(), b.out);
  }
  add_conv_without_bias(specs, mobilenet_v2_last_conv() + ".0", mobilenet_v2_blocks().back().out, kMobileNetLast, 1);
  add_batch_norm(specs, mobilenet_v2_last_conv() + ".1", kMobileNetLast);
  add_linear(specs, "classifier.1", kMobileNetLast, 1000);
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
  } else if (name == "resnet18") {
    add_resnet18(specs);
  } else if (name == "mobilenet_v2") {
    add_mobilenet_v2(specs);
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
  Tensor conv2d_without_bias(const Tensor& x, const std::string& layer, const F::Conv2dOptions& options,
                             Loc loc = Loc::current()) const {
    return F::conv2d(x, (*this)(layer + ".weight", loc), Tensor(), options, loc);
  }
  // Inference BatchNorm2d with PyTorch's default eps, kept as an op for kiln's compiler to fold.
  Tensor batch_norm(const Tensor& x, const std::string& layer, Loc loc = Loc::current()) const {
    return F::batch_norm(x, (*this)(layer + ".running_mean", loc), (*this)(layer + ".running_var", loc),
                         (*this)(layer + ".weight", loc), (*this)(layer + ".bias", loc), 1e-5, loc);
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

Tensor basic_block(const Weights& w, const Tensor& x, const BasicBlock& b) {
  const F::Conv2dOptions first{.stride = {b.stride, b.stride}, .padding = {1, 1}};
  Tensor h = F::relu(w.batch_norm(w.conv2d_without_bias(x, b.prefix + ".conv1", first), b.prefix + ".bn1"));
  h = w.batch_norm(w.conv2d_without_bias(h, b.prefix + ".conv2", {.padding = {1, 1}}), b.prefix + ".bn2");
  Tensor identity = x;
  if (b.downsample()) {
    const F::Conv2dOptions one_by_one{.stride = {b.stride, b.stride}};
    identity =
        w.batch_norm(w.conv2d_without_bias(x, b.prefix + ".downsample.0", one_by_one), b.prefix + ".downsample.1");
  }
  return F::relu(h + identity);
}

Tensor resnet18_forward(const Tensor& x) {
  Weights w("resnet18");
  Tensor h = F::relu(w.batch_norm(w.conv2d_without_bias(x, "conv1", {.stride = {2, 2}, .padding = {3, 3}}), "bn1"));
  h = F::max_pool2d(h, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  for (const BasicBlock& b : resnet18_blocks())
    h = basic_block(w, h, b);
  return w.linear(F::mean(h, {2, 3}), "fc"); // adaptive average pool to 1x1, flattened: [batch, 512]
}

// torchvision's Conv2dNormActivation with ReLU6: conv `layer.0`, BatchNorm `layer.1`.
Tensor conv_bn_relu6(const Weights& w, const Tensor& x, const std::string& layer, const F::Conv2dOptions& options) {
  return F::clamp(w.batch_norm(w.conv2d_without_bias(x, layer + ".0", options), layer + ".1"), 0.0, 6.0);
}

Tensor inverted_residual(const Weights& w, const Tensor& x, const InvertedResidual& b) {
  Tensor h = b.expands() ? conv_bn_relu6(w, x, b.prefix + ".conv.0", {}) : x;
  h = conv_bn_relu6(w, h, b.depthwise(), {.stride = {b.stride, b.stride}, .padding = {1, 1}, .groups = b.hidden});
  h = w.batch_norm(w.conv2d_without_bias(h, b.project_conv(), {}), b.project_norm());
  return b.residual() ? x + h : h;
}

Tensor mobilenet_v2_forward(const Tensor& x) {
  Weights w("mobilenet_v2");
  Tensor h = conv_bn_relu6(w, x, "features.0", {.stride = {2, 2}, .padding = {1, 1}});
  for (const InvertedResidual& b : mobilenet_v2_blocks())
    h = inverted_residual(w, h, b);
  h = conv_bn_relu6(w, h, mobilenet_v2_last_conv(), {});
  return w.linear(F::mean(h, {2, 3}), "classifier.1"); // classifier.0 is Dropout: the identity in eval
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
  static const std::vector<std::string> names{"mlp", "ewchain", "attn", "cnn", "resnet18", "mobilenet_v2"};
  return names;
}

void check_workload_name(const std::string& name) {
  for (const std::string& known : workload_names())
    if (known == name) return;
  std::string known;
  for (const std::string& n : workload_names())
    known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::spec, "unknown workload '" + name + "': expected one of " + known);
}

TensorLayout workload_input_layout(const std::string& name) {
  check_workload_name(name);
  if (name == "mlp") return TensorLayout(DType::f32, {"batch", 256});
  if (name == "ewchain") return TensorLayout(DType::f32, {"rows", "width"});
  if (name == "attn") return TensorLayout(DType::f32, {"batch", kAttnSeq, kAttnModel});
  if (name == "cnn") return TensorLayout(DType::f32, {"batch", 3, 64, 64});
  return TensorLayout(DType::f32, {"batch", 3, 224, 224});
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
  if (name == "cnn") return cnn_forward(x);
  if (name == "resnet18") return resnet18_forward(x);
  return mobilenet_v2_forward(x);
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
  if (name == "cnn") return {{1, 3, 64, 64}, {8, 3, 64, 64}};
  return {{1, 3, 224, 224}, {4, 3, 224, 224}};
}

} // namespace kiln::tools
