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

} // namespace

std::shared_ptr<nn::Module> workload_module(const std::string& name) {
  check_workload_name(name);
  if (name == "mlp") return std::make_shared<Mlp>();
  if (name == "attn") return std::make_shared<AttentionBlock>();
  if (name == "cnn") return std::make_shared<Cnn>();
  return nullptr;
}

} // namespace kiln::tools
