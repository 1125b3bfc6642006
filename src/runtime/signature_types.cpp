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
