#include "workload_modules.hpp"
#include "workloads.hpp"
#include <cmath>

namespace kiln::tools {

namespace {

class Mlp : public nn::Module {
public:
  Tensor forward(const Tensor& x) override { return (*fc3_)(gelu_((*fc2_)(gelu_((*fc1_)(x))))); }

private:
  std::shared_ptr<nn::Linear> fc1_ = register_module("fc1", std::make_shared<nn::Linear>(256, 1024));
  std::shared_ptr<nn::Linear> fc2_ = register_module("fc2", std::make_shared<nn::Linear>(1024, 1024));
  std::shared_ptr<nn::Linear> fc3_ = register_module("fc3", std::make_shared<nn::Linear>(1024, 10));
  nn::GELU gelu_;
};

constexpr int64_t kModel = 256, kHeads = 4, kHeadDim = 64, kFfn = 1024;

// WORKLOADS.md's post-norm encoder block, its self-attention projecting q, k and v with one Linear.
class AttentionBlock : public nn::Module {
public:
  Tensor forward(const Tensor& x) override {
    const Tensor h = (*ln1_)(x + (*out_)(attention_context(x)));
    return (*ln2_)(h + (*ff2_)(F::relu((*ff1_)(h))));
  }

private:
  // [batch, S, D] -> [batch, S, D], before the output projection.
  Tensor attention_context(const Tensor& x) {
    const Dim batch = x.shape()[0], seq = x.shape()[1];
    const Tensor qkv = (*qkv_)(x).reshape({batch, seq, 3, kHeads, kHeadDim});
    std::vector<Tensor> parts = F::split(qkv.permute({2, 0, 3, 1, 4}), {1, 1, 1}, 0); // each [1, batch, H, S, dh]
    const Tensor q = F::squeeze(parts[0], {0}), k = F::squeeze(parts[1], {0}), v = F::squeeze(parts[2], {0});
    const Tensor scores = F::matmul(q, k.transpose(2, 3)) * (1.0 / std::sqrt(double(kHeadDim)));
    return F::matmul(F::softmax(scores, -1), v).transpose(1, 2).reshape({batch, seq, kModel});
  }

  std::shared_ptr<nn::Linear> qkv_ = register_module("qkv", std::make_shared<nn::Linear>(kModel, 3 * kModel));
  std::shared_ptr<nn::Linear> out_ = register_module("out", std::make_shared<nn::Linear>(kModel, kModel));
  std::shared_ptr<nn::LayerNorm> ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(kModel));
  std::shared_ptr<nn::Linear> ff1_ = register_module("ff1", std::make_shared<nn::Linear>(kModel, kFfn));
  std::shared_ptr<nn::Linear> ff2_ = register_module("ff2", std::make_shared<nn::Linear>(kFfn, kModel));
  std::shared_ptr<nn::LayerNorm> ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(kModel));
};

class Cnn : public nn::Module {
public:
  Tensor forward(const Tensor& x) override {
    Tensor h = F::relu((*c1_)(x));
    h = F::relu((*c2_)(h));
    h = F::relu((*c3_)(h));
    return (*fc_)(F::mean(h, {2, 3})); // global average pool: [batch, 64]
  }

private:
  std::shared_ptr<nn::Conv2d> c1_ = register_module("c1", std::make_shared<nn::Conv2d>(3, 32, 3, padded(1)));
  std::shared_ptr<nn::Conv2d> c2_ = register_module("c2", std::make_shared<nn::Conv2d>(32, 64, 3, padded(2)));
  std::shared_ptr<nn::Conv2d> c3_ = register_module("c3", std::make_shared<nn::Conv2d>(64, 64, 3, padded(1)));
  std::shared_ptr<nn::Linear> fc_ = register_module("fc", std::make_shared<nn::Linear>(64, 10));

  static nn::Conv2dOptions padded(int64_t stride) { return {.stride = {stride, stride}, .padding = {1, 1}}; }
};

using Modules = std::initializer_list<std::shared_ptr<nn::Module>>;

nn::Conv2dOptions without_bias(int64_t stride, int64_t padding, int64_t groups = 1) {
  return {.stride = {stride, stride}, .padding = {padding, padding}, .groups = groups, .bias = false};
}

// torchvision's BasicBlock: conv1 bn1 relu conv2 bn2, plus a 1x1 downsample when the shape changes.
class BasicBlock : public nn::Module {
public:
  BasicBlock(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, without_bias(stride, 1)))),
        bn1_(register_module("bn1", std::make_shared<nn::BatchNorm2d>(out))),
        conv2_(register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, without_bias(1, 1)))),
        bn2_(register_module("bn2", std::make_shared<nn::BatchNorm2d>(out))) {
    if (stride == 1 && in == out) return;
    downsample_ = register_module("downsample", std::make_shared<nn::Sequential>(Modules{
                                                    std::make_shared<nn::Conv2d>(in, out, 1, without_bias(stride, 0)),
                                                    std::make_shared<nn::BatchNorm2d>(out)}));
  }
  Tensor forward(const Tensor& x) override {
    const Tensor h = (*bn2_)((*conv2_)(F::relu((*bn1_)((*conv1_)(x)))));
    return F::relu(h + (downsample_ ? (*downsample_)(x) : x));
  }

private:
  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::BatchNorm2d> bn1_;
  std::shared_ptr<nn::Conv2d> conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn2_;
  std::shared_ptr<nn::Sequential> downsample_; // null when the block keeps its input's shape
};

// torchvision 0.14's resnet18: layer<n> holds two BasicBlocks, the first of layers 2-4 at stride 2.
class ResNet18 : public nn::Module {
public:
  ResNet18() {
    int64_t in = 64;
    for (int64_t layer = 0; layer < 4; ++layer) {
      const int64_t width = 64 << layer, stride = layer == 0 ? 1 : 2;
      layers_.push_back(
          register_module("layer" + std::to_string(layer + 1),
                          std::make_shared<nn::Sequential>(Modules{std::make_shared<BasicBlock>(in, width, stride),
                                                                   std::make_shared<BasicBlock>(width, width, 1)})));
      in = width;
    }
    fc_ = register_module("fc", std::make_shared<nn::Linear>(512, 1000));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*maxpool_)(F::relu((*bn1_)((*conv1_)(x))));
    for (const std::shared_ptr<nn::Sequential>& layer : layers_)
      h = (*layer)(h);
    return (*fc_)(F::mean(h, {2, 3})); // adaptive average pool to 1x1, flattened: [batch, 512]
  }

private:
  std::shared_ptr<nn::Conv2d> conv1_ =
      register_module("conv1", std::make_shared<nn::Conv2d>(3, 64, 7, without_bias(2, 3)));
  std::shared_ptr<nn::BatchNorm2d> bn1_ = register_module("bn1", std::make_shared<nn::BatchNorm2d>(64));
  std::shared_ptr<nn::MaxPool2d> maxpool_ = register_module(
      "maxpool",
      std::make_shared<nn::MaxPool2d>(F::Pool2dOptions{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}));
  std::vector<std::shared_ptr<nn::Sequential>> layers_;
  std::shared_ptr<nn::Linear> fc_;
};

// torchvision's Conv2dNormActivation with ReLU6: conv `0` (padding keeps the size), BatchNorm `1`.
std::shared_ptr<nn::Sequential> conv_bn_relu6(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                              int64_t groups = 1) {
  return std::make_shared<nn::Sequential>(
      Modules{std::make_shared<nn::Conv2d>(in, out, kernel, without_bias(stride, (kernel - 1) / 2, groups)),
              std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU6>()});
}

// torchvision's InvertedResidual: conv = [expand 1x1,] depthwise 3x3, project 1x1 and its BatchNorm.
class InvertedResidual : public nn::Module {
public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expansion) : residual_(stride == 1 && in == out) {
    const int64_t hidden = in * expansion;
    if (expansion != 1) conv_->push_back(conv_bn_relu6(in, hidden, 1, 1));
    conv_->push_back(conv_bn_relu6(hidden, hidden, 3, stride, hidden));
    conv_->push_back(std::make_shared<nn::Conv2d>(hidden, out, 1, without_bias(1, 0)));
    conv_->push_back(std::make_shared<nn::BatchNorm2d>(out));
  }
  Tensor forward(const Tensor& x) override { return residual_ ? x + (*conv_)(x) : (*conv_)(x); }

private:
  bool residual_;
  std::shared_ptr<nn::Sequential> conv_ = register_module("conv", std::make_shared<nn::Sequential>());
};

// torchvision 0.14's mobilenet_v2 at width 1.0: features.0 to features.18, classifier (Dropout, Linear).
class MobileNetV2 : public nn::Module {
public:
  MobileNetV2() {
    struct Stage {
      int64_t expansion, channels, repeats, stride;
    };
    const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                            {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    features_->push_back(conv_bn_relu6(3, 32, 3, 2));
    int64_t in = 32;
    for (const Stage& s : stages)
      for (int64_t i = 0; i < s.repeats; ++i) {
        features_->push_back(std::make_shared<InvertedResidual>(in, s.channels, i == 0 ? s.stride : 1, s.expansion));
        in = s.channels;
      }
    features_->push_back(conv_bn_relu6(in, 1280, 1, 1));
  }
  Tensor forward(const Tensor& x) override { return (*classifier_)(F::mean((*features_)(x), {2, 3})); }

private:
  std::shared_ptr<nn::Sequential> features_ = register_module("features", std::make_shared<nn::Sequential>());
  std::shared_ptr<nn::Sequential> classifier_ =
      register_module("classifier", std::make_shared<nn::Sequential>(Modules{
                                        std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(1280, 1000)}));
};

} // namespace

std::shared_ptr<nn::Module> workload_module(const std::string& name) {
  check_workload_name(name);
  if (name == "mlp") return std::make_shared<Mlp>();
  if (name == "attn") return std::make_shared<AttentionBlock>();
  if (name == "cnn") return std::make_shared<Cnn>();
  if (name == "resnet18") return std::make_shared<ResNet18>();
  if (name == "mobilenet_v2") return std::make_shared<MobileNetV2>();
  return nullptr;
}

} // namespace kiln::tools
