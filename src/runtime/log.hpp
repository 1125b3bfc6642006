#pragma once
#include <string>

namespace kiln::runtime {

// KILN_LOG=tiers,recompiles,jit (comma-separated; "all" enables every channel).
enum class LogChannel { tiers, recompiles, jit };
bool log_enabled(LogChannel channel);
// One line on stderr: "[kiln:<channel>] message".
void log_line(LogChannel channel, const std::string& message);

} // namespace kiln::runtime
