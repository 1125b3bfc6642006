#include "jit/dnnl/engine.hpp"
#include <array>
#include <cstddef>
#include <kiln/error.hpp>
#include <memory>
#include <new>
#include <sstream>

namespace kiln::jitc::dnnl_ops {
namespace {

dnnl::algorithm eltwise_algorithm(Activation activation) {
  using dnnl::algorithm;
  switch (activation) {
  case Activation::relu: return algorithm::eltwise_relu;
  case Activation::gelu_erf: return algorithm::eltwise_gelu_erf;
  case Activation::gelu_tanh: return algorithm::eltwise_gelu_tanh;
  case Activation::tanh: return algorithm::eltwise_tanh;
  case Activation::sigmoid: return algorithm::eltwise_logistic;
  case Activation::silu: return algorithm::eltwise_swish;          // x * sigmoid(alpha x) with alpha = 1
  case Activation::hardswish: return algorithm::eltwise_hardswish; // x * relu6(x + 3) / 6
  case Activation::exp: return algorithm::eltwise_exp;
  case Activation::log: return algorithm::eltwise_log;
  case Activation::abs: return algorithm::eltwise_abs;
  case Activation::sqrt: return algorithm::eltwise_sqrt;
  case Activation::square: return algorithm::eltwise_square;
  case Activation::linear: return algorithm::eltwise_linear;
  case Activation::clip: return algorithm::eltwise_clip;
  }
  throw Error(ErrorKind::internal, "jitc::dnnl_ops: unknown activation");
}

} // namespace

const dnnl::engine& cpu_engine() {
  // Never destroyed: a promotion still running on a session's compile thread at exit may use it.
  static const dnnl::engine& engine = *new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::memory::desc plain_desc(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory bind(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

dnnl::primitive_attr make_attr(std::span<const PostOp> post_ops, const Dims& dst_dims, ResidualForm residuals) {
  dnnl::post_ops ops;
  for (const PostOp& op : post_ops) {
    if (op.kind == PostOp::Kind::add_residual && residuals == ResidualForm::sum_into_dst) {
      ops.append_sum(1.0f);
      continue;
    }
    if (op.kind == PostOp::Kind::add_residual) {
      ops.append_binary(dnnl::algorithm::binary_add, plain_desc(dst_dims));
      continue;
    }
    const bool parameterised = op.activation == Activation::linear || op.activation == Activation::clip;
    float alpha = parameterised ? op.alpha : 0.0f;
    if (op.activation == Activation::silu) alpha = 1.0f;
    float beta = parameterised ? op.beta : 0.0f;
    ops.append_eltwise(1.0f, eltwise_algorithm(op.activation), alpha, beta);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void bind_residuals(std::span<const PostOp> post_ops, const Dims& dst_dims, std::span<const float* const> residuals,
                    ArgMap& args) {
  if (residuals.size() != size_t(residual_count(post_ops))) {
    throw Error(ErrorKind::internal, "jitc::dnnl_ops: " + std::to_string(residuals.size()) +
                                         " residual buffers given, the post-ops add " +
                                         std::to_string(residual_count(post_ops)));
  }
  dnnl::memory::desc desc = plain_desc(dst_dims);
  size_t next = 0;
  for (size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i].kind != PostOp::Kind::add_residual) continue;
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(i)) | DNNL_ARG_SRC_1] = bind(desc, residuals[next++]);
  }
}

std::optional<std::string> refuse_post_ops(std::span<const PostOp> post_ops) {
  if (post_ops.size() > kMaxPostOps) {
    return std::to_string(post_ops.size()) + " post-ops, oneDNN takes at most " + std::to_string(kMaxPostOps);
  }
  return std::nullopt;
}

void require_buffer(const void* pointer, const char* place, const char* buffer) {
  if (pointer == nullptr) throw Error(ErrorKind::internal, std::string(place) + ": no buffer for " + buffer);
}

void reorder(const dnnl::reorder& prim, dnnl::memory from, dnnl::memory to) {
  dnnl::stream& stream = thread_stream();
  try {
    prim.execute(stream, from, to);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::internal, std::string("jitc::dnnl_ops: oneDNN reorder failed: ") + e.what());
  }
}

std::optional<std::string> refuse_dims(const char* what, const Dims& dims, int min_rank) {
  if (int(dims.size()) < min_rank || dims.size() > DNNL_MAX_NDIMS) {
    return std::string(what) + " has rank " + std::to_string(dims.size()) + ", needs " + std::to_string(min_rank) +
           ".." + std::to_string(DNNL_MAX_NDIMS);
  }
  for (int64_t d : dims) {
    if (d <= 0) return std::string(what) + " " + dims_to_string(dims) + " has an empty or negative dim";
  }
  return std::nullopt;
}

bool axis_in_rank(int64_t axis, size_t rank) { return axis >= 0 && axis < int64_t(rank); }

std::string dims_to_string(const Dims& dims) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < dims.size(); ++i)
    out << (i ? ", " : "") << dims[i];
  out << ']';
  return out.str();
}

} // namespace kiln::jitc::dnnl_ops
