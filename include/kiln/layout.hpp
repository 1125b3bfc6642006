#pragma once
#include <kiln/device.hpp>
#include <kiln/dtype.hpp>
#include <kiln/shape.hpp>

namespace kiln {

// Spec of a read-only tensor argument (MAX's TensorType): dtype, dims (static or symbolic), device.
struct TensorLayout {
  DType dtype = DType::f32;
  Shape shape;
  Device device = CPU();

  TensorLayout() = default;
  TensorLayout(DType dtype, Shape shape, Device device = CPU())
      : dtype(dtype), shape(std::move(shape)), device(device) {}
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  std::string to_string() const; // "f32 [batch, 2] on cpu:0"
  friend bool operator==(const TensorLayout&, const TensorLayout&) = default;
};

// Spec of a mutable buffer argument: the graph may store into it with F::buffer_store.
struct BufferLayout : TensorLayout {
  using TensorLayout::TensorLayout;
};

} // namespace kiln
