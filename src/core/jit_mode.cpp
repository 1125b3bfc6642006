// The tier modes' spellings, one table for KILN_JIT and Python's Session(mode=...) (kiln/jit_mode.hpp).
#include <algorithm>
#include <cctype>
#include <kiln/error.hpp>
#include <kiln/jit_mode.hpp>

namespace kiln {

namespace {

struct Spelling {
  std::string_view text;
  JitMode mode;
};
constexpr Spelling kSpellings[] = {
    {"off", JitMode::off}, {"auto", JitMode::automatic}, {"always", JitMode::always}, {"automatic", JitMode::automatic},
    {"0", JitMode::off},   {"1", JitMode::automatic},
};

std::string normalized(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

} // namespace

JitMode parse_jit_mode(std::string_view text, const std::string& where) {
  const std::string value = normalized(text);
  for (const Spelling& s : kSpellings)
    if (value == s.text) return s.mode;
  throw Error(ErrorKind::spec, where + "='" + std::string(text) + "': expected off, auto, always, automatic, 0 or 1");
}

const char* jit_mode_name(JitMode mode) {
  switch (mode) {
  case JitMode::off: return "off";
  case JitMode::automatic: return "auto";
  case JitMode::always: return "always";
  }
  return "auto";
}

} // namespace kiln
