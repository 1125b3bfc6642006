#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace kiln::io {

// Writes `path` so that readers see either the old file or the complete new one: `writer` fills a
// temporary file in the same directory, which is fsync'ed, closed and then renamed over `path` (an
// existing file's permission bits carry over). On any failure (a short or failed write, fsync,
// close or rename, or an exception from `writer`) the temporary file is removed and an existing
// `path` is left untouched. Throws kiln::Error(io, "<path>: <reason>"); a kiln::Error thrown by
// `writer` already names its place and passes through unchanged.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer);

// For tests only: makes write_file_atomic fail at one step as a full disk or a failing device would,
// so that tests can check what a failure leaves behind. One process-wide plan, not for concurrent
// writers; production code never calls this.
namespace test_only {

enum class WriteStep { write, fsync, close, rename };

// The `nth` call (1-based, counted from now) of `step` inside write_file_atomic fails with `error`, an
// errno value. A failing write first stores half of its bytes, as a disk filling up does, and the
// call after it fails. Other steps fail without effect (close still releases the descriptor).
void fail_at(WriteStep step, int nth, int error);

// Cancels every planned failure.
void clear_failures();

} // namespace test_only

} // namespace kiln::io
