#include "interp/precomputed_values.hpp"
#include "interp/shared_cache.hpp"
#include "interp/tensor_fingerprint.hpp"

namespace kiln::interp {

namespace {

// An op over bound tensors: what its results are computed from.
struct PrecomputeKey {
  ir::OpKind kind;
  ir::Attrs attrs;
  std::vector<TensorFingerprint> operands;
  friend bool operator==(const PrecomputeKey&, const PrecomputeKey&) = default;
};

} // namespace

PrecomputedResults shared_precomputed(const ir::Op& op, std::span<const Tensor> operands,
                                      const std::function<std::vector<Tensor>()>& compute) {
  PrecomputeKey key{op.kind, op.attrs, {}};
  for (const Tensor& t : operands)
    key.operands.push_back(fingerprint(t));
  // Never destroyed: a promotion still running on a session's compile thread at exit may use it.
  static auto& cache = *new SharedCache<PrecomputeKey, std::vector<Tensor>>;
  return cache.get(key, compute);
}

} // namespace kiln::interp
