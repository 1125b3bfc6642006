#include "core/environment.hpp"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <kiln/error.hpp>
#include <limits>

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

std::optional<std::string> jit_mode() { return choice("KILN_JIT", {"off", "auto", "always", "0", "1"}); }
std::optional<int64_t> promote_after() { return integer("KILN_PROMOTE_AFTER", 0, 1'000'000'000); }
std::optional<bool> jit_async() { return boolean("KILN_JIT_ASYNC"); }
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

void check_all() {
  jit_mode();
  promote_after();
  jit_async();
  cache_capacity();
  num_threads();
  jit_isa();
  jit_matmul();
  pack_weights();
  log_channels();
  jit_dump_dir();
  max_tensor_bytes();
  debug_nans();
}

} // namespace kiln::env
