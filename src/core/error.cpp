#include <kiln/error.hpp>

namespace kiln {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::spec: return "spec";
  case ErrorKind::shape: return "shape";
  case ErrorKind::dtype: return "dtype";
  case ErrorKind::weight: return "weight";
  case ErrorKind::parse: return "parse";
  case ErrorKind::io: return "io";
  case ErrorKind::unsupported: return "unsupported";
  case ErrorKind::internal: return "internal";
  case ErrorKind::extension: return "extension";
  case ErrorKind::numeric: return "numeric";
  case ErrorKind::memory: return "memory";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(error_kind_name(kind)) + " error: " + message), kind_(kind), message_(message) {}

} // namespace kiln
