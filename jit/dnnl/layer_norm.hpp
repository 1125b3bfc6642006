#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// f32 layer normalisation as kiln.layer_norm defines it: x normalised over dims[axis:] together,
// then times weight and plus bias (each shaped dims[axis:]) when present.
struct LayerNormParams {
  std::vector<int64_t> dims{};
  int64_t axis = 0; // the first normalised axis, in [0, rank) as the graph decodes it
  bool has_weight = false;
  bool has_bias = false;
  float eps = 1e-5f;
};

// A oneDNN layer normalisation created once; execute only binds pointers and may run on several
// threads at once. Normalising over several trailing axes is one normalisation over their product.
class LayerNormPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const LayerNormParams& params);
  // Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit LayerNormPrimitive(const LayerNormParams& params);
  ~LayerNormPrimitive();
  LayerNormPrimitive(LayerNormPrimitive&&) noexcept;
  LayerNormPrimitive& operator=(LayerNormPrimitive&&) noexcept;

  // in and out have params.dims; weight and bias are read only when the params have them.
  // scratch: scratch_bytes() of working memory (scratch.hpp); empty, execute allocates it.
  void execute(const float* in, const float* weight, const float* bias, float* out,
               std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
