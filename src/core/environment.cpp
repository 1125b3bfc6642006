#include "core/environment.hpp"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <kiln/error.hpp>
#include <kiln/jit_mode.hpp>
#include <limits>
#include <mutex>
#include <unistd.h>

namespace kiln::env {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

std::string trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return std::string(text);
}

[[noreturn]] void refuse(const char* name, const std::string& value, const std::string& accepted) {
  throw Error(ErrorKind::spec, std::string("environment variable ") + name + "='" + value + "': expected " + accepted);
}

std::string joined(const std::vector<std::string_view>& accepted) {
  std::string out;
  for (size_t i = 0; i < accepted.size(); ++i) {
    if (i) out += i + 1 == accepted.size() ? " or " : ", ";
    out += accepted[i];
  }
  return out;
}

// Digits only (no sign, no spaces inside), fitting in uint64_t.
std::optional<uint64_t> parse_unsigned(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

} // namespace

std::optional<std::string> text(const char* name) {
  warn_about_unknown_settings_once();
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<bool> boolean(const char* name) {
  std::optional<std::string> raw = text(name);
  if (!raw) return std::nullopt;
  const std::string value = lower(trimmed(*raw));
  if (value == "1" || value == "true" || value == "on" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "off" || value == "no") return false;
  refuse(name, *raw, "a boolean: 1/0, true/false, on/off or yes/no");
}

std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) {
  std::optional<std::string> raw = text(name);
  if (!raw) return std::nullopt;
  const std::string value = trimmed(*raw);
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const bool negative = !value.empty() && value[0] == '-';
  std::optional<uint64_t> magnitude = parse_unsigned(std::string_view(value).substr(negative ? 1 : 0));
  if (!magnitude || *magnitude > uint64_t(std::numeric_limits<int64_t>::max())) refuse(name, *raw, range);
  const int64_t number = negative ? -int64_t(*magnitude) : int64_t(*magnitude);
  if (number < min || number > max) refuse(name, *raw, range);
  return number;
}

std::optional<uint64_t> byte_size(const char* name) {
  std::optional<std::string> raw = text(name);
  if (!raw) return std::nullopt;
  std::string value = lower(trimmed(*raw));
  const char* accepted = "a positive byte count, optionally with a K, M, G or T suffix (1024-based), e.g. 512M";
  for (const char* unit : {"ib", "b"})
    if (value.size() > std::string_view(unit).size() && value.ends_with(unit)) {
      value.resize(value.size() - std::string_view(unit).size());
      break;
    }
  uint64_t scale = 1;
  if (!value.empty()) {
    const std::string_view units = "kmgt";
    if (size_t power = units.find(value.back()); power != std::string_view::npos) {
      scale = uint64_t(1) << (10 * (power + 1));
      value.pop_back();
    }
  }
  std::optional<uint64_t> count = parse_unsigned(value);
  if (!count || *count == 0 || *count > std::numeric_limits<uint64_t>::max() / scale) refuse(name, *raw, accepted);
  return *count * scale;
}

std::optional<std::string> choice(const char* name, const std::vector<std::string_view>& accepted) {
  std::optional<std::string> raw = text(name);
  if (!raw) return std::nullopt;
  const std::string value = lower(trimmed(*raw));
  for (std::string_view a : accepted)
    if (value == a) return value;
  refuse(name, *raw, joined(accepted));
}

std::optional<std::vector<std::string>> choices(const char* name, const std::vector<std::string_view>& accepted) {
  std::optional<std::string> raw = text(name);
  if (!raw) return std::nullopt;
  std::vector<std::string> items;
  const std::string value = lower(*raw);
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    const std::string item = trimmed(std::string_view(value).substr(start, comma - start));
    if (!item.empty()) {
      if (std::find(accepted.begin(), accepted.end(), item) == accepted.end())
        refuse(name, *raw, "a comma-separated list of " + joined(accepted));
      items.push_back(item);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

std::optional<JitMode> jit_mode() {
  std::optional<std::string> raw = text("KILN_JIT");
  if (!raw) return std::nullopt;
  return parse_jit_mode(*raw, "environment variable KILN_JIT");
}
std::optional<int64_t> promote_after() { return integer("KILN_PROMOTE_AFTER", 0, 1'000'000'000); }
std::optional<bool> jit_async() { return boolean("KILN_JIT_ASYNC"); }
std::optional<std::string> promote_to() { return choice("KILN_PROMOTE_TO", {"jit", "accelerator"}); }
std::optional<std::string> accelerator_storage() { return choice("KILN_ACCELERATOR_STORAGE", {"f32", "f16"}); }
std::optional<int64_t> cache_capacity() { return integer("KILN_CACHE_CAPACITY", 1, 1'000'000'000); }
std::optional<int64_t> num_threads() { return integer("KILN_NUM_THREADS", 1, 4096); }
std::optional<std::string> jit_isa() { return choice("KILN_JIT_ISA", {"avx2", "avx512"}); }
std::optional<std::string> jit_matmul() { return choice("KILN_JIT_MATMUL", {"auto", "dnnl", "interp"}); }
std::optional<bool> pack_weights() { return boolean("KILN_PACK_WEIGHTS"); }
std::optional<std::vector<std::string>> log_channels() {
  return choices("KILN_LOG", {"tiers", "recompiles", "jit", "all"});
}
std::optional<std::string> jit_dump_dir() { return text("KILN_JIT_DUMP"); }
std::optional<uint64_t> max_tensor_bytes() { return byte_size("KILN_MAX_TENSOR_BYTES"); }
std::optional<bool> debug_nans() { return boolean("KILN_DEBUG_NANS"); }

namespace {

constexpr std::string_view kRuntime = "the runtime";

// The settings; the project's scripts and tests read these names or ones under KILN_TEST_.
constexpr Setting kSettings[] = {
    {"KILN_JIT", kRuntime, [] { jit_mode(); }},
    {"KILN_PROMOTE_AFTER", kRuntime, [] { promote_after(); }},
    {"KILN_JIT_ASYNC", kRuntime, [] { jit_async(); }},
    {"KILN_PROMOTE_TO", kRuntime, [] { promote_to(); }},
    {"KILN_CACHE_CAPACITY", kRuntime, [] { cache_capacity(); }},
    {"KILN_NUM_THREADS", kRuntime, [] { num_threads(); }},
    {"KILN_JIT_ISA", kRuntime, [] { jit_isa(); }},
    {"KILN_JIT_MATMUL", kRuntime, [] { jit_matmul(); }},
    {"KILN_PACK_WEIGHTS", kRuntime, [] { pack_weights(); }},
    {"KILN_LOG", kRuntime, [] { log_channels(); }},
    {"KILN_JIT_DUMP", kRuntime, [] { jit_dump_dir(); }},
    {"KILN_MAX_TENSOR_BYTES", kRuntime, [] { max_tensor_bytes(); }},
    // The Vulkan device's index among `kiln devices` (vulkan/instance.cpp checks it is one).
    {"KILN_DEVICE", kRuntime, [] { integer("KILN_DEVICE", 0, 65535); }},
    {"KILN_ACCELERATOR_STORAGE", kRuntime, [] { accelerator_storage(); }},
    {"KILN_DEBUG_NANS", kRuntime, [] { debug_nans(); }},
    // The tools' own, documented where users meet them (README, the scripts' headers).
    {"KILN_BUILD_DIR", "tools/build, tools/build-minimal, tools/run-demo and tools/check-workloads", nullptr},
    {"KILN_REQUIRE_ALL_WORKLOADS", "kiln-check-workloads (--require-all)", nullptr},
    {"KILN_FUZZ_FLAGS", "tools/fuzz", nullptr},
    {"KILN_FUZZ_KEEP_GOING", "tools/fuzz", nullptr},
    {"KILN_FUZZ_VERBOSE", "tools/fuzz's targets (tests/fuzz)", nullptr},
};

constexpr std::string_view kPrefix = "KILN_", kTestPrefix = "KILN_TEST_";

// Edits (insertions, deletions, substitutions, swaps of neighbours) between a and b: the optimal
// string alignment distance, so KILN_JTI is one edit from KILN_JIT.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known setting nearest `name` (in upper case) that is near enough to be the one meant: at most
// a third of the longer part after KILN_ away (one edit at least), or that part of either name
// holding the other's (KILN_THREADS for KILN_NUM_THREADS).
std::optional<std::string_view> closest_setting(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  const std::string_view rest = std::string_view(upper).substr(kPrefix.size());
  std::optional<std::string_view> best;
  size_t best_distance = 0;
  for (const Setting& s : kSettings) {
    const std::string_view known_rest = s.name.substr(kPrefix.size());
    const size_t distance = edit_distance(rest, known_rest);
    const bool near = distance <= std::max<size_t>(1, std::max(rest.size(), known_rest.size()) / 3);
    const bool holds = rest.size() >= 3 && (known_rest.find(rest) != std::string_view::npos ||
                                            rest.find(known_rest) != std::string_view::npos);
    if ((near || holds) && (!best || distance < best_distance)) {
      best = s.name;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknown_setting_warning(std::string_view name) {
  std::string line = "kiln: " + std::string(name) + " is not a kiln setting";
  if (std::optional<std::string_view> closest = closest_setting(name))
    return line + "; did you mean " + std::string(*closest) + "?";
  line += "; kiln reads ";
  bool first = true;
  for (const Setting& s : kSettings)
    if (s.read_by == kRuntime) {
      line += (first ? "" : ", ") + std::string(s.name);
      first = false;
    }
  return line;
}

bool is_known(std::string_view name) {
  return std::any_of(std::begin(kSettings), std::end(kSettings), [&](const Setting& s) { return s.name == name; });
}

} // namespace

std::span<const Setting> known_settings() { return kSettings; }

std::vector<std::string> unknown_setting_warnings() {
  std::vector<std::string> lines;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view assignment(*entry);
    const std::string_view name = assignment.substr(0, assignment.find('='));
    if (!name.starts_with(kPrefix) || name.starts_with(kTestPrefix) || is_known(name)) continue;
    lines.push_back(unknown_setting_warning(name));
  }
  return lines;
}

void warn_about_unknown_settings_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& line : unknown_setting_warnings())
      std::fprintf(stderr, "%s\n", line.c_str());
  });
}

void check_all() {
  for (const Setting& s : kSettings)
    if (s.parse) s.parse();
}

} // namespace kiln::env
