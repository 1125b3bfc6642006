#include "exec/math_coefficients.hpp"
#include "jit/elementwise/emitter.hpp"
#include "jit/elementwise/region_check.hpp"
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

namespace kiln::jitc {

using ir::OpKind;

namespace {

template <class Vmm> using Asm = VectorAssembler<Vmm>;
template <class Vmm> using Ops = EmitOperands<Vmm>;

constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <class Vmm, size_t N> void horner(Asm<Vmm>& a, const Vmm& acc, const Vmm& x, const float (&c)[N]) {
  a.vmovups(acc, a.f32(c[0]));
  for (size_t i = 1; i < N; ++i)
    a.vfmadd213ps(acc, x, a.f32(c[i]));
}

// x + lo = n ln2 + r with |r| <= ln2/2 (r in r), and t = 1 + r Q(r), so that exp(r) = 1 + r t and
// expm1(r) = r t. x is clamped to [min_x, 89] first (min/max operand order keeps NaN). r, x, lo,
// n, t distinct; x and lo are only read.
template <class Vmm>
void exp_reduce(Asm<Vmm>& a, const Vmm& r, const Vmm& x, const std::type_identity_t<Vmm>* lo, const Vmm& n,
                const Vmm& t, float min_x) {
  a.vmovups(r, a.f32(min_x));
  a.vmaxps(r, r, x);
  a.vmovups(n, a.f32(89.0f));
  a.vminps(r, n, r);
  a.vmulps(n, r, a.f32(coeffs::kLog2e));
  a.round_to_integral(n, n, kRoundNearest);
  a.vfnmadd231ps(r, n, a.f32(coeffs::kLn2Hi));
  a.vfnmadd231ps(r, n, a.f32(coeffs::kLn2Lo));
  if (lo) a.vaddps(r, r, *lo);
  horner(a, t, r, coeffs::kExpQ);
  a.vfmadd213ps(t, r, a.f32(1.0f));
}

// exp(x + lo) = dst * 2^n, split so that callers can multiply before the final scaling (a result
// that ends subnormal is then rounded once). lo: a small correction, or null. dst, x, lo, n, t
// distinct; x and lo are only read. Clamping x to [-104, 89] keeps n where scale_by_pow2 works.
template <class Vmm>
void exp_parts(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const std::type_identity_t<Vmm>* lo, const Vmm& n,
               const Vmm& t) {
  exp_reduce(a, dst, x, lo, n, t, -104.0f);
  a.vfmadd213ps(dst, t, a.f32(1.0f));
}

// dst = expm1(x) = 2^n (expm1(r) + 1 - 2^-n), the sum rounded once and the scaling exact: no
// cancellation near 0, where n = 0 and the sum is expm1(r) - 0 (which keeps -0). Below -18 the
// result is -1 in f32; clamping there keeps -n in scale_by_pow2's range. n, t, s, w scratch.
template <class Vmm>
void expm1_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const Vmm& n, const Vmm& t, const Vmm& s, const Vmm& w) {
  exp_reduce(a, dst, x, nullptr, n, t, -18.0f);
  a.vmulps(t, t, dst);
  a.vxorps(dst, n, a.bits(kSignBit));
  a.vmovups(s, a.f32(1.0f));
  a.scale_by_pow2(s, dst, w);
  a.vsubps(s, s, a.f32(1.0f));
  a.vsubps(t, t, s);
  a.scale_by_pow2(t, n, w);
  a.vmovaps(dst, t);
}

// dst = exp(x + lo) * 2^extra_exponent (extra_exponent keeps tiny results normal for callers that
// scale back later).
template <class Vmm>
void exp_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const std::type_identity_t<Vmm>* lo, const Vmm& t1,
              const Vmm& t2, float extra_exponent = 0.0f) {
  exp_parts(a, dst, x, lo, t1, t2);
  if (extra_exponent != 0.0f) a.vaddps(t1, t1, a.f32(extra_exponent));
  a.scale_by_pow2(dst, t1, t2);
}

// Reads |x| = 2^e m with m in [sqrt(1/2), sqrt(2)) off the exponent bits (subnormals scaled by
// 2^23 first): mant = m, exponent = e as f32. in is only read; adjust is scratch.
template <class Vmm>
void split_exponent(Asm<Vmm>& a, const Vmm& mant, const Vmm& exponent, const Vmm& in, const Vmm& adjust,
                    const typename IsaTraits<Vmm>::Mask& m) {
  a.compare(m, in, a.f32(FLT_MIN), kCmpLt);
  a.vmulps(mant, in, a.f32(8388608.0f));
  a.select(mant, m, mant, in);
  a.vxorps(adjust, adjust, adjust);
  a.select(adjust, m, a.bits(23), adjust);
  a.vpsubd(exponent, mant, a.bits(0x3F3504F3u)); // bits of sqrt(1/2)
  a.vandps(exponent, exponent, a.bits(0xFF800000u));
  a.vpsubd(mant, mant, exponent);
  a.vpsrad(exponent, exponent, 23);
  a.vpsubd(exponent, exponent, adjust);
  a.vcvtdq2ps(exponent, exponent);
}

// dst = log(x): log(m) = f + f^2 g(f) with f = m - 1 exact, then + e ln2 in one rounding.
template <class Vmm>
void log_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const Vmm& t1, const Vmm& t2,
              const typename IsaTraits<Vmm>::Mask& m) {
  split_exponent(a, dst, t1, x, t2, m);
  a.vsubps(dst, dst, a.f32(1.0f));
  horner(a, t2, dst, coeffs::kLogG);
  a.vmulps(t2, t2, dst);
  a.vfmadd213ps(t2, dst, dst);
  a.vfmadd231ps(t2, t1, a.f32(coeffs::kLn2Lo));
  a.vfmadd231ps(t2, t1, a.f32(coeffs::kLn2Hi));
  a.vmovaps(dst, t2);
  a.compare(m, x, a.f32(0.0f), kCmpEq);
  a.select(dst, m, a.f32(-kInf), dst);
  a.compare(m, x, a.f32(0.0f), kCmpNotGe);
  a.select(dst, m, a.f32(kNaN), dst);
  a.compare(m, x, a.f32(kInf), kCmpEq);
  a.select(dst, m, a.f32(kInf), dst);
}

// dst = log1p(x) as log(u) x / (u - 1) with u = 1 + x rounded (Goldberg): the quotient corrects
// the rounding of u to first order. u = 1 gives x itself (tiny x, -0), x = inf gives inf. x is only
// read; t0..t2 scratch.
template <class Vmm>
void log1p_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const Vmm& t0, const Vmm& t1, const Vmm& t2,
                const typename IsaTraits<Vmm>::Mask& m) {
  a.vaddps(t0, x, a.f32(1.0f));
  log_core(a, dst, t0, t1, t2, m);
  a.vsubps(t0, t0, a.f32(1.0f));
  a.vdivps(t1, x, t0);
  a.vmulps(dst, dst, t1);
  a.compare(m, t0, a.f32(0.0f), kCmpEq);
  a.select(dst, m, x, dst);
  a.compare(m, x, a.f32(kInf), kCmpEq);
  a.select(dst, m, a.f32(kInf), dst);
}

// dst = erfc(t) * 2^extra_exponent for t in [0.9, 10] given -t^2 exactly as hi + lo:
// exp(-t^2) R(v) / (1 + t/2), v = 1/(1 + t/2). hi, lo, s0, s1 are clobbered; t is only read.
template <class Vmm>
void erfc_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& t, const Vmm& hi, const Vmm& lo, const Vmm& s0, const Vmm& s1,
               float extra_exponent = 0.0f) {
  exp_core(a, dst, hi, &lo, s0, s1, extra_exponent);
  a.vmovups(hi, a.f32(0.5f));
  a.vfmadd213ps(hi, t, a.f32(1.0f));
  a.vmovups(lo, a.f32(1.0f));
  a.vdivps(lo, lo, hi);
  horner(a, s0, lo, coeffs::kErfcR);
  a.vdivps(s0, s0, hi);
  a.vmulps(dst, dst, s0);
}

// hi + lo = -x^2 exactly (FMA gives the rounding error of x*x; scaling by -scale is exact).
template <class Vmm> void negated_square(Asm<Vmm>& a, const Vmm& hi, const Vmm& lo, const Vmm& x, float scale) {
  a.vmulps(hi, x, x);
  a.vmovaps(lo, hi);
  a.vfmsub231ps(lo, x, x);
  a.vmulps(hi, hi, a.f32(-scale));
  a.vmulps(lo, lo, a.f32(-scale));
}

template <class Vmm> void emit_exp(Asm<Vmm>& a, const Ops<Vmm>& o) {
  exp_core(a, o.dst, o.args[0], nullptr, o.temps[0], o.temps[1]);
}

template <class Vmm> void emit_log(Asm<Vmm>& a, const Ops<Vmm>& o) {
  log_core(a, o.dst, o.args[0], o.temps[0], o.temps[1], o.masks[0]);
}

template <class Vmm> void emit_log1p(Asm<Vmm>& a, const Ops<Vmm>& o) {
  log1p_core(a, o.dst, o.args[0], o.temps[0], o.temps[1], o.temps[2], o.masks[0]);
}

template <class Vmm> void emit_expm1(Asm<Vmm>& a, const Ops<Vmm>& o) {
  expm1_core(a, o.dst, o.args[0], o.temps[0], o.temps[1], o.temps[2], o.temps[3]);
}

// x > 0 ? x : alpha expm1(x); the comparison is false for NaN, which expm1 keeps.
template <class Vmm> void emit_elu(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const float alpha = float(std::get<ir::EluParams>(o.node.params).alpha);
  expm1_core(a, o.dst, o.args[0], o.temps[0], o.temps[1], o.temps[2], o.temps[3]);
  a.vmulps(o.dst, o.dst, a.f32(alpha));
  a.compare(o.masks[0], o.args[0], a.f32(0.0f), kCmpGt);
  a.select(o.dst, o.masks[0], o.args[0], o.dst);
}

// z = x beta; z > threshold ? x : log1p(exp(z)) / beta, torch's steps.
template <class Vmm> void emit_softplus(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const auto& p = std::get<ir::SoftplusParams>(o.node.params);
  const auto& T = o.temps;
  a.vmulps(T[3], o.args[0], a.f32(float(p.beta)));
  exp_core(a, T[4], T[3], nullptr, T[0], T[1]);
  log1p_core(a, o.dst, T[4], T[0], T[1], T[2], o.masks[0]);
  a.vdivps(o.dst, o.dst, a.f32(float(p.beta)));
  a.compare(o.masks[0], T[3], a.f32(float(p.threshold)), kCmpGt);
  a.select(o.dst, o.masks[0], o.args[0], o.dst);
}

// |x| < 1: x + x^3 P(x^2); otherwise sign(x) (1 - 2 / (exp(2|x|) + 1)).
template <class Vmm> void emit_tanh(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm &x = o.args[0], &dst = o.dst;
  const Vmm &t0 = o.temps[0], &t1 = o.temps[1], &t2 = o.temps[2], &t3 = o.temps[3];
  a.vmulps(t0, x, x);
  horner(a, t1, t0, coeffs::kTanhP);
  a.vmulps(t0, t0, x);
  a.vfmadd213ps(t1, t0, x);
  a.vandps(t0, x, a.bits(kAbsMask));
  a.vaddps(t0, t0, t0);
  exp_core(a, dst, t0, nullptr, t2, t3);
  a.vaddps(dst, dst, a.f32(1.0f));
  a.vmovups(t0, a.f32(2.0f));
  a.vdivps(t0, t0, dst);
  a.vmovups(dst, a.f32(1.0f));
  a.vsubps(dst, dst, t0);
  a.vandps(t0, x, a.bits(kSignBit));
  a.vorps(dst, dst, t0);
  a.vandps(t0, x, a.bits(kAbsMask));
  a.compare(o.masks[0], t0, a.f32(1.0f), kCmpLt);
  a.select(dst, o.masks[0], t1, dst);
}

// sigmoid(z) without cancellation on either side: with t = exp(-|z|), 1 / (1 + t) for z >= 0 and
// t / (1 + t) below. t0..t2 scratch.
template <class Vmm>
void sigmoid_core(Asm<Vmm>& a, const Vmm& dst, const Vmm& z, const Vmm& t0, const Vmm& t1, const Vmm& t2,
                  const typename IsaTraits<Vmm>::Mask& m) {
  a.vorps(t0, z, a.bits(kSignBit));
  exp_core(a, dst, t0, nullptr, t1, t2);
  a.compare(m, z, a.f32(0.0f), kCmpLt);
  a.vaddps(t0, dst, a.f32(1.0f));
  a.vmovups(t1, a.f32(1.0f));
  a.select(t1, m, dst, t1);
  a.vdivps(dst, t1, t0);
}

// factor * sigmoid(z + z_lo) (z_lo: a small correction, or null), as factor / (1 + t) or
// factor t / (1 + t). The product factor * t is formed before exp's final scaling by 2^n so that a
// subnormal result is rounded only once. t0..t3 scratch.
template <class Vmm>
void scaled_sigmoid(Asm<Vmm>& a, const Vmm& dst, const Vmm& z, const std::type_identity_t<Vmm>* z_lo, const Vmm& factor,
                    const Vmm& t0, const Vmm& t1, const Vmm& t2, const Vmm& t3,
                    const typename IsaTraits<Vmm>::Mask& m) {
  a.vorps(t0, z, a.bits(kSignBit));
  if (z_lo) { // the correction of -|z|: z_lo with the sign flipped when z >= 0
    a.vandps(t3, z, a.bits(kSignBit));
    a.vxorps(t3, t3, *z_lo);
    a.vxorps(t3, t3, a.bits(kSignBit));
  }
  exp_parts(a, dst, t0, z_lo ? &t3 : nullptr, t1, t2);
  a.vmulps(t2, dst, factor);
  a.vmovaps(t0, t1);
  a.scale_by_pow2(t2, t0, t3);
  a.scale_by_pow2(dst, t1, t3);
  a.vaddps(t0, dst, a.f32(1.0f));
  a.compare(m, z, a.f32(0.0f), kCmpLt);
  a.select(t2, m, t2, factor);
  a.vdivps(dst, t2, t0);
}

template <class Vmm> void emit_sigmoid(Asm<Vmm>& a, const Ops<Vmm>& o) {
  sigmoid_core(a, o.dst, o.args[0], o.temps[0], o.temps[1], o.temps[2], o.masks[0]);
}

// x sigmoid(x); below -120 the product underflows anyway, and clamping keeps -inf from giving
// -inf * 0 = NaN.
// x times a factor that tends to 0 is -inf * 0 = NaN at x = -inf in PyTorch's formulas (silu,
// both gelus) and in the interpreter; the kernels clamp x first and would give -0 there.
template <class Vmm, class Mask> void nan_at_minus_infinity(Asm<Vmm>& a, const Vmm& dst, const Vmm& x, const Mask& m) {
  a.compare(m, x, a.bits(0xff800000u), kCmpEq);
  a.select(dst, m, a.bits(0x7fc00000u), dst);
}

template <class Vmm> void emit_silu(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const auto& T = o.temps;
  a.vmovups(T[4], a.f32(-120.0f));
  a.vmaxps(T[4], T[4], o.args[0]);
  scaled_sigmoid(a, o.dst, o.args[0], nullptr, T[4], T[0], T[1], T[2], T[3], o.masks[0]);
  nan_at_minus_infinity(a, o.dst, o.args[0], o.masks[0]);
}

// z = x (A + B x^2) as z_hi + z_lo (error-free products by FMA, TwoSum for A + B x^2). The
// sigmoid of z is as sensitive as exp(-|z|): rounding z to f32 would cost up to |z| / 2 ulps.
template <class Vmm>
void gelu_tanh_argument(Asm<Vmm>& a, const Vmm& z_hi, const Vmm& z_lo, const Vmm& x, const Vmm& s, const Vmm& s_lo,
                        const Vmm& p, const Vmm& p_lo) {
  a.vmulps(s, x, x);
  a.vmovaps(s_lo, s);
  a.vfmsub231ps(s_lo, x, x);
  a.vmulps(p, s, a.f32(coeffs::kGeluTanhBHi));
  a.vmovaps(p_lo, p);
  a.vfmsub231ps(p_lo, s, a.f32(coeffs::kGeluTanhBHi));
  a.vfmadd231ps(p_lo, s_lo, a.f32(coeffs::kGeluTanhBHi));
  a.vfmadd231ps(p_lo, s, a.f32(coeffs::kGeluTanhBLo));
  a.vaddps(z_hi, p, a.f32(coeffs::kGeluTanhAHi)); // w = A + p, TwoSum error into s
  a.vsubps(z_lo, z_hi, a.f32(coeffs::kGeluTanhAHi));
  a.vsubps(s, z_hi, z_lo);
  a.vmovups(s_lo, a.f32(coeffs::kGeluTanhAHi));
  a.vsubps(s, s_lo, s);
  a.vsubps(p, p, z_lo);
  a.vaddps(s, s, p);
  a.vaddps(s, s, p_lo);
  a.vaddps(s, s, a.f32(coeffs::kGeluTanhALo)); // w_lo
  a.vmulps(p, x, z_hi);
  a.vmovaps(p_lo, p);
  a.vfmsub231ps(p_lo, x, z_hi);
  a.vfmadd231ps(p_lo, x, s);
  a.vmovaps(z_hi, p);
  a.vmovaps(z_lo, p_lo);
}

// 0.5 x (1 + tanh(y)) = x sigmoid(2y), 2y = x (A + B x^2): no cancellation for negative x. Beyond
// |x| = 12 the sigmoid is 0 or 1 in f32; clamping there keeps x^2 finite and -inf * 0 from NaN.
template <class Vmm> void emit_gelu_tanh(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm &x = o.args[0], &clamped = o.dst;
  const auto& T = o.temps;
  a.vmovups(T[6], a.f32(-12.0f));
  a.vmaxps(T[6], T[6], x);
  a.vmovups(clamped, a.f32(12.0f));
  a.vminps(clamped, clamped, T[6]);
  gelu_tanh_argument(a, T[4], T[5], clamped, T[0], T[1], T[2], T[3]);
  scaled_sigmoid(a, o.dst, T[4], &T[5], T[6], T[0], T[1], T[2], T[3], o.masks[0]);
  nan_at_minus_infinity(a, o.dst, x, o.masks[0]);
}

// |x| < 0.9: x + x P(x^2); otherwise sign(x) (1 - erfc(|x|)).
template <class Vmm> void emit_erf(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm &x = o.args[0], &dst = o.dst;
  const Vmm &t0 = o.temps[0], &t1 = o.temps[1], &t2 = o.temps[2];
  a.vandps(t0, x, a.bits(kAbsMask));
  a.vmovups(t1, a.f32(10.0f));
  a.vminps(t0, t1, t0);
  negated_square(a, t1, t2, t0, 1.0f);
  erfc_core(a, dst, t0, t1, t2, o.temps[3], o.temps[4]);
  a.vmovups(t0, a.f32(1.0f));
  a.vsubps(dst, t0, dst);
  a.vandps(t0, x, a.bits(kSignBit));
  a.vorps(dst, dst, t0);
  a.vmulps(t0, x, x);
  horner(a, t1, t0, coeffs::kErfP);
  a.vfmadd213ps(t1, x, x);
  a.vandps(t0, x, a.bits(kAbsMask));
  a.compare(o.masks[0], t0, a.f32(0.9f), kCmpLt);
  a.select(dst, o.masks[0], t1, dst);
}

// 0.5 x (1 + erf(x / sqrt2)). For |x / sqrt2| >= 0.9, 1 + erf is 2 - erfc or erfc with erfc taken
// from x^2 / 2 directly (exact), so negative x keeps its relative accuracy. erfc is carried times
// 2^24 and scaled back last, so that results near the subnormal range are rounded once.
template <class Vmm> void emit_gelu_erf(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm &x = o.args[0], &dst = o.dst;
  const Vmm &t0 = o.temps[0], &t1 = o.temps[1], &t2 = o.temps[2], &scale = o.temps[5];
  const auto& m = o.masks[0];
  a.vandps(t0, x, a.bits(kAbsMask));
  a.vmovups(t1, a.f32(14.0f));
  a.vminps(t0, t1, t0);
  negated_square(a, t1, t2, t0, 0.5f);
  a.vmulps(t0, t0, a.f32(coeffs::kInvSqrt2));
  erfc_core(a, dst, t0, t1, t2, o.temps[3], o.temps[4], 24.0f);
  a.vmulps(t0, dst, a.f32(0x1p-24f));
  a.vmovups(t1, a.f32(2.0f));
  a.vsubps(t1, t1, t0);
  a.compare(m, x, a.f32(0.0f), kCmpGt);
  a.select(dst, m, t1, dst);
  a.vmovups(scale, a.f32(0x1p-24f));
  a.select(scale, m, a.f32(1.0f), scale);
  a.vmulps(t0, x, a.f32(coeffs::kInvSqrt2));
  a.vmulps(t1, t0, t0);
  horner(a, t2, t1, coeffs::kErfP);
  a.vfmadd213ps(t2, t0, t0);
  a.vaddps(t2, t2, a.f32(1.0f));
  a.vandps(t0, t0, a.bits(kAbsMask));
  a.compare(m, t0, a.f32(0.9f), kCmpLt);
  a.select(dst, m, t2, dst);
  a.select(scale, m, a.f32(1.0f), scale);
  a.vmovups(t0, a.f32(-14.0f));
  a.vmaxps(t0, t0, x);
  a.vmulps(t0, t0, a.f32(0.5f));
  a.vmulps(dst, dst, t0);
  nan_at_minus_infinity(a, dst, x, m);
  a.vmulps(dst, dst, scale);
}

// Up to 2^24 the quadrant j is an exact f32 integer and the FMA reduction loses nothing; beyond it
// an exact reduction needs many more bits of pi (Payne-Hanek), so those inputs give NaN rather
// than a wrong number.
constexpr float kMaxTrigArgument = 16777216.0f;

// j = the integer nearest to ax * 2/pi. The f32 product alone can round across a half (it is off by
// up to 0.25 near 2^23), so its error (FMA) and that of 2/pi in f32 decide the last step.
template <class Vmm>
void nearest_quadrant(Asm<Vmm>& a, const Vmm& j, const Vmm& ax, const Vmm& t0, const Vmm& t1,
                      const typename IsaTraits<Vmm>::Mask& m) {
  a.vmulps(t0, ax, a.f32(coeffs::kTwoOverPi));
  a.vmovaps(t1, t0);
  a.vfmsub231ps(t1, ax, a.f32(coeffs::kTwoOverPi));
  a.vfmadd231ps(t1, ax, a.f32(coeffs::kTwoOverPiLo));
  a.round_to_integral(j, t0, kRoundNearest);
  a.vsubps(t0, t0, j);
  a.vaddps(t0, t0, t1);
  a.vaddps(t1, j, a.f32(1.0f));
  a.compare(m, t0, a.f32(0.5f), kCmpGt);
  a.select(j, m, t1, j);
  a.vsubps(t1, j, a.f32(1.0f));
  a.compare(m, t0, a.f32(-0.5f), kCmpLt);
  a.select(j, m, t1, j);
}

// |x| = j pi/2 + r, |r| <= pi/4, reduced with pi/2 in three parts; the quadrant j mod 4 picks
// sin(r) or cos(r) and the sign. sin is odd: computed on |x| and given x's sign.
template <class Vmm> void emit_sin_cos(Asm<Vmm>& a, const Ops<Vmm>& o, bool cosine) {
  const Vmm &x = o.args[0], &dst = o.dst;
  const Vmm &t0 = o.temps[0], &t1 = o.temps[1], &t2 = o.temps[2];
  a.vandps(t0, x, a.bits(kAbsMask));
  nearest_quadrant(a, t1, t0, dst, t2, o.masks[0]);
  a.vfnmadd231ps(t0, t1, a.f32(coeffs::kHalfPiHi));
  a.vfnmadd231ps(t0, t1, a.f32(coeffs::kHalfPiMid));
  a.vfnmadd231ps(t0, t1, a.f32(coeffs::kHalfPiLo));
  a.vcvtps2dq(t1, t1);
  if (cosine) a.vpaddd(t1, t1, a.bits(1));
  a.vmulps(t2, t0, t0);
  horner(a, dst, t2, coeffs::kSinP);
  a.vmulps(dst, dst, t2);
  a.vfmadd213ps(dst, t0, t0);
  horner(a, t0, t2, coeffs::kCosP);
  a.vfmadd213ps(t0, t2, a.f32(-0.5f));
  a.vfmadd213ps(t0, t2, a.f32(1.0f));
  a.vpslld(t2, t1, 31);
  a.select_by_sign(dst, t2, t0, dst, o.masks[0]);
  a.vpslld(t2, t1, 30);
  a.vandps(t2, t2, a.bits(kSignBit));
  a.vxorps(dst, dst, t2);
  if (!cosine) {
    a.vandps(t2, x, a.bits(kSignBit));
    a.vxorps(dst, dst, t2);
  }
  a.vandps(t2, x, a.bits(kAbsMask));
  a.compare(o.masks[0], t2, a.f32(kMaxTrigArgument), kCmpGt);
  a.select(dst, o.masks[0], a.f32(kNaN), dst);
}
template <class Vmm> void emit_sin(Asm<Vmm>& a, const Ops<Vmm>& o) { emit_sin_cos(a, o, false); }
template <class Vmm> void emit_cos(Asm<Vmm>& a, const Ops<Vmm>& o) { emit_sin_cos(a, o, true); }

bool is_integer(float c) { return std::nearbyint(c) == c; }
bool is_odd_integer(float c) { return is_integer(c) && std::fmod(c, 2.0f) != 0.0f; }
// Integer exponents in [kMinPowerByMultiplication, kMaxPowerByMultiplication] are computed by
// repeated multiplication (then a reciprocal), within 2 ulps; outside, the exp/log path is closer.
constexpr float kMinPowerByMultiplication = -2.0f;
constexpr float kMaxPowerByMultiplication = 4.0f;

template <class Vmm> void emit_pow_one(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vmovups(o.dst, a.f32(1.0f)); }
template <class Vmm> void emit_pow_identity(Asm<Vmm>& a, const Ops<Vmm>& o) { a.vmovaps(o.dst, o.args[0]); }

// pow(x, +-0.5): sqrt, with pow's special cases pow(-0, .5) = +0 and pow(-inf, +-.5) = +inf / +0.
template <class Vmm> void emit_pow_half(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const bool reciprocal = o.node.scalar < 0;
  const Vmm& root = reciprocal ? o.temps[0] : o.dst;
  a.vsqrtps(root, o.args[0]);
  a.vaddps(root, root, a.f32(0.0f));
  if (reciprocal) {
    a.vmovups(o.dst, a.f32(1.0f));
    a.vdivps(o.dst, o.dst, root);
  }
  a.compare(o.masks[0], o.args[0], a.f32(-kInf), kCmpEq);
  a.select(o.dst, o.masks[0], a.f32(reciprocal ? 0.0f : kInf), o.dst);
}

// Integer exponent in [-2, 4]: binary powering, then a reciprocal for negative c.
template <class Vmm> void emit_pow_integer(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const Vmm& square = o.temps[0];
  auto n = static_cast<unsigned>(std::fabs(o.node.scalar));
  a.vmovaps(square, o.args[0]);
  bool first = true;
  while (n != 0) {
    if (n & 1u) {
      if (first)
        a.vmovaps(o.dst, square);
      else
        a.vmulps(o.dst, o.dst, square);
      first = false;
    }
    n >>= 1;
    if (n != 0) a.vmulps(square, square, square);
  }
  if (o.node.scalar > 0) return;
  a.vmovups(square, a.f32(1.0f));
  a.vdivps(o.dst, square, o.dst);
}

// pow's exponent c log|x| as y_hi + y_lo, good to about 2^-30 relative: the rounding of c log|x|
// to f32 alone would cost up to |c log x| / 2 ulps of the result. log|x| = e ln2 + f + f^2 g(f)
// is summed as two floats (Fast2Sum), with e * 0.693359375 exact. T[0] holds |x| on entry;
// y_hi lands in T[4], y_lo in T[3].
template <class Vmm> void pow_exponent(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const float c = o.node.scalar;
  const auto& T = o.temps;
  split_exponent(a, T[1], T[2], T[0], T[3], o.masks[0]);
  a.vsubps(T[1], T[1], a.f32(1.0f));
  horner(a, T[3], T[1], coeffs::kLogG);
  a.vmulps(T[3], T[3], T[1]);
  a.vmulps(T[3], T[3], T[1]);
  a.vaddps(T[4], T[1], T[3]);
  a.vsubps(T[5], T[1], T[4]);
  a.vaddps(T[5], T[5], T[3]);
  a.vmulps(T[0], T[2], a.f32(coeffs::kLn2Short));
  a.vaddps(T[1], T[0], T[4]);
  a.vsubps(T[0], T[0], T[1]);
  a.vaddps(T[0], T[0], T[4]);
  a.vaddps(T[5], T[5], T[0]);
  a.vfmadd231ps(T[5], T[2], a.f32(coeffs::kLn2ShortRest));
  a.vmulps(T[4], T[1], a.f32(c));
  a.vmovaps(T[3], T[4]);
  a.vfmsub231ps(T[3], T[1], a.f32(c));
  a.vfmadd231ps(T[3], T[5], a.f32(c));
}

// exp(c log|x|), then pow's special cases: |x| = 0 or inf and NaN explicitly; an odd integer c
// keeps x's sign; a non-integer c gives NaN for finite negative x and pow(-inf, c) = pow(inf, c).
template <class Vmm> void emit_pow_general(Asm<Vmm>& a, const Ops<Vmm>& o) {
  const float c = o.node.scalar;
  const Vmm &x = o.args[0], &dst = o.dst;
  const auto& T = o.temps;
  const auto& m = o.masks[0];
  a.vandps(T[0], x, a.bits(kAbsMask));
  pow_exponent(a, o);
  exp_core(a, dst, T[4], &T[3], T[0], T[1]);
  a.vandps(T[0], x, a.bits(kAbsMask));
  a.compare(m, T[0], a.f32(0.0f), kCmpEq);
  a.select(dst, m, a.f32(c > 0 ? 0.0f : kInf), dst);
  a.compare(m, T[0], a.f32(kInf), kCmpEq);
  a.select(dst, m, a.f32(c > 0 ? kInf : 0.0f), dst);
  a.compare(m, x, x, kCmpUnord);
  a.select(dst, m, x, dst);
  if (is_odd_integer(c)) {
    a.vandps(T[0], x, a.bits(kSignBit));
    a.vorps(dst, dst, T[0]);
  } else if (!is_integer(c)) {
    a.vandps(T[0], x, a.bits(kAbsMask));
    a.compare(m, x, a.f32(0.0f), kCmpLt);
    a.select(dst, m, a.f32(kNaN), dst);
    a.compare(m, T[0], a.f32(kInf), kCmpEq);
    a.select(dst, m, a.f32(c > 0 ? kInf : 0.0f), dst);
  }
}

template <class Vmm> Emitter<Vmm> pow_emitter(float c) {
  if (c == 0.0f) return {0, 0, emit_pow_one<Vmm>};
  if (c == 1.0f) return {0, 0, emit_pow_identity<Vmm>};
  if (std::fabs(c) == 0.5f) return {1, 1, emit_pow_half<Vmm>};
  if (is_integer(c) && c >= kMinPowerByMultiplication && c <= kMaxPowerByMultiplication)
    return {1, 0, emit_pow_integer<Vmm>};
  return {6, 1, emit_pow_general<Vmm>};
}

} // namespace

// A table of the kinds that have a transcendental emitter, as emitters.cpp's of the exact ones.
template <class Vmm> std::optional<Emitter<Vmm>> math_emitter_for(const RegionNode& node) {
  if (node.kind == OpKind::pow) return pow_emitter<Vmm>(node.scalar);
  if (node.kind == OpKind::gelu)
    return gelu_uses_tanh(node) ? Emitter<Vmm>{7, 1, emit_gelu_tanh<Vmm>} : Emitter<Vmm>{6, 1, emit_gelu_erf<Vmm>};
  const std::pair<OpKind, Emitter<Vmm>> rows[] = {
      {OpKind::exp, {2, 0, emit_exp<Vmm>}},     {OpKind::log, {2, 1, emit_log<Vmm>}},
      {OpKind::tanh, {4, 1, emit_tanh<Vmm>}},   {OpKind::sigmoid, {3, 1, emit_sigmoid<Vmm>}},
      {OpKind::silu, {5, 1, emit_silu<Vmm>}},   {OpKind::erf, {5, 1, emit_erf<Vmm>}},
      {OpKind::sin, {3, 1, emit_sin<Vmm>}},     {OpKind::cos, {3, 1, emit_cos<Vmm>}},
      {OpKind::log1p, {3, 1, emit_log1p<Vmm>}}, {OpKind::expm1, {4, 0, emit_expm1<Vmm>}},
      {OpKind::elu, {4, 1, emit_elu<Vmm>}},     {OpKind::softplus, {5, 1, emit_softplus<Vmm>}},
  };
  for (const auto& [kind, emitter] : rows)
    if (kind == node.kind) return emitter;
  return std::nullopt;
}

template std::optional<Emitter<Xbyak::Ymm>> math_emitter_for(const RegionNode&);
template std::optional<Emitter<Xbyak::Zmm>> math_emitter_for(const RegionNode&);

} // namespace kiln::jitc
