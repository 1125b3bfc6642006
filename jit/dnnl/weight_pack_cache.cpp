#include "jit/dnnl/weight_pack_cache.hpp"
#include "jit/dnnl/engine.hpp"
#include <kiln/error.hpp>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::jit::dnnl_ops {

struct WeightPackCache::State {
  struct PackedEntry {
    dnnl::memory::desc layout;
    dnnl::memory packed;
  };
  // Per weight name: the version packed and its packings, one per wanted layout.
  struct PackedVersions {
    uint64_t version = 0;
    std::vector<PackedEntry> entries;
  };

  std::mutex mutex;
  std::unordered_map<std::string, PackedVersions> by_name;
  size_t packs_performed = 0;
};

namespace {

dnnl::memory reorder_once(const std::string& name, const dnnl::memory::desc& src_desc, const void* src,
                          const dnnl::memory::desc& wanted) {
  try {
    dnnl::memory packed(wanted, cpu_engine());
    dnnl::memory source = bind(src_desc, src);
    dnnl::reorder(source, packed).execute(thread_stream(), source, packed);
    thread_stream().wait();
    return packed;
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::internal, "WeightPackCache: cannot reorder weight '" + name + "': " + e.what());
  }
}

} // namespace

WeightPackCache::WeightPackCache() : state_(std::make_unique<State>()) {}
WeightPackCache::~WeightPackCache() = default;

dnnl::memory WeightPackCache::get_or_pack(const std::string& name, uint64_t version, const dnnl::memory::desc& src_desc,
                                          const void* src, const dnnl::memory::desc& wanted) {
  std::lock_guard lock(state_->mutex);
  State::PackedVersions& versions = state_->by_name.try_emplace(name, State::PackedVersions{version, {}}).first->second;
  if (versions.version > version) {
    throw Error(ErrorKind::weight, "WeightPackCache: weight '" + name + "' version " + std::to_string(version) +
                                       " is older than the packed version " + std::to_string(versions.version));
  }
  if (versions.version < version) versions = State::PackedVersions{version, {}};
  for (const State::PackedEntry& entry : versions.entries) {
    if (entry.layout == wanted) return entry.packed;
  }
  dnnl::memory packed = reorder_once(name, src_desc, src, wanted);
  versions.entries.push_back({wanted, packed});
  ++state_->packs_performed;
  return packed;
}

size_t WeightPackCache::size() const {
  std::lock_guard lock(state_->mutex);
  size_t count = 0;
  for (const auto& [name, versions] : state_->by_name)
    count += versions.entries.size();
  return count;
}

size_t WeightPackCache::packs_performed() const {
  std::lock_guard lock(state_->mutex);
  return state_->packs_performed;
}

void WeightPackCache::clear() {
  std::lock_guard lock(state_->mutex);
  state_->by_name.clear();
}

ResolvedWeight resolve_constant_weight(const ConstantWeight& weight, const dnnl::memory::desc& given,
                                       const dnnl::memory::desc& preferred) {
  if (weight.data == nullptr) {
    throw Error(ErrorKind::weight, "jit::dnnl_ops: constant weight '" + weight.name + "' has no data");
  }
  if (given == preferred) return {given, weight.data, {}};
  dnnl::memory packed = weight.cache
                            ? weight.cache->get_or_pack(weight.name, weight.version, given, weight.data, preferred)
                            : reorder_once(weight.name, given, weight.data, preferred);
  return {preferred, packed.get_data_handle(), packed};
}

} // namespace kiln::jit::dnnl_ops
