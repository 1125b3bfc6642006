#pragma once
#include "exec/implementation_list.hpp"
#include "ir/graph.hpp"
#include <optional>
#include <span>
#include <string>
#include <vector>

// The JIT tier's implementation lists: which lowering may take each op kind, in order.
namespace kiln::jitc::tier {

class GraphRewriter;

// One way the JIT tier can run an op: a lowering's predicate and builder (oneDNN's pd init and
// create), or the interpreter's own list.
struct Implementation : exec::ListEntry {
  // Why it cannot take the op at `id` as the partition stands (dtypes, shapes, operands, the ops
  // around it); null: it takes every op of the kinds it is listed for. Changes nothing.
  std::optional<std::string> (*refuse)(const GraphRewriter& rw, ir::OpId id) = nullptr;
  // Takes the op and what it fuses: emits or schedules its step, records the ops it took. Called
  // only for an op refuse() accepted.
  void (*create)(GraphRewriter& rw, ir::OpId id) = nullptr;
  // The op kinds whose lists it heads, declared beside the lowering so that a new kind of an existing
  // lowering is a line there; empty for the entries a class or a knob lists (xbyak, dnnl.matmul).
  std::span<const ir::OpKind> first_for{};
};

// The list of one op kind, knobs applied: KILN_JIT_MATMUL=interp switches dnnl.matmul off, =dnnl
// lifts its AVX-512 need. The last entry takes every op: the interpreter's list runs it then
// (an extension's kernel for a custom op).
std::vector<Implementation> jit_implementations(ir::OpKind kind);

// The entries that head the lists of the kinds they declare (Implementation::first_for).
std::span<const Implementation* const> first_choices();

// The CPU the JIT's entries run on: oneDNN's effective ISA (ONEDNN_MAX_CPU_ISA lowers it).
exec::CpuIsa jit_cpu_isa();

} // namespace kiln::jitc::tier
