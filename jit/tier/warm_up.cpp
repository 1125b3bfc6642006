#include "jit/tier/warm_up.hpp"
#include "ir/text/parser.hpp"
#include <exception>

namespace kiln::jitc::tier {

namespace {

// One small graph that reaches each lowering a promotion may take: a convolution chain with a
// residual, pooling, a matmul by a weight with a fused epilogue, a matmul of two activations,
// layer norm, softmax and transcendental elementwise regions.
constexpr const char* kWarmUpGraph = R"mlir(
module @warm_up {
  func.func @main(%x: !kiln.tensor<[2, 16, 8, 8], f32>) -> !kiln.tensor<[2, 64], f32> {
    %w = "kiln.constant_external"() {name = "conv.weight"} : () -> !kiln.tensor<[16, 16, 3, 3], f32>
    %b = "kiln.constant_external"() {name = "conv.bias"} : () -> !kiln.tensor<[16], f32>
    %c0 = "kiln.conv2d"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (!kiln.tensor<[2, 16, 8, 8], f32>, !kiln.tensor<[16, 16, 3, 3], f32>, !kiln.tensor<[16], f32>) -> !kiln.tensor<[2, 16, 8, 8], f32>
    %r0 = "kiln.relu"(%c0) : (!kiln.tensor<[2, 16, 8, 8], f32>) -> !kiln.tensor<[2, 16, 8, 8], f32>
    %c1 = "kiln.conv2d"(%r0, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (!kiln.tensor<[2, 16, 8, 8], f32>, !kiln.tensor<[16, 16, 3, 3], f32>, !kiln.tensor<[16], f32>) -> !kiln.tensor<[2, 16, 8, 8], f32>
    %s = "kiln.add"(%c1, %r0) : (!kiln.tensor<[2, 16, 8, 8], f32>, !kiln.tensor<[2, 16, 8, 8], f32>) -> !kiln.tensor<[2, 16, 8, 8], f32>
    %r1 = "kiln.relu"(%s) : (!kiln.tensor<[2, 16, 8, 8], f32>) -> !kiln.tensor<[2, 16, 8, 8], f32>
    %p = "kiln.max_pool2d"(%r1) {kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (!kiln.tensor<[2, 16, 8, 8], f32>) -> !kiln.tensor<[2, 16, 4, 4], f32>
    %f = "kiln.reshape"(%p) {shape = [2, 256]} : (!kiln.tensor<[2, 16, 4, 4], f32>) -> !kiln.tensor<[2, 256], f32>
    %fw = "kiln.constant_external"() {name = "fc.weight"} : () -> !kiln.tensor<[64, 256], f32>
    %fb = "kiln.constant_external"() {name = "fc.bias"} : () -> !kiln.tensor<[64], f32>
    %fwt = "kiln.transpose"(%fw) {perm = array<i64: 1, 0>} : (!kiln.tensor<[64, 256], f32>) -> !kiln.tensor<[256, 64], f32>
    %m = "kiln.matmul"(%f, %fwt) : (!kiln.tensor<[2, 256], f32>, !kiln.tensor<[256, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    %mb = "kiln.add"(%m, %fb) : (!kiln.tensor<[2, 64], f32>, !kiln.tensor<[64], f32>) -> !kiln.tensor<[2, 64], f32>
    %g = "kiln.gelu"(%mb) {approximate = "none"} : (!kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    %gt = "kiln.transpose"(%g) {perm = array<i64: 1, 0>} : (!kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[64, 2], f32>
    %a = "kiln.matmul"(%gt, %g) : (!kiln.tensor<[64, 2], f32>, !kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[64, 64], f32>
    %am = "kiln.matmul"(%g, %a) : (!kiln.tensor<[2, 64], f32>, !kiln.tensor<[64, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    %ln = "kiln.layer_norm"(%am, %fb, %fb) {axis = -1 : i64, eps = 1.0e-05 : f64} : (!kiln.tensor<[2, 64], f32>, !kiln.tensor<[64], f32>, !kiln.tensor<[64], f32>) -> !kiln.tensor<[2, 64], f32>
    %t = "kiln.tanh"(%ln) : (!kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    %e = "kiln.exp"(%t) : (!kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    %sm = "kiln.softmax"(%e) {axis = -1 : i64} : (!kiln.tensor<[2, 64], f32>) -> !kiln.tensor<[2, 64], f32>
    return %sm : !kiln.tensor<[2, 64], f32>
  }
}
)mlir";

} // namespace

void warm_up(const runtime::ExecutableFactory& make_executable) {
  // Best effort: a failure here (a CPU oneDNN has no kernel for, say) is reported by the real
  // compile when it happens, so it is not an error of the session being created.
  try {
    ir::Module module = ir::parse_module(kWarmUpGraph, "<jit warm-up>");
    auto graph = std::make_shared<const ir::Function>(std::move(module.entry()));
    runtime::WeightMap weights;
    uint64_t seed = 1;
    for (const ir::Op& op : graph->ops)
      if (op.kind == ir::OpKind::constant_external)
        weights.bind(ir::params_of<ir::ExternalParams>(op).name,
                     Tensor::randn(static_dims(graph->type_of(op.results[0]).shape), seed++));
    make_executable(graph, weights); // promotions only compile; calls run on the callers' threads
  } catch (const std::exception&) {
  }
}

} // namespace kiln::jitc::tier
