#pragma once
#include <atomic>
#include <cstdint>
#include <kiln/jit_mode.hpp>
#include <kiln/tensor.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace runtime {
class ExecutableCache;
class CompileQueue;
class WeightForms;
class TierSet;
} // namespace runtime

// When signatures move from the interpreter to the JIT tier. Environment: KILN_JIT=off|auto|always,
// KILN_PROMOTE_AFTER=N, KILN_JIT_ASYNC=BOOL (all parsed by src/core/environment.cpp).
struct TierPolicy {
  JitMode mode = JitMode::automatic;
  int promote_after = 2; // interpreter calls of one signature before the JIT tier compiles it
  bool async = true;     // compile on the session's background thread (the interpreter serves meanwhile)
  // The tier hot signatures are promoted to: "jit" (the CPU's) or "accelerator" (Vulkan compute,
  // docs/accelerator.md). JitMode says when, as it does for either.
  std::string promote_to = "jit";
  static TierPolicy from_env();
};

// Named weights shared by every callable and tier of a session. Zero-copy: the registry keeps the
// tensor handle (wrapped user memory or an mmap'd safetensors file). Each set() makes a new version
// of the name; the forms tiers derive from a weight (packed for a matmul, reordered for oneDNN,
// precomputed ops over weights) are made once per version and shared by every callable, signature
// and tier of the session.
//
// Changing a weight's memory in place without calling set() is unsupported. kiln reads a version's
// memory when it derives a form from it and does not look again, so both tiers go on computing
// with the forms already made (the old values) until set() is called again (the same tensor will
// do); ops that read the weight directly (an add of a bias) see the memory as it is, and so does a
// form first needed after the change.
class WeightRegistry {
public:
  WeightRegistry();
  // A new version of `name`: callables reading it rebuild their signatures on their next call, and
  // the cached signatures built on older versions are dropped then. The forms of older versions are
  // no longer shared; each goes with the last executable holding it.
  void set(const std::string& name, const Tensor& value);
  void set_all(const std::map<std::string, Tensor>& values);
  // Maps every tensor of a safetensors file (zero-copy) under its own name, optionally prefixed.
  void load_safetensors(const std::string& path, const std::string& prefix = "");
  std::optional<Tensor> find(const std::string& name) const;
  // The weight, or kiln::Error(weight): "weight 'fc1.weight' is not in the registry".
  Tensor get(const std::string& name) const;
  uint64_t version(const std::string& name) const; // 0 when absent
  // The weight and its version, read together (nullopt when absent).
  struct Versioned {
    Tensor value;
    uint64_t version = 0;
  };
  std::optional<Versioned> find_versioned(const std::string& name) const;
  // Increases whenever any weight changes: a cheap "did anything change" check (an atomic read,
  // no lock: every warm call makes it).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  std::vector<std::string> names() const;
  // The forms derived from these weights, shared by every executable of the session.
  const std::shared_ptr<runtime::WeightForms>& forms() const { return forms_; }

private:
  struct Entry {
    Tensor value;
    uint64_t version = 0;
  };
  std::shared_ptr<runtime::WeightForms> forms_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::atomic<uint64_t> generation_{0}; // written under mutex_, with the entry's version
};

// Statistics of one cached signature.
struct SignatureStats {
  std::string callable;  // graph name
  std::string signature; // "x=f32[4, 2]"
  std::string tier;      // tier now serving: "interp" or "jit"
  // Calls, and calls per tier that ran them ("interp", "jit"): exact counts.
  uint64_t calls = 0;
  std::map<std::string, uint64_t> calls_per_tier;
  // Times are sampled (two clock reads per call would cost more than a small graph's call): every
  // call among each calling thread's first 16 per tier, then one in 64. median_ms is the median of
  // the last 1024 sampled calls, total_ms their mean times `calls`.
  double total_ms = 0;
  double median_ms = 0;
  double interp_compile_ms = 0;
  double jit_compile_ms = 0; // 0 until promoted
  // Memory of the executable serving now: one call's arena peak (intermediates and scratch), the
  // named weights it reads in place, and what it holds besides: the graph's constants, values
  // precomputed from weights, the interpreter's packed weight copies (not the JIT's oneDNN
  // reorders).
  size_t arena_bytes = 0;
  size_t weight_bytes = 0;
  size_t constant_bytes = 0;
  // On the accelerator tier: the device memory its regions hold (a buffer per value they read or
  // make; the constants' copies among them). 0 on the CPU tiers.
  size_t device_bytes = 0;
  std::map<std::string, int> ops_per_lowering;
  std::string jit_error; // why promotion failed, when it did
};

// Counts over a session's whole life, evicted signatures included: how often the cache missed and
// the tiers compiled, for spotting recompile storms (stats() only shows what is cached now).
struct SessionTotals {
  uint64_t signatures_compiled = 0; // interpreter builds: first calls, and calls after an eviction
  uint64_t evictions = 0;
  uint64_t promotions = 0;        // JIT compiles that succeeded
  uint64_t failed_promotions = 0; // JIT compiles that failed (the interpreter kept serving)
};

// Owns the executable cache, the weight registry (with the forms derived from its weights), the tier
// policy and the background compile thread, and holds the tier set it compiles with. A process-wide
// default session exists; tests make their own.
class Session {
public:
  // `tiers`: the tiers it compiles with and the eager evaluator of its constant folding
  // (src/runtime/tier_set.hpp); null: runtime::default_tier_set(), every tier this build links.
  explicit Session(TierPolicy policy = TierPolicy::from_env(), size_t cache_capacity = 0 /* 0: env or 256 */,
                   std::shared_ptr<const runtime::TierSet> tiers = nullptr);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  static std::shared_ptr<Session> default_session();

  WeightRegistry& weights() { return weights_; }
  const TierPolicy& policy() const { return policy_; }
  const runtime::TierSet& tiers() const { return *tiers_; }
  runtime::ExecutableCache& cache() { return *cache_; }
  runtime::CompileQueue& compile_queue() { return *queue_; }
  std::vector<SignatureStats> stats() const;
  SessionTotals totals() const;
  // A printable table of stats().
  std::string stats_table() const;
  // Blocks until no promotion is pending (tests and benchmarks).
  void wait_for_promotions();

private:
  TierPolicy policy_;
  std::shared_ptr<const runtime::TierSet> tiers_;
  WeightRegistry weights_;
  std::unique_ptr<runtime::ExecutableCache> cache_;
  std::unique_ptr<runtime::CompileQueue> queue_;
};

} // namespace kiln
