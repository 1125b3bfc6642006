#include <kiln/nn.hpp>

namespace kiln::nn {

// p is checked as PyTorch does, though inference never drops anything.
Dropout::Dropout(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(ErrorKind::spec, "Dropout: probability must be in [0, 1], got " + std::to_string(p));
}

} // namespace kiln::nn
