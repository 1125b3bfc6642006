#pragma once
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

  // Whether `inputs` are concrete tensors of exactly the arguments' types.
  bool arguments_match(std::span<const Tensor> inputs) const;
  // arguments_match(inputs), and `outputs` are concrete tensors of exactly the outputs' types, none
  // sharing memory with an input or another output. False: the full checks name why.
  bool call_fits(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const;
  size_t num_outputs() const { return outputs_.size(); }
  // Fresh, uninitialised tensors for the outputs, into `outputs` (num_outputs() of them).
  void make_outputs(std::span<Tensor> outputs) const;

private:
  struct Value {
    DType dtype = DType::f32;
    size_t first_dim = 0, rank = 0;
    size_t bytes = 0;
  };
  static bool has_type(const Tensor& tensor, const Value& value, const int64_t* dims);
  std::vector<Value> arguments_, outputs_;
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> output_dims_; // as Tensor::empty takes them
};

} // namespace kiln::runtime
