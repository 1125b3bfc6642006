#pragma once
#include "core/inlinable.hpp"
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
  KILN_INLINABLE bool bind_arguments(std::span<const Tensor> inputs, std::span<void*> data) const;
  // bind_arguments(inputs, data), and `outputs` are concrete tensors of exactly the outputs' types,
  // none sharing memory with an input or another output; their first bytes follow the inputs' in
  // `data` (num_bound() in all). False: the full checks name why.
  bool bind(std::span<const Tensor> inputs, std::span<const Tensor> outputs, std::span<void*> data) const;
  // Fresh, uninitialised tensors for the outputs, into `outputs` (num_outputs() of them), their
  // first bytes into `output_data`.
  void make_outputs(std::span<Tensor> outputs, std::span<void*> output_data) const;

private:
  struct Value {
    DType dtype = DType::f32;
    size_t first_dim = 0, rank = 0;
    size_t bytes = 0;
  };
  static bool has_type(const Tensor& tensor, const Value& value, const int64_t* dims, void*& data);
  std::vector<Value> arguments_, outputs_;
  std::vector<int64_t> dims_;
  std::vector<TensorLayout> output_layouts_;
};

} // namespace kiln::runtime
