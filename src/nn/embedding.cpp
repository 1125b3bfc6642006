#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {
constexpr uint64_t kWeightSeed = 5;
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim) {
  detail::require_positive("Embedding", "num_embeddings", num_embeddings);
  detail::require_positive("Embedding", "embedding_dim", embedding_dim);
  register_parameter("weight", Tensor::randn({num_embeddings, embedding_dim}, kWeightSeed));
}

Tensor Embedding::forward(const Tensor& indices) { return F::gather(weight_for(indices, "weight"), indices, 0); }

} // namespace kiln::nn
