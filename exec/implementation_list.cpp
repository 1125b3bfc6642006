#include "exec/implementation_list.hpp"

namespace kiln::exec {

std::string_view cpu_isa_name(CpuIsa isa) {
  switch (isa) {
#if defined(__aarch64__)
  case CpuIsa::baseline: return "baseline aarch64 (NEON)";
#else
  case CpuIsa::baseline: return "baseline x86-64";
#endif
  case CpuIsa::avx2_fma: return "AVX2+FMA";
  case CpuIsa::avx512_core: return "AVX-512";
  }
  return "?";
}

std::string walk_to_string(const ImplementationWalk& walk) {
  std::string text;
  for (const Verdict& verdict : walk) {
    if (!text.empty()) text += "; ";
    text += verdict.implementation;
    text += verdict.refusal ? " refused: " + *verdict.refusal : " took it";
    if (!verdict.refusal && !verdict.note.empty()) text += " (" + verdict.note + ")";
  }
  return text.empty() ? "no implementation was asked" : text;
}

std::optional<std::string> refused_by_list(const ListEntry& entry, CpuIsa cpu) {
  if (!entry.switched_off.empty()) return std::string(entry.switched_off);
  if (cpu >= entry.min_isa) return std::nullopt;
  std::string why = "needs " + std::string(cpu_isa_name(entry.min_isa));
  if (!entry.why_min_isa.empty()) why += " (" + std::string(entry.why_min_isa) + ")";
  return why;
}

} // namespace kiln::exec
