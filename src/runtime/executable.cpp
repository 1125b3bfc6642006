#include "runtime/executable.hpp"
#include <kiln/error.hpp>

namespace kiln::runtime {

bool has_type(const Tensor& tensor, const ir::ValueType& type) {
  if (!tensor.defined() || !tensor.is_concrete() || tensor.dtype() != type.dtype ||
      tensor.rank() != int64_t(type.shape.size()))
    return false;
  const Shape& shape = tensor.shape();
  for (size_t d = 0; d < type.shape.size(); ++d)
    if (!(shape[d] == type.shape[d])) return false;
  return true;
}

namespace {

struct ByteRange {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  bool overlaps(const ByteRange& other) const { return begin < other.end && other.begin < end; }
};

ByteRange bytes_of(const Tensor& tensor) {
  const auto* begin = static_cast<const std::byte*>(tensor.raw_data());
  return {begin, begin + tensor.nbytes()};
}

} // namespace

std::vector<Tensor> make_outputs(const ir::Function& graph) {
  std::vector<Tensor> outputs;
  outputs.reserve(graph.outputs.size());
  for (ir::ValueId value : graph.outputs) {
    const ir::ValueType& type = graph.type_of(value);
    outputs.push_back(Tensor::empty(static_dims(type.shape), type.dtype));
  }
  return outputs;
}

std::vector<Tensor> Executable::run(std::span<const Tensor> inputs, const RunOptions& options) const {
  std::vector<Tensor> outputs = make_outputs(graph());
  run_into(inputs, outputs, options);
  return outputs;
}

void Executable::run_bound(std::span<void* const> data, size_t thread_slot, std::span<std::byte> arena) const {
  (void)thread_slot;
  const ir::Function& fn = graph();
  auto wrap = [&](ir::ValueId value, void* first) {
    const ir::ValueType& type = fn.type_of(value);
    return Tensor::wrap(first, static_dims(type.shape), type.dtype);
  };
  std::vector<Tensor> inputs, outputs;
  for (size_t i = 0; i < fn.args.size(); ++i)
    inputs.push_back(wrap(fn.args[i], data[i]));
  for (size_t i = 0; i < fn.outputs.size(); ++i)
    outputs.push_back(wrap(fn.outputs[i], data[fn.args.size() + i]));
  run_into(inputs, outputs, {.arena = arena});
}

void check_call_outputs(const ir::Function& graph, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  if (outputs.size() != graph.outputs.size())
    throw Error(ErrorKind::spec, "@" + graph.name + " has " + std::to_string(graph.outputs.size()) + " outputs, " +
                                     std::to_string(outputs.size()) + " output tensors were given");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    const ir::ValueType& type = graph.type_of(graph.outputs[i]);
    auto where = [&] { return "output " + std::to_string(i) + ": "; };
    if (!out.defined() || !out.is_concrete())
      throw Error(ErrorKind::spec, where() + "expected a concrete tensor " + ir::type_to_string(type));
    if (!has_type(out, type))
      throw Error(ErrorKind::spec, where() + "expected " + ir::type_to_string(type) + ", got " +
                                       ir::type_to_string({out.dtype(), out.shape(), false}));
    const ByteRange range = bytes_of(out);
    if (range.begin == range.end) continue;
    for (size_t a = 0; a < inputs.size(); ++a)
      if (inputs[a].defined() && inputs[a].is_concrete() && range.overlaps(bytes_of(inputs[a])))
        throw Error(ErrorKind::spec, where() + "shares memory with argument " + std::to_string(a) +
                                         " (outputs are written while inputs are still read)");
    for (size_t other = 0; other < i; ++other)
      if (range.overlaps(bytes_of(outputs[other])))
        throw Error(ErrorKind::spec, where() + "shares memory with output " + std::to_string(other));
  }
}

} // namespace kiln::runtime
