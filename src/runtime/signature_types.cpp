#include "runtime/signature_types.hpp"
#include "core/tensor_impl.hpp"
#include <algorithm>
#include <kiln/dtype.hpp>
#include <memory>

namespace kiln::runtime {

SignatureTypes::SignatureTypes(const ir::Function& graph) {
  auto add = [&](ir::ValueId id, std::vector<Value>& to) {
    const std::vector<int64_t> dims = static_dims(graph.type_of(id).shape);
    to.push_back({graph.type_of(id).dtype, dims_.size(), dims.size(),
                  size_t(numel_of(dims)) * dtype_size(graph.type_of(id).dtype)});
    dims_.insert(dims_.end(), dims.begin(), dims.end());
  };
  for (ir::ValueId arg : graph.args)
    add(arg, arguments_);
  for (ir::ValueId out : graph.outputs) {
    add(out, outputs_);
    output_layouts_.emplace_back(graph.type_of(out).dtype, graph.type_of(out).shape);
  }
}

// Inlined into the loops below: the warm call checks each of its tensors with it, and reads its
// data pointer on the way.
[[gnu::always_inline]] inline bool SignatureTypes::has_type(const Tensor& tensor, const Value& value,
                                                            const int64_t* dims, void*& data) {
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

bool SignatureTypes::bind_arguments(std::span<const Tensor> inputs, std::span<void*> data) const {
  if (inputs.size() != arguments_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!has_type(inputs[i], arguments_[i], dims_.data() + arguments_[i].first_dim, data[i])) return false;
  return true;
}

bool SignatureTypes::bind(std::span<const Tensor> inputs, std::span<const Tensor> outputs,
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

// As Tensor::empty, the data and its tensor in one allocation (the sizes were checked when the
// signature was built).
void SignatureTypes::make_outputs(std::span<Tensor> outputs, std::span<void*> output_data) const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    std::shared_ptr<detail::TensorImpl> impl = detail::make_concrete_impl(output_layouts_[i], outputs_[i].bytes);
    output_data[i] = impl->data;
    outputs[i] = Tensor(std::move(impl));
  }
}

} // namespace kiln::runtime
