#include "runtime/executable_cache.hpp"
#include <kiln/session.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kiln {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

int64_t env_int(const char* name, int64_t fallback) {
  std::string v = env_or(name, "");
  if (v.empty()) return fallback;
  try {
    size_t used = 0;
    int64_t n = std::stoll(v, &used);
    if (used == v.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::spec, std::string(name) + "='" + v + "' is not a non-negative integer");
}

} // namespace

TierPolicy TierPolicy::from_env() {
  TierPolicy p;
  std::string mode = env_or("KILN_JIT", "auto");
  if (mode == "off" || mode == "0") p.mode = JitMode::off;
  else if (mode == "always") p.mode = JitMode::always;
  else if (mode == "auto" || mode == "1") p.mode = JitMode::automatic;
  else throw Error(ErrorKind::spec, "KILN_JIT='" + mode + "': expected off, auto or always");
  p.promote_after = int(env_int("KILN_PROMOTE_AFTER", p.promote_after));
  p.async = env_or("KILN_JIT_ASYNC", "1") != "0";
  return p;
}

Session::Session(TierPolicy policy, size_t cache_capacity)
    : policy_(policy),
      cache_(std::make_unique<runtime::ExecutableCache>(
          cache_capacity ? cache_capacity : size_t(std::max<int64_t>(1, env_int("KILN_CACHE_CAPACITY", 256))))),
      queue_(std::make_unique<runtime::CompileQueue>()) {}

Session::~Session() = default;

std::shared_ptr<Session> Session::default_session() {
  static std::shared_ptr<Session> session = std::make_shared<Session>();
  return session;
}

std::vector<SignatureStats> Session::stats() const {
  std::vector<SignatureStats> out;
  for (const auto& entry : cache_->entries()) out.push_back(entry->stats());
  return out;
}

std::string Session::stats_table() const {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-28s %-6s %8s %10s %10s %10s %12s\n", "graph", "signature", "tier",
                "calls", "median ms", "interp ms", "jit ms", "arena bytes");
  os << line;
  for (const SignatureStats& s : stats()) {
    std::snprintf(line, sizeof line, "%-14s %-28s %-6s %8llu %10.4f %10.2f %10.2f %12zu\n", s.callable.c_str(),
                  s.signature.c_str(), s.tier.c_str(), static_cast<unsigned long long>(s.calls), s.median_ms,
                  s.interp_compile_ms, s.jit_compile_ms, s.arena_bytes);
    os << line;
  }
  return os.str();
}

void Session::wait_for_promotions() { queue_->wait_idle(); }

} // namespace kiln
