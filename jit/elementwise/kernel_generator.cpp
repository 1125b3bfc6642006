#include "jit/elementwise/kernel_generator.hpp"
#include "jit/elementwise/emitter.hpp"
#include "jit/elementwise/region_check.hpp"
#include "jit/elementwise/register_allocator.hpp"
#include <cstddef>
#include <kiln/error.hpp>
#include <vector>

namespace kiln::jitc {

namespace {

using Xbyak::Reg64;
using Xbyak::Xmm;
using Broadcast = RegionInput::Broadcast;

// One loop body is generated per mode: whole vectors, the AVX-512 tail under mask k1, or the AVX2
// tail one element at a time (lane 0 only).
enum class BodyMode { full_vector, masked_tail, scalar_tail };

template <class Vmm> class KernelGenerator final : private RegisterAllocator::Listener {
public:
  using Mask = typename IsaTraits<Vmm>::Mask;
  static constexpr int kLanes = IsaTraits<Vmm>::lanes;
  static constexpr int kVectorBytes = kLanes * 4;

  KernelGenerator(const Region& region, VectorAssembler<Vmm>& a)
      : region_(region), a_(a), rax(a.rax), rcx(a.rcx), rdx(a.rdx), args_(a.r12), row_(a.r14), col_(a.r15),
        col_end_(a.rbx) {}

  // Returns the size of the instructions (the constant table follows them).
  size_t generate() {
    emit_preamble();
    Xbyak::Label row_loop, vector_loop, tail, row_next, done;
    a_.L(row_loop);
    a_.cmp(row_, a_.ptr[args_ + offsetof(KernelCallArgs, row_end)]);
    a_.jge(done, Xbyak::CodeGenerator::T_NEAR);
    emit_row_pointers();
    a_.mov(col_, a_.ptr[args_ + offsetof(KernelCallArgs, col_begin)]);
    a_.mov(col_end_, a_.ptr[args_ + offsetof(KernelCallArgs, col_end)]);
    a_.L(vector_loop);
    a_.lea(rax, a_.ptr[col_ + kLanes]);
    a_.cmp(rax, col_end_);
    a_.jg(tail, Xbyak::CodeGenerator::T_NEAR);
    emit_body(BodyMode::full_vector);
    a_.add(col_, kLanes);
    a_.jmp(vector_loop, Xbyak::CodeGenerator::T_NEAR);
    a_.L(tail);
    a_.cmp(col_, col_end_);
    a_.jge(row_next, Xbyak::CodeGenerator::T_NEAR);
    emit_tail();
    a_.L(row_next);
    a_.inc(row_);
    a_.jmp(row_loop, Xbyak::CodeGenerator::T_NEAR);
    a_.L(done);
    emit_postamble();
    size_t instruction_bytes = a_.getSize();
    a_.emit_constant_table();
    return instruction_bytes;
  }

private:
  // Frame: row pointers of inputs then outputs (8 bytes each), then one spill slot per node.
  size_t pointer_slot(size_t k) const { return 8 * k; }
  size_t output_slot(size_t j) const { return pointer_slot(region_.inputs.size() + j); }
  size_t spill_slot(int node) const {
    size_t pointers = 8 * (region_.inputs.size() + region_.outputs.size());
    size_t base = (pointers + kVectorBytes - 1) / kVectorBytes * kVectorBytes;
    return base + size_t(node) * kVectorBytes;
  }
  size_t frame_bytes() const { return spill_slot(int(region_.nodes.size())); }

  void emit_preamble() {
    a_.push(a_.rbp);
    a_.mov(a_.rbp, a_.rsp);
    for (const Reg64& r : callee_saved())
      a_.push(r);
    a_.sub(a_.rsp, uint32_t(frame_bytes()));
    a_.and_(a_.rsp, -kVectorBytes);
    a_.mov(args_, a_.rdi);
    a_.load_table_base();
    a_.mov(row_, a_.ptr[args_ + offsetof(KernelCallArgs, row_begin)]);
  }

  void emit_postamble() {
    a_.vzeroupper();
    a_.lea(a_.rsp, a_.ptr[a_.rbp - int(8 * callee_saved().size())]);
    auto saved = callee_saved();
    for (auto it = saved.rbegin(); it != saved.rend(); ++it)
      a_.pop(*it);
    a_.pop(a_.rbp);
    a_.ret();
  }

  std::vector<Reg64> callee_saved() const { return {a_.rbx, a_.r12, a_.r13, a_.r14, a_.r15}; }

  static int element_shift(DType dtype) { return dtype == DType::boolean ? 0 : 2; }

  // rax = base + index << shift, the way lea can scale (1 or 4).
  void add_scaled(const Reg64& base_and_result, const Reg64& index, int shift) {
    a_.lea(base_and_result, a_.ptr[base_and_result + index * (1 << shift)]);
  }

  // At each row start: every input's and output's pointer for this row into its frame slot.
  void emit_row_pointers() {
    a_.mov(rcx, a_.ptr[args_ + offsetof(KernelCallArgs, cols)]);
    a_.imul(rcx, row_);
    for (size_t k = 0; k < region_.inputs.size(); ++k) {
      const RegionInput& in = region_.inputs[k];
      a_.mov(rax, a_.ptr[args_ + offsetof(KernelCallArgs, inputs)]);
      a_.mov(rax, a_.ptr[rax + int(8 * k)]);
      if (in.broadcast == Broadcast::full) add_scaled(rax, rcx, element_shift(in.dtype));
      if (in.broadcast == Broadcast::column) add_scaled(rax, row_, element_shift(in.dtype));
      a_.mov(a_.ptr[a_.rsp + pointer_slot(k)], rax);
    }
    for (size_t j = 0; j < region_.outputs.size(); ++j) {
      DType dtype = region_.nodes[size_t(region_.outputs[j])].dtype;
      a_.mov(rax, a_.ptr[args_ + offsetof(KernelCallArgs, outputs)]);
      a_.mov(rax, a_.ptr[rax + int(8 * j)]);
      add_scaled(rax, rcx, element_shift(dtype));
      a_.mov(a_.ptr[a_.rsp + output_slot(j)], rax);
    }
  }

  void emit_tail() {
    if constexpr (kAvx512<Vmm>) {
      a_.mov(a_.ecx, col_end_.cvt32());
      a_.sub(a_.ecx, col_.cvt32());
      a_.mov(a_.eax, -1);
      a_.bzhi(a_.eax, a_.eax, a_.ecx);
      a_.kmovw(Xbyak::Opmask(kTailMask), a_.eax);
      emit_body(BodyMode::masked_tail);
    } else {
      Xbyak::Label scalar_loop;
      a_.L(scalar_loop);
      emit_body(BodyMode::scalar_tail);
      a_.inc(col_);
      a_.cmp(col_, col_end_);
      a_.jl(scalar_loop, Xbyak::CodeGenerator::T_NEAR);
    }
  }

  void emit_body(BodyMode mode) {
    mode_ = mode;
    RegisterAllocator alloc(region_, IsaTraits<Vmm>::vector_registers, *this);
    alloc_ = &alloc;
    for (size_t i = 0; i < region_.nodes.size(); ++i) {
      if (region_.nodes[i].kind == ir::OpKind::constant) {
        if (is_output(i)) alloc.materialise(int(i), i);
      } else {
        emit_node(i);
      }
      store_outputs_of(i);
      alloc.unpin_all();
      alloc.release_if_dead(int(i), i + 1);
    }
    alloc_ = nullptr;
  }

  void emit_node(size_t i) {
    const RegionNode& node = region_.nodes[i];
    std::vector<DType> arg_dtypes;
    for (int32_t arg : node.args)
      arg_dtypes.push_back(arg_dtype(region_, arg));
    std::string why_not;
    std::optional<Emitter<Vmm>> emitter = emitter_for<Vmm>(node, arg_dtypes, &why_not);
    if (!emitter) throw Error(ErrorKind::unsupported, why_not);
    std::vector<Vmm> args, temps;
    std::vector<Mask> masks;
    for (int32_t arg : node.args)
      args.push_back(Vmm(alloc_->materialise(alloc_->value_of_arg(arg), i)));
    Vmm dst(alloc_->acquire(i));
    for (int t = 0; t < emitter->temps; ++t)
      temps.push_back(Vmm(alloc_->acquire(i)));
    for (int m = 0; m < emitter->masks; ++m)
      masks.push_back(emitter_mask(m, i));
    emitter->emit(a_, EmitOperands<Vmm>{node, arg_dtypes, dst, args, temps, masks});
    for (const Vmm& t : temps)
      alloc_->release(t.getIdx());
    if constexpr (!kAvx512<Vmm>)
      for (const Mask& m : masks)
        alloc_->release(m.getIdx());
    alloc_->unpin_all();
    for (int32_t arg : node.args)
      alloc_->release_if_dead(alloc_->value_of_arg(arg), i + 1);
    alloc_->bind(dst.getIdx(), int(i));
  }

  Mask emitter_mask(int m, size_t position) {
    if constexpr (kAvx512<Vmm>) {
      if (m >= kEmitterMasks) throw Error(ErrorKind::internal, "jit elementwise: too many masks");
      return Xbyak::Opmask(kFirstEmitterMask + m);
    } else {
      return Vmm(alloc_->acquire(position));
    }
  }

  bool is_output(size_t node) const {
    for (int32_t out : region_.outputs)
      if (size_t(out) == node) return true;
    return false;
  }

  void store_outputs_of(size_t i) {
    for (size_t j = 0; j < region_.outputs.size(); ++j) {
      if (size_t(region_.outputs[j]) != i) continue;
      Vmm value(alloc_->materialise(int(i), i + 1));
      emit_store(j, value, region_.nodes[i].dtype, i + 1);
    }
  }

  Xbyak::Address element(const Reg64& base, DType dtype) { return a_.ptr[base + col_ * (1 << element_shift(dtype))]; }

  void load(int reg, int value) override {
    Vmm v(reg);
    if (size_t(value) < region_.nodes.size()) {
      const RegionNode& node = region_.nodes[size_t(value)];
      if (node.kind == ir::OpKind::constant)
        a_.vmovups(v, a_.f32(node.scalar));
      else
        a_.vmovups(v, a_.ptr[a_.rsp + spill_slot(value)]);
      return;
    }
    size_t k = size_t(value) - region_.nodes.size();
    const RegionInput& in = region_.inputs[k];
    a_.mov(rax, a_.ptr[a_.rsp + pointer_slot(k)]);
    bool broadcast = in.broadcast == Broadcast::scalar || in.broadcast == Broadcast::column;
    if (in.dtype == DType::boolean)
      load_bool(v, broadcast);
    else if (broadcast)
      a_.vbroadcastss(v, a_.ptr[rax]);
    else
      load_word(v, element(rax, in.dtype));
  }

  void load_word(const Vmm& v, const Xbyak::Address& at) {
    if (mode_ == BodyMode::full_vector)
      a_.vmovups(v, at);
    else if (mode_ == BodyMode::scalar_tail)
      a_.vmovss(Xmm(v.getIdx()), at);
    else if constexpr (kAvx512<Vmm>)
      a_.vmovups(v | Xbyak::Opmask(kTailMask) | a_.T_z, at);
  }

  // Bytes 0/1 become all-ones / all-zeros lanes (any non-zero byte counts as true).
  void load_bool(const Vmm& v, bool broadcast) {
    Xmm low(v.getIdx());
    if (broadcast) {
      a_.movzx(a_.eax, a_.byte[rax]);
      a_.neg(a_.eax);
      a_.vmovd(low, a_.eax);
      a_.vpbroadcastd(v, low);
      return;
    }
    Xbyak::Address at = element(rax, DType::boolean);
    if (mode_ == BodyMode::full_vector) {
      a_.vpmovzxbd(v, at);
    } else if (mode_ == BodyMode::scalar_tail) {
      a_.movzx(a_.eax, a_.byte[rax + col_]);
      a_.vmovd(low, a_.eax);
    } else if constexpr (kAvx512<Vmm>) {
      a_.vmovdqu8(low | Xbyak::Opmask(kTailMask) | a_.T_z, at);
      a_.vpmovzxbd(v, low);
    }
    if constexpr (kAvx512<Vmm>) {
      a_.vpcmpgtd(Xbyak::Opmask(kLoadStoreMask), v, a_.bits(0));
      a_.vpmovm2d(v, Xbyak::Opmask(kLoadStoreMask));
    } else {
      a_.vpcmpgtd(v, v, a_.bits(0));
    }
  }

  void spill(int reg, int value) override { a_.vmovups(a_.ptr[a_.rsp + spill_slot(value)], Vmm(reg)); }

  void emit_store(size_t j, const Vmm& v, DType dtype, size_t position) {
    a_.mov(rax, a_.ptr[a_.rsp + output_slot(j)]);
    Xbyak::Address at = element(rax, dtype);
    if (dtype == DType::boolean) {
      store_bool(at, v, position);
    } else if (mode_ == BodyMode::full_vector) {
      a_.vmovups(at, v);
    } else if (mode_ == BodyMode::scalar_tail) {
      a_.vmovss(at, Xmm(v.getIdx()));
    } else if constexpr (kAvx512<Vmm>) {
      a_.vmovups(at | Xbyak::Opmask(kTailMask), v);
    }
  }

  // All-ones / zero lanes back to bytes 1 / 0.
  void store_bool(const Xbyak::Address& at, const Vmm& v, size_t position) {
    if (mode_ == BodyMode::scalar_tail) {
      a_.vmovd(a_.edx, Xmm(v.getIdx()));
      a_.and_(a_.edx, 1);
      a_.mov(a_.byte[rax + col_], a_.dl);
      return;
    }
    Vmm bits01(alloc_->acquire(position));
    Xmm packed(bits01.getIdx());
    a_.vpsrld(bits01, v, 31);
    if constexpr (kAvx512<Vmm>) {
      a_.vpmovdb(packed, bits01);
      if (mode_ == BodyMode::full_vector)
        a_.vmovdqu(at, packed);
      else
        a_.vmovdqu8(at | Xbyak::Opmask(kTailMask), packed);
    } else {
      Xmm high(alloc_->acquire(position));
      a_.vextracti128(high, bits01, 1);
      a_.vpackusdw(packed, packed, high);
      a_.vpackuswb(packed, packed, packed);
      a_.vmovq(at, packed);
      alloc_->release(high.getIdx());
    }
    alloc_->release(bits01.getIdx());
  }

  const Region& region_;
  VectorAssembler<Vmm>& a_;
  const Reg64 rax, rcx, rdx;
  const Reg64 args_, row_, col_, col_end_;
  BodyMode mode_ = BodyMode::full_vector;
  RegisterAllocator* alloc_ = nullptr;
};

size_t max_code_size(const Region& region) {
  return 64 * 1024 + 8 * 1024 * (region.nodes.size() + region.inputs.size() + region.outputs.size());
}

template <class Vmm> std::shared_ptr<const ElementwiseKernel::Code> generate(const Region& region) {
  auto assembler = std::make_unique<VectorAssembler<Vmm>>(max_code_size(region), Xbyak::util::r13);
  size_t instruction_bytes = KernelGenerator<Vmm>(region, *assembler).generate();
  assembler->setProtectModeRE();
  auto code = std::make_shared<ElementwiseKernel::Code>();
  code->instruction_bytes = instruction_bytes;
  code->entry = assembler->template getCode<KernelEntry>();
  code->generator = std::move(assembler);
  return code;
}

} // namespace

std::shared_ptr<const ElementwiseKernel::Code> generate_kernel(const Region& region, VectorIsa isa) {
  if (isa == VectorIsa::avx512) return generate<Xbyak::Zmm>(region);
  if (isa == VectorIsa::avx2) return generate<Xbyak::Ymm>(region);
  throw Error(ErrorKind::internal, "generate_kernel needs a concrete ISA");
}

} // namespace kiln::jitc
