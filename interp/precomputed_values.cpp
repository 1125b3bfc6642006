#include "interp/precomputed_values.hpp"
#include "interp/tensor_fingerprint.hpp"
#include <algorithm>
#include <mutex>

namespace kiln::interp {

namespace {

struct Entry {
  ir::OpKind kind;
  ir::Attrs attrs;
  std::vector<TensorFingerprint> operands;
  std::weak_ptr<const std::vector<Tensor>> results;
};

} // namespace

PrecomputedResults shared_precomputed(const ir::Op& op, std::span<const Tensor> operands,
                                      const std::function<std::vector<Tensor>()>& compute) {
  std::vector<TensorFingerprint> identity;
  for (const Tensor& t : operands)
    identity.push_back(fingerprint(t));
  static std::mutex mutex;
  static std::vector<Entry> entries;
  std::lock_guard lock(mutex);
  std::erase_if(entries, [](const Entry& e) { return e.results.expired(); });
  for (const Entry& e : entries)
    if (e.kind == op.kind && e.operands == identity && e.attrs == op.attrs)
      if (auto live = e.results.lock()) return live;
  auto results = std::make_shared<const std::vector<Tensor>>(compute());
  entries.push_back({op.kind, op.attrs, std::move(identity), results});
  return results;
}

} // namespace kiln::interp
