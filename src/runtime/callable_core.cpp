#include "core/byte_size_text.hpp"
#include "core/dim_binding.hpp"
#include "core/inlinable.hpp"
#include "ir/custom_ops.hpp"
#include "ir/extension_registry.hpp"
#include "ir/passes/default_passes.hpp"
#include "ir/specialize.hpp"
#include "ir/text/printer.hpp"
#include "runtime/executable_cache.hpp"
#include "runtime/log.hpp"
#include "runtime/tier_set.hpp"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <kiln/compile.hpp>
#include <optional>

namespace kiln::detail {

using Clock = std::chrono::steady_clock;
using runtime::CacheEntry;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const char* kind_name(TreeLeaf::Kind k) {
  return k == TreeLeaf::Kind::baked ? "a scalar" : k == TreeLeaf::Kind::buffer ? "a buffer" : "a tensor";
}

// Every constant_external of the module: name -> declared type (the same name must agree).
std::map<std::string, ir::ValueType> declared_weights(const ir::Module& module) {
  std::map<std::string, ir::ValueType> out;
  for (const ir::Function& fn : module.functions)
    for (const ir::Op& op : fn.ops) {
      if (op.kind != ir::OpKind::constant_external) continue;
      const std::string& name = ir::params_of<ir::ExternalParams>(op).name;
      const ir::ValueType& type = fn.type_of(op.results[0]);
      auto [it, fresh] = out.emplace(name, type);
      if (!fresh && !(it->second == type))
        throw Error(ErrorKind::weight, "weight '" + name + "' is declared as " + ir::type_to_string(it->second) +
                                           " and as " + ir::type_to_string(type) + " at " + op.loc.to_string());
    }
  return out;
}

// kiln::Error(memory) when the caller lends an arena (capacity > 0) too small for `exe`.
void check_fits_arena(const runtime::Executable& exe, size_t capacity, const CacheEntry& entry) {
  if (capacity == 0 || exe.arena_bytes() <= capacity) return;
  throw Error(ErrorKind::memory, "@" + entry.callable + "(" + entry.signature + ") on the " + std::string(exe.tier()) +
                                     " tier needs an arena of " + byte_size_text(exe.arena_bytes()) +
                                     ", the caller's arena (CompileOptions::arena) holds " + byte_size_text(capacity));
}

// The data pointers of one warm call (SignatureTypes::bind), on the stack; a graph with more
// inputs and outputs than kInline together takes them from the heap.
class BoundData {
public:
  explicit BoundData(size_t n) : size_(n) {
    if (n > kInline) spill_ = std::make_unique<void*[]>(n);
  }
  std::span<void*> span() { return {spill_ ? spill_.get() : inline_.data(), size_}; }

private:
  static constexpr size_t kInline = 64;
  std::array<void*, kInline> inline_;
  std::unique_ptr<void*[]> spill_;
  size_t size_;
};

} // namespace

// The entry a warm call tries first: written under `writing` as a sequence lock (odd while being
// rewritten), read by warm calls without a lock or any write.
struct HeldEntry {
  std::atomic<uint64_t> sequence{0};
  std::atomic<CacheEntry*> entry{nullptr};
  std::atomic<uint64_t> epoch{0};      // the cache's eviction epoch when it was looked up
  std::atomic<uint64_t> generation{0}; // the registry's generation it is valid at
  std::mutex writing;
};

struct CallableCore::State {
  std::shared_ptr<const ir::Module> module;    // as traced (what staged() shows)
  std::shared_ptr<const ir::Module> optimized; // after the default passes: what tiers specialise
  TreeLeaves spec;
  std::map<std::string, Tensor> own_weights;
  uint64_t own_weights_owner = 0; // tells this callable's own weights apart from other callables'
  std::map<std::string, ir::ValueType> weight_types;
  std::shared_ptr<Session> session;
  runtime::ExecutableCache* cache = nullptr; // the session's
  WeightRegistry* registry = nullptr;        // the session's
  TierPolicy policy;
  std::string fingerprint;
  std::mutex last_mutex;
  std::vector<ir::ValueType> last_signature; // for KILN_LOG=recompiles
  // The cache key of the most recent signature, so a repeated call (the common case in serving)
  // skips formatting it. The cache is still asked, so LRU order and eviction stay exact.
  struct SignatureKey {
    std::vector<ir::ValueType> types;
    uint64_t weight_generation = 0;        // the registry's, to skip recomputing the key while unchanged
    std::vector<uint64_t> weight_versions; // of registry_weights, in order: part of the key
    std::string key, text;
  };
  std::vector<std::string> registry_weights;  // weights this callable reads from the session's registry
  std::vector<uint64_t> last_weight_versions; // for KILN_LOG=recompiles
  std::atomic<std::shared_ptr<const SignatureKey>> recent;
  HeldEntry held;
  // Argument structures that passed the full check (a few at most), and the latest of them.
  std::mutex structures_mutex;
  std::vector<std::unique_ptr<const ArgumentStructure>> structures;
  std::atomic<const ArgumentStructure*> structure{nullptr};
  std::atomic<bool> last_call_promoted{false};
  std::span<std::byte> arena; // CompileOptions::arena: empty unless the caller lends one
  std::mutex arena_mutex;     // calls take turns on a lent arena
  bool bakes_scalars = false; // a baked leaf in the spec: call_into cannot check it
  // The accelerator the spec puts inputs on: calls run on host copies of them, promote to the
  // accelerator tier and return their results there. Such a callable holds no entry for the warm
  // call, which binds host tensors only.
  std::optional<Device> inputs_device;

  runtime::WeightMap bind_weights() const;
  std::vector<ir::ValueType> check_arguments(const TreeLeaves& args, std::span<const Tensor> tensors) const;
  std::vector<Tensor> call_checked(const std::vector<ir::ValueType>& types, std::span<const Tensor> tensors);
  TreeLeaves spec_arguments(std::span<const Tensor> tensors) const;
  std::string describe_miss(const SignatureKey& signature);
  std::shared_ptr<CacheEntry> build_entry(const std::vector<ir::ValueType>& types, const std::string& text) const;
  // Starts the promotion of `entry` when due: checked inline on every call, the rest out of line.
  KILN_INLINABLE void maybe_promote(CacheEntry& entry) {
    if (policy.mode != JitMode::off && !entry.promotion_started.load(std::memory_order_relaxed))
      promote_when_due(entry);
  }
  void promote_when_due(CacheEntry& entry);
  std::shared_ptr<const SignatureKey> signature_key(const std::vector<ir::ValueType>& types,
                                                    uint64_t weight_generation) const;
  std::shared_ptr<CacheEntry> lookup(const SignatureKey& signature, uint64_t* epoch);
  std::shared_ptr<CacheEntry> entry_for(const std::vector<ir::ValueType>& types);
  void hold(CacheEntry* entry, uint64_t epoch, uint64_t generation);
  KILN_INLINABLE [[gnu::always_inline]] CacheEntry* held_entry() const;
  KILN_INLINABLE [[gnu::always_inline]] bool run_held(std::span<const Tensor> inputs, std::span<Tensor> outputs);
  KILN_INLINABLE [[gnu::always_inline]] bool run_held(std::span<const Tensor> inputs, TensorList& outputs);
  template <class Run>
  KILN_INLINABLE [[gnu::always_inline]] void serve(CacheEntry& entry, size_t thread_slot, const Run& run_on);
  void run(CacheEntry& entry, std::span<const Tensor> inputs, std::span<Tensor> outputs);
  void call_flat_checked(std::span<const Tensor> tensors, TensorList& outputs);
  void call_into_checked(const CallableCore& core, std::span<Tensor> outputs, std::span<const Tensor> tensors);
  KILN_INLINABLE [[gnu::always_inline]] void run_bound(CacheEntry& entry, std::span<void* const> data,
                                                       size_t thread_slot);
};

namespace {
std::string policy_text(const TierPolicy& policy) {
  const char* mode = policy.mode == JitMode::off ? "off" : policy.mode == JitMode::always ? "always" : "auto";
  return std::string("jit=") + mode + ",after=" + std::to_string(policy.promote_after) +
         (policy.async ? ",async" : ",sync") + ",to=" + policy.promote_to;
}
} // namespace

std::shared_ptr<const CallableCore::State::SignatureKey>
CallableCore::State::signature_key(const std::vector<ir::ValueType>& types, uint64_t weight_generation) const {
  auto signature = std::make_shared<SignatureKey>(SignatureKey{types, weight_generation, {}, {}, {}});
  for (size_t i = 0; i < types.size(); ++i)
    signature->text += (i ? ", " : "") + std::string(dtype_name(types[i].dtype)) + shape_to_string(types[i].shape);
  // Only the versions of the registry weights this graph reads are part of the key: setting any
  // other weight leaves its executables alone. Own weights never change, but are this callable's:
  // another callable of the same graph with other own weights must not share its executables.
  // The tier policy decides how an entry is built and promoted: callables of one graph with
  // different policies must not share entries either.
  signature->key = fingerprint + "|" + signature->text + "|" + policy_text(policy) + "|w";
  if (registry_weights.size() != weight_types.size())
    signature->key = "own weights of " + std::to_string(own_weights_owner) + "|" + signature->key;
  for (const std::string& name : registry_weights) {
    signature->weight_versions.push_back(session->weights().version(name));
    signature->key += std::to_string(signature->weight_versions.back()) + ",";
  }
  return signature;
}

std::shared_ptr<CacheEntry> CallableCore::State::lookup(const SignatureKey& signature, uint64_t* epoch) {
  bool built = false;
  auto entry = cache->get_or_build(
      signature.key, [&] { return build_entry(signature.types, signature.text); }, &built, epoch);
  if (built && runtime::log_enabled(runtime::LogChannel::recompiles))
    runtime::log_line(runtime::LogChannel::recompiles,
                      "compiled " + module->name + "(" + signature.text + "): " + describe_miss(signature));
  return entry;
}

runtime::WeightMap CallableCore::State::bind_weights() const {
  runtime::WeightMap bound(session->weights().forms());
  for (const auto& [name, type] : weight_types) {
    auto own = own_weights.find(name);
    runtime::WeightVersion version{own_weights_owner, name, 0};
    Tensor value;
    if (own != own_weights.end()) {
      value = own->second;
    } else {
      auto registered = session->weights().find_versioned(name);
      if (!registered) throw Error(ErrorKind::weight, "weight '" + name + "' is not in the registry");
      value = registered->value;
      version = {0, name, registered->version};
    }
    if (!value.is_concrete()) throw Error(ErrorKind::weight, "weight '" + name + "' is not a concrete tensor");
    if (value.device().kind != DeviceKind::cpu)
      throw Error(ErrorKind::weight, "weight '" + name + "' is on " + value.device().to_string() +
                                         ": weights are host tensors (the accelerator tier uploads its own forms)");
    ir::ValueType got{value.dtype(), value.shape(), false};
    if (!(got == type))
      throw Error(ErrorKind::weight,
                  "weight '" + name + "': expected " + ir::type_to_string(type) + ", got " + ir::type_to_string(got));
    bound.bind(name, value, version);
  }
  return bound;
}

// The arguments of a call whose structure matched the spec's: the spec's leaves, with the layouts
// of `tensors` (checked in full by check_arguments).
TreeLeaves CallableCore::State::spec_arguments(std::span<const Tensor> tensors) const {
  TreeLeaves args;
  size_t next = 0;
  for (const TreeLeaf& leaf : spec) {
    if (leaf.kind == TreeLeaf::Kind::baked) {
      args.push_back(leaf);
      continue;
    }
    if (next >= tensors.size()) break; // check_arguments names the leaf that is missing
    const Tensor& t = tensors[next++];
    args.push_back({leaf.path, leaf.kind, t.defined() ? t.layout() : TensorLayout{}, {}});
  }
  if (next != tensors.size())
    throw Error(ErrorKind::spec, "the callable takes " + std::to_string(next) + " tensor leaves, " +
                                     std::to_string(tensors.size()) + " tensors were given");
  return args;
}

std::vector<ir::ValueType> CallableCore::State::check_arguments(const TreeLeaves& args,
                                                                std::span<const Tensor> tensors) const {
  std::vector<ir::ValueType> types;
  std::vector<ShapeToBind> shapes; // checks the symbolic dims once every argument is in
  size_t next_tensor = 0;
  // A graph's positional arguments may also come as one vector of tensors (compile_staged's
  // older calling form): leaf "0.k" stands for argument "k".
  const bool one_vector = !args.empty() && args.size() == spec.size() && args[0].path == "0." + spec[0].path &&
                          spec[0].path.find('.') == std::string::npos;
  for (size_t i = 0; i < std::max(args.size(), spec.size()); ++i) {
    if (i >= args.size() || i >= spec.size() || args[i].path != (one_vector ? "0." : "") + spec[i].path) {
      auto leaf = [](const TreeLeaves& leaves, size_t k) {
        return k < leaves.size() ? "'" + leaves[k].path + "' (" + kind_name(leaves[k].kind) + ")" : "nothing";
      };
      throw Error(ErrorKind::spec, "the arguments do not match the callable's inputs at leaf " + std::to_string(i) +
                                       ": expected " + leaf(spec, i) + ", got " + leaf(args, i) +
                                       " (leaves are named by argument position, then container index or key)");
    }
    const TreeLeaf &want = spec[i], &got = args[i];
    if ((want.kind == TreeLeaf::Kind::baked) != (got.kind == TreeLeaf::Kind::baked))
      throw Error(ErrorKind::spec, "tree structure mismatch at '" + want.path + "': expected " + kind_name(want.kind) +
                                       ", got " + kind_name(got.kind));
    if (want.kind == TreeLeaf::Kind::baked) {
      if (want.baked != got.baked)
        throw Error(ErrorKind::spec,
                    "tree structure mismatch at '" + want.path + "': expected " + want.baked + ", got " + got.baked);
      continue;
    }
    const Tensor& t = tensors[next_tensor++];
    auto where = [&] { return "argument " + want.path + ": "; }; // built only for an error
    if (!t.defined())
      throw Error(ErrorKind::spec, where() + "expected " + want.layout.to_string() + ", got an undefined Tensor");
    if (!t.is_concrete())
      throw Error(ErrorKind::spec, where() + "a symbolic tensor cannot be passed to a compiled callable");
    const TensorLayout& layout = t.impl() ? t.layout() : TensorLayout{};
    bool ok =
        layout.dtype == want.layout.dtype && layout.rank() == want.layout.rank() && layout.device == want.layout.device;
    for (size_t d = 0; ok && d < want.layout.shape.size(); ++d)
      if (want.layout.shape[d].is_static() && want.layout.shape[d].size() != layout.shape[d].size()) ok = false;
    if (!(layout.device == want.layout.device))
      throw Error(ErrorKind::spec, where() + "expected a tensor on " + want.layout.device.to_string() +
                                       ", got one on " + layout.device.to_string() + " (copy it with .to(" +
                                       want.layout.device.to_string() + "))");
    if (!ok) // a dtype that differs is a dtype error, as everywhere else
      throw Error(layout.dtype != want.layout.dtype ? ErrorKind::dtype : ErrorKind::spec,
                  where() + "expected " + want.layout.to_string() + ", got " + layout.to_string());
    types.push_back({layout.dtype, layout.shape, want.kind == TreeLeaf::Kind::buffer});
    shapes.push_back({&want.layout.shape, nullptr, want.path});
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    shapes[i].concrete = &types[i].shape; // after the last push_back: types no longer moves
  bind_dims(shapes);
  return types;
}

std::string CallableCore::State::describe_miss(const SignatureKey& signature) {
  const std::vector<ir::ValueType>& types = signature.types;
  std::lock_guard lock(last_mutex);
  std::string why;
  if (last_signature.empty()) why = "first call";
  for (size_t w = 0; w < registry_weights.size() && w < last_weight_versions.size(); ++w)
    if (signature.weight_versions[w] != last_weight_versions[w])
      why += (why.empty() ? "" : ", ") + std::string("weight '") + registry_weights[w] + "' changed";
  last_weight_versions = signature.weight_versions;
  for (size_t i = 0; i < types.size() && i < last_signature.size(); ++i)
    for (size_t d = 0; d < types[i].shape.size() && d < last_signature[i].shape.size(); ++d)
      if (!(types[i].shape[d] == last_signature[i].shape[d]))
        why += (why.empty() ? "" : ", ") + std::string("argument ") + std::to_string(i) + " dim " + std::to_string(d) +
               " changed " + last_signature[i].shape[d].to_string() + " -> " + types[i].shape[d].to_string();
  last_signature = types;
  return why.empty() ? "signature evicted from the cache" : why;
}

std::shared_ptr<CacheEntry> CallableCore::State::build_entry(const std::vector<ir::ValueType>& types,
                                                             const std::string& text) const {
  auto start = Clock::now();
  auto entry = std::make_shared<CacheEntry>();
  entry->callable = module->name;
  entry->signature = text;
  entry->graph = std::make_shared<const ir::Function>(ir::specialize(*optimized, types));
  entry->types = runtime::SignatureTypes(*entry->graph);
  entry->weights = bind_weights();
  for (const std::string& name : registry_weights)
    entry->registry_versions.emplace_back(name, entry->weights.key(name)->sources.at(0).version);
  const runtime::ExecutableFactory* interp = session->tiers().interp();
  if (!interp) throw Error(ErrorKind::internal, "the interpreter tier is not linked into this build");
  entry->interp = (*interp)(entry->graph, entry->weights);
  check_fits_arena(*entry->interp, arena.size(), *entry);
  entry->interp_compile_ms = ms_since(start);
  return entry;
}

void CallableCore::State::promote_when_due(CacheEntry& entry) {
  // promote_after interpreter calls first, whether the JIT then compiles in the background or on
  // the calling thread.
  if (policy.mode == JitMode::automatic &&
      entry.calls.total(runtime::CallCounts::interp) < uint64_t(std::max(policy.promote_after, 0)))
    return;
  if (entry.promotion_started.exchange(true)) return;
  const runtime::ExecutableFactory* promoted = session->tiers().find(policy.promote_to);
  if (!promoted) {
    const std::string& name = policy.promote_to;
    entry.record_promotion(0, name == "jit" ? "the JIT tier is not linked into this build"
                              : name == "accelerator"
                                  ? "the accelerator tier is not linked into this build (-Dvulkan=disabled)"
                                  : "no tier '" + name + "' to promote to (jit or accelerator)");
    return;
  }
  // The queued job holds the entry weakly: a signature evicted before its turn is freed at once and
  // its promotion skipped, so a cache that thrashes cannot pile up executables in the queue.
  // The session's cache outlives the job: the session stops its compile queue before the cache goes.
  auto job = [weak_entry = entry.weak_from_this(), factory = *promoted, cache = cache, lent_arena = arena.size(),
              tier = policy.promote_to] {
    const std::shared_ptr<CacheEntry> entry = weak_entry.lock();
    if (!entry) return;
    auto start = Clock::now();
    try {
      std::shared_ptr<const runtime::Executable> exe = factory(entry->graph, entry->weights);
      check_fits_arena(*exe, lent_arena, *entry); // else the interpreter keeps serving in the lent arena
      double ms = ms_since(start);
      entry->promote(exe);
      entry->record_promotion(ms, "");
      cache->count_promotion(true);
      if (runtime::log_enabled(runtime::LogChannel::tiers))
        runtime::log_line(runtime::LogChannel::tiers, "promoted " + entry->callable + "(" + entry->signature + ") to " +
                                                          tier + " in " + std::to_string(ms) + " ms");
    } catch (const std::exception& e) {
      entry->record_promotion(ms_since(start), e.what());
      cache->count_promotion(false);
      runtime::log_line(runtime::LogChannel::tiers, "promotion of " + entry->callable + "(" + entry->signature +
                                                        ") failed; staying on the interpreter: " + e.what());
    }
  };
  bool async = policy.async && policy.mode != JitMode::always;
  if (async)
    session->compile_queue().push(job);
  else
    job();
}

CallableCore::CallableCore(std::shared_ptr<const ir::Module> module, TreeLeaves spec, const CompileOptions& options)
    : state_(std::make_unique<State>()) {
  for (const std::string& path : options.custom_extensions)
    ir::load_extension(path);
  ir::require_registered_custom_ops(*module); // an unknown extension op fails now, not at the first call
  state_->module = std::move(module);
  state_->spec = std::move(spec);
  for (const TreeLeaf& leaf : state_->spec)
    state_->bakes_scalars = state_->bakes_scalars || leaf.kind == TreeLeaf::Kind::baked;
  state_->arena = options.arena;
  if (reinterpret_cast<uintptr_t>(options.arena.data()) % 64 != 0)
    throw Error(ErrorKind::memory, "CompileOptions::arena must be aligned to 64 bytes (alignas(64) or "
                                   "std::aligned_alloc); it starts at " +
                                       std::to_string(reinterpret_cast<uintptr_t>(options.arena.data()) % 64) +
                                       " bytes past a 64-byte boundary");
  state_->own_weights = options.weights;
  static std::atomic<uint64_t> callables{0};
  state_->own_weights_owner = ++callables;
  state_->session = options.session ? options.session : Session::default_session();
  state_->cache = &state_->session->cache();
  state_->registry = &state_->session->weights();
  state_->policy = options.tiers.value_or(state_->session->policy());
  for (const TreeLeaf& leaf : state_->spec)
    if (leaf.kind != TreeLeaf::Kind::baked && leaf.layout.device.kind != DeviceKind::cpu)
      state_->inputs_device = leaf.layout.device;
  if (state_->inputs_device) state_->policy.promote_to = "accelerator";
  state_->weight_types = declared_weights(*state_->module);
  for (const auto& [name, type] : state_->weight_types)
    if (!state_->own_weights.contains(name)) state_->registry_weights.push_back(name);
  state_->bind_weights(); // missing or mismatched weights fail now, not at the first call
  state_->optimized =
      std::make_shared<const ir::Module>(ir::run_default_passes(*state_->module, state_->session->tiers().eager()));
  state_->fingerprint = std::to_string(std::hash<std::string>{}(ir::print_module(*state_->module)));
}

CallableCore::~CallableCore() = default;

std::shared_ptr<CacheEntry> CallableCore::State::entry_for(const std::vector<ir::ValueType>& types) {
  // Read before the weights' versions: an entry found for them is valid at least at this generation.
  const uint64_t generation = registry->generation();
  std::shared_ptr<const SignatureKey> key = recent.load();
  if (!key || key->weight_generation != generation || key->types != types) {
    // A weight changed since this callable last looked: entries built on its old version are dead.
    if (key && key->weight_generation != generation) cache->retire_stale(*registry);
    key = signature_key(types, generation);
    recent.store(key);
  }
  uint64_t epoch = 0;
  std::shared_ptr<CacheEntry> entry = lookup(*key, &epoch);
  if (!inputs_device) hold(entry.get(), epoch, generation);
  return entry;
}

void CallableCore::State::hold(CacheEntry* entry, uint64_t epoch, uint64_t generation) {
  std::lock_guard lock(held.writing);
  const uint64_t sequence = held.sequence.load(std::memory_order_relaxed);
  held.sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  held.entry.store(entry, std::memory_order_relaxed);
  held.epoch.store(epoch, std::memory_order_relaxed);
  held.generation.store(generation, std::memory_order_relaxed);
  held.sequence.store(sequence + 2, std::memory_order_release);
}

// The held entry, when nothing left the cache and no weight changed since it was looked up; null
// otherwise. Only inside a section of the cache's grace period, which keeps it alive.
inline CacheEntry* CallableCore::State::held_entry() const {
  const uint64_t sequence = held.sequence.load(std::memory_order_acquire);
  if (sequence & 1) return nullptr;
  CacheEntry* entry = held.entry.load(std::memory_order_relaxed);
  const uint64_t epoch = held.epoch.load(std::memory_order_relaxed);
  const uint64_t generation = held.generation.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (held.sequence.load(std::memory_order_relaxed) != sequence) return nullptr;
  if (!entry || epoch != cache->epoch() || generation != registry->generation()) return nullptr;
  return entry;
}

// The steady state of serving: the held entry, the same argument types, outputs that fit. Checks
// integers only, binds the tensors' data pointers on the way, and allocates nothing; false when
// anything differs (the caller then checks in full).
inline bool CallableCore::State::run_held(std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const size_t slot = detail::thread_slot();
  runtime::GracePeriod::Section section(cache->grace(), slot);
  CacheEntry* entry = held_entry();
  if (!entry) return false;
  BoundData data(entry->types.num_bound());
  if (!entry->types.bind(inputs, outputs, data.span())) return false;
  run_bound(*entry, data.span(), slot);
  return true;
}

// As above, into fresh output tensors.
inline bool CallableCore::State::run_held(std::span<const Tensor> inputs, TensorList& outputs) {
  const size_t slot = detail::thread_slot();
  runtime::GracePeriod::Section section(cache->grace(), slot);
  CacheEntry* entry = held_entry();
  if (!entry) return false;
  BoundData data(entry->types.num_bound());
  if (!entry->types.bind_arguments(inputs, data.span())) return false;
  outputs.assign_empty(entry->types.num_outputs());
  entry->types.make_outputs(outputs.span(), data.span().subspan(inputs.size()));
  run_bound(*entry, data.span(), slot);
  return true;
}

// Runs `run_on(executable)` on the executable serving `entry`, promoting it when due, and counts
// the call (timing a sample).
template <class Run> inline void CallableCore::State::serve(CacheEntry& entry, size_t thread_slot, const Run& run_on) {
  maybe_promote(entry);
  const runtime::Executable* exe = entry.serving();
  const auto tier = exe == entry.interp.get() ? runtime::CallCounts::interp : runtime::CallCounts::promoted;
  runtime::CallCounts::Shard& shard = entry.calls.shard(thread_slot);
  // Timing is sampled: two clock reads per call would cost more than the one-op graph's add.
  const bool timed = runtime::CallCounts::timed(shard.calls[tier].load(std::memory_order_relaxed));
  const Clock::time_point start = timed ? Clock::now() : Clock::time_point{};
  if (arena.empty()) {
    run_on(*exe, std::span<std::byte>());
  } else {
    std::lock_guard lock(arena_mutex);
    run_on(*exe, arena);
  }
  if (timed) entry.calls.record_time(ms_since(start));
  shard.calls[tier].fetch_add(1, std::memory_order_relaxed);
  cache->touch(entry);
  const bool on_promoted = tier == runtime::CallCounts::promoted;
  if (last_call_promoted.load(std::memory_order_relaxed) != on_promoted)
    last_call_promoted.store(on_promoted, std::memory_order_relaxed);
}

void CallableCore::State::run(CacheEntry& entry, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  serve(entry, detail::thread_slot(), [&](const runtime::Executable& exe, std::span<std::byte> lent) {
    exe.run_into(inputs, outputs, {.arena = lent});
  });
}

inline void CallableCore::State::run_bound(CacheEntry& entry, std::span<void* const> data, size_t thread_slot) {
  serve(entry, thread_slot,
        [&](const runtime::Executable& exe, std::span<std::byte> lent) { exe.run_bound(data, thread_slot, lent); });
}

std::vector<Tensor> CallableCore::State::call_checked(const std::vector<ir::ValueType>& types,
                                                      std::span<const Tensor> tensors) {
  TensorList held_outputs;
  if (run_held(tensors, held_outputs)) return {held_outputs.span().begin(), held_outputs.span().end()};
  const std::shared_ptr<CacheEntry> entry = entry_for(types);
  std::vector<Tensor> outputs(entry->types.num_outputs());
  std::vector<void*> output_data(outputs.size());
  entry->types.make_outputs(outputs, output_data);
  run(*entry, tensors, outputs);
  return outputs;
}

namespace {

// A device-input call's arguments as the tiers take them: host copies (transfers are host round
// trips today; docs/accelerator.md).
std::vector<Tensor> host_copies(std::span<const Tensor> tensors) {
  std::vector<Tensor> host;
  for (const Tensor& t : tensors)
    host.push_back(t.to(CPU()));
  return host;
}

std::vector<Tensor> moved_to(std::vector<Tensor> tensors, const Device& device) {
  for (Tensor& t : tensors)
    t = t.to(device);
  return tensors;
}

} // namespace

std::vector<Tensor> CallableCore::call(const TreeLeaves& args, const std::vector<Tensor>& tensors) {
  State& s = *state_;
  const std::vector<ir::ValueType> types = s.check_arguments(args, tensors);
  if (s.inputs_device) return moved_to(s.call_checked(types, host_copies(tensors)), *s.inputs_device);
  return s.call_checked(types, tensors);
}

// The calls below try the held entry inline and leave everything else to these, out of line, so
// the warm call's frame stays small.
[[gnu::noinline]] void CallableCore::State::call_flat_checked(std::span<const Tensor> tensors, TensorList& outputs) {
  const std::vector<Tensor> arguments(tensors.begin(), tensors.end());
  const std::vector<ir::ValueType> types = check_arguments(spec_arguments(tensors), arguments);
  if (inputs_device) {
    const std::vector<Tensor> results = moved_to(call_checked(types, host_copies(tensors)), *inputs_device);
    outputs.assign_empty(results.size());
    std::copy(results.begin(), results.end(), outputs.span().begin());
    return;
  }
  const std::shared_ptr<CacheEntry> entry = entry_for(types);
  outputs.assign_empty(entry->types.num_outputs());
  std::vector<void*> output_data(outputs.size());
  entry->types.make_outputs(outputs.span(), output_data);
  run(*entry, tensors, outputs.span());
}

[[gnu::noinline]] void CallableCore::State::call_into_checked(const CallableCore& core, std::span<Tensor> outputs,
                                                              std::span<const Tensor> tensors) {
  if (bakes_scalars)
    throw Error(ErrorKind::spec,
                "call_into takes tensors only; @" + module->name + " bakes a scalar argument: call it with operator()");
  const std::vector<Tensor> arguments(tensors.begin(), tensors.end());
  const std::vector<ir::ValueType> types = check_arguments(core.tensor_arguments(arguments), arguments);
  if (inputs_device) { // the results, into the caller's outputs wherever they are
    const std::vector<Tensor> results = call_checked(types, host_copies(tensors));
    if (outputs.size() != results.size())
      throw Error(ErrorKind::spec, "@" + module->name + " has " + std::to_string(results.size()) + " outputs, " +
                                       std::to_string(outputs.size()) + " output tensors were given");
    for (size_t i = 0; i < results.size(); ++i)
      results[i].copy_to(outputs[i]);
    return;
  }
  const std::shared_ptr<CacheEntry> entry = entry_for(types);
  runtime::check_call_outputs(*entry->graph, tensors, outputs);
  run(*entry, tensors, outputs);
}

void CallableCore::call_flat(std::span<const Tensor> tensors, TensorList& outputs) {
  if (!state_->run_held(tensors, outputs)) state_->call_flat_checked(tensors, outputs);
}

// A callable that bakes a scalar never takes the held entry here: its tensors alone cannot say
// whether the call matches.
void CallableCore::call_into(std::span<Tensor> outputs, std::span<const Tensor> tensors) {
  State& s = *state_;
  if (s.bakes_scalars || !s.run_held(tensors, outputs)) s.call_into_checked(*this, outputs, tensors);
}

const ArgumentStructure* CallableCore::structure() const { return state_->structure.load(std::memory_order_acquire); }

// Kept for the callable's life, so a warm call may read the latest without a lock; a few at most
// (a callable is called with one or two argument structures), past which new ones are not kept.
void CallableCore::remember_structure(ArgumentStructure structure) {
  State& s = *state_;
  std::lock_guard lock(s.structures_mutex);
  const ArgumentStructure* latest = s.structure.load(std::memory_order_relaxed);
  if (latest && *latest == structure) return;
  for (const auto& known : s.structures)
    if (*known == structure) {
      s.structure.store(known.get(), std::memory_order_release);
      return;
    }
  if (s.structures.size() >= 8) return;
  s.structures.push_back(std::make_unique<const ArgumentStructure>(std::move(structure)));
  s.structure.store(s.structures.back().get(), std::memory_order_release);
}

TreeLeaves CallableCore::tensor_arguments(const std::vector<Tensor>& tensors) const {
  const TreeLeaves& spec = state_->spec;
  if (tensors.size() != spec.size())
    throw Error(ErrorKind::spec, "the callable takes " + std::to_string(spec.size()) + " argument leaves, " +
                                     std::to_string(tensors.size()) + " tensors were given");
  TreeLeaves args;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i].kind == TreeLeaf::Kind::baked)
      throw Error(ErrorKind::spec, "argument '" + spec[i].path + "' is a baked scalar, not a tensor");
    args.push_back({spec[i].path, spec[i].kind, tensors[i].layout(), {}});
  }
  return args;
}

void CallableCore::inspect_signature(const TreeLeaves& args, const std::vector<Tensor>& tensors,
                                     const SignatureInspector& inspect) const {
  const State& s = *state_;
  if (s.inputs_device) // the tools run their executables on the arguments as given
    throw Error(ErrorKind::unsupported, "@" + s.module->name + " takes tensors on " + s.inputs_device->to_string() +
                                            ": compare_tiers and the stepper take host tensors; compile it for host "
                                            "inputs and pass .to(CPU()) copies");
  const std::vector<ir::ValueType> types = s.check_arguments(args, tensors);
  ir::InlinedCalls calls;
  auto graph = std::make_shared<const ir::Function>(ir::specialize(*s.optimized, types, &calls));
  inspect(graph, s.bind_weights(), calls);
}

const std::shared_ptr<const ir::Module>& CallableCore::module() const { return state_->module; }
const TreeLeaves& CallableCore::spec() const { return state_->spec; }
Session& CallableCore::session() const { return *state_->session; }
const std::string& CallableCore::promote_to() const { return state_->policy.promote_to; }
std::string CallableCore::last_tier() const {
  return state_->last_call_promoted.load() ? state_->policy.promote_to : "interp";
}

} // namespace kiln::detail

namespace kiln {

CompiledCallable<std::vector<Tensor>> compile_staged(const StagedGraph& graph, CompileOptions options) {
  detail::TreeLeaves spec = graph.input_leaves();
  if (spec.empty()) {
    const ir::Function& entry = graph.graph().entry();
    for (size_t i = 0; i < entry.args.size(); ++i) {
      const ir::ValueType& t = entry.type_of(entry.args[i]);
      spec.push_back({std::to_string(i),
                      t.is_buffer ? detail::TreeLeaf::Kind::buffer : detail::TreeLeaf::Kind::tensor,
                      TensorLayout(t.dtype, t.shape),
                      {}});
    }
  }
  auto core = std::make_shared<detail::CallableCore>(graph.module_ptr(), std::move(spec), options);
  std::vector<Tensor> result_template(graph.graph().entry().outputs.size());
  return CompiledCallable<std::vector<Tensor>>(std::move(core), std::move(result_template));
}

} // namespace kiln
