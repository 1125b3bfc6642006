#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Which code runs an op, as oneDNN's implementation lists decide it: each tier has, per op kind, an
// ordered list of implementations; a walk asks each in turn whether it can take the op and stops at
// the first that does. The interpreter's kernel is the last entry and takes every op.
namespace kiln::exec {

// The CPU levels implementation lists tell apart, each including the one before. On aarch64 only
// the baseline (with NEON) exists.
enum class CpuIsa : uint8_t { baseline, avx2_fma, avx512_core };
std::string_view cpu_isa_name(CpuIsa isa);

// What every entry of a list declares besides its own refuse and create.
struct ListEntry {
  std::string_view name; // "dnnl.matmul", "packed_gemm", "interp": KILN_LOG=jit says it
  // The walk passes the entry over on a lesser CPU, saying "needs <isa> (<why_min_isa>)".
  CpuIsa min_isa = CpuIsa::baseline;
  std::string_view why_min_isa;
  // Set by a knob that took the entry out of the list ("KILN_JIT_MATMUL=interp"): the walk passes it
  // over, saying so.
  std::string_view switched_off;
};

// One entry's answer in a walk.
struct Verdict {
  std::string implementation;
  std::optional<std::string> refusal; // why it passed the op over; nullopt: it took the op
  std::string note;                   // what the taker made of the op ("gemm:jit, constant B 'fc.weight'")
};

// The entries asked, in list order; the last verdict is the one that took the op, when one did.
using ImplementationWalk = std::vector<Verdict>;

// "dnnl.matmul refused: needs AVX-512 (...); packed_gemm took it (note)".
std::string walk_to_string(const ImplementationWalk& walk);

// Why the walk passes `entry` over before asking it, if it does: a knob, or a CPU below its need.
std::optional<std::string> refused_by_list(const ListEntry& entry, CpuIsa cpu);

// Walks `list` (entries derived from ListEntry) on `cpu`: each entry the list does not pass over is
// asked `refuse(entry)`. Appends one verdict per entry asked to `walk`; returns the entry that took
// the op, or null when every one refused.
template <class Implementation, class Refuse>
const Implementation* walk_implementations(std::span<const Implementation> list, CpuIsa cpu, const Refuse& refuse,
                                           ImplementationWalk& walk) {
  for (const Implementation& implementation : list) {
    std::optional<std::string> refusal = refused_by_list(implementation, cpu);
    if (!refusal) refusal = refuse(implementation);
    walk.push_back(Verdict{std::string(implementation.name), refusal, {}});
    if (!refusal) return &implementation;
  }
  return nullptr;
}

} // namespace kiln::exec
