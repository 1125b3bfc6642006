#include "core/value_text.hpp"
#include <kiln/tensor_summary.hpp>
#include <ostream>

namespace kiln {

namespace {

// numpy's print options: above kThreshold values, dims longer than 2 * kEdgeItems are elided.
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

// i64 is read as it is stored: a double would round values above 2^53.
std::string element_text(const Tensor& tensor, int64_t index) {
  if (tensor.dtype() == DType::i64) return std::to_string(tensor.data<int64_t>()[index]);
  return value_text(tensor.item_as_double(index), tensor.dtype());
}

class NestedPrinter {
public:
  NestedPrinter(std::ostream& out, const Tensor& tensor)
      : out_(out), tensor_(tensor), dims_(tensor.dims()), strides_(dims_.size(), 1),
        elide_(tensor.numel() > kThreshold) {
    for (size_t axis = dims_.size(); axis-- > 1;)
      strides_[axis - 1] = strides_[axis] * dims_[axis];
  }

  void print(size_t axis, int64_t offset) {
    if (axis == dims_.size()) {
      out_ << element_text(tensor_, offset);
      return;
    }
    const int64_t size = dims_[axis];
    const bool elided = elide_ && size > 2 * kEdgeItems;
    out_ << '[';
    for (int64_t i = 0; i < size; ++i) {
      if (elided && i == kEdgeItems) {
        out_ << ", ...";
        i = size - kEdgeItems;
      }
      if (i) out_ << ", ";
      print(axis + 1, offset + i * strides_[axis]);
    }
    out_ << ']';
  }

private:
  std::ostream& out_;
  const Tensor& tensor_;
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
  bool elide_;
};

} // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) return out << "tensor(<undefined>)";
  const TensorLayout layout = tensor.layout();
  if (tensor.is_symbolic())
    return out << "tensor(<symbolic " << dtype_name(layout.dtype) << " " << shape_to_string(layout.shape) << ">)";
  if (layout.device.kind != DeviceKind::cpu) // its values are on the device: to(CPU()) shows them
    return out << "tensor(<" << layout.to_string() << ">)";
  out << "tensor(";
  if (tensor.numel() == 0) {
    out << "[]";
    if (tensor.rank() != 1) out << ", shape=" << shape_to_string(layout.shape);
  } else {
    NestedPrinter(out, tensor).print(0, 0);
  }
  return out << ", " << dtype_name(layout.dtype) << ")";
}

} // namespace kiln
