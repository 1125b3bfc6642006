// Generated elementwise kernels against naive std:: references written here.
#include "ir/ops.hpp"
#include "jit/elementwise/emitter.hpp"
#include "jit/elementwise/kernel_generator.hpp"
#include "jit/elementwise/region.hpp"
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace kiln;
using namespace kiln::jitc;
using ir::OpKind;
using Broadcast = RegionInput::Broadcast;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// Documented: sin and cos give NaN beyond 2^24, where the kernels' reduction stops being exact.
constexpr double kMaxTrigArgument = 16777216.0;
const std::vector<int64_t> kSizes = {1, 7, 15, 16, 17, 1023, 65537};

int32_t input(int k) { return -(k + 1); }

bool uses_tanh(const RegionNode& n) { return std::get<ir::GeluParams>(n.params).form == ir::GeluForm::tanh; }

RegionNode node(OpKind kind, std::vector<int32_t> args, DType dtype = DType::f32, ir::Attrs attrs = {},
                float scalar = 0.0f) {
  // A constant node is a literal (`scalar`), not a kiln.constant with a value attribute.
  ir::OpParams params = kind == OpKind::constant ? ir::OpParams{} : ir::decode_params(kind, attrs, {});
  return RegionNode{kind, std::move(args), std::move(params), scalar, dtype};
}

RegionNode constant(float value) { return node(OpKind::constant, {}, DType::f32, {}, value); }
RegionNode pow_const(int32_t arg, float exponent) { return node(OpKind::pow, {arg}, DType::f32, {}, exponent); }
RegionNode gelu(int32_t arg, const char* form) {
  return node(OpKind::gelu, {arg}, DType::f32, {{"approximate", ir::Attr::of_string(form)}});
}
RegionNode compare(int32_t a, int32_t b, const char* predicate) {
  return node(OpKind::compare, {a, b}, DType::boolean, {{"predicate", ir::Attr::of_string(predicate)}});
}
RegionNode cast(int32_t arg, DType to) { return node(OpKind::cast, {arg}, to, {{"dtype", ir::Attr::of_dtype(to)}}); }

std::vector<VectorIsa> runnable_isas() {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : {VectorIsa::avx512, VectorIsa::avx2})
    if (cpu_supports(isa)) isas.push_back(isa);
  static bool told = false;
  if (!cpu_supports(VectorIsa::avx512) && !std::exchange(told, true))
    MESSAGE("this CPU has no AVX-512: only AVX2 kernels run here");
  return isas;
}

std::shared_ptr<const ElementwiseKernel> compile_or_fail(const Region& region, VectorIsa isa) {
  std::string why;
  auto kernel = compile_region(region, &why, isa);
  INFO("refused: " << why);
  REQUIRE(kernel != nullptr);
  CHECK(kernel->isa() == isa);
  return kernel;
}

// Untyped arrays of any region dtype.
struct Array {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;

  Array(DType t, size_t n) : dtype(t), bytes(n * dtype_size(t)) {}
  size_t size() const { return bytes.size() / dtype_size(dtype); }
  float f32(size_t i) const { return load<float>(i); }
  int32_t i32(size_t i) const { return load<int32_t>(i); }
  bool flag(size_t i) const { return bytes[i] != 0; }
  void set_f32(size_t i, float v) { std::memcpy(&bytes[i * 4], &v, 4); }
  void set_i32(size_t i, int32_t v) { std::memcpy(&bytes[i * 4], &v, 4); }
  void set_flag(size_t i, bool v) { bytes[i] = v ? 1 : 0; }

private:
  template <class T> T load(size_t i) const {
    T v;
    std::memcpy(&v, &bytes[i * sizeof(T)], sizeof(T));
    return v;
  }
};

std::vector<Array> run_kernel(const ElementwiseKernel& kernel, const Region& region, std::vector<Array>& inputs,
                              int64_t rows, int64_t cols) {
  std::vector<Array> outputs;
  for (int32_t out : region.outputs)
    outputs.emplace_back(region.nodes[size_t(out)].dtype, size_t(rows * cols));
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (Array& a : inputs)
    in_ptrs.push_back(a.bytes.data());
  for (Array& a : outputs)
    out_ptrs.push_back(a.bytes.data());
  REQUIRE(kernel.run(in_ptrs.data(), out_ptrs.data(), rows, cols));
  return outputs;
}

size_t input_length(const RegionInput& in, int64_t rows, int64_t cols) {
  switch (in.broadcast) {
  case Broadcast::full: return size_t(rows * cols);
  case Broadcast::row: return size_t(cols);
  case Broadcast::column: return size_t(rows);
  case Broadcast::scalar: return 1;
  }
  return 0;
}

size_t input_index(const RegionInput& in, int64_t r, int64_t c, int64_t cols) {
  switch (in.broadcast) {
  case Broadcast::full: return size_t(r * cols + c);
  case Broadcast::row: return size_t(c);
  case Broadcast::column: return size_t(r);
  case Broadcast::scalar: return 0;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The reference: every op written with std:: functions, transcendental ones in double.

struct Value {
  DType dtype = DType::f32;
  double f = 0; // f32 values (as the exact double result for transcendental ops)
  int32_t i = 0;
  bool b = false;
};

double ref_sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

double ref_unary(OpKind kind, double x, const RegionNode& n) {
  switch (kind) {
  case OpKind::neg: return -x;
  case OpKind::abs: return std::fabs(x);
  case OpKind::exp: return std::exp(x);
  case OpKind::log: return std::log(x);
  case OpKind::sqrt: return std::sqrt(x);
  case OpKind::rsqrt: return 1.0 / std::sqrt(x);
  case OpKind::tanh: return std::tanh(x);
  case OpKind::sigmoid: return ref_sigmoid(x);
  case OpKind::relu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
  case OpKind::erf: return std::erf(x);
  case OpKind::sin: return std::fabs(x) > kMaxTrigArgument ? NAN : std::sin(x);
  case OpKind::cos: return std::fabs(x) > kMaxTrigArgument ? NAN : std::cos(x);
  // -inf * 0 = NaN at x = -inf, as PyTorch's formulas give.
  case OpKind::silu: return x == -INFINITY ? NAN : x * ref_sigmoid(x);
  case OpKind::gelu:
    if (x == -INFINITY) return NAN;
    if (uses_tanh(n)) return x * ref_sigmoid(2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x));
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  case OpKind::pow: return std::pow(x, double(n.scalar));
  case OpKind::hardsigmoid: {
    // torch's steps in float: every one is correctly rounded, so the kernel must match exactly.
    const float t = float(x) + 3.0f;
    return (std::isnan(t) ? t : std::min(std::max(t, 0.0f), 6.0f)) / 6.0f;
  }
  // The rounding ops, sign, hardswish and leaky_relu: torch's steps in float, exact.
  case OpKind::floor: return std::floor(float(x));
  case OpKind::ceil: return std::ceil(float(x));
  case OpKind::round: return std::nearbyint(float(x));
  case OpKind::sign: return float(int(0.0f < float(x)) - int(float(x) < 0.0f));
  case OpKind::hardswish: {
    const float t = float(x) + 3.0f;
    return float(x) * (std::isnan(t) ? t : std::min(std::max(t, 0.0f), 6.0f)) / 6.0f;
  }
  case OpKind::leaky_relu: return x > 0 ? x : double(float(x) * 0.01f);
  case OpKind::elu: return x > 0 ? x : std::expm1(x);
  case OpKind::softplus: return x > 20 ? x : std::log1p(std::exp(x));
  case OpKind::log1p: return std::log1p(x);
  case OpKind::expm1: return std::expm1(x);
  default: FAIL("no reference for op " << int(kind)); return 0;
  }
}

float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
float nan_min(float a, float b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

bool ref_compare(const std::string& p, float a, float b) {
  if (p == "eq") return a == b;
  if (p == "ne") return a != b;
  if (p == "lt") return a < b;
  if (p == "le") return a <= b;
  if (p == "gt") return a > b;
  return a >= b;
}

int32_t ref_f32_to_i32(float x) {
  if (!(x >= -2147483648.0f && x < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

Value ref_cast(const Value& x, DType to) {
  Value r;
  r.dtype = to;
  float f = float(x.f);
  if (to == DType::f32) r.f = x.dtype == DType::i32 ? double(float(x.i)) : x.dtype == DType::boolean ? x.b : f;
  if (to == DType::i32) r.i = x.dtype == DType::f32 ? ref_f32_to_i32(f) : x.dtype == DType::boolean ? x.b : x.i;
  if (to == DType::boolean) r.b = x.dtype == DType::f32 ? f != 0.0f : x.dtype == DType::i32 ? x.i != 0 : x.b;
  return r;
}

// Exact ops in float (rounded like the kernel), transcendental ones exactly (in double).
Value ref_eval(const RegionNode& n, const std::vector<Value>& a) {
  auto f = [&](size_t i) { return float(a[i].f); };
  Value r;
  r.dtype = n.dtype;
  switch (n.kind) {
  case OpKind::constant: r.f = n.scalar; break;
  case OpKind::add: r.f = f(0) + f(1); break;
  case OpKind::sub: r.f = f(0) - f(1); break;
  case OpKind::mul: r.f = f(0) * f(1); break;
  case OpKind::div: r.f = f(0) / f(1); break;
  case OpKind::maximum: r.f = nan_max(f(0), f(1)); break;
  case OpKind::minimum: r.f = nan_min(f(0), f(1)); break;
  case OpKind::compare: r.b = ref_compare(ir::encode_params(n.params).get_string("predicate"), f(0), f(1)); break;
  case OpKind::where: r = a[0].b ? a[1] : a[2]; break;
  case OpKind::clamp: r.f = nan_min(nan_max(f(0), f(1)), f(2)); break;
  case OpKind::cast: r = ref_cast(a[0], n.dtype); break;
  default: r.f = ref_unary(n.kind, f(0), n); break;
  }
  return r;
}

Value read_input(const Array& a, size_t i) {
  Value v;
  v.dtype = a.dtype;
  if (a.dtype == DType::f32) v.f = a.f32(i);
  if (a.dtype == DType::i32) v.i = a.i32(i);
  if (a.dtype == DType::boolean) v.b = a.flag(i);
  return v;
}

// Every output of the region at every point, by the reference.
std::vector<std::vector<Value>> ref_region(const Region& region, const std::vector<Array>& inputs, int64_t rows,
                                           int64_t cols) {
  std::vector<std::vector<Value>> outputs(region.outputs.size());
  std::vector<Value> values(region.nodes.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      for (size_t i = 0; i < region.nodes.size(); ++i) {
        std::vector<Value> args;
        for (int32_t arg : region.nodes[i].args) {
          if (arg >= 0) {
            Value v = values[size_t(arg)];
            if (v.dtype == DType::f32) v.f = float(v.f); // the kernel passes f32 between nodes
            args.push_back(v);
          } else {
            size_t k = size_t(-arg - 1);
            args.push_back(read_input(inputs[k], input_index(region.inputs[k], r, c, cols)));
          }
        }
        values[i] = ref_eval(region.nodes[i], args);
      }
      for (size_t j = 0; j < region.outputs.size(); ++j)
        outputs[j].push_back(values[size_t(region.outputs[j])]);
    }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Error measures.

// The spacing of f32 values at |x| (subnormal spacing below FLT_MIN).
double ulp_of(double x) {
  double a = std::fabs(x);
  if (a < FLT_MIN) return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(a) - 23);
}

// Errors of got against the exact want: ulps only where want is a normal f32.
struct ErrorStats {
  double max_ulps = 0;
  double max_abs = 0;
  double worst_input = 0;
  bool specials_match = true; // NaN where NaN, the same infinity where infinite

  void add(float got, double want, double input) {
    const float rounded = float(want); // infinite when want overflows f32
    if (std::isnan(want) || std::isinf(rounded) || std::isnan(got) || std::isinf(got)) {
      bool same = std::isnan(want) ? std::isnan(got) : got == rounded;
      if (!same && specials_match) worst_input = input;
      specials_match = specials_match && same;
      return;
    }
    double abs_error = std::fabs(double(got) - want);
    max_abs = std::max(max_abs, abs_error);
    if (std::fabs(want) < FLT_MIN) return;
    double ulps = abs_error / ulp_of(want);
    if (ulps > max_ulps) {
      max_ulps = ulps;
      worst_input = input;
    }
  }
};

// Ops whose kernel must match the float reference exactly.
bool is_exact_op(OpKind kind) {
  switch (kind) {
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::maximum:
  case OpKind::minimum:
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::relu:
  case OpKind::sqrt:
  case OpKind::compare:
  case OpKind::where:
  case OpKind::cast:
  case OpKind::clamp:
  case OpKind::hardsigmoid:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
  case OpKind::sign:
  case OpKind::hardswish:
  case OpKind::leaky_relu:
  case OpKind::constant: return true;
  default: return false;
  }
}

bool same_value(const Value& want, const Array& got, size_t i) {
  if (want.dtype == DType::boolean) return got.flag(i) == want.b && got.bytes[i] <= 1;
  if (want.dtype == DType::i32) return got.i32(i) == want.i;
  float w = float(want.f), g = got.f32(i);
  return (std::isnan(w) && std::isnan(g)) || w == g;
}

// ---------------------------------------------------------------------------------------------
// Inputs.

std::mt19937& rng() {
  static std::mt19937 generator(20240611u);
  return generator;
}

float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng()); }

const std::vector<float> kEdgeValues = {0.0f,   -0.0f,   1.0f,    -1.0f,    0.5f,   -0.5f,  2.0f,    -3.0f,
                                        1e-40f, -1e-40f, FLT_MIN, -FLT_MIN, 1e30f,  -1e30f, FLT_MAX, -FLT_MAX,
                                        kInf,   -kInf,   kNaN,    88.7f,    -87.4f, 100.0f, -100.0f, 1e-8f};

// A random value in the op's interesting range; every 11th element an edge value.
float sample_for(OpKind kind, size_t i) {
  if (i % 11 == 5) return kEdgeValues[(i / 11) % kEdgeValues.size()];
  switch (kind) {
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt: return std::exp(uniform(-80.0f, 80.0f));
  case OpKind::exp: return uniform(-100.0f, 88.0f);
  case OpKind::sin:
  case OpKind::cos: return uniform(-50.0f, 50.0f);
  // Half near 0, where log1p and expm1 must not lose digits.
  case OpKind::log1p: return i % 2 ? uniform(-1.0f, 8.0f) : std::ldexp(uniform(-1.0f, 1.0f), -int(i % 40));
  case OpKind::expm1:
  case OpKind::elu: return i % 2 ? uniform(-20.0f, 88.0f) : std::ldexp(uniform(-1.0f, 1.0f), -int(i % 40));
  case OpKind::round: return float(int(uniform(-16.0f, 16.0f))) * 0.5f; // halves, to check ties to even
  default: return uniform(-8.0f, 8.0f);
  }
}

Region unary_region(const RegionNode& op) {
  Region region;
  region.inputs = {{Broadcast::full, DType::f32}};
  region.nodes = {op};
  region.outputs = {0};
  return region;
}

std::vector<RegionNode> unary_ops() {
  std::vector<RegionNode> ops;
  for (OpKind k :
       {OpKind::neg,       OpKind::abs,         OpKind::exp,   OpKind::log,      OpKind::sqrt,  OpKind::rsqrt,
        OpKind::tanh,      OpKind::sigmoid,     OpKind::relu,  OpKind::silu,     OpKind::erf,   OpKind::sin,
        OpKind::cos,       OpKind::hardsigmoid, OpKind::floor, OpKind::ceil,     OpKind::round, OpKind::sign,
        OpKind::hardswish, OpKind::leaky_relu,  OpKind::elu,   OpKind::softplus, OpKind::log1p, OpKind::expm1})
    ops.push_back(node(k, {input(0)}));
  ops.push_back(gelu(input(0), "none"));
  ops.push_back(gelu(input(0), "tanh"));
  for (float c :
       {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, -1.0f, -2.0f, -3.0f, -4.0f, 7.0f, 0.5f, -0.5f, 2.5f, -1.5f, 0.3f, 9.0f, 10.0f})
    ops.push_back(pow_const(input(0), c));
  return ops;
}

std::string describe(const RegionNode& n) {
  std::ostringstream out;
  out << "op " << int(n.kind);
  if (n.kind == OpKind::pow) out << " exponent " << n.scalar;
  if (n.kind == OpKind::gelu) out << (uses_tanh(n) ? " tanh" : " none");
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Accuracy bounds: ulps of the exact result where it is a normal f32, and absolute error.
// docs/jit-elementwise.md lists the measured maxima these bounds sit just above.

struct Bound {
  double ulps;
  double abs;
};

Bound bound_of(const RegionNode& n) {
  switch (n.kind) {
  case OpKind::exp: return {1.5, 0};
  case OpKind::log: return {1.5, 0};
  case OpKind::rsqrt: return {1.5, 0};
  case OpKind::tanh: return {2, 0};
  case OpKind::sigmoid: return {3, 0};
  case OpKind::silu: return {3.5, 0};
  case OpKind::erf: return {2, 0};
  case OpKind::gelu: return {uses_tanh(n) ? 3.5 : 6.0, 0};
  case OpKind::sin:
  case OpKind::cos: return {3, 1.5e-7};
  case OpKind::pow: return {2.5, 0};
  case OpKind::elu:
  case OpKind::expm1: return {2, 0};
  case OpKind::softplus:
  case OpKind::log1p: return {3, 0};
  default: return {0, 0};
  }
}

} // namespace

TEST_CASE("every unary op matches its std:: reference at every size and on edge values") {
  for (VectorIsa isa : runnable_isas()) {
    for (const RegionNode& op : unary_ops()) {
      Region region = unary_region(op);
      auto kernel = compile_or_fail(region, isa);
      for (int64_t n : kSizes) {
        CAPTURE(vector_isa_name(isa));
        CAPTURE(describe(op));
        CAPTURE(n);
        std::vector<Array> in{Array(DType::f32, size_t(n))};
        for (int64_t i = 0; i < n; ++i)
          in[0].set_f32(size_t(i), sample_for(op.kind, size_t(i)));
        Array out = run_kernel(*kernel, region, in, 1, n)[0];
        Bound bound = bound_of(op);
        for (int64_t i = 0; i < n; ++i) {
          float x = in[0].f32(size_t(i));
          double want = ref_unary(op.kind, x, op);
          float got = out.f32(size_t(i));
          if (is_exact_op(op.kind) || (op.kind == OpKind::pow && std::fabs(op.scalar) <= 1)) {
            want = float(want);
            if (op.kind == OpKind::pow && std::fabs(op.scalar) == 0.5f) want = ref_unary(op.kind, x, op);
          }
          ErrorStats e;
          e.add(got, want, x);
          bool ok = e.specials_match && (e.max_ulps <= std::max(bound.ulps, 0.5) || e.max_abs <= bound.abs);
          if (!ok) FAIL_CHECK("x = " << x << " got " << got << " want " << want << " (" << e.max_ulps << " ulps)");
        }
      }
    }
  }
}

namespace {

// A dense sweep: n evenly spaced points in [lo, hi], or with log_scale, |x| = 2^u for u evenly
// spaced in [lo, hi] (negative too when both_signs). ulps: whether the ulp bound applies there
// (sin and cos far from 0 are held to an absolute bound only).
struct SweepRange {
  const char* label;
  double lo, hi;
  bool log_scale = false;
  bool both_signs = false;
  bool ulps = true;
};

struct SweepCase {
  std::string name;
  RegionNode op;
  std::vector<SweepRange> ranges;
  Bound bound;
};

std::vector<float> sweep_points(const SweepRange& r, size_t n) {
  std::vector<float> xs(n);
  for (size_t i = 0; i < n; ++i) {
    double u = r.lo + (r.hi - r.lo) * double(i) / double(n - 1);
    double x = r.log_scale ? std::exp2(u) : u;
    if (r.both_signs && i % 2 == 1) x = -x;
    xs[i] = float(x);
  }
  return xs;
}

std::vector<SweepCase> sweep_cases() {
  auto f = [](OpKind k) { return node(k, {input(0)}); };
  std::vector<SweepCase> cases = {
      {"exp", f(OpKind::exp), {{"[-104, 89]", -104, 89}, {"|x| in [2^-40, 2^6]", -40, 6, true, true}}, {}},
      {"log", f(OpKind::log), {{"(0, 2^128) log-spaced", -149, 128, true}, {"[0.5, 2]", 0.5, 2}}, {}},
      {"tanh", f(OpKind::tanh), {{"[-10, 10]", -10, 10}, {"|x| in [2^-40, 2^5]", -40, 5, true, true}}, {}},
      {"sigmoid", f(OpKind::sigmoid), {{"[-104, 30]", -104, 30}, {"|x| in [2^-40, 2^5]", -40, 5, true, true}}, {}},
      {"silu", f(OpKind::silu), {{"[-104, 30]", -104, 30}, {"|x| in [2^-40, 2^5]", -40, 5, true, true}}, {}},
      {"erf", f(OpKind::erf), {{"[-5, 5]", -5, 5}, {"|x| in [2^-40, 2^3]", -40, 3, true, true}}, {}},
      {"gelu (erf)", gelu(input(0), "none"), {{"[-14, 10]", -14, 10}, {"|x| in [2^-40, 2^3]", -40, 3, true, true}}, {}},
      {"gelu (tanh)",
       gelu(input(0), "tanh"),
       {{"[-12, 10]", -12, 10}, {"|x| in [2^-40, 2^3]", -40, 3, true, true}},
       {}},
      {"log1p", f(OpKind::log1p), {{"[-1, 10]", -1, 10}, {"|x| in [2^-40, 2^100]", -40, 100, true, true}}, {}},
      {"expm1", f(OpKind::expm1), {{"[-20, 89]", -20, 89}, {"|x| in [2^-40, 2^6]", -40, 6, true, true}}, {}},
      {"elu", f(OpKind::elu), {{"[-20, 5]", -20, 5}, {"|x| in [2^-40, 2^5]", -40, 5, true, true}}, {}},
      {"softplus", f(OpKind::softplus), {{"[-104, 30]", -104, 30}, {"|x| in [2^-40, 2^5]", -40, 5, true, true}}, {}},
      {"sin",
       f(OpKind::sin),
       {{"[-pi, pi]", -M_PI, M_PI},
        {"[-1e4, 1e4]", -1e4, 1e4, false, false, false},
        {"[-2^24, 2^24]", -16777216.0, 16777216.0, false, false, false}},
       {}},
      {"cos",
       f(OpKind::cos),
       {{"[-pi, pi]", -M_PI, M_PI},
        {"[-1e4, 1e4]", -1e4, 1e4, false, false, false},
        {"[-2^24, 2^24]", -16777216.0, 16777216.0, false, false, false}},
       {}},
  };
  for (float c : {-2.5f, -1.3f, 0.3f, 1.5f, 2.5f, 3.7f, 9.0f, 10.0f, -12.0f})
    cases.push_back({"pow(x, " + std::to_string(c).substr(0, 4) + ")",
                     pow_const(input(0), c),
                     {{"|x| in [2^-30, 2^30]", -30, 30, true, true}},
                     {}});
  for (SweepCase& c : cases)
    c.bound = bound_of(c.op);
  return cases;
}

} // namespace

TEST_CASE("transcendental ops stay within their documented error over a dense sweep") {
  const bool print_table = std::getenv("KILN_TEST_PRINT_ACCURACY") != nullptr;
  constexpr size_t kPoints = size_t(1) << 20;
  for (VectorIsa isa : runnable_isas()) {
    for (const SweepCase& sweep : sweep_cases()) {
      Region region = unary_region(sweep.op);
      auto kernel = compile_or_fail(region, isa);
      for (const SweepRange& range : sweep.ranges) {
        CAPTURE(vector_isa_name(isa));
        CAPTURE(sweep.name);
        CAPTURE(range.label);
        std::vector<Array> in{Array(DType::f32, kPoints)};
        std::vector<float> xs = sweep_points(range, kPoints);
        std::memcpy(in[0].bytes.data(), xs.data(), kPoints * 4);
        Array out = run_kernel(*kernel, region, in, 1, int64_t(kPoints))[0];
        ErrorStats e;
        for (size_t i = 0; i < kPoints; ++i)
          e.add(out.f32(i), ref_unary(sweep.op.kind, xs[i], sweep.op), xs[i]);
        if (print_table)
          std::printf("| %s | %s | %s | %.2f | %.2e | %g |\n", vector_isa_name(isa), sweep.name.c_str(), range.label,
                      e.max_ulps, e.max_abs, e.worst_input);
        CAPTURE(e.worst_input);
        CHECK(e.specials_match);
        if (range.ulps)
          CHECK(e.max_ulps <= sweep.bound.ulps);
        else
          CHECK(e.max_abs <= sweep.bound.abs);
      }
    }
  }
}

namespace {

void check_region_matches_reference(const Region& region, const ElementwiseKernel& kernel, std::vector<Array>& inputs,
                                    int64_t rows, int64_t cols, double tolerance) {
  std::vector<Array> got = run_kernel(kernel, region, inputs, rows, cols);
  std::vector<std::vector<Value>> want = ref_region(region, inputs, rows, cols);
  for (size_t j = 0; j < got.size(); ++j) {
    size_t mismatches = 0;
    for (size_t i = 0; i < got[j].size(); ++i) {
      const Value& w = want[j][i];
      bool ok = same_value(w, got[j], i);
      if (!ok && w.dtype == DType::f32 && tolerance > 0) {
        double g = got[j].f32(i);
        ok = std::fabs(g - w.f) <= tolerance * std::max(1.0, std::fabs(w.f));
      }
      if (!ok && mismatches++ < 3)
        FAIL_CHECK("output " << j << " element " << i << " (row " << int64_t(i) / cols << "): got "
                             << (w.dtype == DType::f32 ? got[j].f32(i) : double(got[j].i32(i))) << " want "
                             << (w.dtype == DType::f32 ? w.f : double(w.i)));
    }
    CHECK(mismatches == 0);
  }
}

void fill_random(Array& a, float lo, float hi) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.dtype == DType::f32) a.set_f32(i, uniform(lo, hi));
    if (a.dtype == DType::i32) a.set_i32(i, int32_t(std::lround(uniform(-1000.0f, 1000.0f))));
    if (a.dtype == DType::boolean) a.set_flag(i, uniform(0.0f, 1.0f) < 0.5f);
  }
}

std::vector<Array> random_inputs(const Region& region, int64_t rows, int64_t cols, float lo, float hi) {
  std::vector<Array> inputs;
  for (const RegionInput& in : region.inputs) {
    inputs.emplace_back(in.dtype, input_length(in, rows, cols));
    fill_random(inputs.back(), lo, hi);
  }
  return inputs;
}

Region binary_region(const RegionNode& op) {
  Region region;
  region.inputs = {{Broadcast::full, DType::f32}, {Broadcast::full, DType::f32}};
  region.nodes = {op};
  region.outputs = {0};
  return region;
}

} // namespace

TEST_CASE("binary ops and compare match float arithmetic exactly, edge values included") {
  std::vector<RegionNode> ops;
  for (OpKind k : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::maximum, OpKind::minimum})
    ops.push_back(node(k, {input(0), input(1)}));
  for (const char* p : {"eq", "ne", "lt", "le", "gt", "ge"})
    ops.push_back(compare(input(0), input(1), p));
  for (VectorIsa isa : runnable_isas()) {
    for (const RegionNode& op : ops) {
      Region region = binary_region(op);
      auto kernel = compile_or_fail(region, isa);
      for (int64_t n : kSizes) {
        CAPTURE(vector_isa_name(isa));
        CAPTURE(int(op.kind));
        CAPTURE(n);
        std::vector<Array> in = random_inputs(region, 1, n, -4.0f, 4.0f);
        for (int64_t i = 0; i < n; ++i) {
          // Edge values against edge values, and equal pairs so that eq/le/ge see true.
          size_t e = size_t(i) % (kEdgeValues.size() * kEdgeValues.size());
          if (i % 3 == 0) in[0].set_f32(size_t(i), kEdgeValues[e % kEdgeValues.size()]);
          if (i % 5 == 0) in[1].set_f32(size_t(i), kEdgeValues[e / kEdgeValues.size()]);
          if (i % 7 == 0) in[1].set_f32(size_t(i), in[0].f32(size_t(i)));
        }
        check_region_matches_reference(region, *kernel, in, 1, n, 0);
      }
    }
  }
}

TEST_CASE("clamp matches min(max(x, lo), hi) exactly, NaN in any operand and lo > hi included") {
  for (VectorIsa isa : runnable_isas()) {
    for (Broadcast bounds : {Broadcast::full, Broadcast::scalar}) {
      Region region;
      region.inputs = {{Broadcast::full, DType::f32}, {bounds, DType::f32}, {bounds, DType::f32}};
      region.nodes = {node(OpKind::clamp, {input(0), input(1), input(2)})};
      region.outputs = {0};
      auto kernel = compile_or_fail(region, isa);
      for (int64_t n : kSizes) {
        CAPTURE(vector_isa_name(isa));
        CAPTURE(n);
        std::vector<Array> in = random_inputs(region, 1, n, -4.0f, 4.0f);
        const size_t bound_count = bounds == Broadcast::full ? size_t(n) : 1;
        for (size_t i = 0; i < size_t(n); ++i) {
          size_t e = i % (kEdgeValues.size() * kEdgeValues.size());
          if (i % 3 == 0) in[0].set_f32(i, kEdgeValues[e % kEdgeValues.size()]);
          if (i < bound_count && i % 5 == 0) in[1].set_f32(i, kEdgeValues[e / kEdgeValues.size()]);
          if (i < bound_count && i % 7 == 0) in[2].set_f32(i, kEdgeValues[(e + 3) % kEdgeValues.size()]);
        }
        check_region_matches_reference(region, *kernel, in, 1, n, 0);
      }
    }
  }
}

TEST_CASE("where selects per lane and casts convert between f32, i32 and bool like static_cast") {
  Region region;
  region.inputs = {{Broadcast::full, DType::boolean}, {Broadcast::full, DType::f32}, {Broadcast::full, DType::i32}};
  region.nodes = {
      cast(input(1), DType::i32),                            // 0: f32 -> i32, truncating
      cast(input(2), DType::f32),                            // 1: i32 -> f32
      cast(input(0), DType::f32),                            // 2: bool -> f32
      cast(input(0), DType::i32),                            // 3: bool -> i32
      cast(input(1), DType::boolean),                        // 4: f32 -> bool
      cast(input(2), DType::boolean),                        // 5: i32 -> bool
      node(OpKind::where, {input(0), input(1), 1}),          // 6: where on f32
      node(OpKind::where, {4, input(2), 0}, DType::i32),     // 7: where on i32
      node(OpKind::where, {input(0), 5, 4}, DType::boolean), // 8: where on bool
      cast(input(1), DType::f32),                            // 9: the identity cast
  };
  region.outputs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (VectorIsa isa : runnable_isas()) {
    auto kernel = compile_or_fail(region, isa);
    for (int64_t n : kSizes) {
      CAPTURE(vector_isa_name(isa));
      CAPTURE(n);
      std::vector<Array> in = random_inputs(region, 1, n, -3e9f, 3e9f);
      for (int64_t i = 0; i < n; ++i) {
        if (i % 4 == 1) in[1].set_f32(size_t(i), uniform(-3.0f, 3.0f));
        if (i % 9 == 2) in[1].set_f32(size_t(i), kEdgeValues[size_t(i) % kEdgeValues.size()]);
        if (i % 6 == 3) in[2].set_i32(size_t(i), 0);
      }
      check_region_matches_reference(region, *kernel, in, 1, n, 0);
    }
  }
}

TEST_CASE("broadcast scalars, rows and columns of every dtype line up with the iteration space") {
  Region region;
  region.inputs = {{Broadcast::full, DType::f32},       {Broadcast::row, DType::f32},
                   {Broadcast::column, DType::f32},     {Broadcast::scalar, DType::f32},
                   {Broadcast::column, DType::boolean}, {Broadcast::row, DType::boolean},
                   {Broadcast::scalar, DType::i32},     {Broadcast::row, DType::i32}};
  region.nodes = {
      node(OpKind::mul, {input(1), input(2)}),             // 0: row * column
      node(OpKind::add, {input(0), 0}),                    // 1
      node(OpKind::sub, {1, input(3)}),                    // 2
      node(OpKind::where, {input(4), 2, input(0)}),        // 3: column-wise choice
      node(OpKind::where, {input(5), 3, input(1)}),        // 4: row-wise choice
      node(OpKind::add, {input(6), input(7)}, DType::i32), // 5 would be i32 add: replaced below
  };
  region.nodes.pop_back();
  region.nodes.push_back(cast(input(6), DType::f32)); // 5: scalar i32
  region.nodes.push_back(cast(input(7), DType::f32)); // 6: row i32
  region.nodes.push_back(node(OpKind::add, {5, 6}));  // 7
  region.nodes.push_back(compare(4, 7, "gt"));        // 8: bool output
  region.outputs = {4, 7, 8, 3};
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},    {1, 7},     {3, 15},   {5, 16},    {4, 17},
                                                           {2, 1023}, {1, 65537}, {300, 33}, {65537, 1}, {9, 31}};
  for (VectorIsa isa : runnable_isas()) {
    auto kernel = compile_or_fail(region, isa);
    for (auto [rows, cols] : shapes) {
      CAPTURE(vector_isa_name(isa));
      CAPTURE(rows);
      CAPTURE(cols);
      std::vector<Array> in = random_inputs(region, rows, cols, -2.0f, 2.0f);
      check_region_matches_reference(region, *kernel, in, rows, cols, 0);
    }
  }
}

TEST_CASE("a region with more live values than vector registers spills and still computes right") {
  // 40 values stay live until a final chain of adds consumes them: more than the 16 ymm or 32 zmm.
  Region region;
  region.inputs = {{Broadcast::full, DType::f32}, {Broadcast::row, DType::f32}};
  for (int i = 0; i < 40; ++i) {
    region.nodes.push_back(constant(float(i) * 0.25f));
    region.nodes.push_back(node(OpKind::mul, {input(i % 2), int32_t(region.nodes.size() - 1)}));
    region.nodes.push_back(node(OpKind::sin, {int32_t(region.nodes.size() - 1)}));
  }
  int32_t sum = 2;
  for (int i = 1; i < 40; ++i) {
    region.nodes.push_back(node(OpKind::add, {sum, int32_t(3 * i + 2)}));
    sum = int32_t(region.nodes.size() - 1);
  }
  region.outputs = {sum, 2, 62};
  for (VectorIsa isa : runnable_isas()) {
    auto kernel = compile_or_fail(region, isa);
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 7}, {3, 40}, {2, 1023}}) {
      CAPTURE(vector_isa_name(isa));
      std::vector<Array> in = random_inputs(region, rows, cols, -2.0f, 2.0f);
      // 39 f32 additions of sines against a double reference: a few 1e-6 of rounding, by input.
      check_region_matches_reference(region, *kernel, in, rows, cols, 1e-5);
    }
  }
}

namespace {

// A random DAG of 1..12 ops over f32 inputs with random broadcast forms and a bool input. Compares
// take only exactly computed values (so that no rounding can flip them); transcendental ops are
// the bounded ones, so that values stay in a range where a relative tolerance is meaningful.
Region random_region(std::mt19937& g) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(g); };
  Region region;
  const Broadcast forms[] = {Broadcast::full, Broadcast::row, Broadcast::column, Broadcast::scalar};
  size_t num_f32 = 1 + pick(4);
  for (size_t k = 0; k < num_f32; ++k)
    region.inputs.push_back({forms[pick(4)], DType::f32});
  region.inputs.push_back({forms[pick(4)], DType::boolean});
  std::vector<int32_t> f32_values, exact_values, bool_values = {input(int(num_f32))};
  for (size_t k = 0; k < num_f32; ++k) {
    f32_values.push_back(input(int(k)));
    exact_values.push_back(input(int(k)));
  }
  const OpKind exact_binary[] = {OpKind::add, OpKind::sub, OpKind::mul, OpKind::maximum, OpKind::minimum};
  const OpKind exact_unary[] = {OpKind::neg, OpKind::abs, OpKind::relu};
  const OpKind bounded_unary[] = {OpKind::tanh, OpKind::sigmoid, OpKind::sin, OpKind::cos, OpKind::erf};
  size_t num_ops = 1 + pick(12);
  for (size_t i = 0; i < num_ops; ++i) {
    const auto index = int32_t(region.nodes.size());
    bool exact = false;
    switch (pick(7)) {
    case 0:
      region.nodes.push_back(
          node(exact_binary[pick(5)], {f32_values[pick(f32_values.size())], f32_values[pick(f32_values.size())]}));
      break;
    case 1:
      region.nodes.push_back(node(exact_binary[pick(5)],
                                  {exact_values[pick(exact_values.size())], exact_values[pick(exact_values.size())]}));
      exact = true;
      break;
    case 2: region.nodes.push_back(node(exact_unary[pick(3)], {f32_values[pick(f32_values.size())]})); break;
    case 3: region.nodes.push_back(node(bounded_unary[pick(5)], {f32_values[pick(f32_values.size())]})); break;
    case 4:
      region.nodes.push_back(compare(exact_values[pick(exact_values.size())], exact_values[pick(exact_values.size())],
                                     pick(2) ? "lt" : "ge"));
      bool_values.push_back(index);
      continue;
    case 5:
      region.nodes.push_back(
          node(OpKind::where, {bool_values[pick(bool_values.size())], f32_values[pick(f32_values.size())],
                               f32_values[pick(f32_values.size())]}));
      break;
    default:
      region.nodes.push_back(constant(uniform(-2.0f, 2.0f)));
      exact = true;
      break;
    }
    f32_values.push_back(index);
    if (exact) exact_values.push_back(index);
  }
  // The last node and one or two earlier ones are outputs.
  region.outputs.push_back(int32_t(region.nodes.size() - 1));
  for (size_t extra = pick(3); extra > 0; --extra)
    region.outputs.push_back(int32_t(pick(region.nodes.size())));
  return region;
}

} // namespace

TEST_CASE("random regions of 1 to 12 ops compute what a per-element evaluation of the region does") {
  std::mt19937 g(7u);
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {2, 7}, {3, 17}, {4, 33}, {1, 100}};
  for (VectorIsa isa : runnable_isas()) {
    for (int trial = 0; trial < 300; ++trial) {
      Region region = random_region(g);
      auto kernel = compile_or_fail(region, isa);
      auto [rows, cols] = shapes[size_t(trial) % shapes.size()];
      CAPTURE(vector_isa_name(isa));
      CAPTURE(trial);
      CAPTURE(region.key());
      std::vector<Array> in = random_inputs(region, rows, cols, -2.0f, 2.0f);
      check_region_matches_reference(region, *kernel, in, rows, cols, 1e-5);
    }
  }
}

TEST_CASE("large spaces split across threads by rows or by columns and give the same result") {
  Region region;
  region.inputs = {{Broadcast::full, DType::f32}, {Broadcast::row, DType::f32}};
  region.nodes = {node(OpKind::mul, {input(0), input(1)}), node(OpKind::add, {0, input(0)})};
  region.outputs = {1};
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 300001}, {3, 100003}, {1000, 257}, {7, 65537}};
  for (VectorIsa isa : runnable_isas()) {
    auto kernel = compile_or_fail(region, isa);
    for (auto [rows, cols] : shapes) {
      CAPTURE(rows);
      CAPTURE(cols);
      std::vector<Array> in = random_inputs(region, rows, cols, -2.0f, 2.0f);
      check_region_matches_reference(region, *kernel, in, rows, cols, 0);
    }
  }
}

TEST_CASE("AVX2 and AVX-512 kernels give bit-identical results where both run") {
  if (!cpu_supports(VectorIsa::avx512)) {
    MESSAGE("skipped: this CPU has no AVX-512");
    return;
  }
  for (const RegionNode& op : unary_ops()) {
    Region region = unary_region(op);
    auto wide = compile_or_fail(region, VectorIsa::avx512);
    auto narrow = compile_or_fail(region, VectorIsa::avx2);
    std::vector<Array> in{Array(DType::f32, 4099)};
    for (size_t i = 0; i < in[0].size(); ++i)
      in[0].set_f32(i, sample_for(op.kind, i));
    Array a = run_kernel(*wide, region, in, 1, 4099)[0];
    Array b = run_kernel(*narrow, region, in, 1, 4099)[0];
    CAPTURE(describe(op));
    CHECK(a.bytes == b.bytes);
  }
}

TEST_CASE("code pages are read+execute, not writable, once a kernel is compiled") {
  Region region = unary_region(node(OpKind::exp, {input(0)}));
  for (VectorIsa isa : runnable_isas()) {
    auto kernel = compile_or_fail(region, isa);
    auto address = reinterpret_cast<uintptr_t>(kernel->code());
    std::ifstream maps("/proc/self/maps");
    std::string line, permissions;
    while (std::getline(maps, line)) {
      uintptr_t begin = 0, end = 0;
      char perms[5] = {};
      if (std::sscanf(line.c_str(), "%lx-%lx %4s", &begin, &end, perms) == 3 && address >= begin && address < end)
        permissions = perms;
    }
    CHECK(permissions.substr(0, 3) == "r-x");
    std::vector<Array> in{Array(DType::f32, 3)};
    in[0].set_f32(1, 1.0f);
    Array out = run_kernel(*kernel, region, in, 1, 3)[0];
    CHECK(out.f32(0) == 1.0f);
    CHECK(std::fabs(out.f32(1) - 2.7182817f) <= 3e-7f);
  }
}

TEST_CASE("KILN_JIT_DUMP writes each newly generated kernel's bytes to the directory") {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_jit_dump_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("KILN_JIT_DUMP", dir.c_str(), 1);
  Region region = unary_region(node(OpKind::tanh, {input(0)}));
  region.nodes.push_back(constant(float(::getpid()) + 0.5f)); // a key no other test compiled
  region.nodes.push_back(node(OpKind::add, {0, 1}));
  region.outputs = {2};
  auto kernel = compile_or_fail(region, runnable_isas().back());
  ::unsetenv("KILN_JIT_DUMP");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().find(vector_isa_name(kernel->isa())) != std::string::npos);
  std::ifstream file(files[0], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(bytes.size() == kernel->code_size());
  CHECK(std::memcmp(bytes.data(), kernel->code(), bytes.size()) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("KILN_JIT_ISA picks the ISA, and a name that is neither is an error naming it") {
  Region region = unary_region(node(OpKind::sigmoid, {input(0)}));
  ::setenv("KILN_JIT_ISA", "AVX2", 1);
  std::string why;
  auto kernel = compile_region(region, &why);
  ::setenv("KILN_JIT_ISA", "sse9", 1);
  std::string why_bad;
  CHECK_THROWS_WITH_AS(compile_region(region, &why_bad),
                       "spec error: environment variable KILN_JIT_ISA='sse9': expected avx2 or avx512", Error);
  ::unsetenv("KILN_JIT_ISA");
  REQUIRE(kernel != nullptr);
  CHECK(kernel->isa() == VectorIsa::avx2);
  if (!cpu_supports(VectorIsa::avx512)) {
    std::string why_not;
    CHECK(compile_region(region, &why_not, VectorIsa::avx512) == nullptr);
    CHECK(why_not.find("AVX-512") != std::string::npos);
  }
}

TEST_CASE("kernels are cached by region structure and ISA") {
  Region a = unary_region(node(OpKind::erf, {input(0)}));
  Region b = a;
  VectorIsa isa = runnable_isas().back();
  auto first = compile_or_fail(a, isa);
  auto second = compile_or_fail(b, isa);
  CHECK(first.get() == second.get());
  b.nodes[0].kind = OpKind::tanh;
  CHECK(compile_or_fail(b, isa).get() != first.get());
  Region c = a;
  c.inputs[0].broadcast = Broadcast::row;
  CHECK(a.key() != c.key());
  CHECK(compile_or_fail(c, isa).get() != first.get());
}

TEST_CASE("compile_region refuses what it cannot generate and names the node and the reason") {
  auto refusal = [](const Region& region) {
    std::string why;
    CHECK(compile_region(region, &why) == nullptr);
    return why;
  };
  Region region = unary_region(node(OpKind::matmul, {input(0)}));
  CHECK(refusal(region).find("node 0 (kiln.matmul)") != std::string::npos);

  region = binary_region(node(OpKind::pow, {input(0), input(1)}));
  CHECK(refusal(region).find("constant exponent") != std::string::npos);

  region = unary_region(node(OpKind::exp, {input(0)}));
  region.inputs[0].dtype = DType::f64;
  CHECK(refusal(region).find("input 0 has dtype f64") != std::string::npos);

  region = unary_region(cast(input(0), DType::i32));
  region.inputs[0].dtype = DType::i32;
  region.nodes.push_back(node(OpKind::exp, {0}));
  region.outputs = {1};
  CHECK(refusal(region).find("node 1 (kiln.exp): argument 0 is i32, expected f32") != std::string::npos);

  RegionNode no_predicate = compare(input(0), input(1), "eq");
  no_predicate.params = ir::NoParams{};
  region = binary_region(no_predicate);
  CHECK(refusal(region).find("compare needs its predicate") != std::string::npos);

  region = binary_region(node(OpKind::add, {input(0), input(1)}, DType::boolean));
  CHECK(refusal(region).find("declared dtype i1 but the op gives f32") != std::string::npos);

  region = unary_region(node(OpKind::neg, {1}));
  CHECK(refusal(region).find("neither an earlier node nor an input") != std::string::npos);

  region = unary_region(node(OpKind::neg, {input(3)}));
  CHECK(refusal(region).find("neither an earlier node nor an input") != std::string::npos);

  region = unary_region(pow_const(input(0), kInf));
  CHECK(refusal(region).find("finite") != std::string::npos);

  region = unary_region(node(OpKind::neg, {input(0)}));
  region.outputs = {4};
  CHECK(refusal(region).find("output 4") != std::string::npos);
}

// The emitters are a table of the kinds that have one; a new elementwise op without an emitter must
// say why (emitters.cpp's kWithoutEmitter), and no other kind may sit in the table.
TEST_CASE("every elementwise op has an emitter or a stated reason, and no other op has one") {
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const auto kind = OpKind(k);
    CAPTURE(ir::op_info(kind).name);
    RegionNode n{kind, {}, ir::NoParams{}, 0.0f, DType::f32};
    if (kind == OpKind::gelu) n.params = ir::GeluParams{};
    std::string why;
    const bool has_emitter = emitter_for<Xbyak::Ymm>(n, {}, &why).has_value();
    CHECK(has_emitter == emitter_for<Xbyak::Zmm>(n, {}, nullptr).has_value());
    const std::optional<std::string_view> reason = why_no_emitter(kind);
    if (!ir::is_elementwise(kind)) {
      CHECK_FALSE(has_emitter);
      CHECK_FALSE(reason.has_value());
      continue;
    }
    CHECK(has_emitter != reason.has_value());
    if (reason) CHECK(why.find(std::string(*reason)) != std::string::npos);
  }
}

TEST_CASE("run refuses negative dims and null pointers and does nothing for an empty space") {
  Region region = binary_region(node(OpKind::add, {input(0), input(1)}));
  auto kernel = compile_or_fail(region, runnable_isas().back());
  float a = 1, b = 2, out = 0;
  const void* ins[] = {&a, &b};
  void* outs[] = {&out};
  CHECK_FALSE(kernel->run(ins, outs, -1, 1));
  CHECK_FALSE(kernel->run(ins, outs, 1, -1));
  const void* missing[] = {&a, nullptr};
  CHECK_FALSE(kernel->run(missing, outs, 1, 1));
  CHECK(kernel->run(ins, outs, 0, 5));
  CHECK(out == 0.0f);
  CHECK(kernel->run(ins, outs, 1, 1));
  CHECK(out == 3.0f);
}

TEST_CASE("AVX-512 code generates for every op on any CPU, and objdump decodes all of it") {
  // Generation needs no AVX-512 CPU; running it does. objdump, when present, checks the encoding.
  std::vector<Region> regions;
  for (const RegionNode& op : unary_ops())
    regions.push_back(unary_region(op));
  std::mt19937 g(11u);
  for (int i = 0; i < 20; ++i)
    regions.push_back(random_region(g));
  Region bools;
  bools.inputs = {{Broadcast::full, DType::boolean},
                  {Broadcast::column, DType::boolean},
                  {Broadcast::full, DType::f32},
                  {Broadcast::full, DType::i32}};
  bools.nodes = {node(OpKind::where, {input(0), input(1), input(1)}, DType::boolean), cast(input(2), DType::boolean),
                 cast(input(3), DType::boolean), cast(input(2), DType::i32)};
  bools.outputs = {0, 1, 2, 3};
  regions.push_back(bools);
  const bool have_objdump = std::system("objdump --version > /dev/null 2>&1") == 0;
  if (!have_objdump) MESSAGE("objdump not found: encodings are not decoded");
  for (size_t i = 0; i < regions.size(); ++i) {
    CAPTURE(regions[i].key());
    std::shared_ptr<const ElementwiseKernel::Code> code;
    CHECK_NOTHROW(code = generate_kernel(regions[i], VectorIsa::avx512));
    REQUIRE(code != nullptr);
    if (!have_objdump) continue;
    auto path = std::filesystem::temp_directory_path() / ("kiln_avx512_" + std::to_string(::getpid()) + ".bin");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(code->generator->getCode()), std::streamsize(code->generator->getSize()));
    std::string command =
        "objdump -D -b binary -mi386:x86-64 --stop-address=" + std::to_string(code->instruction_bytes) + " " +
        path.string() + " | grep -c '(bad)' > " + path.string() + ".count";
    CHECK(std::system(command.c_str()) != -1);
    std::ifstream count_file(path.string() + ".count");
    int bad = -1;
    count_file >> bad;
    CHECK(bad == 0);
    std::filesystem::remove(path);
    std::filesystem::remove(path.string() + ".count");
  }
}
