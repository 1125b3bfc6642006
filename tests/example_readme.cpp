// The README's example as a complete program (built and run by the test suite; tools/check-docs
// checks that the README shows its lines).
#include <iostream>
#include <kiln/kiln.hpp>
using namespace kiln;

int main() {
  TensorLayout w_type(DType::f32, {2});                 // device defaults to CPU()
  TensorLayout x_type(DType::f32, {"batch", 2}, CPU()); // "batch" is a symbolic dim

  auto layer = [&](Tensor x) { return x * F::constant_external("w", w_type); };

  Tensor w = Tensor::ones({2}) * 3.0f;                        // eager: concrete tensors compute at once
  auto run = compile(layer, {.weights = {{"w", w}}})(x_type); // CompiledCallable
  Tensor out = run(Tensor::ones({4, 2}));                     // any batch; checked at the call
  std::cout << out.data<float>()[0] << "\n";                  // 3

  TensorLayout s(DType::f32, {"batch", 2});
  auto combine = [](std::map<std::string, Tensor> m, double k) { return (m.at("a") + m.at("b")) * k; };
  auto staged = stage(combine)(std::map<std::string, TensorLayout>{{"a", s}, {"b", s}}, 2.0);
  std::cout << staged; // MLIR text
  return out.data<float>()[0] == 3.0f ? 0 : 1;
}
