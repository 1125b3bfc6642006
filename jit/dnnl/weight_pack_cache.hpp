#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

namespace kiln::jit::dnnl_ops {

// Constant weights reordered once into the layout a primitive prefers, shared by every primitive
// that wants the same (weight name, version, layout). A newer version of a name drops the packings
// of older ones; primitives built on an old packing keep it alive until they go. Thread-safe.
class WeightPackCache {
public:
  WeightPackCache();
  ~WeightPackCache();
  WeightPackCache(const WeightPackCache&) = delete;
  WeightPackCache& operator=(const WeightPackCache&) = delete;

  // The weights `src` (laid out as src_desc) in layout `wanted`: reordered on the first request
  // for (name, version, wanted), the same memory on every later one. Throws kiln::Error(weight)
  // when a version older than one already packed is asked for.
  dnnl::memory get_or_pack(const std::string& name, uint64_t version, const dnnl::memory::desc& src_desc,
                           const void* src, const dnnl::memory::desc& wanted);

  // Packed buffers held now.
  size_t size() const;
  // Reorders run since construction.
  size_t packs_performed() const;
  void clear();

private:
  struct State;
  std::unique_ptr<State> state_;
};

// Where a primitive reads a constant weight from: the caller's buffer when `given` (its layout) is
// already `preferred`, else a packing from weight.cache (or a private one when there is no cache).
struct ResolvedWeight {
  dnnl::memory::desc layout;
  const void* data = nullptr;
  dnnl::memory packed; // keeps a packing alive; empty when the caller's buffer is read in place
};
ResolvedWeight resolve_constant_weight(const ConstantWeight& weight, const dnnl::memory::desc& given,
                                       const dnnl::memory::desc& preferred);

} // namespace kiln::jit::dnnl_ops
