// A program outside the kiln tree, built with `pkg-config --cflags --libs kiln`.
#include <iostream>
#include <kiln/kiln.hpp>

int main() {
  using namespace kiln;
  auto run = compile([](Tensor x) { return x * 2.0 + 1.0; })(TensorLayout(DType::f32, {"n"}));
  Tensor y = run(Tensor::full({3}, 1.0));
  std::cout << "consumer: " << y.data<float>()[2] << "\n";
  return y.data<float>()[2] == 3.0f ? 0 : 1;
}
