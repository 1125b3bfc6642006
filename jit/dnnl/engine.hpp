#pragma once
#include "jit/dnnl/post_op.hpp"
#include "jit/dnnl/scratch.hpp"
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

// The oneDNN plumbing every kiln primitive wrapper shares (created_primitive.hpp is their core). Internal to jit/: it
// exposes oneDNN types.
namespace kiln::jitc::dnnl_ops {

using Dims = std::vector<int64_t>;
using ArgMap = std::unordered_map<int, dnnl::memory>;

// The process-wide CPU engine; every primitive and packed weight lives on it.
const dnnl::engine& cpu_engine();
// The calling thread's stream: primitives are shared between threads, streams never are.
dnnl::stream& thread_stream();

// Row-major f32 descriptor of dims.
dnnl::memory::desc plain_desc(const Dims& dims);
// A memory object over a caller's buffer (oneDNN takes non-const handles, inputs included).
dnnl::memory bind(const dnnl::memory::desc& desc, const void* data);

// How a primitive adds residuals: each a plain tensor of dst_dims bound at execute (binary_add), or
// the one residual written into dst in dst's layout before execute (oneDNN's sum post-op, which
// every direct convolution takes).
enum class ResidualForm { binary, sum_into_dst };

// Attributes of every kiln primitive: a user scratchpad, so that concurrent executions of one
// primitive never share one, and the post-ops.
dnnl::primitive_attr make_attr(std::span<const PostOp> post_ops, const Dims& dst_dims,
                               ResidualForm residuals = ResidualForm::binary);
// Binds residual buffers (one per add_residual post-op, in order) under their post-op argument ids.
void bind_residuals(std::span<const PostOp> post_ops, const Dims& dst_dims, std::span<const float* const> residuals,
                    ArgMap& args);
// Why oneDNN cannot take this post-op list, or nullopt.
std::optional<std::string> refuse_post_ops(std::span<const PostOp> post_ops);

// Throws kiln::Error(internal) naming place and buffer when pointer is null.
void require_buffer(const void* pointer, const char* place, const char* buffer);

// Executes a reorder on this thread's stream and waits.
void reorder(const dnnl::reorder& prim, dnnl::memory from, dnnl::memory to);

// Builds a primitive descriptor with allow_empty and says why oneDNN will not take it, or nullopt.
template <class MakePd> std::optional<std::string> refuse_unimplemented(const char* what, MakePd make_pd) {
  try {
    if (make_pd()) return std::nullopt;
    return std::string("oneDNN has no ") + what + " implementation for these shapes on this CPU";
  } catch (const dnnl::error& e) {
    return std::string("oneDNN rejects the ") + what + ": " + e.what();
  }
}

// Shared shape checks: a rank oneDNN accepts and no zero-sized or negative dims.
std::optional<std::string> refuse_dims(const char* what, const Dims& dims, int min_rank);

// Whether axis is in [0, rank): the primitives take the graph's decoded (normalised) axes.
bool axis_in_rank(int64_t axis, size_t rank);

std::string dims_to_string(const Dims& dims);

} // namespace kiln::jitc::dnnl_ops
