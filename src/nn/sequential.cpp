#include <kiln/nn.hpp>

namespace kiln::nn {

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& entry : children())
    x = entry.second->forward(x);
  return x;
}

} // namespace kiln::nn
