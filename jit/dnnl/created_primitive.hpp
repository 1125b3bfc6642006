#pragma once
#include "jit/dnnl/engine.hpp"
#include <string>

namespace kiln::jitc::dnnl_ops {

// What every kiln oneDNN wrapper is at its core: a primitive created once from its descriptor, the
// layouts it gives its arguments (queried once) and the scratch its scratchpad takes. execute only
// binds pointers and runs; it is const, so one primitive runs on several threads at once, each
// with its own scratch. The wrappers add their shapes, checks and constant weights around it.
class CreatedPrimitive {
public:
  CreatedPrimitive() = default;
  // Throws kiln::Error(internal) when oneDNN cannot create the primitive the descriptor describes.
  explicit CreatedPrimitive(const dnnl::primitive_desc& pd);

  // The layouts the primitive gives its source, weights, bias and destination (zero descriptors
  // where it has none).
  const dnnl::memory::desc& src_desc() const { return src_desc_; }
  const dnnl::memory::desc& weights_desc() const { return weights_desc_; }
  const dnnl::memory::desc& bias_desc() const { return bias_desc_; }
  const dnnl::memory::desc& dst_desc() const { return dst_desc_; }

  // The scratch its scratchpad takes (scratch.hpp), a whole number of aligned pieces.
  size_t scratch_bytes() const { return scratch_bytes_; }
  // Runs with `args` bound on the calling thread's stream, the scratchpad taken from `scratch`, and
  // waits. Throws kiln::Error(internal) when oneDNN fails.
  void execute(ArgMap& args, Scratch& scratch) const;
  // The oneDNN implementation chosen, e.g. "jit:avx2", for KILN_LOG=jit.
  std::string implementation() const;
  const dnnl::primitive_desc& pd() const { return pd_; }

private:
  dnnl::primitive_desc pd_;
  dnnl::primitive primitive_;
  dnnl::memory::desc src_desc_, weights_desc_, bias_desc_, dst_desc_, scratchpad_desc_;
  size_t scratch_bytes_ = 0;
};

// Throws kiln::Error(unsupported) "<wrapper>: <reason>" when a wrapper's refuse() gave a reason.
void require_accepted(const char* wrapper, const std::optional<std::string>& reason);

} // namespace kiln::jitc::dnnl_ops
