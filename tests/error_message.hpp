#pragma once
#include <functional>
#include <kiln/error.hpp>
#include <string>

// What `f` throws as a kiln::Error (its what(): "shape error: ..."), or "<no error>": the suites
// compare whole messages with it.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "<no error>";
}
