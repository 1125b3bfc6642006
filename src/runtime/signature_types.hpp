#pragma once
#include "core/tensor_impl.hpp"
#include "ir/graph.hpp"
#include <kiln/tensor.hpp>
#include <span>
#include <vector>

namespace kiln::runtime {

// The static types of one signature's arguments and outputs, flat (dtype, rank, sizes), so that a
// warm call checks its tensors by comparing integers.
class SignatureTypes {
public:
  SignatureTypes() = default;
  explicit SignatureTypes(const ir::Function& graph);

  // How many data pointers a call binds: one per argument, then one per output.
  size_t num_bound() const { return arguments_.size() + outputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // Whether `inputs` are concrete tensors of exactly the arguments' types; when they are, their
  // first bytes go to data[0, inputs.size()).
  [[gnu::always_inline]] bool bind_arguments(std::span<const Tensor> inputs, std::span<void*> data) const;
  // bind_arguments(inputs, data), and `outputs` are concrete tensors of exactly the outputs' types,
  // none sharing memory with an input or another output; their first bytes follow the inputs' in
  // `data` (num_bound() in all). False: the full checks name why.
  [[gnu::always_inline]] bool bind(std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                   std::span<void*> data) const;
  // Fresh, uninitialised tensors for the outputs, into `outputs` (num_outputs() of them), their
  // first bytes into `output_data`.
  void make_outputs(std::span<Tensor> outputs, std::span<void*> output_data) const;

private:
  struct Value {
    DType dtype = DType::f32;
    size_t first_dim = 0, rank = 0;
    size_t bytes = 0;
  };
  [[gnu::always_inline]] static bool has_type(const Tensor& tensor, const Value& value, const int64_t* dims,
                                              void*& data);
  std::vector<Value> arguments_, outputs_;
  std::vector<int64_t> dims_;
  std::vector<TensorLayout> output_layouts_;
};

// Defined here so the warm call (CallableCore::State::run_held) checks its tensors in its own
// frame: each tensor's type is compared and its data pointer read on the way.
inline bool SignatureTypes::has_type(const Tensor& tensor, const Value& value, const int64_t* dims, void*& data) {
  // Executables read host memory: an accelerator tensor (whose data is null) takes the full path,
  // which checks its device against the spec's (CallableCore).
  const detail::TensorImpl* impl = tensor.impl().get(); // read in place: no call per tensor
  if (!impl || impl->graph) return false;
  const TensorLayout& layout = impl->layout;
  const Shape& shape = layout.shape;
  if (layout.dtype != value.dtype || layout.device.kind != DeviceKind::cpu || shape.size() != value.rank) return false;
  for (size_t d = 0; d < value.rank; ++d)
    if (shape[d].size() != dims[d] || shape[d].is_symbolic()) return false;
  data = impl->data;
  return true;
}

inline bool SignatureTypes::bind_arguments(std::span<const Tensor> inputs, std::span<void*> data) const {
  if (inputs.size() != arguments_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!has_type(inputs[i], arguments_[i], dims_.data() + arguments_[i].first_dim, data[i])) return false;
  return true;
}

inline bool SignatureTypes::bind(std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                 std::span<void*> data) const {
  if (outputs.size() != outputs_.size() || !bind_arguments(inputs, data)) return false;
  auto overlap = [](const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
    const auto *x = static_cast<const std::byte*>(a), *y = static_cast<const std::byte*>(b);
    return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
  };
  void** output_data = data.data() + inputs.size();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value& out = outputs_[i];
    if (!has_type(outputs[i], out, dims_.data() + out.first_dim, output_data[i])) return false;
    for (size_t a = 0; a < inputs.size(); ++a)
      if (overlap(output_data[i], out.bytes, data[a], arguments_[a].bytes)) return false;
    for (size_t other = 0; other < i; ++other)
      if (overlap(output_data[i], out.bytes, output_data[other], outputs_[other].bytes)) return false;
  }
  return true;
}

} // namespace kiln::runtime
