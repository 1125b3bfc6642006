#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace kiln::jitc::dnnl_ops {

// Where a primitive reads a constant weight from: the caller's buffer when `given` (its layout) is
// already `preferred`, else a reordered copy (see ConstantWeight).
struct ResolvedWeight {
  dnnl::memory::desc layout;
  const void* data = nullptr;
  std::shared_ptr<const dnnl::memory> reordered; // keeps the copy alive; null when read in place
};
ResolvedWeight resolve_constant_weight(const ConstantWeight& weight, const dnnl::memory::desc& given,
                                       const dnnl::memory::desc& preferred);

} // namespace kiln::jitc::dnnl_ops
