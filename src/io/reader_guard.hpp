#pragma once
#include <exception>
#include <kiln/error.hpp>
#include <new>
#include <string>

namespace kiln::io {

// Runs a file reader so that only kiln::Error leaves it: whatever a library or the standard library
// throws on hostile input (bad_alloc, length_error, ...) becomes an Error whose message starts with
// `path`, which is what the CLI prints and callers match on.
template <class Read> auto guard_reader(const std::string& path, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::io, path + ": not enough memory to read it");
  } catch (const std::exception& e) {
    throw Error(ErrorKind::io, path + ": reading failed: " + e.what());
  }
}

} // namespace kiln::io
