#pragma once
#include "ir/graph.hpp"
#include "runtime/weight_map.hpp"
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kiln::runtime {

// Per-op hooks for debugging. Inputs and outputs are views of the op's values for the duration of
// the call (copy them to keep them). Hooks run on the calling thread.
struct OpHooks {
  std::function<void(size_t op_index, const ir::Op& op, std::span<const Tensor> inputs)> before;
  std::function<void(size_t op_index, const ir::Op& op, std::span<const Tensor> inputs,
                     std::span<const Tensor> outputs)>
      after;
};

struct RunOptions {
  const OpHooks* hooks = nullptr;
  // Keep every intermediate: filled with one owning copy per value id of the static graph.
  std::vector<Tensor>* preserved = nullptr;
  // Throw kiln::Error(numeric) at the first step whose floating-point output holds NaN or Inf, as
  // KILN_DEBUG_NANS=1 does for every call.
  bool check_numerics = false;
  // Caller-owned memory for the call's arena (CompileOptions::arena): at least arena_bytes(),
  // aligned to 64 bytes, used by this call alone. Empty: an arena from the executable's pool.
  std::span<std::byte> arena;
};

// What one executable holds and uses, for planning a device's memory.
struct ExecutableMemory {
  size_t arena_bytes = 0;    // peak of one call's arena (intermediates and kernels' scratch)
  size_t weight_bytes = 0;   // the named weights it reads, in place (a mapped file stays mapped)
  size_t constant_bytes = 0; // the graph's constants and what is derived from them and the weights
                             // (precomputed ops, packed weight copies)
  size_t device_bytes = 0;   // accelerator memory its steps hold
};

// One compiled form of a fully static graph (symbolic dims bound, calls inlined). Created once per
// signature, run from many threads at once.
class Executable {
public:
  virtual ~Executable() = default;
  // One input per graph argument (buffer arguments are written in place); one output tensor per
  // graph output, of its dtype and static dims, overlapping no input nor other output (the caller
  // checks: check_call_outputs). A warm call allocates nothing.
  virtual void run_into(std::span<const Tensor> inputs, std::span<Tensor> outputs, const RunOptions& options) const = 0;
  // run_into fresh output tensors, owned by the caller.
  std::vector<Tensor> run(std::span<const Tensor> inputs, const RunOptions& options) const;
  // The warm call's run: `data` holds the first byte of each input, then of each output, already
  // checked by the caller to be of the graph's types, no output overlapping an input or another
  // output (SignatureTypes::bind). No options, no second check. `arena` as RunOptions::arena;
  // `thread_slot` is the caller's detail::thread_slot(). Tiers override it to bind the pointers
  // straight to their kernels; this one wraps them as tensors for run_into.
  virtual void run_bound(std::span<void* const> data, size_t thread_slot, std::span<std::byte> arena = {}) const;
  virtual std::string_view tier() const = 0;
  virtual ExecutableMemory memory() const = 0;
  size_t arena_bytes() const { return memory().arena_bytes; }
  // How many ops each lowering took ("interp", "xbyak", "dnnl.matmul", ...).
  virtual std::map<std::string, int> ops_per_lowering() const = 0;
  // The implementation that runs step `step` (the index hooks get): "dnnl.matmul", "xbyak",
  // "interp", ...; empty when the tier does not say.
  virtual std::string step_implementation(size_t step) const {
    (void)step;
    return "";
  }
  virtual const ir::Function& graph() const = 0;
};

// Fresh, uninitialised tensors for the outputs of a static graph.
std::vector<Tensor> make_outputs(const ir::Function& graph);

// Whether `tensor` is concrete and of exactly this static type; compares without allocating (the
// steady-state call checks its arguments and outputs with it).
bool has_type(const Tensor& tensor, const ir::ValueType& type);

// kiln::Error(spec) unless `outputs` can take the outputs of `graph` run on `inputs`: one defined,
// concrete tensor per output, of its dtype and dims, sharing no memory with an input or another
// output (a kernel would read what it has already overwritten).
void check_call_outputs(const ir::Function& graph, std::span<const Tensor> inputs, std::span<const Tensor> outputs);

} // namespace kiln::runtime
