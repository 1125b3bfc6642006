#include "interp/eager.hpp"
#include "interp/extension_runner.hpp"
#include "interp/kernel_table.hpp"
#include "interp/kernels/kernel_support.hpp"
#include "interp/op_selection.hpp"
#include "ir/ops.hpp"

namespace kiln::interp {

using exec::Kernel;
using exec::KernelArgs;
using exec::View;

namespace {

// The runner of an extension op (null for every other op kind).
std::shared_ptr<const exec::StepRunner> eager_extension_runner(const ir::Op& op,
                                                               const std::vector<ir::ValueType>& operand_types,
                                                               const std::vector<ir::ValueType>& result_types) {
  if (op.kind != ir::OpKind::custom) return nullptr;
  return make_extension_runner(op, operand_types, result_types);
}

} // namespace

// Outputs are fresh tensors sized from the inferred types.
std::vector<Tensor> run_eager_op(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                 const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc) {
  // Kernels see an ir::Op; numbered operands and results keep its arity equal to the views'.
  std::vector<ir::ValueType> operand_types;
  for (const Tensor& input : inputs)
    operand_types.push_back({input.dtype(), input.shape(), false});
  ir::Op op{kind, {}, {}, attrs, loc, ir::decode_params(kind, attrs, operand_types)};
  for (size_t i = 0; i < inputs.size(); ++i)
    op.operands.push_back(ir::ValueId(i));
  for (size_t i = 0; i < result_types.size(); ++i)
    op.results.push_back(ir::ValueId(inputs.size() + i));
  if (kind == ir::OpKind::constant) return {ir::params_of<ir::ConstantParams>(op).value};
  Kernel kernel = kernel_for(kind);
  std::shared_ptr<const exec::StepRunner> runner = eager_extension_runner(op, operand_types, result_types);
  if (!kernel && !runner && !ir::has_trait(kind, ir::kNoKernel)) refuse_unbuilt_op(op);
  if (!kernel && !runner)
    throw Error(ErrorKind::unsupported, ir::op_place(op) + ": not available in eager mode (only inside a graph)");

  std::vector<std::vector<int64_t>> dims;
  dims.reserve(inputs.size() + result_types.size());
  std::vector<View> views;
  views.reserve(inputs.size() + result_types.size());
  for (const Tensor& input : inputs) {
    dims.push_back(input.dims());
    views.push_back(View{const_cast<void*>(input.raw_data()), input.dtype(), dims.back()});
  }
  std::vector<Tensor> outputs;
  for (const ir::ValueType& type : result_types) {
    dims.push_back(static_dims(type.shape));
    outputs.push_back(Tensor::empty(dims.back(), type.dtype));
    views.push_back(View{outputs.back().raw_data(), type.dtype, dims.back()});
  }
  std::span<const View> all(views);
  if (runner) {
    std::vector<std::byte> scratch(runner->scratch_bytes());
    runner->run(all.first(inputs.size()), all.subspan(inputs.size()), scratch);
    return outputs;
  }
  const std::span<const View> in = all.first(inputs.size()), out = all.subspan(inputs.size());
  const exec::PreparedState prepared = prepare_kernel(op, in, out);
  std::vector<std::byte> scratch(kernel_scratch_bytes(op, in, out));
  kernel(KernelArgs{op, in, out, scratch, prepared.get()});
  return outputs;
}

} // namespace kiln::interp
