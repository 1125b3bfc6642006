#include "core/byte_size_text.hpp"
#include <cstdio>

namespace kiln {

std::string byte_size_text(size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const bool mebibytes = bytes >= 1024 * 1024;
  const double scaled = double(bytes) / (mebibytes ? 1024.0 * 1024.0 : 1024.0);
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s (%zu bytes)", scaled, mebibytes ? "MiB" : "KiB", bytes);
  return text;
}

} // namespace kiln
