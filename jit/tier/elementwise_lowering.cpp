#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "jit/elementwise/region.hpp"
#include "jit/tier/lowering_fault.hpp"
#include "jit/tier/lowerings.hpp"
#include <array>
#include <map>

namespace kiln::jitc::tier {

namespace {

using Broadcast = RegionInput::Broadcast;

class ElementwiseRunner final : public exec::StepRunner {
public:
  ElementwiseRunner(std::shared_ptr<const ElementwiseKernel> kernel, int64_t rows, int64_t cols)
      : kernel_(std::move(kernel)), rows_(rows), cols_(cols), one_block_(kernel_->runs_in_one_block(rows, cols)) {}

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte>) const override {
    // On the stack for the usual region (a warm call allocates nothing); a list past that.
    constexpr size_t kOnStack = 16;
    std::array<const void*, kOnStack> input_array;
    std::array<void*, kOnStack> output_array;
    if (inputs.size() > kOnStack || outputs.size() > kOnStack) return run_listed(inputs, outputs);
    for (size_t i = 0; i < inputs.size(); ++i)
      input_array[i] = inputs[i].data;
    for (size_t i = 0; i < outputs.size(); ++i)
      output_array[i] = outputs[i].data;
    // A small region (the plan's views are never null when it is not empty): straight to the code.
    if (one_block_) return kernel_->run_one_block(input_array.data(), output_array.data(), rows_, cols_);
    run_kernel(input_array.data(), output_array.data());
  }

private:
  void run_listed(std::span<const exec::View> inputs, std::span<const exec::View> outputs) const {
    std::vector<const void*> input_data(inputs.size());
    std::vector<void*> output_data(outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      input_data[i] = inputs[i].data;
    for (size_t i = 0; i < outputs.size(); ++i)
      output_data[i] = outputs[i].data;
    run_kernel(input_data.data(), output_data.data());
  }
  void run_kernel(const void* const* inputs, void* const* outputs) const {
    if (!kernel_->run(inputs, outputs, rows_, cols_))
      throw Error(ErrorKind::internal, "jit.elementwise: the kernel refused its buffers");
  }

  std::shared_ptr<const ElementwiseKernel> kernel_;
  int64_t rows_;
  int64_t cols_;
  bool one_block_; // ElementwiseKernel::runs_in_one_block
};

// Grows one region op by op over the iteration space [rows, cols] of the first op's result dims.
class RegionBuilder {
public:
  RegionBuilder(const GraphRewriter& rw, ir::OpId first) : rw_(rw), space_(rw.dims(rw.op(first).results[0])) {
    cols_ = space_.empty() ? 1 : space_.back();
    rows_ = space_.empty() ? 1 : numel_of(std::vector<int64_t>(space_.begin(), space_.end() - 1));
  }

  // Adds the op when it fits the region, else leaves the region as it was and says why.
  std::optional<std::string> try_add(ir::OpId id) {
    const ir::Op& op = rw_.op(id);
    if (!is_elementwise(op.kind)) return "not elementwise";
    if (op.results.size() != 1 || rw_.dims(op.results[0]) != space_) return "another iteration space";
    for (ir::ValueId v : op.operands)
      if (!node_of_.count(v) && !literal_value(v) && !classify(rw_.dims(v)))
        return "operand " + ir::value_name(rw_.source(), v) + " " + shape_to_string(shape_from_dims(rw_.dims(v))) +
               " is not full, a row, a column or a scalar of " + shape_to_string(shape_from_dims(space_));
    RegionNode node{op.kind, {}, op.params, 0.0f, rw_.dtype(op.results[0])};
    for (ir::ValueId v : op.operands)
      node.args.push_back(argument(v));
    region_.nodes.push_back(std::move(node));
    add_fault_to_last_node();
    node_of_[op.results[0]] = int32_t(region_.nodes.size() - 1);
    op_nodes_.emplace_back(op.results[0], int32_t(region_.nodes.size() - 1));
    ops_.push_back(id);
    for (ir::ValueId v : op.operands)
      ++inner_uses_[v];
    return std::nullopt;
  }

  const std::vector<ir::OpId>& ops() const { return ops_; }

  // Region outputs: values used outside the region or returned by the graph.
  std::vector<ir::ValueId> finish_outputs() {
    std::vector<ir::ValueId> outputs;
    for (const auto& [value, node] : op_nodes_) {
      if (rw_.uses(value) <= inner_uses_[value]) continue;
      outputs.push_back(value);
      region_.outputs.push_back(node);
    }
    return outputs;
  }

  const Region& region() const { return region_; }
  const std::vector<ir::ValueId>& input_values() const { return input_values_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }

private:
  std::optional<Broadcast> classify(const std::vector<int64_t>& dims) const {
    if (numel_of(dims) == 1) return Broadcast::scalar;
    if (dims.size() > space_.size()) return std::nullopt;
    std::vector<int64_t> padded(space_.size() - dims.size(), 1);
    padded.insert(padded.end(), dims.begin(), dims.end());
    if (padded == space_) return Broadcast::full;
    if (!dims.empty() && dims.back() == cols_ && numel_of(dims) == cols_) return Broadcast::row;
    if (padded.back() == 1 && std::equal(padded.begin(), padded.end() - 1, space_.begin())) return Broadcast::column;
    return std::nullopt;
  }

  // A one-element f32 constant becomes a literal of the generated code.
  std::optional<float> literal_value(ir::ValueId v) const {
    const ir::Op* def = rw_.producer(v);
    if (!def || def->kind != ir::OpKind::constant || rw_.dtype(v) != DType::f32) return std::nullopt;
    const Tensor& value = ir::params_of<ir::ConstantParams>(*def).value;
    if (value.numel() != 1) return std::nullopt;
    return float(value.item_as_double());
  }

  // The test-only fault (lowering_fault.hpp): the last node's value plus the fault's offset.
  void add_fault_to_last_node() {
    const auto fault = lowering_fault();
    const RegionNode& last = region_.nodes.back();
    if (!fault || fault->kind != last.kind || last.dtype != DType::f32) return;
    const auto value = int32_t(region_.nodes.size() - 1);
    region_.nodes.push_back(RegionNode{ir::OpKind::constant, {}, {}, fault->offset, DType::f32});
    region_.nodes.push_back(RegionNode{ir::OpKind::add, {value, value + 1}, {}, 0.0f, DType::f32});
  }

  int32_t argument(ir::ValueId v) {
    if (auto found = node_of_.find(v); found != node_of_.end()) return found->second;
    if (auto found = input_of_.find(v); found != input_of_.end()) return found->second;
    if (auto literal = literal_value(v)) {
      RegionNode node{ir::OpKind::constant, {}, {}, *literal, DType::f32};
      node_of_[v] = int32_t(region_.nodes.size());
      region_.nodes.push_back(std::move(node));
      return node_of_[v];
    }
    region_.inputs.push_back(RegionInput{*classify(rw_.dims(v)), rw_.dtype(v)});
    input_values_.push_back(v);
    const auto index = -int32_t(region_.inputs.size());
    input_of_[v] = index;
    return index;
  }

  const GraphRewriter& rw_;
  std::vector<int64_t> space_;
  int64_t rows_ = 1;
  int64_t cols_ = 1;
  Region region_;
  std::vector<ir::ValueId> input_values_;
  std::map<ir::ValueId, int32_t> input_of_;
  std::map<ir::ValueId, int32_t> node_of_;
  std::vector<std::pair<ir::ValueId, int32_t>> op_nodes_;
  std::map<ir::ValueId, int> inner_uses_;
  std::vector<ir::OpId> ops_;
};

// The region grown from `first` over the open ops after it, as far as they fit. Constants inside
// the run are bound values, not work: they pass through without ending it and stay steps of
// their own.
struct GrownRegion {
  RegionBuilder builder;
  std::vector<ir::ValueId> outputs;
  std::optional<std::string> first_refusal; // why `first` itself did not fit
};

GrownRegion grow_region(const GraphRewriter& rw, ir::OpId first) {
  GrownRegion grown{RegionBuilder(rw, first), {}, std::nullopt};
  for (ir::OpId next = first; next < rw.source().ops.size() && rw.is_open(next); ++next) {
    if (rw.op(next).kind == ir::OpKind::constant) continue;
    std::optional<std::string> why = grown.builder.try_add(next);
    if (!why) continue;
    if (next == first) grown.first_refusal = why;
    break;
  }
  grown.outputs = grown.builder.finish_outputs();
  return grown;
}

// Why no kernel runs the region from `first`, or its kernel.
Planned<std::shared_ptr<const ElementwiseKernel>> plan_region(const GrownRegion& grown) {
  if (grown.first_refusal) return *grown.first_refusal;
  if (grown.outputs.empty()) return "no result of the region is used";
  std::string why_not;
  std::shared_ptr<const ElementwiseKernel> kernel = compile_region(grown.builder.region(), &why_not);
  if (!kernel) return why_not;
  return kernel;
}

std::optional<std::string> refuse_region_start(const GraphRewriter& rw, ir::OpId first) {
  const ir::Op& op = rw.op(first);
  if (op.results.size() != 1) return "more than one result";
  if (!shape_is_static(rw.source().type_of(op.results[0]).shape)) return "the result's dims are not static";
  return std::nullopt;
}

// The compiled kernel is cached (by region and ISA), so lowering finds the one refusing compiled.
std::optional<std::string> refuse_elementwise_region(const GraphRewriter& rw, ir::OpId first) {
  if (auto why = refuse_region_start(rw, first)) return why;
  const GrownRegion grown = grow_region(rw, first);
  return refusal_of(plan_region(grown));
}

void lower_elementwise_region(GraphRewriter& rw, ir::OpId first) {
  const GrownRegion grown = grow_region(rw, first);
  const auto kernel = std::get<std::shared_ptr<const ElementwiseKernel>>(plan_region(grown));
  const RegionBuilder& builder = grown.builder;
  const std::string note = std::string(vector_isa_name(kernel->isa())) + ", region of " +
                           std::to_string(builder.ops().size()) + " ops over [" + std::to_string(builder.rows()) +
                           ", " + std::to_string(builder.cols()) + "]";
  const std::string name(kXbyakRegion.name);
  for (ir::OpId id : builder.ops())
    rw.take(id, name, id == first ? note : "fused into " + ir::op_name(rw.source(), first));
  exec::LoweredStep step{name, builder.input_values(), grown.outputs, first,
                         std::make_shared<ElementwiseRunner>(kernel, builder.rows(), builder.cols())};
  // At the region's last op: the constants passed over are steps of their own before it.
  const ir::OpId last = builder.ops().back();
  if (last == first)
    rw.emit_step(std::move(step));
  else
    rw.emit_step_at(last, std::move(step));
}

} // namespace

const Implementation kXbyakRegion{{"xbyak"}, refuse_elementwise_region, lower_elementwise_region};

} // namespace kiln::jitc::tier
