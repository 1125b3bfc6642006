// Every dtype kiln has, crossed with every elementwise, comparison, cast and reduction op, on both
// tiers against a naive loop: each pair runs and matches, or is refused with a dtype error when it
// is traced, never when it is called (the rule of each op: ir/operand_dtypes.hpp). Integers follow
// kiln's documented semantics (op_table.def): they wrap around, sums and products keep their
// dtype, and in a graph x / 0, x // 0 and x % 0 give 0 (eagerly they are an error, as in torch).
#include "core/half.hpp"
#include "ir/op_params.hpp"
#include "ir/ops.hpp"
#include "kiln_config.h"
#include "trace/builder.hpp"
#include <cmath>
#include <doctest/doctest.h>
#include <functional>
#include <kiln/kiln.hpp>
#include <limits>
#include <random>
#include <sstream>

using namespace kiln;
using ir::OpKind;

namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                             DType::i32, DType::i64, DType::u8,  DType::boolean};

// What each op computes in (the specification the op table's k*Operands traits implement).
enum class Admits { any, numeric, floating };

constexpr OpKind kNumericUnary[] = {OpKind::neg,  OpKind::abs,   OpKind::relu, OpKind::floor,
                                    OpKind::ceil, OpKind::round, OpKind::sign};
constexpr OpKind kFloatUnary[] = {
    OpKind::exp,       OpKind::log,        OpKind::sqrt, OpKind::rsqrt,    OpKind::tanh,  OpKind::sigmoid,
    OpKind::gelu,      OpKind::silu,       OpKind::erf,  OpKind::sin,      OpKind::cos,   OpKind::hardsigmoid,
    OpKind::hardswish, OpKind::leaky_relu, OpKind::elu,  OpKind::softplus, OpKind::log1p, OpKind::expm1};
constexpr OpKind kBinary[] = {OpKind::add,     OpKind::sub,     OpKind::mul,          OpKind::div,      OpKind::pow,
                              OpKind::maximum, OpKind::minimum, OpKind::floor_divide, OpKind::remainder};
constexpr OpKind kReductions[] = {OpKind::reduce_sum,  OpKind::reduce_mean, OpKind::reduce_max, OpKind::reduce_min,
                                  OpKind::reduce_prod, OpKind::argmax,      OpKind::argmin};

Admits admits(OpKind kind) {
  if (std::find(std::begin(kFloatUnary), std::end(kFloatUnary), kind) != std::end(kFloatUnary) ||
      kind == OpKind::reduce_mean)
    return Admits::floating;
  if (kind == OpKind::reduce_max || kind == OpKind::reduce_min) return Admits::any; // bool: all / any
  if (std::find(std::begin(kNumericUnary), std::end(kNumericUnary), kind) != std::end(kNumericUnary) ||
      std::find(std::begin(kBinary), std::end(kBinary), kind) != std::end(kBinary) ||
      std::find(std::begin(kReductions), std::end(kReductions), kind) != std::end(kReductions) || kind == OpKind::clamp)
    return Admits::numeric;
  return Admits::any;
}

bool admitted(OpKind kind, DType dtype) {
  switch (admits(kind)) {
  case Admits::any: return true;
  case Admits::numeric: return dtype != DType::boolean;
  case Admits::floating: return dtype_is_float(dtype);
  }
  return false;
}

// One element as the reference sees it: `f` for a float dtype, `i` for integers and bool.
struct Elem {
  double f = 0;
  int64_t i = 0;
};

Elem element_at(const Tensor& t, int64_t k) {
  const void* p = t.raw_data();
  switch (t.dtype()) {
  case DType::f32: return {static_cast<const float*>(p)[k]};
  case DType::f64: return {static_cast<const double*>(p)[k]};
  case DType::f16: return {f16_to_float(static_cast<const uint16_t*>(p)[k])};
  case DType::bf16: return {bf16_to_float(static_cast<const uint16_t*>(p)[k])};
  case DType::i8: return {0, static_cast<const int8_t*>(p)[k]};
  case DType::i32: return {0, static_cast<const int32_t*>(p)[k]};
  case DType::i64: return {0, static_cast<const int64_t*>(p)[k]};
  case DType::u8: return {0, static_cast<const uint8_t*>(p)[k]};
  case DType::boolean: return {0, static_cast<const uint8_t*>(p)[k] != 0};
  }
  return {};
}

void set_element(Tensor& t, int64_t k, Elem e) {
  void* p = t.raw_data();
  switch (t.dtype()) {
  case DType::f32: static_cast<float*>(p)[k] = float(e.f); return;
  case DType::f64: static_cast<double*>(p)[k] = e.f; return;
  case DType::f16: static_cast<uint16_t*>(p)[k] = float_to_f16(float(e.f)); return;
  case DType::bf16: static_cast<uint16_t*>(p)[k] = float_to_bf16(float(e.f)); return;
  case DType::i8: static_cast<int8_t*>(p)[k] = int8_t(e.i); return;
  case DType::i32: static_cast<int32_t*>(p)[k] = int32_t(e.i); return;
  case DType::i64: static_cast<int64_t*>(p)[k] = e.i; return;
  case DType::u8: static_cast<uint8_t*>(p)[k] = uint8_t(e.i); return;
  case DType::boolean: static_cast<uint8_t*>(p)[k] = e.i != 0; return;
  }
}

// A double rounded to a float dtype, as a kernel's result is stored.
double rounded(DType dtype, double v) {
  switch (dtype) {
  case DType::f32: return float(v);
  case DType::f16: return f16_to_float(float_to_f16(float(v)));
  case DType::bf16: return bf16_to_float(float_to_bf16(float(v)));
  default: return v;
  }
}

// An integer wrapped into an integer dtype (C++20 conversions are modular), bool as != 0.
int64_t wrapped(DType dtype, int64_t v) {
  switch (dtype) {
  case DType::i8: return int8_t(v);
  case DType::i32: return int32_t(v);
  case DType::u8: return uint8_t(v);
  case DType::boolean: return v != 0;
  default: return v;
  }
}

// Arithmetic modulo 2^64, then wrapped: what a wrapping integer op gives in every width.
int64_t wrapped_add(DType d, int64_t a, int64_t b) { return wrapped(d, int64_t(uint64_t(a) + uint64_t(b))); }
int64_t wrapped_sub(DType d, int64_t a, int64_t b) { return wrapped(d, int64_t(uint64_t(a) - uint64_t(b))); }
int64_t wrapped_mul(DType d, int64_t a, int64_t b) { return wrapped(d, int64_t(uint64_t(a) * uint64_t(b))); }

std::pair<int64_t, int64_t> integer_range(DType dtype) {
  switch (dtype) {
  case DType::i8: return {-128, 127};
  case DType::i32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  case DType::i64: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  case DType::u8: return {0, 255};
  default: return {0, 1};
  }
}

// Which values an input holds.
enum class Values {
  general,  // floats: quarters in [-8, 8], NaN, +-inf and +-0; integers: the extremes and random ones
  finite,   // as general without NaN and infinities
  exponent, // small exponents for pow: floats in [-3, 3], integers in [-3, 9] ([0, 9] unsigned)
  divisor,  // as finite, floats never 0 (torch's float floor division and remainder by 0 are nan)
};

Tensor input(DType dtype, const std::vector<int64_t>& dims, uint64_t seed, Values values = Values::general) {
  Tensor t = Tensor::zeros(dims, dtype);
  std::mt19937_64 random(seed);
  const auto [lo, hi] = integer_range(dtype);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 0.0, -0.0};
  for (int64_t k = 0; k < t.numel(); ++k) {
    Elem e;
    if (dtype_is_float(dtype)) {
      if (values == Values::exponent)
        e.f = double(std::uniform_int_distribution<int>(-6, 6)(random)) / 2;
      else if (values == Values::general && k % 5 == 0)
        e.f = specials[size_t(k / 5) % std::size(specials)];
      else
        e.f = double(std::uniform_int_distribution<int>(-32, 32)(random)) / 4;
      if (values == Values::divisor && e.f == 0) e.f = 0.5;
    } else if (values == Values::exponent) {
      e.i = std::uniform_int_distribution<int64_t>(dtype == DType::u8 ? 0 : -3, 9)(random);
    } else {
      const int64_t edges[] = {lo, hi, 0, 1, lo + 1, hi - 1, int64_t(-1), 2};
      e.i = wrapped(dtype, k < int64_t(std::size(edges)) && k % 2 == 0
                               ? edges[size_t(k / 2)]
                               : std::uniform_int_distribution<int64_t>(lo, hi)(random));
    }
    set_element(t, k, e);
  }
  return t;
}

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double relu6_of_x_plus_3(double x) { return std::min(std::max(x + 3, 0.0), 6.0); }

double float_unary(OpKind kind, double x) {
  switch (kind) {
  case OpKind::neg: return -x;
  case OpKind::abs: return std::fabs(x);
  case OpKind::relu: return x < 0 ? 0 : x;
  case OpKind::floor: return std::floor(x);
  case OpKind::ceil: return std::ceil(x);
  case OpKind::round: return std::nearbyint(x);
  case OpKind::sign: return std::isnan(x) ? 0 : double((0 < x) - (x < 0));
  case OpKind::exp: return std::exp(x);
  case OpKind::log: return std::log(x);
  case OpKind::sqrt: return std::sqrt(x);
  case OpKind::rsqrt: return 1 / std::sqrt(x);
  case OpKind::tanh: return std::tanh(x);
  case OpKind::sigmoid: return sigmoid(x);
  case OpKind::gelu: return gelu_erf(x);
  case OpKind::silu: return x * sigmoid(x);
  case OpKind::erf: return std::erf(x);
  case OpKind::sin: return std::sin(x);
  case OpKind::cos: return std::cos(x);
  case OpKind::hardsigmoid: return std::isnan(x) ? x : relu6_of_x_plus_3(x) / 6;
  case OpKind::hardswish: return std::isnan(x) ? x : x * relu6_of_x_plus_3(x) / 6;
  case OpKind::leaky_relu: return x > 0 ? x : x * 0.01;
  case OpKind::elu: return x > 0 ? x : std::expm1(x);
  case OpKind::softplus: return x > 20 ? x : std::log1p(std::exp(x));
  case OpKind::log1p: return std::log1p(x);
  case OpKind::expm1: return std::expm1(x);
  default: FAIL("no reference for " << ir::op_info(kind).name); return 0;
  }
}

int64_t integer_unary(OpKind kind, DType d, int64_t x) {
  switch (kind) {
  case OpKind::neg: return wrapped_sub(d, 0, x);
  case OpKind::abs: return x < 0 ? wrapped_sub(d, 0, x) : x;
  case OpKind::relu: return x < 0 ? 0 : x;
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round: return x;
  case OpKind::sign: return (0 < x) - (x < 0);
  default: FAIL("no reference for " << ir::op_info(kind).name); return 0;
  }
}

Elem unary_reference(OpKind kind, DType d, Elem x) {
  if (dtype_is_float(d)) return {rounded(d, float_unary(kind, x.f))};
  return {0, integer_unary(kind, d, x.i)};
}

double float_binary(OpKind kind, double a, double b) {
  switch (kind) {
  case OpKind::add: return a + b;
  case OpKind::sub: return a - b;
  case OpKind::mul: return a * b;
  case OpKind::div: return a / b;
  case OpKind::pow: return std::pow(a, b);
  case OpKind::maximum: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case OpKind::minimum: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case OpKind::floor_divide: return std::floor(a / b);
  case OpKind::remainder: return a - std::floor(a / b) * b;
  default: FAIL("no reference for " << ir::op_info(kind).name); return 0;
  }
}

// Division truncating toward zero; by 0 gives 0, and by -1 negates (wrapping INT_MIN).
int64_t truncating_division(DType d, int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrapped_sub(d, 0, a);
  return a / b;
}

int64_t integer_binary(OpKind kind, DType d, int64_t a, int64_t b) {
  switch (kind) {
  case OpKind::add: return wrapped_add(d, a, b);
  case OpKind::sub: return wrapped_sub(d, a, b);
  case OpKind::mul: return wrapped_mul(d, a, b);
  case OpKind::div: return truncating_division(d, a, b);
  case OpKind::pow: {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 == 0 ? 1 : -1) : 0; // torch truncates 1 / a^-b
    int64_t result = 1;
    for (int64_t k = 0; k < b; ++k)
      result = wrapped_mul(d, result, a);
    return result;
  }
  case OpKind::maximum: return std::max(a, b);
  case OpKind::minimum: return std::min(a, b);
  case OpKind::floor_divide: {
    if (b == 0) return 0;
    const int64_t q = truncating_division(d, a, b);
    return b != -1 && a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
  }
  case OpKind::remainder: {
    if (b == 0 || b == -1) return 0;
    const int64_t r = a % b;
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  default: FAIL("no reference for " << ir::op_info(kind).name); return 0;
  }
}

Elem binary_reference(OpKind kind, DType d, Elem a, Elem b) {
  if (dtype_is_float(d)) return {rounded(d, float_binary(kind, a.f, b.f))};
  return {0, integer_binary(kind, d, a.i, b.i)};
}

bool compare_reference(ir::ComparePredicate p, DType d, Elem a, Elem b) {
  auto decide = [p](auto x, auto y) {
    switch (p) {
    case ir::ComparePredicate::eq: return x == y;
    case ir::ComparePredicate::ne: return x != y;
    case ir::ComparePredicate::lt: return x < y;
    case ir::ComparePredicate::le: return x <= y;
    case ir::ComparePredicate::gt: return x > y;
    case ir::ComparePredicate::ge: return x >= y;
    }
    return false;
  };
  return dtype_is_float(d) ? decide(a.f, b.f) : decide(a.i, b.i);
}

// cast's rule (op_table.def): float -> integer truncates and saturates (NaN -> 0), anything -> bool
// is != 0, integer -> integer wraps.
Elem cast_reference(DType from, DType to, Elem x) {
  if (to == DType::boolean) return {0, dtype_is_float(from) ? x.f != 0 : x.i != 0};
  if (dtype_is_float(to)) return {rounded(to, dtype_is_float(from) ? x.f : double(x.i))};
  if (!dtype_is_float(from)) return {0, wrapped(to, x.i)};
  const auto [lo, hi] = integer_range(to);
  if (std::isnan(x.f)) return {0, 0};
  if (x.f <= double(lo)) return {0, lo};
  if (x.f >= double(hi)) return {0, hi};
  return {0, int64_t(x.f)};
}

double tolerance(DType dtype) {
  switch (dtype) {
  case DType::f32: return 1e-4; // the JIT's polynomial approximations
  case DType::f64: return 1e-9;
  case DType::f16: return 2e-3; // two units in the last place
  case DType::bf16: return 1.6e-2;
  default: return 0;
  }
}

bool same(DType dtype, Elem want, Elem got) {
  if (!dtype_is_float(dtype)) return want.i == got.i;
  if (std::isnan(want.f)) return std::isnan(got.f);
  if (std::isinf(want.f)) return got.f == want.f;
  return std::fabs(got.f - want.f) <= tolerance(dtype) * std::max(1.0, std::fabs(want.f));
}

std::string text(DType dtype, Elem e) {
  std::ostringstream out;
  if (dtype_is_float(dtype))
    out << e.f;
  else
    out << e.i;
  return out.str();
}

// Index of output element k's operand in a row-major input of `dims` broadcast to `out` (same rank).
int64_t broadcast_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& out, int64_t k) {
  int64_t index = 0, stride = 1;
  for (size_t a = out.size(); a-- > 0;) {
    const int64_t coordinate = k % out[a];
    k /= out[a];
    const size_t d = a + dims.size() - out.size();
    if (a + dims.size() < out.size()) continue; // a leading axis the input lacks
    if (dims[d] != 1) index += coordinate * stride;
    stride *= dims[d];
  }
  return index;
}

std::shared_ptr<Session> session_in(JitMode mode) {
  static std::map<JitMode, std::shared_ptr<Session>> sessions;
  auto& session = sessions[mode];
  if (!session) {
    TierPolicy policy;
    policy.mode = mode;
    session = std::make_shared<Session>(policy, 16);
  }
  return session;
}

std::vector<JitMode> tiers() {
  if (KILN_HAS_JIT) return {JitMode::off, JitMode::always};
  return {JitMode::off};
}

std::string tier_name(JitMode mode) { return mode == JitMode::off ? "interpreter" : "jit"; }

// The op's default parameters, where it has some.
ir::OpParams default_params(OpKind kind) {
  switch (kind) {
  case OpKind::gelu: return ir::GeluParams{};
  case OpKind::leaky_relu: return ir::LeakyReluParams{};
  case OpKind::elu: return ir::EluParams{};
  case OpKind::softplus: return ir::SoftplusParams{};
  default: return ir::NoParams{};
  }
}

Tensor op(OpKind kind, std::vector<Tensor> operands, const ir::OpParams& params) {
  return trace::apply1(kind, operands, ir::encode_params(params), std::source_location::current());
}
Tensor op(OpKind kind, std::vector<Tensor> operands) { return op(kind, std::move(operands), default_params(kind)); }

using Graph = std::function<Tensor(std::vector<Tensor>)>;
using Reference = std::function<Elem(int64_t k)>; // output element k

// Traces `graph` over the inputs' layouts on each tier. An op its rule refuses must be refused
// there, with a dtype error naming it; otherwise every tier's result must be `result_dtype` and
// match `reference` element by element.
void check(const std::string& what, OpKind kind, DType operand_dtype, const Graph& graph,
           const std::vector<Tensor>& inputs, DType result_dtype, const Reference& reference) {
  INFO(what);
  std::vector<TensorLayout> layouts;
  for (const Tensor& t : inputs)
    layouts.push_back(t.layout());
  for (JitMode mode : tiers()) {
    INFO(tier_name(mode));
    std::optional<CompiledCallable<Tensor>> run;
    try {
      run.emplace(compile([&](std::vector<Tensor> xs) { return graph(std::move(xs)); },
                          {.session = session_in(mode)})(layouts));
    } catch (const Error& e) {
      CHECK_MESSAGE(!admitted(kind, operand_dtype), "refused when traced: " << std::string(e.what()));
      CHECK(e.kind() == ErrorKind::dtype);
      CHECK_MESSAGE(std::string(e.what()).find("kiln." + std::string(ir::op_info(kind).name)) != std::string::npos,
                    e.what());
      continue;
    }
    REQUIRE_MESSAGE(admitted(kind, operand_dtype), "traced although its rule refuses " << dtype_name(operand_dtype));
    Tensor result;
    try {
      result = (*run)(inputs);
    } catch (const Error& e) {
      FAIL("refused when called: " << std::string(e.what()));
    }
    REQUIRE(result.dtype() == result_dtype);
    int64_t mismatches = 0;
    for (int64_t k = 0; k < result.numel() && mismatches < 3; ++k) {
      const Elem want = reference(k), got = element_at(result, k);
      if (same(result_dtype, want, got)) continue;
      ++mismatches;
      CHECK_MESSAGE(false,
                    "element " << k << ": got " << text(result_dtype, got) << ", want " << text(result_dtype, want));
    }
  }
}

const std::vector<int64_t> kDims = {5, 7}, kRow = {7}, kColumn = {5, 1};

std::string case_name(OpKind kind, DType dtype) {
  return std::string(ir::op_info(kind).name) + " on " + dtype_name(dtype);
}

} // namespace

TEST_CASE("every unary elementwise op computes in every dtype its rule admits, and refuses the rest when traced") {
  std::vector<OpKind> kinds(std::begin(kNumericUnary), std::end(kNumericUnary));
  kinds.insert(kinds.end(), std::begin(kFloatUnary), std::end(kFloatUnary));
  for (DType d : kDTypes)
    for (OpKind kind : kinds) {
      // The transcendental ops' infinities and NaN are the tier differential suite's.
      const Tensor x = input(d, kDims, 1, admits(kind) == Admits::floating ? Values::finite : Values::general);
      check(
          case_name(kind, d), kind, d, [kind](std::vector<Tensor> xs) { return op(kind, {xs[0]}); }, {x}, d,
          [&](int64_t k) { return unary_reference(kind, d, element_at(x, k)); });
    }
}

TEST_CASE("every binary elementwise op computes in every dtype but bool, wrapping integers, broadcasting") {
  for (DType d : kDTypes)
    for (OpKind kind : kBinary) {
      const bool floor_division = kind == OpKind::floor_divide || kind == OpKind::remainder;
      // torch's float floor division of an infinity is NaN, not the infinity floor(a / b) would say.
      const Tensor a = input(d, kDims, 2, kind == OpKind::pow || floor_division ? Values::finite : Values::general);
      const Tensor b = input(d, kRow, 3,
                             kind == OpKind::pow ? Values::exponent
                             : floor_division    ? Values::divisor
                                                 : Values::general);
      check(
          case_name(kind, d), kind, d,
          [kind](std::vector<Tensor> xs) {
            return op(kind, {xs[0], xs[1]});
          },
          {a, b}, d,
          [&](int64_t k) {
            return binary_reference(kind, d, element_at(a, k), element_at(b, broadcast_index(kRow, kDims, k)));
          });
    }
}

TEST_CASE("comparisons compute in every dtype") {
  using P = ir::ComparePredicate;
  for (DType d : kDTypes)
    for (P p : {P::eq, P::ne, P::lt, P::le, P::gt, P::ge}) {
      const Tensor a = input(d, kDims, 4), b = input(d, kRow, 5);
      check(
          case_name(OpKind::compare, d) + " " + ir::encode_params(ir::CompareParams{p}).get_string("predicate"),
          OpKind::compare, d,
          [p](std::vector<Tensor> xs) {
            return op(OpKind::compare, {xs[0], xs[1]}, ir::CompareParams{p});
          },
          {a, b}, DType::boolean,
          [&](int64_t k) {
            return Elem{0, compare_reference(p, d, element_at(a, k), element_at(b, broadcast_index(kRow, kDims, k)))};
          });
    }
}

TEST_CASE("cast converts between every pair of dtypes") {
  for (DType from : kDTypes)
    for (DType to : kDTypes) {
      // NaN and infinities cast to integers are a documented difference between the tiers.
      const Tensor x =
          input(from, kDims, 6, dtype_is_float(to) || to == DType::boolean ? Values::general : Values::finite);
      check(
          case_name(OpKind::cast, from) + " to " + dtype_name(to), OpKind::cast, from,
          [to](std::vector<Tensor> xs) { return op(OpKind::cast, {xs[0]}, ir::CastParams{to}); }, {x}, to,
          [&](int64_t k) { return cast_reference(from, to, element_at(x, k)); });
    }
}

TEST_CASE("clamp, where and masked_fill compute in every dtype their rule admits") {
  for (DType d : kDTypes) {
    const Tensor x = input(d, kDims, 7), lo = input(d, kRow, 8), hi = input(d, kColumn, 9);
    check(
        case_name(OpKind::clamp, d), OpKind::clamp, d,
        [](std::vector<Tensor> xs) {
          return op(OpKind::clamp, {xs[0], xs[1], xs[2]});
        },
        {x, lo, hi}, d,
        [&](int64_t k) {
          const Elem v = element_at(x, k), low = element_at(lo, broadcast_index(kRow, kDims, k)),
                     high = element_at(hi, broadcast_index(kColumn, kDims, k));
          const Elem raised = binary_reference(OpKind::maximum, d, v, low);
          return binary_reference(OpKind::minimum, d, raised, high);
        });
    const Tensor condition = input(DType::boolean, kDims, 10), other = input(d, kRow, 11);
    check(
        case_name(OpKind::where, d), OpKind::where, d,
        [](std::vector<Tensor> xs) {
          return op(OpKind::where, {xs[0], xs[1], xs[2]});
        },
        {condition, x, other}, d,
        [&](int64_t k) {
          return element_at(condition, k).i ? element_at(x, k) : element_at(other, broadcast_index(kRow, kDims, k));
        });
    const Tensor mask = input(DType::boolean, kRow, 12);
    check(
        case_name(OpKind::masked_fill, d), OpKind::masked_fill, d,
        [](std::vector<Tensor> xs) {
          return op(OpKind::masked_fill, {xs[0], xs[1]}, ir::MaskedFillParams{2.0});
        },
        {x, mask}, d,
        [&](int64_t k) {
          return element_at(mask, broadcast_index(kRow, kDims, k)).i ? cast_reference(DType::f64, d, Elem{2.0})
                                                                     : element_at(x, k);
        });
  }
}

// out[o] = combine over the reduced axis of x [5, 7]: axis 1 gives 5 results, axis 0 gives 7.
Elem reduction_reference(OpKind kind, DType d, const Tensor& x, int64_t axis, int64_t o) {
  const int64_t count = kDims[size_t(axis)];
  auto at = [&](int64_t m) { return element_at(x, axis == 1 ? o * 7 + m : m * 7 + o); };
  if (kind == OpKind::argmax || kind == OpKind::argmin) {
    int64_t best = 0;
    for (int64_t m = 1; m < count; ++m) {
      const Elem v = at(m), b = at(best);
      if (dtype_is_float(d) ? std::isnan(b.f) : false) break;
      const bool beats = dtype_is_float(d) ? std::isnan(v.f) || (kind == OpKind::argmax ? v.f > b.f : v.f < b.f)
                                           : (kind == OpKind::argmax ? v.i > b.i : v.i < b.i);
      if (beats) best = m;
    }
    return {0, best};
  }
  if (dtype_is_float(d)) {
    double acc = kind == OpKind::reduce_prod  ? 1
                 : kind == OpKind::reduce_max ? -INFINITY
                 : kind == OpKind::reduce_min ? INFINITY
                                              : 0;
    for (int64_t m = 0; m < count; ++m) {
      const double v = at(m).f;
      if (kind == OpKind::reduce_prod)
        acc *= v;
      else if (kind == OpKind::reduce_max)
        acc = std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
      else if (kind == OpKind::reduce_min)
        acc = std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
      else
        acc += v;
    }
    return {rounded(d, kind == OpKind::reduce_mean ? acc / double(count) : acc)};
  }
  int64_t acc = at(0).i;
  for (int64_t m = 1; m < count; ++m) {
    const int64_t v = at(m).i;
    if (kind == OpKind::reduce_prod)
      acc = wrapped_mul(DType::i64, acc, v);
    else if (kind == OpKind::reduce_max)
      acc = std::max(acc, v);
    else if (kind == OpKind::reduce_min)
      acc = std::min(acc, v);
    else
      acc = wrapped_add(DType::i64, acc, v);
  }
  return {0, wrapped(d, acc)};
}

TEST_CASE("reductions compute in every dtype their rule admits: integers keep their dtype and wrap") {
  for (DType d : kDTypes)
    for (OpKind kind : kReductions)
      for (int64_t axis : {0, 1}) {
        const bool arg = kind == OpKind::argmax || kind == OpKind::argmin;
        const ir::OpParams params =
            arg ? ir::OpParams{ir::ArgmaxParams{axis, false}} : ir::OpParams{ir::ReduceParams{{axis}, false}};
        const std::string what = case_name(kind, d) + " axis " + std::to_string(axis);
        const Graph graph = [kind, params](std::vector<Tensor> xs) { return op(kind, {xs[0]}, params); };
        const DType result = arg ? DType::i64 : d;
        const Tensor x = input(d, kDims, 13, Values::finite);
        check(what, kind, d, graph, {x}, result, [&](int64_t o) { return reduction_reference(kind, d, x, axis, o); });
        // NaN and infinities: the extremes and their indices (sums of them say little).
        if (!arg && kind != OpKind::reduce_max && kind != OpKind::reduce_min) continue;
        const Tensor edges = input(d, kDims, 14, Values::general);
        check(what + " with NaN and infinities", kind, d, graph, {edges}, result,
              [&](int64_t o) { return reduction_reference(kind, d, edges, axis, o); });
      }
}

TEST_CASE("a u8 tensor plus an i64 0-d tensor is u8 and wraps around, eagerly and compiled") {
  const Tensor pixels = Tensor::from_vector<uint8_t>({0, 100, 200, 255}, {4});
  const Tensor offset = Tensor::from_vector<int64_t>({100}, {});
  const std::vector<uint8_t> want = {100, 200, 44, 99};
  const Tensor eager = F::add(pixels, offset);
  REQUIRE(eager.dtype() == DType::u8);
  CHECK(std::vector<uint8_t>(eager.data<uint8_t>(), eager.data<uint8_t>() + 4) == want);
  for (JitMode mode : tiers()) {
    INFO(tier_name(mode));
    const Tensor compiled = compile([](Tensor x, Tensor y) { return F::add(x, y); },
                                    {.session = session_in(mode)})(pixels.layout(), offset.layout())(pixels, offset);
    REQUIRE(compiled.dtype() == DType::u8);
    CHECK(std::vector<uint8_t>(compiled.data<uint8_t>(), compiled.data<uint8_t>() + 4) == want);
  }
}

TEST_CASE("an op refused for a dtype says so when traced, naming the op, the operand and the dtypes it takes") {
  const TensorLayout integers(DType::i32, {3}), flags(DType::boolean, {3}), bytes(DType::u8, {3, 3});
  CHECK_THROWS_WITH_AS(compile([](Tensor x) { return F::exp(x); })(integers), doctest::Contains("kiln.exp at "), Error);
  CHECK_THROWS_WITH_AS(compile([](Tensor x) { return F::exp(x); })(integers),
                       doctest::Contains(": operand 0 is i32, which this op does not compute in (it takes f32, f64, "
                                         "f16 or bf16): cast it first"),
                       Error);
  CHECK_THROWS_WITH_AS(compile([](Tensor x) { return F::neg(x); })(flags),
                       doctest::Contains("operand 0 is i1, which this op does not compute in (it takes any dtype but "
                                         "i1 (bool)): cast it first"),
                       Error);
  CHECK_THROWS_WITH_AS(compile([](Tensor x) { return F::matmul(x, x); })(bytes), doctest::Contains("kiln.matmul at "),
                       Error);
}

// Beyond the elementwise ops and the reductions: what an interpreter kernel lacks is refused
// when traced, never when called.
TEST_CASE("matmul, pooling, convolution and the normalisations refuse the dtypes they lack when traced") {
  const auto refused = [](auto fn, const std::vector<TensorLayout>& layouts) {
    try {
      if (layouts.size() == 1)
        compile([fn](Tensor x) { return fn(x, x); })(layouts[0]);
      else
        compile(fn)(layouts[0], layouts[1]);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::dtype;
    }
    return false;
  };
  for (DType d : {DType::i8, DType::u8, DType::boolean}) {
    CAPTURE(dtype_name(d));
    CHECK(refused([](Tensor a, Tensor b) { return F::matmul(a, b); }, {TensorLayout(d, {3, 3})}));
  }
  for (DType d : {DType::i32, DType::i64, DType::u8, DType::boolean}) {
    CAPTURE(dtype_name(d));
    const TensorLayout image(d, {1, 2, 4, 4}), row(d, {2, 4});
    CHECK(refused([](Tensor x, Tensor) { return F::max_pool2d(x, {.kernel = {2, 2}}); }, {image}));
    CHECK(refused([](Tensor x, Tensor) { return F::avg_pool2d(x, {.kernel = {2, 2}}); }, {image}));
    CHECK(
        refused([](Tensor x, Tensor w) { return F::conv2d(x, w, Tensor()); }, {image, TensorLayout(d, {2, 2, 1, 1})}));
    CHECK(refused([](Tensor x, Tensor) { return F::rms_norm(x, Tensor::ones({4})); }, {row}));
  }
  CHECK(refused([](Tensor x, Tensor) { return F::topk(x, 1, 0).first; }, {TensorLayout(DType::boolean, {3})}));
}
