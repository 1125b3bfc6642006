#include "runtime/grace_period.hpp"
#include "runtime/log.hpp"
#include <algorithm>
#include <condition_variable>
#include <kiln/jit.hpp>
#include <map>

namespace kiln::detail {

// A call's signature as an entry matches it: per leaf its kind and path; tensors their dtype, dims
// (>= 0 a static size, < 0 the symbol -(k + 1), the same symbol meaning the same size) and the
// earlier tensor leaf sharing their storage; baked leaves their text.
struct TraceCache::Entry::Pattern {
  struct Leaf {
    TreeLeaf::Kind kind = TreeLeaf::Kind::tensor;
    std::string path;
    DType dtype = DType::f32;
    std::vector<int64_t> dims;
    std::string baked;
    int32_t alias_of = -1;
  };
  std::vector<Leaf> leaves;
  // The tensor leaves again, flat, for the warm call: dims of each from first_dim in `dims`.
  struct TensorLeaf {
    DType dtype = DType::f32;
    size_t first_dim = 0, rank = 0;
    int32_t alias_of = -1;
  };
  std::vector<TensorLeaf> tensor_leaves;
  std::vector<int64_t> dims;
  int64_t symbols = 0;
  void flatten();
};

void TraceCache::Entry::Pattern::flatten() {
  for (const Leaf& leaf : leaves) {
    if (leaf.kind == TreeLeaf::Kind::baked) continue;
    tensor_leaves.push_back({leaf.dtype, dims.size(), leaf.dims.size(), leaf.alias_of});
    for (int64_t d : leaf.dims) {
      dims.push_back(d);
      symbols = std::max(symbols, -d);
    }
  }
}

namespace {

using Pattern = TraceCache::Entry::Pattern;

// The concrete pattern of a call (every dim static).
Pattern call_pattern(const TreeLeaves& leaves, const std::vector<Tensor>& tensors) {
  Pattern p;
  size_t next_tensor = 0;
  std::vector<const void*> storage;
  for (const TreeLeaf& leaf : leaves) {
    Pattern::Leaf out{leaf.kind, leaf.path, DType::f32, {}, leaf.baked, -1};
    if (leaf.kind != TreeLeaf::Kind::baked) {
      const Tensor& t = tensors.at(next_tensor++);
      out.dtype = t.dtype();
      out.dims = t.dims();
      const void* data = !t.nbytes()                          ? nullptr
                         : t.device().kind == DeviceKind::cpu ? t.raw_data()
                                                              : t.impl().get(); // one buffer per impl
      for (size_t i = 0; i < storage.size() && data; ++i)
        if (storage[i] == data) {
          out.alias_of = int32_t(i);
          break;
        }
      storage.push_back(data);
    }
    p.leaves.push_back(std::move(out));
  }
  return p;
}

// Same leaves, kinds, dtypes, ranks, baked values and aliasing: only sizes may differ.
bool same_structure(const Pattern& a, const Pattern& b) {
  if (a.leaves.size() != b.leaves.size()) return false;
  for (size_t i = 0; i < a.leaves.size(); ++i) {
    const Pattern::Leaf &x = a.leaves[i], &y = b.leaves[i];
    if (x.kind != y.kind || x.path != y.path || x.baked != y.baked || x.dtype != y.dtype ||
        x.dims.size() != y.dims.size() || x.alias_of != y.alias_of)
      return false;
  }
  return true;
}

// The same concrete signature.
bool same_signature(const Pattern& a, const Pattern& b) {
  if (!same_structure(a, b)) return false;
  for (size_t i = 0; i < a.leaves.size(); ++i)
    if (a.leaves[i].dims != b.leaves[i].dims) return false;
  return true;
}

// Whether an entry's pattern serves a call's (concrete) pattern.
bool serves(const Pattern& entry, const Pattern& call) {
  if (!same_structure(entry, call)) return false;
  std::map<int64_t, int64_t> bound; // symbol -> size
  for (size_t i = 0; i < entry.leaves.size(); ++i)
    for (size_t d = 0; d < entry.leaves[i].dims.size(); ++d) {
      const int64_t want = entry.leaves[i].dims[d], got = call.leaves[i].dims[d];
      if (want >= 0 && want != got) return false;
      if (want < 0 && !bound.emplace(want, got).second && bound[want] != got) return false;
    }
  return true;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t d = 0; d < dims.size(); ++d)
    out += (d ? ", " : "") + (dims[d] >= 0 ? std::to_string(dims[d]) : "s" + std::to_string(-dims[d] - 1));
  return out + "]";
}

} // namespace

struct TraceCache::State {
  mutable std::mutex mutex;
  std::vector<std::shared_ptr<Entry>> entries;
  // The entry warm calls try first (TraceCache::hold); entries leaving `entries` are freed once the
  // warm sections running then have ended.
  std::atomic<const Entry*> held{nullptr};
  runtime::GracePeriod grace;
  std::vector<std::shared_ptr<Entry>> dropped; // waiting for the grace period
  uint64_t dropped_warm_calls = 0;             // of entries no longer cached: still hits
  std::atomic<uint64_t> clock{0};              // orders uses, for LRU
  std::atomic<uint64_t> hits{0};
  uint64_t traces = 0; // traces begun since the last clear: what the recompile limit counts
  uint64_t misses = 0, uncached = 0, evictions = 0;
  double compile_ms = 0;
  bool fail_on_recompile = false;
  bool static_only = false;                              // a symbolic trace failed: dims stay static
  bool limit_logged = false;                             // the recompile limit's line was printed
  std::set<std::pair<std::string, size_t>> dynamic_dims; // automatic: (leaf path, dim) now symbolic
  // Signatures being traced now, and the wake-up of the calls waiting for one of them.
  std::vector<std::pair<std::type_index, std::shared_ptr<const Pattern>>> in_flight;
  std::condition_variable traced;

  // Takes `entry` out of the cache (under the lock); drop_retired() frees it.
  void retire_locked(std::vector<std::shared_ptr<Entry>>::iterator it) {
    const std::shared_ptr<Entry>& entry = *it;
    entry->in_cache = false;
    if (held.load() == entry.get()) held.store(nullptr);
    for (const Entry::WarmCalls& shard : entry->warm_calls)
      dropped_warm_calls += shard.calls.load(std::memory_order_relaxed);
    dropped.push_back(std::move(*it));
    entries.erase(it);
  }
  // Without the lock, outside any warm section of this cache.
  void drop_retired() {
    std::vector<std::shared_ptr<Entry>> freeing;
    {
      const std::lock_guard lock(mutex);
      freeing.swap(dropped);
    }
    if (!freeing.empty()) grace.wait();
  }

  bool is_in_flight(const Pattern& call, std::type_index args_type) const {
    return std::any_of(in_flight.begin(), in_flight.end(),
                       [&](const auto& p) { return p.first == args_type && same_signature(*p.second, call); });
  }
};

TraceCache::TraceCache(JitOptions options) : options_(std::move(options)), state_(std::make_unique<State>()) {
  if (options_.name.empty()) options_.name = "fn";
  if (options_.recompile_limit < 1) throw Error(ErrorKind::spec, "JitOptions::recompile_limit must be at least 1");
  if (options_.capacity < 1) throw Error(ErrorKind::spec, "JitOptions::capacity must be at least 1");
  state_->fail_on_recompile = options_.fail_on_recompile;
}

TraceCache::~TraceCache() = default;

StageOptions TraceCache::stage_options() const {
  return {options_.name, options_.compile.allow_subgraphs, options_.compile.custom_extensions};
}

namespace {

// The position of the argument a leaf path ("1.kv.a") is in.
size_t argument_position(const std::string& path) { return std::stoul(path.substr(0, path.find('.'))); }

// "argument 0 ('x')", "argument 1.kv.a ('kv')": the leaf path, and the name of its argument.
std::string argument_text(const std::string& path, const std::vector<std::string>& names) {
  const size_t position = argument_position(path);
  return "argument " + path + (position < names.size() ? " ('" + names[position] + "')" : "");
}

// "x", "kv.a" where the argument has a name; the path otherwise.
std::string leaf_label(const std::string& path, const std::vector<std::string>& names) {
  const size_t position = argument_position(path), dot = std::min(path.find('.'), path.size());
  return position < names.size() ? names[position] + path.substr(dot) : path;
}

// Why `call` misses: what differs from the most recently used entry of the same argument types.
std::string describe_miss(const Pattern& call, const std::vector<std::shared_ptr<TraceCache::Entry>>& entries,
                          std::type_index args_type, const std::vector<std::string>& names) {
  const TraceCache::Entry* closest = nullptr;
  for (const auto& entry : entries)
    if (entry->args_type == args_type && entry->pattern->leaves.size() == call.leaves.size() &&
        (!closest || entry->last_use > closest->last_use))
      closest = entry.get();
  if (!closest) return entries.empty() ? "first call" : "the arguments' types changed";
  std::map<int64_t, std::pair<int64_t, std::string>> bound; // symbol -> size and where
  for (size_t i = 0; i < call.leaves.size(); ++i) {
    const Pattern::Leaf &want = closest->pattern->leaves[i], &got = call.leaves[i];
    const std::string arg = argument_text(got.path, names);
    if (want.path != got.path || want.kind != got.kind) return "the arguments' structure changed at " + arg;
    if (want.baked != got.baked) return arg + " (a baked value) changed: expected " + want.baked + ", got " + got.baked;
    if (want.kind == TreeLeaf::Kind::baked) continue;
    if (want.dtype != got.dtype)
      return arg + " dtype changed: expected " + dtype_name(want.dtype) + ", got " + dtype_name(got.dtype);
    if (want.dims.size() != got.dims.size())
      return arg + " rank changed: expected " + std::to_string(want.dims.size()) + ", got " +
             std::to_string(got.dims.size());
    if (want.alias_of != got.alias_of)
      return arg + (got.alias_of >= 0 ? " is now the same tensor as an earlier argument"
                                      : " is no longer the same tensor as an earlier argument");
    for (size_t d = 0; d < got.dims.size(); ++d) {
      const std::string dim = arg + " dim " + std::to_string(d);
      if (want.dims[d] >= 0 && want.dims[d] != got.dims[d])
        return dim + " changed: expected " + std::to_string(want.dims[d]) + ", got " + std::to_string(got.dims[d]);
      if (want.dims[d] >= 0) continue;
      const auto [it, fresh] = bound.emplace(want.dims[d], std::pair{got.dims[d], dim});
      if (!fresh && it->second.first != got.dims[d])
        return dim + " is " + std::to_string(got.dims[d]) + " but " + it->second.second + " is " +
               std::to_string(it->second.first) + " (one symbol in the entry)";
    }
  }
  return "the arguments changed";
}

} // namespace

TraceCache::Decision TraceCache::decide(const TreeLeaves& leaves, const std::vector<Tensor>& tensors,
                                        std::type_index args_type) {
  State& s = *state_;
  auto call = std::make_shared<const Pattern>(call_pattern(leaves, tensors));
  std::unique_lock lock(s.mutex);
  while (true) {
    for (const auto& entry : s.entries)
      if (entry->args_type == args_type && serves(*entry->pattern, *call)) return {entry, {}, false, false, nullptr};
    if (!s.is_in_flight(*call, args_type)) break;
    s.traced.wait(lock); // another thread traces this signature: its entry will serve this call
  }

  if (s.traces >= uint64_t(options_.recompile_limit)) {
    ++s.uncached;
    if (!s.limit_logged)
      runtime::log_line(runtime::LogChannel::recompiles,
                        options_.name + " reached its recompile limit (" + std::to_string(options_.recompile_limit) +
                            "): new signatures run eagerly, uncached; its " + std::to_string(s.entries.size()) +
                            " entries keep serving (JitOptions::recompile_limit)");
    s.limit_logged = true;
    return {nullptr, {}, false, true, nullptr};
  }
  const std::string why = describe_miss(*call, s.entries, args_type, options_.argument_names);
  if (s.fail_on_recompile && s.traces > 0)
    throw Error(ErrorKind::spec, options_.name + " would recompile, and fail_on_recompile is set: " + why);

  // Automatic dynamic: the dims in which this call differs from an entry of the same structure
  // become symbolic, for this trace and later ones.
  if (options_.dynamic == Dynamic::automatic)
    for (const auto& entry : s.entries) {
      if (entry->args_type != args_type || !same_structure(*entry->pattern, *call)) continue;
      for (size_t i = 0; i < call->leaves.size(); ++i)
        for (size_t d = 0; d < call->leaves[i].dims.size(); ++d)
          if (entry->pattern->leaves[i].dims[d] != call->leaves[i].dims[d])
            s.dynamic_dims.emplace(call->leaves[i].path, d);
    }

  Decision decision;
  std::map<int64_t, std::string> symbol_of_size; // duck sizing: equal sizes share a symbol
  size_t next = 0;
  for (const Pattern::Leaf& leaf : call->leaves) {
    if (leaf.kind == TreeLeaf::Kind::baked) continue;
    Shape shape;
    for (size_t d = 0; d < leaf.dims.size(); ++d) {
      const bool symbolic =
          !s.static_only && (options_.dynamic == Dynamic::on
                                 ? d == 0
                                 : options_.dynamic == Dynamic::automatic && s.dynamic_dims.contains({leaf.path, d}));
      if (!symbolic) {
        shape.push_back(Dim(leaf.dims[d]));
        continue;
      }
      auto [it, fresh] = symbol_of_size.emplace(leaf.dims[d], "");
      if (fresh) it->second = "s" + std::to_string(symbol_of_size.size() - 1);
      shape.push_back(Dim::symbolic(it->second));
      decision.symbolic = true;
    }
    decision.layouts.push_back(TensorLayout(leaf.dtype, shape, tensors.at(next++).layout().device));
  }
  ++s.traces;
  ++s.misses;
  s.in_flight.emplace_back(args_type, call);
  State* state = &s;
  decision.in_flight = std::shared_ptr<void>(nullptr, [state, call](void*) {
    const std::lock_guard done(state->mutex);
    std::erase_if(state->in_flight, [&](const auto& p) { return p.second == call; });
    state->traced.notify_all();
  });
  if (runtime::log_enabled(runtime::LogChannel::recompiles))
    runtime::log_line(runtime::LogChannel::recompiles, "recompiling " + options_.name + " (entry " +
                                                           std::to_string(s.traces) + " of " +
                                                           std::to_string(options_.recompile_limit) + "): " + why);
  return decision;
}

std::vector<TensorLayout> TraceCache::symbolic_trace_failed(const Error& error, const std::vector<Tensor>& tensors) {
  {
    const std::lock_guard lock(state_->mutex);
    if (!state_->static_only && runtime::log_enabled(runtime::LogChannel::recompiles))
      runtime::log_line(runtime::LogChannel::recompiles,
                        options_.name +
                            " cannot be traced with symbolic dims, so it gets one entry per shape: " + error.what());
    state_->static_only = true;
  }
  std::vector<TensorLayout> layouts;
  for (const Tensor& t : tensors)
    layouts.push_back(t.layout());
  return layouts;
}

std::shared_ptr<TraceCache::Entry>
TraceCache::insert(const TreeLeaves& leaves, const std::vector<Tensor>& tensors, std::type_index args_type,
                   const std::vector<TensorLayout>& layouts, std::shared_ptr<const void> callable,
                   std::shared_ptr<CallableCore> core, double compile_ms, ArgumentStructure structure) {
  State& s = *state_;
  auto pattern = std::make_shared<Pattern>(call_pattern(leaves, tensors));
  std::map<std::string, int64_t> symbols;
  size_t next = 0;
  std::string signature;
  for (Pattern::Leaf& leaf : pattern->leaves) {
    signature += (signature.empty() ? "" : ", ") + leaf_label(leaf.path, options_.argument_names) + "=";
    if (leaf.kind == TreeLeaf::Kind::baked) {
      signature += leaf.baked;
      continue;
    }
    const Shape& shape = layouts.at(next++).shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d].is_symbolic())
        leaf.dims[d] = -1 - symbols.emplace(shape[d].name(), int64_t(symbols.size())).first->second;
    signature += std::string(dtype_name(leaf.dtype)) + dims_text(leaf.dims);
  }
  pattern->flatten();
  const Pattern call = call_pattern(leaves, tensors);
  std::unique_lock lock(s.mutex);
  s.compile_ms += compile_ms;
  for (const auto& existing : s.entries) // another thread traced the same signature meanwhile
    if (existing->args_type == args_type && serves(*existing->pattern, call)) {
      ++existing->calls;
      existing->last_use = ++s.clock;
      return existing;
    }
  auto entry = std::make_shared<Entry>();
  entry->callable = std::move(callable);
  entry->core = std::move(core);
  entry->compile_ms = compile_ms;
  entry->signature = std::move(signature);
  entry->pattern = std::move(pattern);
  entry->args_type = args_type;
  entry->structure = std::move(structure);
  entry->calls = 1;
  entry->last_use = ++s.clock;
  s.entries.push_back(entry);
  if (s.entries.size() > options_.capacity) {
    auto oldest = std::min_element(s.entries.begin(), s.entries.end(),
                                   [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    s.retire_locked(oldest);
    ++s.evictions;
  }
  lock.unlock();
  s.drop_retired();
  return entry;
}

TraceCache::WarmSection::WarmSection(TraceCache& cache) {
  State& s = *cache.state_;
  counter_ = s.grace.enter(); // opaque to the public header
  held_ = s.held.load(std::memory_order_acquire);
}

TraceCache::WarmSection::~WarmSection() { runtime::GracePeriod::leave(static_cast<std::atomic<uint64_t>*>(counter_)); }

bool TraceCache::serves_warm(const Entry& entry, std::span<const Tensor> tensors) {
  const Pattern& p = *entry.pattern;
  if (tensors.size() != p.tensor_leaves.size() || p.symbols > 8) return false;
  std::array<int64_t, 8> bound; // symbol -> size, -1 until seen
  bound.fill(-1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const Pattern::TensorLeaf& leaf = p.tensor_leaves[i];
    if (!t.is_concrete() || t.dtype() != leaf.dtype) return false;
    const Shape& shape = t.shape();
    if (shape.size() != leaf.rank) return false;
    for (size_t d = 0; d < leaf.rank; ++d) {
      const int64_t want = p.dims[leaf.first_dim + d], got = shape[d].size();
      if (want >= 0) {
        if (want != got) return false;
        continue;
      }
      int64_t& symbol = bound[size_t(-want - 1)];
      if (symbol < 0) symbol = got;
      if (symbol != got) return false;
    }
  }
  // Aliasing as call_pattern sees it: the first earlier tensor leaf with the same storage.
  for (size_t i = 1; i < tensors.size(); ++i) {
    const void* data = tensors[i].nbytes() ? tensors[i].raw_data() : nullptr;
    int32_t alias_of = -1;
    for (size_t j = 0; j < i && data && alias_of < 0; ++j)
      if (tensors[j].nbytes() && tensors[j].raw_data() == data) alias_of = int32_t(j);
    if (alias_of != p.tensor_leaves[i].alias_of) return false;
  }
  Entry& counted = const_cast<Entry&>(entry);
  counted.warm_calls[thread_slot() % counted.warm_calls.size()].calls.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = state_->clock.load(std::memory_order_relaxed);
  if (counted.last_use.load(std::memory_order_relaxed) != now) counted.last_use = ++state_->clock;
  return true;
}

void TraceCache::hold(const std::shared_ptr<Entry>& entry) {
  const std::lock_guard lock(state_->mutex);
  if (entry->in_cache && entry->structure.args_type) state_->held.store(entry.get(), std::memory_order_release);
}

void TraceCache::count_hit(Entry& entry) {
  ++state_->hits;
  ++entry.calls;
  entry.last_use = ++state_->clock;
}

JitStats TraceCache::stats() const {
  const State& s = *state_;
  const std::lock_guard lock(s.mutex);
  JitStats out{s.entries.size(), s.hits + s.dropped_warm_calls, s.misses, s.uncached, s.evictions, s.compile_ms, {}};
  std::vector<std::shared_ptr<Entry>> by_use = s.entries;
  std::sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) { return a->last_use > b->last_use; });
  for (const auto& entry : by_use) {
    uint64_t warm = 0;
    for (const Entry::WarmCalls& shard : entry->warm_calls)
      warm += shard.calls.load(std::memory_order_relaxed);
    out.hits += warm;
    out.per_entry.push_back({entry->signature, entry->core->last_tier(), entry->calls + warm, entry->compile_ms});
  }
  return out;
}

void TraceCache::clear() {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  while (!s.entries.empty())
    s.retire_locked(s.entries.end() - 1);
  s.dropped_warm_calls = 0;
  s.hits = 0;
  s.traces = s.misses = s.uncached = s.evictions = 0;
  s.compile_ms = 0;
  s.static_only = s.limit_logged = false;
  s.dynamic_dims.clear();
  lock.unlock();
  s.drop_retired();
}

void TraceCache::set_fail_on_recompile(bool on) {
  const std::lock_guard lock(state_->mutex);
  state_->fail_on_recompile = on;
}

} // namespace kiln::detail
