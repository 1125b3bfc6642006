#pragma once
#include <cstdint>
#include <initializer_list>
#include <kiln/functional.hpp>
#include <kiln/tensor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

// PyTorch-style modules over kiln's functional API: the parameter names, shapes and default
// hyperparameters of torch.nn, so a torch state_dict (or its safetensors file) loads unchanged.
// Modules run eagerly on concrete tensors and trace on symbolic ones, where each parameter enters the
// graph as F::constant_external under its full name: compile a module with
//   kiln::compile([&](const Tensor& x) { return model(x); }, {.weights = model.state_dict()})(layout)
// and its graph reads the module's own tensors, without copies.
namespace kiln::nn {

// A node of a module tree: named parameters, buffers (state that is not learned, like BatchNorm's
// running statistics) and submodules. Full names join the path from the root with dots
// ("encoder.layers.0.fc1.weight"); they are computed when asked, so registering a module into a
// parent after its own children were registered names them all right. Modules are neither copied nor
// moved (children point to their parent); hold them in std::shared_ptr. Loading replaces tensor
// handles, so it must not race a forward on another thread. A callable compiled with
// {.weights = state_dict()} keeps the tensors it was given; to follow reloads, keep the weights in its
// session's registry instead (weights().set_all(model.state_dict()), again after each load).
class Module {
public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // Children that outlive their parent (held elsewhere) become roots.
  virtual ~Module();

  // The module's computation on one input. The default throws kiln::Error(unsupported) naming the
  // module: containers and modules of several inputs do not have one.
  virtual Tensor forward(const Tensor& input);
  // The computation on any number of inputs, for callers that handle every module alike: trace
  // [&](const std::vector<Tensor>& xs) { return m.forward_inputs(xs); } with a std::vector of
  // layouts. The default requires one input and calls forward(input).
  virtual Tensor forward_inputs(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // Parameters of the whole tree, in registration order, children after their parent's own.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // Every parameter and buffer of the tree by full name: the tensors themselves, not copies. Unlike
  // torch, names count from the root whichever module is asked, so a submodule's state_dict() holds
  // the names a graph traced through it reads.
  std::map<std::string, Tensor> state_dict() const;
  // Replaces parameters and buffers by the tensors of `state` (zero-copy: the module keeps the
  // handles). Each entry's dtype and shape must equal the current tensor's. With strict, names the
  // tree has and `state` lacks (missing) and names `state` has and the tree lacks (unexpected) are
  // errors too. All problems are reported at once, by name, in one kiln::Error(weight); nothing is
  // replaced when there is one. Names a module declares ignored (BatchNorm2d's num_batches_tracked)
  // are never unexpected.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);
  // load_state_dict of a safetensors file's tensors, zero-copy (views of the file's mapping).
  void load_safetensors(const std::string& path, bool strict = true);
  // Writes state_dict() with kiln::save_safetensors, which replaces the file atomically.
  void to_safetensors(const std::string& path) const;

  // The full name of this module ("" for a root) and of its parameter or buffer `local_name`.
  std::string full_name() const;
  std::string full_name(const std::string& local_name) const;
  // The parameter or buffer `local_name` of this module (kiln::Error(weight) naming it when absent).
  const Tensor& tensor(const std::string& local_name) const;
  bool has_tensor(const std::string& local_name) const;

protected:
  // Registration, in the order named_parameters and named_buffers list them. Names are unique within a module and hold
  // no dots; breaking either is a kiln::Error(spec).
  void register_parameter(const std::string& name, Tensor value);
  void register_buffer(const std::string& name, Tensor value);
  template <class M> std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    attach(name, module);
    return module;
  }
  // A state_dict entry load_state_dict accepts and drops (PyTorch state that inference does not use).
  void ignore_when_loading(const std::string& name);

  // The parameter or buffer `name` as a forward needs it for `input`: the tensor itself when input is
  // concrete (eager mode), F::constant_external(full name, its layout) when input is symbolic
  // (tracing), so the graph reads the weight from the registry under the module's name.
  Tensor weight_for(const Tensor& input, const std::string& name,
                    std::source_location loc = std::source_location::current()) const;
  // weight_for when the module has the tensor, else an undefined tensor ("none" for F:: functions).
  Tensor optional_weight_for(const Tensor& input, const std::string& name,
                             std::source_location loc = std::source_location::current()) const;

  // "module 'encoder.fc1'" or "the root module", for error messages.
  std::string describe() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

private:
  void attach(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  const Tensor* find_tensor(const std::string& local_name) const;
  void replace(const std::string& path, const Tensor& value);
  void collect_named(bool buffers, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_ignored(std::vector<std::string>& out) const;

  const Module* parent_ = nullptr;
  std::string name_in_parent_;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::string> ignored_when_loading_;
};

// Initialisation: Linear and convolution weights and biases are uniform in ±1/sqrt(fan_in) (PyTorch's
// ranges) from a fixed seed, Embedding weights standard normal from a fixed seed, norms' weights 1
// and biases 0, BatchNorm2d's running mean 0 and variance 1: deterministic, and meant to be replaced
// by loaded weights. MultiheadAttention's in_proj_weight is initialised as a Linear's weight, its
// in_proj_bias 0.

// y = x Wᵀ + b; weight [out_features, in_features], bias [out_features].
class Linear : public Module {
public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
};

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};
// torch's Conv1d on [N, C, L]: weight [out_channels, in_channels / groups, kernel_size], bias
// [out_channels]. Zero padding only.
class Conv1d : public Module {
public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv1dOptions options = {});
  Tensor forward(const Tensor& input) override;

private:
  F::Conv1dOptions conv_;
};

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};
// NCHW; weight [out_channels, in_channels / groups, kh, kw], bias [out_channels]. Zero padding only.
class Conv2d : public Module {
public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv2dOptions options = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options = {});
  Tensor forward(const Tensor& input) override;

private:
  F::Conv2dOptions conv_;
};

struct ConvTranspose2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> output_padding{0, 0};
  int64_t groups = 1;
  bool bias = true;
  std::vector<int64_t> dilation{1, 1};
};
// torch's ConvTranspose2d on NCHW: weight [in_channels, out_channels / groups, kh, kw], bias
// [out_channels], torch's state_dict names and layouts; zero padding only.
class ConvTranspose2d : public Module {
public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
                  ConvTranspose2dOptions options = {});
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ConvTranspose2dOptions options = {});
  Tensor forward(const Tensor& input) override;

private:
  F::ConvTranspose2dOptions conv_;
};

// torch's Upsample on NCHW (F::interpolate), mode "nearest" or "bilinear".
class Upsample : public Module {
public:
  explicit Upsample(F::InterpolateOptions options) : options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override { return F::interpolate(input, options_); }

private:
  F::InterpolateOptions options_;
};

// NCHW max pooling (torch's MaxPool2d without dilation or ceil_mode); padding never wins the max.
class MaxPool2d : public Module {
public:
  explicit MaxPool2d(F::Pool2dOptions options) : options_(std::move(options)) {}
  Tensor forward(const Tensor& input) override { return F::max_pool2d(input, options_); }

private:
  F::Pool2dOptions options_;
};

// torch's AdaptiveAvgPool2d on NCHW (F::adaptive_avg_pool2d); output_size {oh, ow}.
class AdaptiveAvgPool2d : public Module {
public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> output_size) : output_size_(std::move(output_size)) {}
  Tensor forward(const Tensor& input) override { return F::adaptive_avg_pool2d(input, output_size_); }

private:
  std::vector<int64_t> output_size_;
};

// Inference BatchNorm2d: normalises with the running statistics (buffers running_mean and
// running_var), then the affine weight and bias (absent when affine is false). PyTorch's
// num_batches_tracked counts training steps, which inference never reads: a loaded state_dict may hold
// it (it is ignored) and state_dict() does not list it (torch's load_state_dict accepts that).
class BatchNorm2d : public Module {
public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;

private:
  double eps_;
};

// torch's GroupNorm (F::group_norm): weight [num_channels] 1 and bias 0 when affine.
class GroupNorm : public Module {
public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;

private:
  int64_t num_groups_;
  double eps_;
};

// torch's InstanceNorm2d without running statistics (track_running_stats false, its default):
// F::instance_norm of an NCHW input; weight [num_features] 1 and bias 0 when affine (torch's
// default is false).
class InstanceNorm2d : public Module {
public:
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, bool affine = false);
  Tensor forward(const Tensor& input) override;

private:
  double eps_;
};

// Normalises over the trailing axes, whose sizes are normalized_shape; weight and bias have that
// shape (absent when elementwise_affine is false; bias absent when bias is false).
class LayerNorm : public Module {
public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  explicit LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& input) override;

private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
};

// x / sqrt(mean(x², last axis) + eps) * weight. eps nullopt, as in PyTorch, is the input dtype's
// machine epsilon.
class RMSNorm : public Module {
public:
  explicit RMSNorm(int64_t normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;

private:
  std::optional<double> eps_;
};

// weight [num_embeddings, embedding_dim]; forward maps integer indices of any shape to
// indices.shape + [embedding_dim].
class Embedding : public Module {
public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
};

// The identity: kiln runs inference, where dropout does nothing.
class Dropout : public Module {
public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override { return input; }
};

// torch.nn.MultiheadAttention without masks or attention weights: in_proj_weight [3E, E],
// in_proj_bias [3E], out_proj (a Linear of E to E). Inputs are [L, N, E] (query) and [S, N, E] (key,
// value), or [N, L, E] and [N, S, E] with batch_first; the result has the query's shape.
class MultiheadAttention : public Module {
public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias = true, bool batch_first = false);
  using Module::forward; // the one-input forward, which throws: attention takes three
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value);
  Tensor operator()(const Tensor& query, const Tensor& key, const Tensor& value) { return forward(query, key, value); }
  // Requires three inputs: query, key, value.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

private:
  Tensor project(const Tensor& x, int64_t part) const;
  Tensor split_heads(const Tensor& x) const;
  void check_input(const Tensor& x, const char* role) const;

  int64_t embed_dim_, num_heads_;
  bool batch_first_;
  std::shared_ptr<Linear> out_proj_;
};

// Children named "0", "1", ... in order, without a forward of its own (the parent iterates them).
class ModuleList : public Module {
public:
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  // kiln::Error(spec) naming the list when index is out of range.
  Module& operator[](size_t index) const;
};

// A ModuleList whose forward feeds each child's output to the next.
class Sequential : public ModuleList {
public:
  using ModuleList::ModuleList;
  Tensor forward(const Tensor& input) override;
};

// Activations, each the F:: function of the same name.
class ReLU : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::relu(input); }
};
// min(max(x, 0), 6).
class ReLU6 : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::clamp(input, 0.0, 6.0); }
};
// approximate: "none" (erf form) or "tanh".
class GELU : public Module {
public:
  explicit GELU(std::string approximate = "none") : approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& input) override { return F::gelu(input, approximate_); }

private:
  std::string approximate_;
};
class SiLU : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::silu(input); }
};
class Sigmoid : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::sigmoid(input); }
};
class Tanh : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::tanh(input); }
};
// relu6(x + 3) / 6.
class Hardsigmoid : public Module {
public:
  Tensor forward(const Tensor& input) override { return F::hardsigmoid(input); }
};
class Identity : public Module {
public:
  Tensor forward(const Tensor& input) override { return input; }
};

} // namespace kiln::nn
