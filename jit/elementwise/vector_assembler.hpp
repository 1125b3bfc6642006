#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>
#include <xbyak/xbyak.h>

namespace kiln::jitc {

// What differs between the two vector ISAs. AVX2 has no mask registers: a mask is a vector whose
// lanes are all ones or all zeros, so masks come out of the vector register pool.
template <class Vmm> struct IsaTraits;

template <> struct IsaTraits<Xbyak::Ymm> {
  using Mask = Xbyak::Ymm;
  static constexpr int lanes = 8;
  static constexpr int vector_registers = 16;
  static constexpr const char* name = "avx2";
};

template <> struct IsaTraits<Xbyak::Zmm> {
  using Mask = Xbyak::Opmask;
  static constexpr int lanes = 16;
  static constexpr int vector_registers = 32;
  static constexpr const char* name = "avx512";
};

template <class Vmm> inline constexpr bool kAvx512 = IsaTraits<Vmm>::lanes == 16;

// AVX-512 opmask roles: k1 is the tail mask, k2..k6 are emitter scratch, k7 is for loads/stores.
inline constexpr int kTailMask = 1;
inline constexpr int kFirstEmitterMask = 2;
inline constexpr int kEmitterMasks = 5;
inline constexpr int kLoadStoreMask = 7;

// vcmpps predicates (ordered/unordered as IEEE comparisons in C++ behave).
enum CmpPredicate : uint8_t {
  kCmpEq = 0x00,    // EQ_OQ
  kCmpLt = 0x01,    // LT_OS
  kCmpLe = 0x02,    // LE_OS
  kCmpUnord = 0x03, // UNORD_Q
  kCmpNe = 0x04,    // NEQ_UQ: true when either is NaN, like C++ !=
  kCmpNotGe = 0x09, // NGE_US: less than, or unordered
  kCmpGe = 0x0D,    // GE_OS
  kCmpGt = 0x0E,    // GT_OS
};

// vroundps / vrndscaleps rounding modes: halves to even, toward -inf, toward +inf.
enum RoundingMode : uint8_t { kRoundNearest = 0, kRoundDown = 1, kRoundUp = 2 };

// An Xbyak code generator plus the per-kernel constant table and the few primitives whose
// instructions differ between AVX2 and AVX-512. Emitters are written against this class once for
// both ISAs. Constants are whole vectors (one value repeated per lane) so that any instruction can
// take them as a memory operand; the table follows the code and is addressed from a base register.
template <class Vmm> class VectorAssembler : public Xbyak::CodeGenerator {
public:
  using Mask = typename IsaTraits<Vmm>::Mask;
  static constexpr int kLanes = IsaTraits<Vmm>::lanes;
  static constexpr int kVectorBytes = kLanes * 4;

  VectorAssembler(size_t max_code_size, const Xbyak::Reg64& table_base);

  Xbyak::Address f32(float value);
  Xbyak::Address bits(uint32_t pattern);
  // Loads the table address into the base register (in the preamble) / appends the table (last).
  void load_table_base();
  void emit_constant_table();

  // dst = src rounded to an integral value (vroundps' immediate); NaN stays NaN, -0.25 gives -0.
  void round_to_integral(const Vmm& dst, const Vmm& src, RoundingMode mode);
  void compare(const Mask& mask, const Vmm& a, const Xbyak::Operand& b, uint8_t predicate);
  // dst = mask ? if_true : if_false, lane by lane.
  void select(const Vmm& dst, const Mask& mask, const Xbyak::Operand& if_true, const Vmm& if_false);
  // dst = sign bit of selector set ? if_true : if_false (bools are all-ones lanes).
  void select_by_sign(const Vmm& dst, const Vmm& selector, const Vmm& if_true, const Vmm& if_false,
                      const Mask& scratch);
  // A bool vector (all ones / zeros per lane) from a compare.
  void compare_to_bool(const Vmm& dst, const Vmm& a, const Xbyak::Operand& b, uint8_t predicate, const Mask& scratch);
  // A bool vector: lane of the i32 vector a is non-zero.
  void nonzero_i32_to_bool(const Vmm& dst, const Vmm& a, const Mask& scratch);
  // x *= 2^n for n an integral f32 vector in [-150, 129]; n is clobbered.
  void scale_by_pow2(const Vmm& x, const Vmm& n, const Vmm& scratch);

private:
  Xbyak::Reg64 table_base_;
  Xbyak::Label table_;
  std::vector<uint32_t> constants_;
  std::unordered_map<uint32_t, int> constant_index_;
};

extern template class VectorAssembler<Xbyak::Ymm>;
extern template class VectorAssembler<Xbyak::Zmm>;

} // namespace kiln::jitc
