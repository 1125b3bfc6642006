#include "jit/dnnl/reordered_weight.hpp"
#include "jit/dnnl/engine.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {

namespace {

dnnl::memory reorder_once(const std::string& name, const dnnl::memory::desc& src_desc, const void* src,
                          const dnnl::memory::desc& wanted) {
  try {
    dnnl::memory reordered(wanted, cpu_engine());
    dnnl::memory source = bind(src_desc, src);
    dnnl::reorder(source, reordered).execute(thread_stream(), source, reordered);
    thread_stream().wait();
    return reordered;
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::internal, "jitc::dnnl_ops: cannot reorder weight '" + name + "': " + e.what());
  }
}

template <class T> std::string list_text(const T* values, int count) {
  std::string out = "[";
  for (int i = 0; i < count; ++i)
    out += (i ? "," : "") + std::to_string(values[i]);
  return out + "]";
}

// Everything that places an element of a blocked layout; nullopt for the other format kinds
// (Winograd, packed RNN weights), whose reorders then stay private.
std::optional<std::string> layout_text(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& md = desc.data;
  if (md.format_kind != dnnl_blocked) return std::nullopt;
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  return "type " + std::to_string(int(md.data_type)) + " dims " + list_text(md.dims, md.ndims) + " padded " +
         list_text(md.padded_dims, md.ndims) + " offsets " + list_text(md.padded_offsets, md.ndims) + "+" +
         std::to_string(md.offset0) + " strides " + list_text(blocking.strides, md.ndims) + " blocks " +
         list_text(blocking.inner_blks, blocking.inner_nblks) + " of " +
         list_text(blocking.inner_idxs, blocking.inner_nblks) + " extra " + std::to_string(md.extra.flags) + "," +
         std::to_string(md.extra.compensation_mask) + "," + std::to_string(md.extra.scale_adjust);
}

} // namespace

ResolvedWeight resolve_constant_weight(const ConstantWeight& weight, const dnnl::memory::desc& given,
                                       const dnnl::memory::desc& preferred) {
  if (weight.data == nullptr) {
    throw Error(ErrorKind::weight, "jitc::dnnl_ops: constant weight '" + weight.name + "' has no data");
  }
  if (given == preferred) return {given, weight.data, {}};
  std::optional<runtime::WeightFormKey> key;
  const std::optional<std::string> from = layout_text(given), to = layout_text(preferred);
  if (weight.key && from && to) key = runtime::derived_key("dnnl.reorder", {&*weight.key}, *from + " to " + *to);
  auto reordered = runtime::shared_form<dnnl::memory>(
      weight.forms, key, [&] { return reorder_once(weight.name, given, weight.data, preferred); });
  return {preferred, reordered->get_data_handle(), reordered};
}

} // namespace kiln::jitc::dnnl_ops
