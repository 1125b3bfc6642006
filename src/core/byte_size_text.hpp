#pragma once
#include <cstddef>
#include <string>

namespace kiln {

// A size for people planning memory: "1.2 MiB (1258291 bytes)"; under 1 KiB only the bytes.
std::string byte_size_text(size_t bytes);

} // namespace kiln
