#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

// extension: a custom-op library that cannot be registered or whose op failed (see kiln/extension.h).
// numeric: a step produced NaN or Inf while KILN_DEBUG_NANS was on.
enum class ErrorKind { spec, shape, dtype, weight, parse, io, unsupported, internal, extension, numeric, memory };

const char* error_kind_name(ErrorKind kind);

// Every user-facing failure is a kiln::Error whose message names the place (argument path, dim,
// weight name, file line:column). what() is prefixed with the kind: "shape error: ...".
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const noexcept { return kind_; }
  // The message without the "<kind> error: " prefix.
  const std::string& message() const noexcept { return message_; }

private:
  ErrorKind kind_;
  std::string message_;
};

} // namespace kiln
