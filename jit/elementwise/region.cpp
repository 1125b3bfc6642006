#include "jit/elementwise/region.hpp"
#include "core/environment.hpp"
#include "exec/threads.hpp"
#include "ir/ops.hpp"
#include "jit/elementwise/kernel_generator.hpp"
#include "jit/elementwise/region_check.hpp"
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <xbyak/xbyak_util.h>

namespace kiln::jitc {

namespace {

using Broadcast = RegionInput::Broadcast;

// Below this many elements per thread, splitting costs more than it saves: for loads, stores and
// arithmetic, which run near memory speed.
constexpr int64_t kMinElementsPerThread = 32 * 1024;
// Transcendentals cost tens of instructions per vector (about 1.5 ns per element for ewchain's
// tanh and sigmoid on AVX2), so a region with them pays for a second thread (a few microseconds to
// wake) from far fewer elements: mlp b8's bias + gelu over [8, 1024] ran 20 us on one thread.
constexpr int64_t kMinTranscendentalElementsPerThread = 4 * 1024;

int64_t min_elements_per_thread(const Region& region) {
  int64_t transcendentals = 0;
  for (const RegionNode& node : region.nodes)
    transcendentals += ir::has_trait(node.kind, ir::kTranscendental);
  if (transcendentals == 0) return kMinElementsPerThread;
  return std::max<int64_t>(1024, kMinTranscendentalElementsPerThread / transcendentals);
}

const char* broadcast_name(Broadcast b) {
  switch (b) {
  case Broadcast::full: return "full";
  case Broadcast::scalar: return "scalar";
  case Broadcast::row: return "row";
  case Broadcast::column: return "column";
  }
  return "?";
}

// The node's parameters for the kernel key: a compare's predicate, a gelu's form, a cast's dtype.
std::string params_text(const RegionNode& node) {
  std::string text;
  const ir::Attrs attrs = ir::encode_params(node.params);
  for (const auto& [name, attr] : attrs.items()) {
    text += name + "=";
    if (const auto* s = std::get_if<std::string>(&attr.value)) text += *s;
    if (const auto* d = std::get_if<DType>(&attr.value)) text += dtype_name(*d);
    if (const auto* i = std::get_if<int64_t>(&attr.value)) text += std::to_string(*i);
    if (const auto* f = std::get_if<double>(&attr.value)) text += std::to_string(std::bit_cast<uint64_t>(*f));
    text += ";";
  }
  return text;
}

std::string hex32(uint32_t bits) {
  char buffer[9];
  std::snprintf(buffer, sizeof buffer, "%08x", bits);
  return buffer;
}

bool has_row_or_column_input(const Region& region) {
  return std::any_of(region.inputs.begin(), region.inputs.end(), [](const RegionInput& in) {
    return in.broadcast == Broadcast::row || in.broadcast == Broadcast::column;
  });
}

// KILN_JIT_ISA; a bad value is a kiln::Error (env::check_all reports it when the session is made).
VectorIsa isa_from_environment() {
  const std::optional<std::string> name = env::jit_isa();
  if (!name) return VectorIsa::automatic;
  return *name == "avx512" ? VectorIsa::avx512 : VectorIsa::avx2;
}

// The ISA to generate for, or nullopt with a reason when the CPU lacks it.
std::optional<VectorIsa> resolve_isa(VectorIsa requested, std::string* why_not) {
  if (requested == VectorIsa::automatic) {
    requested = isa_from_environment();
  }
  if (requested == VectorIsa::automatic) {
    if (cpu_supports(VectorIsa::avx512)) return VectorIsa::avx512;
    requested = VectorIsa::avx2;
  }
  if (cpu_supports(requested)) return requested;
  if (why_not)
    *why_not = requested == VectorIsa::avx512 ? "the CPU lacks AVX-512 (F, BW, VL, DQ and BMI2 needed)"
                                              : "the CPU lacks AVX2 and FMA";
  return std::nullopt;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text)
    hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

void dump_if_requested(const ElementwiseKernel& kernel) {
  const std::optional<std::string> dir = env::jit_dump_dir();
  if (!dir) return;
  char name[64];
  std::snprintf(name, sizeof name, "/kiln_elementwise_%s_%016llx.bin", vector_isa_name(kernel.isa()),
                static_cast<unsigned long long>(fnv1a(kernel.key())));
  std::string path = *dir + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(kernel.code()), std::streamsize(kernel.code_size()));
  // A debugging aid: failing to write it must not fail compilation, but should not be silent.
  if (!out) std::fprintf(stderr, "kiln: KILN_JIT_DUMP could not write %s\n", path.c_str());
}

struct KernelCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const ElementwiseKernel>> kernels;
};

// Never destroyed: a promotion still running on a session's compile thread at exit may use it.
KernelCache& kernel_cache() {
  static KernelCache& cache = *new KernelCache;
  return cache;
}

std::shared_ptr<const ElementwiseKernel> generate_or_refuse(const Region& region, VectorIsa isa, std::string key,
                                                            std::string* why_not) {
  try {
    return std::make_shared<const ElementwiseKernel>(generate_kernel(region, isa), isa, std::move(key),
                                                     int(region.inputs.size()), int(region.outputs.size()),
                                                     !has_row_or_column_input(region), min_elements_per_thread(region));
  } catch (const std::exception& e) {
    if (why_not) *why_not = std::string("code generation failed: ") + e.what();
    return nullptr;
  }
}

} // namespace

std::string Region::key() const {
  std::string key = "in:";
  for (const RegionInput& in : inputs)
    key += std::string(dtype_name(in.dtype)) + "/" + broadcast_name(in.broadcast) + ",";
  key += ";nodes:";
  for (const RegionNode& node : nodes) {
    key += std::to_string(int(node.kind)) + ":" + dtype_name(node.dtype) + "[" + params_text(node);
    key += "|" + hex32(std::bit_cast<uint32_t>(node.scalar)) + "](";
    for (int32_t arg : node.args)
      key += std::to_string(arg) + ",";
    key += "),";
  }
  key += ";out:";
  for (int32_t out : outputs)
    key += std::to_string(out) + ",";
  return key;
}

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
  case VectorIsa::automatic: return "automatic";
  case VectorIsa::avx512: return "avx512";
  case VectorIsa::avx2: return "avx2";
  }
  return "?";
}

bool cpu_supports(VectorIsa isa) {
  using Cpu = Xbyak::util::Cpu;
  static const Cpu& cpu = *new Cpu; // never destroyed, like kernel_cache()
  const bool avx2 = cpu.has(Cpu::tAVX2) && cpu.has(Cpu::tFMA);
  const bool avx512 = avx2 && cpu.has(Cpu::tAVX512F) && cpu.has(Cpu::tAVX512BW) && cpu.has(Cpu::tAVX512VL) &&
                      cpu.has(Cpu::tAVX512DQ) && cpu.has(Cpu::tBMI2);
  if (isa == VectorIsa::avx512) return avx512;
  return avx2;
}

std::shared_ptr<const ElementwiseKernel> compile_region(const Region& region, std::string* why_not,
                                                        VectorIsa requested) {
  std::optional<VectorIsa> isa = resolve_isa(requested, why_not);
  if (!isa || !check_region(region, why_not)) return nullptr;
  std::string key = region.key() + "@" + vector_isa_name(*isa);
  KernelCache& cache = kernel_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.kernels.find(key); it != cache.kernels.end()) return it->second;
  }
  // Generated outside the lock; if another thread raced us, its kernel wins and ours is dropped.
  auto kernel = generate_or_refuse(region, *isa, key, why_not);
  if (!kernel) return nullptr;
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto [it, added] = cache.kernels.emplace(key, kernel);
  if (added) dump_if_requested(*kernel);
  return it->second;
}

ElementwiseKernel::ElementwiseKernel(std::shared_ptr<const Code> code, VectorIsa isa, std::string key, int num_inputs,
                                     int num_outputs, bool flattenable, int64_t min_elements_per_thread)
    : code_(std::move(code)), entry_(code_->entry), isa_(isa), key_(std::move(key)), num_inputs_(num_inputs),
      num_outputs_(num_outputs), flattenable_(flattenable), min_elements_per_thread_(min_elements_per_thread) {}

const uint8_t* ElementwiseKernel::code() const { return code_->generator->getCode(); }

size_t ElementwiseKernel::code_size() const { return code_->generator->getSize(); }

bool ElementwiseKernel::run(const void* const* inputs, void* const* outputs, int64_t rows, int64_t cols) const {
  if (rows < 0 || cols < 0) return false;
  if (rows == 0 || cols == 0) return true;
  if ((num_inputs_ > 0 && !inputs) || !outputs) return false;
  for (int k = 0; k < num_inputs_; ++k)
    if (!inputs[k]) return false;
  for (int j = 0; j < num_outputs_; ++j)
    if (!outputs[j]) return false;
  if (flattenable_) {
    cols *= rows;
    rows = 1;
  }
  const int64_t total = rows * cols;
  const int64_t threads = std::clamp<int64_t>(total / min_elements_per_thread_, 1, std::max(1, exec::num_threads()));
  if (threads == 1) {
    run_block(inputs, outputs, 0, rows, 0, cols, cols);
    return true;
  }
  // Split rows when there are enough of them, else columns in whole 64-byte vectors.
  const bool by_rows = rows >= threads;
  const int64_t extent = by_rows ? rows : cols;
  const int64_t step = by_rows ? (extent + threads - 1) / threads : ((extent + threads - 1) / threads + 15) / 16 * 16;
  auto run_chunk = [&](int64_t chunk) {
    int64_t begin = chunk * step, end = std::min(extent, begin + step);
    if (begin >= end) return;
    if (by_rows)
      run_block(inputs, outputs, begin, end, 0, cols, cols);
    else
      run_block(inputs, outputs, 0, rows, begin, end, cols);
  };
  exec::parallel_for(threads, true, run_chunk);
  return true;
}

} // namespace kiln::jitc
