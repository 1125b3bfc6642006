#include "core/environment.hpp"
#include "runtime/executable_cache.hpp"
#include "runtime/tier_set.hpp"
#include <cstdio>
#include <cstdlib>
#include <kiln/session.hpp>
#include <sstream>

namespace kiln {

TierPolicy TierPolicy::from_env() {
  TierPolicy p;
  p.mode = env::jit_mode().value_or(p.mode);
  p.promote_after = int(env::promote_after().value_or(p.promote_after));
  p.async = env::jit_async().value_or(p.async);
  p.promote_to = env::promote_to().value_or(p.promote_to);
  return p;
}

// env::check_all runs first, so a bad KILN_* value is an Error here, before the compile thread starts.
Session::Session(TierPolicy policy, size_t cache_capacity, std::shared_ptr<const runtime::TierSet> tiers)
    : policy_((env::check_all(), policy)), tiers_(tiers ? std::move(tiers) : runtime::default_tier_set()),
      cache_(std::make_unique<runtime::ExecutableCache>(cache_capacity ? cache_capacity
                                                                       : size_t(env::cache_capacity().value_or(256)))),
      queue_(std::make_unique<runtime::CompileQueue>()) {
  if (policy_.mode == JitMode::automatic && policy_.async) tiers_->warm_up();
}

Session::~Session() = default;

// At exit the default session stops its compile thread (pending promotions dropped, the running
// one finished) before any static object built after it is destroyed: the handler is registered
// once the session is complete, so it runs before their destructors and the session's own.
std::shared_ptr<Session> Session::default_session() {
  static std::shared_ptr<Session> session = std::make_shared<Session>();
  static const bool stops_at_exit = [] {
    std::atexit([] { session->compile_queue().shutdown(); });
    return true;
  }();
  (void)stops_at_exit;
  return session;
}

std::vector<SignatureStats> Session::stats() const {
  std::vector<SignatureStats> out;
  for (const auto& entry : cache_->entries())
    out.push_back(entry->stats());
  return out;
}

SessionTotals Session::totals() const { return cache_->totals(); }

std::string Session::stats_table() const {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-28s %-11s %8s %10s %10s %10s %12s %12s %12s\n", "graph", "signature",
                "tier", "calls", "median ms", "interp ms", "jit ms", "arena bytes", "weight bytes", "const bytes");
  os << line;
  for (const SignatureStats& s : stats()) {
    std::snprintf(line, sizeof line, "%-14s %-28s %-11s %8llu %10.4f %10.2f %10.2f %12zu %12zu %12zu\n",
                  s.callable.c_str(), s.signature.c_str(), s.tier.c_str(), static_cast<unsigned long long>(s.calls),
                  s.median_ms, s.interp_compile_ms, s.jit_compile_ms, s.arena_bytes, s.weight_bytes, s.constant_bytes);
    os << line;
  }
  return os.str();
}

void Session::wait_for_promotions() { queue_->wait_idle(); }

} // namespace kiln
