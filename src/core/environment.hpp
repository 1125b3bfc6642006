#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
enum class JitMode; // kiln/jit_mode.hpp
}

// The one parser for kiln's KILN_* environment knobs. Every getter returns nullopt when the variable
// is unset or empty and throws kiln::Error(spec) naming the variable, its value and what is accepted
// when the value is not one of the documented spellings (matched case-insensitively).
namespace kiln::env {

// 1/0, true/false, on/off, yes/no.
std::optional<bool> boolean(const char* name);
// A decimal integer in [min, max].
std::optional<int64_t> integer(const char* name, int64_t min, int64_t max);
// A byte count: a positive integer, optionally followed by K, M, G or T (powers of 1024, an optional
// trailing "iB" or "B").
std::optional<uint64_t> byte_size(const char* name);
// One of `accepted` (lower case); returns the accepted spelling.
std::optional<std::string> choice(const char* name, const std::vector<std::string_view>& accepted);
// A comma-separated list whose items are each one of `accepted`.
std::optional<std::vector<std::string>> choices(const char* name, const std::vector<std::string_view>& accepted);
// Any text (paths).
std::optional<std::string> text(const char* name);

// kiln's knobs, each parsed by the getters above (README: "Environment").
std::optional<JitMode> jit_mode();                      // KILN_JIT: kiln::parse_jit_mode's spellings
std::optional<int64_t> promote_after();                 // KILN_PROMOTE_AFTER: 0 or more calls
std::optional<bool> jit_async();                        // KILN_JIT_ASYNC
std::optional<std::string> promote_to();                // KILN_PROMOTE_TO: jit, accelerator
std::optional<std::string> accelerator_storage();       // KILN_ACCELERATOR_STORAGE: f32, f16
std::optional<int64_t> cache_capacity();                // KILN_CACHE_CAPACITY: signatures, 1 or more
std::optional<int64_t> num_threads();                   // KILN_NUM_THREADS: 1 to 4096
std::optional<std::string> jit_isa();                   // KILN_JIT_ISA: avx2, avx512
std::optional<std::string> jit_matmul();                // KILN_JIT_MATMUL: auto, dnnl, interp
std::optional<bool> pack_weights();                     // KILN_PACK_WEIGHTS
std::optional<std::vector<std::string>> log_channels(); // KILN_LOG: tiers, recompiles, jit, all
std::optional<std::string> jit_dump_dir();              // KILN_JIT_DUMP: a directory
std::optional<uint64_t> max_tensor_bytes();             // KILN_MAX_TENSOR_BYTES
std::optional<bool> debug_nans();                       // KILN_DEBUG_NANS

// Parses every knob kiln reads, so a bad value is reported where the user can catch it (when a
// session is created), never later on a background thread or at exit.
void check_all();

// Every KILN_* name kiln knows (the runtime's settings and the tools'), in one table.
struct Setting {
  std::string_view name;
  std::string_view read_by; // "the runtime", or the tools that read it
  void (*parse)();          // the runtime's getter (check_all calls it); null for the tools'
};
std::span<const Setting> known_settings();

// One line per KILN_* variable in the environment that is no known setting, naming the closest
// one ("KILN_DEBUG_NAN is not a kiln setting; did you mean KILN_DEBUG_NANS?"). Names under
// KILN_TEST_ are the test suites' own and never reported.
std::vector<std::string> unknown_setting_warnings();
// Prints unknown_setting_warnings() on stderr, once per process; every getter above calls it, so
// each entry point (C++, Python, the CLI) warns before it reads a setting.
void warn_about_unknown_settings_once();

} // namespace kiln::env
