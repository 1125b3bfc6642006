// The example of docs/modules.md as a complete program (built and run by the test suite;
// tools/check-docs checks that the doc shows its lines).
#include <iostream>
#include <kiln/kiln.hpp>
using namespace kiln;

struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 2));
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
};

int main() {
  TwoLayer model;
  for (const auto& [name, tensor] : model.state_dict()) // fc1.bias f32 [8] on cpu:0, fc1.weight ...
    std::cout << name << " " << tensor.layout().to_string() << "\n";
  model.to_safetensors("two_layer.safetensors"); // atomic: the old file or the new one, never half

  TwoLayer loaded;
  loaded.load_safetensors("two_layer.safetensors"); // zero-copy; strict: every name and shape checked
  const Tensor x = Tensor::ones({3, 4});
  const Tensor eager = loaded(x); // concrete input: runs at once

  // Traced: each parameter is F::constant_external under its full name ("fc1.weight").
  auto run = compile([&](const Tensor& in) { return loaded(in); },
                     {.weights = loaded.state_dict()})(TensorLayout(DType::f32, {"batch", 4}));
  std::cout << (run(x).item_as_double(5) == eager.item_as_double(5) ? "same" : "different") << "\n"; // same
}
