#include "interp/extension_runner.hpp"
#include "ir/custom_ops.hpp"
#include "ir/extension_shape.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <array>

namespace kiln::interp {

using exec::View;

namespace {

// The C tensors of one kernel call: on the stack for up to 16 of them, so a warm call allocates nothing.
class CTensors {
public:
  explicit CTensors(std::span<const View> views) : size_(views.size()) {
    if (size_ > local_.size()) heap_.resize(size_);
    data_ = size_ <= local_.size() ? local_.data() : heap_.data();
    for (size_t i = 0; i < size_; ++i) {
      kiln_ext_tensor& t = data_[i];
      t.desc.dtype = int32_t(views[i].dtype);
      t.desc.rank = int32_t(views[i].dims.size());
      std::copy(views[i].dims.begin(), views[i].dims.end(), t.desc.dims);
      t.data = views[i].data;
    }
  }
  kiln_ext_tensor* data() { return data_; }
  int32_t size() const { return int32_t(size_); }

private:
  size_t size_;
  std::array<kiln_ext_tensor, 16> local_;
  std::vector<kiln_ext_tensor> heap_;
  kiln_ext_tensor* data_;
};

class ExtensionRunner final : public exec::StepRunner {
public:
  ExtensionRunner(const ir::ExtensionOp& extension, const ir::Op& op)
      : extension_(extension), attrs_(op.attrs),
        where_("kiln.custom '" + extension.name + "' at " + op.loc.to_string()) {}

  void check_types(std::span<const ir::ValueType> operand_types, std::span<const ir::ValueType> result_types) const {
    std::vector<ir::ValueType> inferred = ir::infer_extension_op(extension_, attrs_, operand_types);
    if (inferred.size() != result_types.size())
      throw Error(ErrorKind::shape, where_ + ": the shape function gives " + std::to_string(inferred.size()) +
                                        " results, the graph has " + std::to_string(result_types.size()));
    for (size_t i = 0; i < inferred.size(); ++i)
      if (!(inferred[i].dtype == result_types[i].dtype && inferred[i].shape == result_types[i].shape))
        throw Error(ErrorKind::shape, where_ + ": the shape function gives " + ir::type_to_string(inferred[i]) +
                                          " for result " + std::to_string(i) + ", the graph has " +
                                          ir::type_to_string(result_types[i]));
  }

  void run(std::span<const View> inputs, std::span<const View> outputs, std::span<std::byte>) const override {
    CTensors in(inputs), out(outputs);
    char message[512];
    message[0] = '\0';
    const int status = extension_.run(extension_.user_data, attrs_.view(), in.data(), in.size(), out.data(), out.size(),
                                      message, sizeof message);
    if (status == 0) return;
    message[sizeof message - 1] = '\0';
    throw Error(
        ErrorKind::extension,
        where_ + ": the kernel failed: " +
            (message[0] ? std::string(message) : "it returned " + std::to_string(status) + " without a message"));
  }

private:
  const ir::ExtensionOp& extension_;
  ir::ExtensionAttrs attrs_;
  std::string where_;
};

} // namespace

std::shared_ptr<const exec::StepRunner> make_extension_runner(const ir::Op& op,
                                                              std::span<const ir::ValueType> operand_types,
                                                              std::span<const ir::ValueType> result_types) {
  const std::string name = ir::custom_op_name(op.attrs);
  const ir::ExtensionOp* extension = ir::find_extension_op(name);
  if (!extension) throw ir::unregistered_custom_op(name, op.loc);
  try {
    auto runner = std::make_shared<ExtensionRunner>(*extension, op);
    runner->check_types(operand_types, result_types);
    return runner;
  } catch (const ir::InferError& e) {
    throw Error(e.kind, "kiln.custom '" + name + "' at " + op.loc.to_string() + ": " + e.what());
  }
}

} // namespace kiln::interp
