#include "jit/elementwise/vector_assembler.hpp"
#include <bit>

namespace kiln::jitc {

using Xbyak::Ymm;
using Xbyak::Zmm;

template <class Vmm>
VectorAssembler<Vmm>::VectorAssembler(size_t max_code_size, const Xbyak::Reg64& table_base)
    // DontSetProtectRWE: the pages stay writable, never executable, until the owner switches them
    // to read+execute once the code is complete.
    : Xbyak::CodeGenerator(max_code_size, Xbyak::DontSetProtectRWE), table_base_(table_base) {}

template <class Vmm> Xbyak::Address VectorAssembler<Vmm>::bits(uint32_t pattern) {
  auto [it, added] = constant_index_.try_emplace(pattern, int(constants_.size()));
  if (added) constants_.push_back(pattern);
  return ptr[table_base_ + it->second * kVectorBytes];
}

template <class Vmm> Xbyak::Address VectorAssembler<Vmm>::f32(float value) {
  return bits(std::bit_cast<uint32_t>(value));
}

template <class Vmm> void VectorAssembler<Vmm>::load_table_base() { lea(table_base_, ptr[rip + table_]); }

template <class Vmm> void VectorAssembler<Vmm>::emit_constant_table() {
  align(64);
  L(table_);
  for (uint32_t pattern : constants_)
    for (int lane = 0; lane < kLanes; ++lane)
      dd(pattern);
}

template <class Vmm> void VectorAssembler<Vmm>::round_to_integral(const Vmm& dst, const Vmm& src, RoundingMode mode) {
  if constexpr (kAvx512<Vmm>)
    vrndscaleps(dst, src, mode);
  else
    vroundps(dst, src, mode);
}

template <class Vmm>
void VectorAssembler<Vmm>::compare(const Mask& mask, const Vmm& a, const Xbyak::Operand& b, uint8_t predicate) {
  vcmpps(mask, a, b, predicate);
}

template <class Vmm>
void VectorAssembler<Vmm>::select(const Vmm& dst, const Mask& mask, const Xbyak::Operand& if_true,
                                  const Vmm& if_false) {
  if constexpr (kAvx512<Vmm>)
    vblendmps(dst | mask, if_false, if_true);
  else
    vblendvps(dst, if_false, if_true, mask);
}

template <class Vmm>
void VectorAssembler<Vmm>::select_by_sign(const Vmm& dst, const Vmm& selector, const Vmm& if_true, const Vmm& if_false,
                                          const Mask& scratch) {
  if constexpr (kAvx512<Vmm>) {
    vpmovd2m(scratch, selector);
    vblendmps(dst | scratch, if_false, if_true);
  } else {
    vblendvps(dst, if_false, if_true, selector);
  }
}

template <class Vmm>
void VectorAssembler<Vmm>::compare_to_bool(const Vmm& dst, const Vmm& a, const Xbyak::Operand& b, uint8_t predicate,
                                           const Mask& scratch) {
  if constexpr (kAvx512<Vmm>) {
    vcmpps(scratch, a, b, predicate);
    vpmovm2d(dst, scratch);
  } else {
    vcmpps(dst, a, b, predicate);
  }
}

template <class Vmm> void VectorAssembler<Vmm>::nonzero_i32_to_bool(const Vmm& dst, const Vmm& a, const Mask& scratch) {
  if constexpr (kAvx512<Vmm>) {
    vptestmd(scratch, a, a);
    vpmovm2d(dst, scratch);
  } else {
    vpcmpeqd(dst, a, bits(0));
    vxorps(dst, dst, bits(0xFFFFFFFFu));
  }
}

// AVX2 has no vscalefps: build 2^n from exponent bits in two halves, so that results reaching
// into the subnormal range (n down to -150) and up to overflow (n = 129) come out right.
template <class Vmm> void VectorAssembler<Vmm>::scale_by_pow2(const Vmm& x, const Vmm& n, const Vmm& scratch) {
  if constexpr (kAvx512<Vmm>) {
    vscalefps(x, x, n);
  } else {
    vcvtps2dq(n, n);
    vpsrad(scratch, n, 1);
    vpsubd(n, n, scratch);
    vpaddd(scratch, scratch, bits(127));
    vpslld(scratch, scratch, 23);
    vmulps(x, x, scratch);
    vpaddd(n, n, bits(127));
    vpslld(n, n, 23);
    vmulps(x, x, n);
  }
}

template class VectorAssembler<Ymm>;
template class VectorAssembler<Zmm>;

} // namespace kiln::jitc
