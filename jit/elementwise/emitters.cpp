#include "ir/ops.hpp"
#include "jit/elementwise/emitter.hpp"

namespace kiln::jitc {

using ir::OpKind;

namespace {

template <class Vmm> using Asm = VectorAssembler<Vmm>;
template <class Vmm> using Ops = EmitOperands<Vmm>;

constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kAbsMask = 0x7FFFFFFFu;

template <class Vmm> void emit_add(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vaddps(o.dst, o.args[0], o.args[1]); }
template <class Vmm> void emit_sub(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vsubps(o.dst, o.args[0], o.args[1]); }
template <class Vmm> void emit_mul(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vmulps(o.dst, o.args[0], o.args[1]); }
template <class Vmm> void emit_div(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vdivps(o.dst, o.args[0], o.args[1]); }

// vmaxps/vminps return their second operand when either is NaN; a second pass makes a NaN in
// either argument the result, as numpy's maximum/minimum do.
template <class Vmm> void emit_maximum(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.vmaxps(o.dst, o.args[1], o.args[0]);
  a.compare(o.masks[0], o.args[1], o.args[1], kCmpUnord);
  a.select(o.dst, o.masks[0], o.args[1], o.dst);
}
template <class Vmm> void emit_minimum(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.vminps(o.dst, o.args[1], o.args[0]);
  a.compare(o.masks[0], o.args[1], o.args[1], kCmpUnord);
  a.select(o.dst, o.masks[0], o.args[1], o.dst);
}

// min(max(x, lo), hi), each step NaN-propagating like emit_maximum and emit_minimum.
template <class Vmm> void emit_clamp(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm &x = o.args[0], &lo = o.args[1], &hi = o.args[2], &t = o.temps[0];
  a.vmaxps(t, lo, x);
  a.compare(o.masks[0], lo, lo, kCmpUnord);
  a.select(t, o.masks[0], lo, t);
  a.vminps(o.dst, hi, t);
  a.compare(o.masks[0], hi, hi, kCmpUnord);
  a.select(o.dst, o.masks[0], hi, o.dst);
}

template <class Vmm> void emit_neg(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vxorps(o.dst, o.args[0], a.bits(kSignBit)); }
template <class Vmm> void emit_abs(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vandps(o.dst, o.args[0], a.bits(kAbsMask)); }
// max(0, x) with x second, so that NaN stays NaN.
template <class Vmm> void emit_relu(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.vxorps(o.dst, o.dst, o.dst);
  a.vmaxps(o.dst, o.dst, o.args[0]);
}
// dst = min(max(x + 3, 0), 6), each of max and min with the running value second so that NaN stays.
template <class Vmm> void relu6_of_x_plus_3(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const Vmm& t) {
  a.vaddps(t, x, a.f32(3.0f));
  a.vxorps(dst, dst, dst);
  a.vmaxps(dst, dst, t);
  a.vmovups(t, a.f32(6.0f));
  a.vminps(dst, t, dst);
}
template <class Vmm> void emit_hardsigmoid(Asm<Vmm>& a, const Ops<Vmm>& o) {
  relu6_of_x_plus_3(a, o.dst, o.args[0], o.temps[0]);
  a.vdivps(o.dst, o.dst, a.f32(6.0f));
}
// torch's x * t / 6: -inf * 0 gives NaN there too.
template <class Vmm> void emit_hardswish(Asm<Vmm>& a, const Ops<Vmm>& o) {
  relu6_of_x_plus_3(a, o.dst, o.args[0], o.temps[0]);
  a.vmulps(o.dst, o.dst, o.args[0]);
  a.vdivps(o.dst, o.dst, a.f32(6.0f));
}
// x > 0 ? x : x * slope; the comparison is false for NaN, and NaN * slope is NaN.
template <class Vmm> void emit_leaky_relu(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const float slope = float(std::get<ir::LeakyReluParams>(o.node.params).negative_slope);
  a.vmulps(o.dst, o.args[0], a.f32(slope));
  a.compare(o.masks[0], o.args[0], a.f32(0.0f), kCmpGt);
  a.select(o.dst, o.masks[0], o.args[0], o.dst);
}
template <class Vmm> void emit_floor(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.round_to_integral(o.dst, o.args[0], kRoundDown);
}
template <class Vmm> void emit_ceil(Asm<Vmm>& a, const Ops<Vmm>& o) { a.round_to_integral(o.dst, o.args[0], kRoundUp); }
template <class Vmm> void emit_round(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.round_to_integral(o.dst, o.args[0], kRoundNearest);
}
// (0 < x) - (x < 0) as torch: both comparisons are false for NaN and -0, which give +0.
template <class Vmm> void emit_sign(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.vxorps(o.dst, o.dst, o.dst);
  a.compare(o.masks[0], o.args[0], a.f32(0.0f), kCmpGt);
  a.select(o.dst, o.masks[0], a.f32(1.0f), o.dst);
  a.compare(o.masks[0], o.args[0], a.f32(0.0f), kCmpLt);
  a.select(o.dst, o.masks[0], a.f32(-1.0f), o.dst);
}
template <class Vmm> void emit_sqrt(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vsqrtps(o.dst, o.args[0]); }
// sqrt then divide (two correctly rounded steps) rather than vrsqrt's 12-14 bit estimate.
template <class Vmm> void emit_rsqrt(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.vsqrtps(o.temps[0], o.args[0]);
  a.vmovups(o.dst, a.f32(1.0f));
  a.vdivps(o.dst, o.dst, o.temps[0]);
}

template <class Vmm> void emit_compare(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.compare_to_bool(o.dst, o.args[0], o.args[1], compare_predicate(o.node), o.masks[0]);
}
template <class Vmm> void emit_where(Asm<Vmm>& a, const Ops<Vmm>& o) {
  a.select_by_sign(o.dst, o.args[0], o.args[1], o.args[2], o.masks[0]);
}

// f32 -> i32 truncates toward zero like static_cast; NaN and out-of-range give INT32_MIN.
template <class Vmm> void emit_cast(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const DType from = o.arg_dtypes[0], to = o.node.dtype;
  const Vmm& x = o.args[0];
  if (from == to)
    a.vmovaps(o.dst, x);
  else if (from == DType::f32 && to == DType::i32)
    a.vcvttps2dq(o.dst, x);
  else if (from == DType::i32 && to == DType::f32)
    a.vcvtdq2ps(o.dst, x);
  else if (from == DType::boolean && to == DType::f32)
    a.vandps(o.dst, x, a.f32(1.0f));
  else if (from == DType::boolean && to == DType::i32)
    a.vpsrld(o.dst, x, 31);
  else if (from == DType::f32 && to == DType::boolean)
    a.compare_to_bool(o.dst, x, a.f32(0.0f), kCmpNe, o.masks[0]);
  else
    a.nonzero_i32_to_bool(o.dst, x, o.masks[0]);
}

template <class Vmm> Emitter<Vmm> simple(EmitFn<Vmm> fn, int temps = 0, int masks = 0) {
  return Emitter<Vmm>{temps, masks, fn};
}

} // namespace

uint8_t compare_predicate(const RegionNode& node) {
  switch (std::get<ir::CompareParams>(node.params).predicate) {
  case ir::ComparePredicate::eq: return kCmpEq;
  case ir::ComparePredicate::ne: return kCmpNe;
  case ir::ComparePredicate::lt: return kCmpLt;
  case ir::ComparePredicate::le: return kCmpLe;
  case ir::ComparePredicate::gt: return kCmpGt;
  case ir::ComparePredicate::ge: return kCmpGe;
  }
  return kCmpEq;
}

namespace {

// The emitters of the exact ops: a table of the kinds that have one, not a switch over every kind
// (region_check.cpp refuses a non-elementwise op before any emitter is asked for).
template <class Vmm> std::optional<Emitter<Vmm>> exact_emitter_for(OpKind kind) {
  const std::pair<OpKind, Emitter<Vmm>> rows[] = {
      {OpKind::add, simple<Vmm>(emit_add<Vmm>)},
      {OpKind::sub, simple<Vmm>(emit_sub<Vmm>)},
      {OpKind::mul, simple<Vmm>(emit_mul<Vmm>)},
      {OpKind::div, simple<Vmm>(emit_div<Vmm>)},
      {OpKind::maximum, simple<Vmm>(emit_maximum<Vmm>, 0, 1)},
      {OpKind::minimum, simple<Vmm>(emit_minimum<Vmm>, 0, 1)},
      {OpKind::neg, simple<Vmm>(emit_neg<Vmm>)},
      {OpKind::abs, simple<Vmm>(emit_abs<Vmm>)},
      {OpKind::relu, simple<Vmm>(emit_relu<Vmm>)},
      {OpKind::hardsigmoid, simple<Vmm>(emit_hardsigmoid<Vmm>, 1)},
      {OpKind::hardswish, simple<Vmm>(emit_hardswish<Vmm>, 1)},
      {OpKind::leaky_relu, simple<Vmm>(emit_leaky_relu<Vmm>, 0, 1)},
      {OpKind::floor, simple<Vmm>(emit_floor<Vmm>)},
      {OpKind::ceil, simple<Vmm>(emit_ceil<Vmm>)},
      {OpKind::round, simple<Vmm>(emit_round<Vmm>)},
      {OpKind::sign, simple<Vmm>(emit_sign<Vmm>, 0, 1)},
      {OpKind::sqrt, simple<Vmm>(emit_sqrt<Vmm>)},
      {OpKind::rsqrt, simple<Vmm>(emit_rsqrt<Vmm>, 1)},
      {OpKind::compare, simple<Vmm>(emit_compare<Vmm>, 0, 1)},
      {OpKind::where, simple<Vmm>(emit_where<Vmm>, 0, 1)},
      {OpKind::cast, simple<Vmm>(emit_cast<Vmm>, 0, 1)},
      {OpKind::clamp, simple<Vmm>(emit_clamp<Vmm>, 1, 1)},
  };
  for (const auto& [listed, emitter] : rows)
    if (listed == kind) return emitter;
  return std::nullopt;
}

// The elementwise ops without an emitter, and why: a region refuses them, so the interpreter's
// kernel runs them. Every other elementwise op has one (test_jit_elementwise.cpp checks both).
constexpr std::pair<OpKind, std::string_view> kWithoutEmitter[] = {
    {OpKind::floor_divide, "rare in hot loops: the interpreter's kernel runs it"},
    {OpKind::remainder, "rare in hot loops: the interpreter's kernel runs it"},
    {OpKind::masked_fill, "no emitter yet: the interpreter's kernel runs it"},
};

} // namespace

std::optional<std::string_view> why_no_emitter(OpKind kind) {
  for (const auto& [listed, why] : kWithoutEmitter)
    if (listed == kind) return why;
  return std::nullopt;
}

template <class Vmm>
std::optional<Emitter<Vmm>> emitter_for(const RegionNode& node, std::span<const DType>, std::string* why_not) {
  if (auto emitter = exact_emitter_for<Vmm>(node.kind)) return emitter;
  if (auto emitter = math_emitter_for<Vmm>(node)) return emitter;
  if (why_not) {
    *why_not = "no emitter for kiln." + std::string(ir::op_info(node.kind).name);
    if (auto why = why_no_emitter(node.kind)) *why_not += ": " + std::string(*why);
  }
  return std::nullopt;
}

template std::optional<Emitter<Xbyak::Ymm>> emitter_for(const RegionNode&, std::span<const DType>, std::string*);
template std::optional<Emitter<Xbyak::Zmm>> emitter_for(const RegionNode&, std::span<const DType>, std::string*);

} // namespace kiln::jitc
