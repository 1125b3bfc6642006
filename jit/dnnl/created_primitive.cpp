#include "jit/dnnl/created_primitive.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {

CreatedPrimitive::CreatedPrimitive(const dnnl::primitive_desc& pd) : pd_(pd) {
  try {
    primitive_ = dnnl::primitive(pd_);
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::internal, std::string("jitc::dnnl_ops: oneDNN cannot create the primitive: ") + e.what());
  }
  src_desc_ = pd_.src_desc();
  weights_desc_ = pd_.weights_desc();
  bias_desc_ = pd_.weights_desc(1);
  dst_desc_ = pd_.dst_desc();
  scratchpad_desc_ = pd_.scratchpad_desc();
  scratch_bytes_ = scratch_piece(scratchpad_desc_.get_size());
}

void CreatedPrimitive::execute(ArgMap& args, Scratch& scratch) const {
  if (const size_t bytes = scratchpad_desc_.get_size(); bytes > 0)
    args[DNNL_ARG_SCRATCHPAD] = bind(scratchpad_desc_, scratch.take(bytes));
  dnnl::stream& stream = thread_stream();
  try {
    primitive_.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::internal, std::string("jitc::dnnl_ops: oneDNN execution failed: ") + e.what());
  }
}

std::string CreatedPrimitive::implementation() const { return pd_.impl_info_str(); }

void require_accepted(const char* wrapper, const std::optional<std::string>& reason) {
  if (reason) throw Error(ErrorKind::unsupported, std::string(wrapper) + ": " + *reason);
}

} // namespace kiln::jitc::dnnl_ops
