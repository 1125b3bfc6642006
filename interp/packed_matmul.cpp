#include "interp/packed_matmul.hpp"
#include "exec/cpu_features.hpp"
#include "interp/kernels/kernel_support.hpp"
#include "interp/kernels/packed_gemm.hpp"
#include "kiln_config.h"
#include <cstdlib>

namespace kiln::interp {

using exec::View;

bool cpu_runs_packed_gemm() { return KILN_HAS_NEON_KERNELS || (KILN_HAS_AVX2_KERNELS && exec::cpu_has_avx2_fma()); }

#if KILN_HAS_AVX2_KERNELS || KILN_HAS_NEON_KERNELS
namespace {

// The packed kernel of this build: NEON on aarch64, else AVX2+FMA, which the implementation list
// has checked the CPU for (packed_gemm's min_isa).
void packed_kernel(const PackedGemmF32& gemm) {
#if KILN_HAS_NEON_KERNELS
  detail::packed_gemm_f32_neon(gemm);
#else
  detail::packed_gemm_f32_avx2(gemm);
#endif
}

// B (k x n) in the panel layout of packed_gemm.hpp, packed from `source`: B itself, or the [n, k]
// weight B is the transpose of.
class PackedB {
public:
  PackedB(const Tensor& source, int64_t k, int64_t n, bool transposed)
      : packed_(Tensor::empty({packed_b_floats(k, n)}, DType::f32)) {
    const float* b = source.data<float>();
    float* packed = packed_.data<float>();
    exec::parallel_for(packed_panels(n), exec::worth_parallel(k * n), [&](int64_t panel) {
      const int64_t col = panel * kPackedPanelWidth, width = std::min(kPackedPanelWidth, n - col);
      float* dst = packed + panel * k * kPackedPanelWidth;
      std::fill(dst, dst + k * kPackedPanelWidth, 0.0f);
      for (int64_t j = 0; j < width; ++j)
        for (int64_t p = 0; p < k; ++p)
          dst[p * kPackedPanelWidth + j] = transposed ? b[(col + j) * k + p] : b[p * n + col + j];
    });
  }
  const float* data() const { return packed_.data<float>(); }

private:
  Tensor packed_;
};

class PackedMatmul final : public exec::StepRunner {
public:
  PackedMatmul(std::shared_ptr<const PackedB> b, int64_t k, int64_t n) : b_(std::move(b)), k_(k), n_(n) {}

  void run(std::span<const View> inputs, std::span<const View> outputs, std::span<std::byte>) const override {
    const int64_t rows = inputs[0].numel() / k_;
    if (rows == 0 || n_ == 0) return;
    run_split(PackedGemmF32{.a = inputs[0].as<const float>(),
                            .lda = k_,
                            .packed_b = b_->data(),
                            .c = outputs[0].as<float>(),
                            .ldc = n_,
                            .k = k_,
                            .n = n_,
                            .row_begin = 0,
                            .row_end = rows,
                            .panel_begin = 0,
                            .panel_end = packed_panels(n_)});
  }
  size_t constant_bytes() const override { return size_t(packed_b_floats(k_, n_)) * sizeof(float); }

private:
  // Threads take rows (in multiples of the tile height) when there are many: each then packs only
  // its own rows of a. Few rows (small batches) split by panels, so each thread streams half of B.
  static void run_split(const PackedGemmF32& gemm) {
    const int64_t threads = exec::worth_parallel(gemm.row_end * gemm.n * gemm.k) ? exec::num_threads() : 1;
    const int64_t panels = gemm.panel_end, rows = gemm.row_end;
    const bool by_panels = rows < 96 && panels >= threads;
    const int64_t extent = by_panels ? panels : rows, align = by_panels ? 1 : 6;
    const int64_t blocks = std::min(threads, extent);
    if (blocks <= 1) return packed_kernel(gemm);
    const int64_t step = ((extent + blocks - 1) / blocks + align - 1) / align * align;
    exec::parallel_for(blocks, true, [&](int64_t block) {
      PackedGemmF32 part = gemm;
      const int64_t begin = std::min(extent, block * step), end = std::min(extent, begin + step);
      if (begin >= end) return;
      (by_panels ? part.panel_begin : part.row_begin) = begin;
      (by_panels ? part.panel_end : part.row_end) = end;
      packed_kernel(part);
    });
  }

  std::shared_ptr<const PackedB> b_;
  int64_t k_, n_;
};

// The bound weight B is the transpose of (F::linear stages x @ transpose(W)), else B itself.
std::pair<const exec::ValuePlan*, bool> pack_source(const ir::Function& fn, ir::ValueId b,
                                                    const std::vector<exec::ValuePlan>& values) {
  const int32_t def = fn.values[b].def_op;
  if (def != ir::kNoOp && values[b].dims.size() == 2) {
    const ir::Op& op = fn.ops[size_t(def)];
    if (op.kind == ir::OpKind::transpose && ir::params_of<ir::TransposeParams>(op).perm == std::vector<int64_t>{1, 0} &&
        values[op.operands[0]].storage == exec::Storage::bound && values[op.operands[0]].dtype == DType::f32)
      return {&values[op.operands[0]], true};
  }
  return {&values[b], false};
}

} // namespace

std::shared_ptr<const exec::StepRunner> make_packed_matmul(const ir::Function& fn, const ir::Op& op,
                                                           const std::vector<exec::ValuePlan>& values,
                                                           runtime::WeightForms* forms) {
  if (auto why = refuse_packed_matmul(op, values))
    throw Error(ErrorKind::internal, ir::op_place(op) + ": packed matmul of a matmul it refuses: " + *why);
  const exec::ValuePlan& b = values[op.operands[1]];
  const int64_t k = b.dims[b.dims.size() - 2], n = b.dims.back();
  const auto [source, transposed] = pack_source(fn, op.operands[1], values);
  std::optional<runtime::WeightFormKey> key;
  if (source->bound_key)
    key = runtime::derived_key("interp.packed_b", {&*source->bound_key}, transposed ? "transposed" : "");
  auto packed = runtime::shared_form<PackedB>(forms, key, [&] { return PackedB(source->bound, k, n, transposed); });
  return std::make_shared<PackedMatmul>(std::move(packed), k, n);
}
#else
std::shared_ptr<const exec::StepRunner> make_packed_matmul(const ir::Function&, const ir::Op& op,
                                                           const std::vector<exec::ValuePlan>&, runtime::WeightForms*) {
  // packed_gemm needs AVX2+FMA (its list entry's min_isa), which this build has no kernels for.
  throw Error(ErrorKind::internal, ir::op_place(op) + ": packed matmul in a build without AVX2 or NEON kernels");
}
#endif

std::optional<std::string> refuse_packed_matmul(const ir::Op& op, const std::vector<exec::ValuePlan>& values) {
  const exec::ValuePlan &a = values[op.operands.at(0)], &b = values[op.operands.at(1)], &out = values[op.results.at(0)];
  if (a.dtype != DType::f32 || b.dtype != DType::f32 || out.dtype != DType::f32) return "not f32";
  if (b.storage != exec::Storage::bound) return "B is computed per call, not a weight or a value of weights";
  if (a.dims.size() < 2 || b.dims.size() < 2) return "A or B has fewer than two dims";
  const int64_t k = b.dims[b.dims.size() - 2], n = b.dims.back();
  if (product(std::span(b.dims).first(b.dims.size() - 2)) != 1) return "B has batches; one packing is one matrix";
  if (k == 0) return "the inner dim is 0";
  if (a.dims.back() != k || out.dims.back() != n || numel_of(out.dims) != numel_of(a.dims) / k * n)
    return "the shapes do not agree (the kernel reports it)";
  return std::nullopt;
}

} // namespace kiln::interp
