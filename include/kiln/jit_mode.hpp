#pragma once
#include <string>
#include <string_view>

namespace kiln {

// When a session's signatures move to the JIT tier (TierPolicy, kiln/session.hpp). Its own header
// because the environment's KILN_JIT is parsed below the runtime (src/core/environment.cpp).
enum class JitMode { off, automatic, always };

// The one parser of a tier mode's name, for KILN_JIT and Python's Session(mode=...) alike: "off"
// (or "0"), "auto" (or "automatic", "1"), "always"; case and surrounding blanks ignored. Otherwise
// kiln::Error(spec) "<where>='<text>': expected ...".
JitMode parse_jit_mode(std::string_view text, const std::string& where);
// "off", "auto" or "always".
const char* jit_mode_name(JitMode mode);

} // namespace kiln
