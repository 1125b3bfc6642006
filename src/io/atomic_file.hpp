#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace kiln::io {

// Writes `path` so that readers see either the old file or the complete new one: `writer` fills a
// temporary file in the same directory, which is fsync'ed and then renamed over `path`. On any failure,
// an exception from `writer` included, the temporary file is removed and an existing `path` is left
// untouched. Throws kiln::Error(io, "<path>: <reason>"); a kiln::Error thrown by `writer` already names
// its place and passes through unchanged.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer);

} // namespace kiln::io
