#pragma once

// Polynomial coefficients of the JIT's generated transcendental functions and of the
// interpreter's erf and gelu(erf) (vector_math.hpp), highest degree first (Horner order). Constants
// only, so the -mavx2 translation units may include it. Each is a Chebyshev least-squares fit in
// 40-digit arithmetic (mpmath.chebyfit) of the named function over the named interval; the fit
// error is the maximum over that interval before rounding the coefficients to f32.
// docs/jit-elementwise.md has the measured end-to-end errors.
namespace kiln::coeffs {

// exp(r) = 1 + r + r^2 q(r), r in [-ln2/2, ln2/2] (1% margin); fit error 1.5e-9.
inline constexpr float kExpQ[] = {1.989198131e-04f, 1.393454193e-03f, 8.333310024e-03f,
                                  4.166645681e-02f, 1.666666668e-01f, 5.000000014e-01f};

// log1p(f) = f + f^2 g(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]; fit error 5.0e-9.
inline constexpr float kLogG[] = {6.769024114e-02f, -1.155728788e-01f, 1.181213614e-01f, -1.242081447e-01f,
                                  1.423231786e-01f, -1.666753677e-01f, 2.000144672e-01f, -2.500001094e-01f,
                                  3.333332279e-01f, -4.999999994e-01f};

// tanh(x) = x + x z P(z), z = x^2 in [0, 1]; fit error 1.7e-9.
inline constexpr float kTanhP[] = {1.427931880e-04f, -9.235008463e-04f, 3.206803387e-03f, -8.697847593e-03f,
                                   2.182954884e-02f, -5.396341475e-02f, 1.333331066e-01f, -3.333333316e-01f};

// erf(x) = x + x P(s), s = x^2 in [0, 0.81]; fit error 3.1e-10.
inline constexpr float kErfP[] = {8.529401323e-05f, -8.179632181e-04f, 5.204226694e-03f, -2.686066479e-02f,
                                  1.128371805e-01f, -3.761263519e-01f, 1.283791668e-01f};

// erfc(t) = exp(-t^2) v R(v), v = 1 / (1 + t / 2), t in [0.9, 10]; fit error 1.7e-9.
inline constexpr float kErfcR[] = {-4.978297679e-02f, 2.579095355e-01f,  -4.575849292e-01f,
                                   2.631549340e-01f,  -2.452955269e-02f, 2.038539438e-01f,
                                   2.425262569e-01f,  2.824725461e-01f,  2.820805895e-01f};

// sin(r) = r + r z P(z), cos(r) = 1 - z / 2 + z^2 Q(z), z = r^2, |r| <= pi/4 (0.1% margin).
inline constexpr float kSinP[] = {2.724931405e-06f, -1.984008201e-04f, 8.333331866e-03f, -1.666666666e-01f};
inline constexpr float kCosP[] = {-2.730044862e-07f, 2.480059644e-05f, -1.388888766e-03f, 4.166666666e-02f};

// Constants split into a float and the float nearest to the remainder, for exact-ish reduction.
inline constexpr float kLn2Hi = 6.931471825e-01f;
inline constexpr float kLn2Lo = -1.904654212e-09f;
// ln2 with 9 significant bits, so that e * kLn2Short is exact for any f32 exponent e.
inline constexpr float kLn2Short = 0.693359375f;
inline constexpr float kLn2ShortRest = -2.121944400e-04f;
inline constexpr float kHalfPiHi = 1.570796371e+00f;
inline constexpr float kHalfPiMid = -4.371138829e-08f;
inline constexpr float kHalfPiLo = -1.715124510e-15f;
inline constexpr float kLog2e = 1.442695041e+00f;
inline constexpr float kTwoOverPi = 6.366197724e-01f;
inline constexpr float kTwoOverPiLo = 2.568255327e-08f;
inline constexpr float kInvSqrt2 = 7.071067812e-01f;
// gelu(x) (tanh form) = x sigmoid(x (A + B x^2)), A = 2 sqrt(2/pi), B = 0.044715 A; each split in
// two floats because the sigmoid's argument is needed to about 2^-30 relative.
inline constexpr float kGeluTanhAHi = 1.595769167e+00f;
inline constexpr float kGeluTanhALo = -4.534068054e-08f;
inline constexpr float kGeluTanhBHi = 7.135481387e-02f;
inline constexpr float kGeluTanhBLo = 2.398832466e-09f;

} // namespace kiln::coeffs
