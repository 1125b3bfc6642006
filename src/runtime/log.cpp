#include "runtime/log.hpp"
#include "core/environment.hpp"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <kiln/error.hpp>
#include <mutex>

namespace kiln::runtime {

namespace {
const char* channel_name(LogChannel c) {
  switch (c) {
  case LogChannel::tiers: return "tiers";
  case LogChannel::recompiles: return "recompiles";
  case LogChannel::jit: return "jit";
  }
  return "?";
}
} // namespace

bool log_enabled(LogChannel channel) {
  // Read per call (cheap) so tests can set KILN_LOG at run time.
  // Never throws: a bad KILN_LOG is refused when the session is created (env::check_all).
  std::optional<std::vector<std::string>> channels;
  try {
    channels = env::log_channels();
  } catch (const Error&) {
    return false;
  }
  if (!channels) return false;
  return std::any_of(channels->begin(), channels->end(),
                     [&](const std::string& c) { return c == "all" || c == channel_name(channel); });
}

void log_line(LogChannel channel, const std::string& message) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[kiln:%s] %s\n", channel_name(channel), message.c_str());
}

} // namespace kiln::runtime
