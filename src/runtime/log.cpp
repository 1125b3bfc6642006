#include "runtime/log.hpp"
#include <cstdio>
#include <cstdlib>
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
  const char* env = std::getenv("KILN_LOG");
  if (!env) return false;
  std::string value = "," + std::string(env) + ",";
  return value.find(",all,") != std::string::npos ||
         value.find("," + std::string(channel_name(channel)) + ",") != std::string::npos;
}

void log_line(LogChannel channel, const std::string& message) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[kiln:%s] %s\n", channel_name(channel), message.c_str());
}

} // namespace kiln::runtime
