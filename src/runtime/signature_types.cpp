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
    output_dims_.push_back(static_dims(graph.type_of(out).shape));
  }
}

namespace {

// The first byte of a concrete tensor (has_type checked it is one).
const std::byte* data_of(const Tensor& tensor) { return static_cast<const std::byte*>(tensor.impl()->data); }

} // namespace

// Inlined into the loops below: the warm call checks each of its tensors with it.
[[gnu::always_inline]] inline bool SignatureTypes::has_type(const Tensor& tensor, const Value& value,
                                                            const int64_t* dims) {
  // Concrete tensors are all on cpu:0 today; the full check (CallableCore) compares devices.
  const detail::TensorImpl* impl = tensor.impl().get(); // read in place: no call per tensor
  if (!impl || impl->graph) return false;
  const TensorLayout& layout = impl->layout;
  const Shape& shape = layout.shape;
  if (layout.dtype != value.dtype || shape.size() != value.rank) return false;
  for (size_t d = 0; d < value.rank; ++d)
    if (shape[d].size() != dims[d] || shape[d].is_symbolic()) return false;
  return true;
}

bool SignatureTypes::arguments_match(std::span<const Tensor> inputs) const {
  if (inputs.size() != arguments_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!has_type(inputs[i], arguments_[i], dims_.data() + arguments_[i].first_dim)) return false;
  return true;
}

bool SignatureTypes::call_fits(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const {
  if (outputs.size() != outputs_.size() || inputs.size() != arguments_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!has_type(inputs[i], arguments_[i], dims_.data() + arguments_[i].first_dim)) return false;
  auto overlap = [](const std::byte* a, size_t a_bytes, const std::byte* b, size_t b_bytes) {
    return a_bytes && b_bytes && a < b + b_bytes && b < a + a_bytes;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value& out = outputs_[i];
    if (!has_type(outputs[i], out, dims_.data() + out.first_dim)) return false;
    const std::byte* data = data_of(outputs[i]);
    for (size_t a = 0; a < inputs.size(); ++a) // the inputs matched the arguments already
      if (overlap(data, out.bytes, data_of(inputs[a]), arguments_[a].bytes)) return false;
    for (size_t other = 0; other < i; ++other)
      if (overlap(data, out.bytes, data_of(outputs[other]), outputs_[other].bytes)) return false;
  }
  return true;
}

// As Tensor::empty, with the storage and its owner in one allocation (the sizes were checked when
// the signature was built). Allocated unaligned and aligned by hand: an aligned allocation costs
// the allocator several times more.
void SignatureTypes::make_outputs(std::span<Tensor> outputs) const {
  constexpr size_t kAlignment = 64;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    std::shared_ptr<std::byte[]> block = std::make_shared_for_overwrite<std::byte[]>(outputs_[i].bytes + kAlignment);
    void* data = block.get();
    size_t space = outputs_[i].bytes + kAlignment;
    std::align(kAlignment, outputs_[i].bytes, data, space);
    outputs[i] = Tensor::wrap(data, output_dims_[i], outputs_[i].dtype, std::move(block));
  }
}

} // namespace kiln::runtime
