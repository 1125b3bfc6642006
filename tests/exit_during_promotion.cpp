// Calls compiled callables through the default session just often enough to queue promotions, then
// returns from main while the compile thread is busy with them: exit must never crash. Run many
// times by test_tiering ("returning from main while promotions are in flight never crashes").
#include <kiln/kiln.hpp>
using namespace kiln;

int main() {
  // Several differently shaped convolutions and matmuls: each promotion creates new oneDNN
  // primitives for a few milliseconds, so the last one is still running when main returns.
  auto model = [](Tensor x) {
    for (int64_t layer = 0; layer < 4; ++layer) {
      const int64_t in = 4 + 4 * layer, out = in + 4;
      Tensor k = F::constant_external("k" + std::to_string(layer), TensorLayout(DType::f32, {out, in, 3, 3}));
      Tensor b = F::constant_external("b" + std::to_string(layer), TensorLayout(DType::f32, {out}));
      x = F::relu(F::conv2d(x, k, b, {.padding = {1, 1}}));
    }
    for (int64_t layer = 0; layer < 3; ++layer) {
      Tensor w = F::constant_external("w" + std::to_string(layer), TensorLayout(DType::f32, {8 << layer, 16 << layer}));
      x = F::gelu(F::matmul(x, w));
    }
    return x;
  };
  std::map<std::string, Tensor> weights;
  for (int64_t layer = 0; layer < 4; ++layer) {
    const int64_t in = 4 + 4 * layer, out = in + 4;
    weights["k" + std::to_string(layer)] = Tensor::randn({out, in, 3, 3}, uint64_t(layer));
    weights["b" + std::to_string(layer)] = Tensor::randn({out}, uint64_t(layer));
  }
  for (int64_t layer = 0; layer < 3; ++layer)
    weights["w" + std::to_string(layer)] = Tensor::randn({8 << layer, 16 << layer}, uint64_t(layer));
  auto run = compile(model, {.weights = weights})(TensorLayout(DType::f32, {"batch", 4, 8, 8}));
  for (int64_t batch : {1, 2, 3}) // three signatures, each promoted after its second call
    for (int call = 0; call < 2; ++call)
      if (run(Tensor::ones({batch, 4, 8, 8})).dims() != std::vector<int64_t>{batch, 20, 8, 64}) return 2;
  return 0;
}
