#include "core/half.hpp"
#include "exec/threads.hpp"
#include "interp/kernel_table.hpp"
#include "ir/ops.hpp"
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

// Every interpreter kernel against naive reference loops written here (never the kernels).
// Tolerances: f32 transcendental ops 1e-6 relative (+1e-6 absolute near zero), f32 GEMM and
// convolution 1e-5 of the sum of |products|, normalisations 1e-5; data movement is exact.

using namespace kiln;
using exec::View;
using ir::Attr;
using ir::Attrs;
using ir::OpKind;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
const int64_t kSizes[] = {1, 3, 7, 17, 33};

// A test tensor: dims plus typed storage that views point into.
template <class T> struct Buffer {
  std::vector<int64_t> dims;
  std::vector<T> values;
  DType dtype;
  View view() { return View{values.data(), dtype, dims}; }
};

int64_t count_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

template <class T> Buffer<T> make(std::vector<int64_t> dims, std::vector<T> values, DType dtype) {
  REQUIRE(int64_t(values.size()) == count_of(dims));
  return Buffer<T>{std::move(dims), std::move(values), dtype};
}
template <class T> Buffer<T> make(std::vector<int64_t> dims, std::vector<T> values) {
  return make(std::move(dims), std::move(values), dtype_of<T>());
}
template <class T> Buffer<T> empty(std::vector<int64_t> dims, DType dtype) {
  std::vector<T> values(size_t(count_of(dims)));
  return Buffer<T>{std::move(dims), std::move(values), dtype};
}
template <class T> Buffer<T> empty(std::vector<int64_t> dims) { return empty<T>(std::move(dims), dtype_of<T>()); }

std::vector<float> uniform(int64_t n, unsigned seed, float low = -2.0f, float high = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v)
    x = dist(rng);
  return v;
}
template <class T> std::vector<T> uniform_as(int64_t n, unsigned seed, float low = -2.0f, float high = 2.0f) {
  std::vector<float> f = uniform(n, seed, low, high);
  return std::vector<T>(f.begin(), f.end());
}
std::vector<int32_t> uniform_ints(int64_t n, unsigned seed, int32_t low, int32_t high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(low, high);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v)
    x = dist(rng);
  return v;
}

// Runs the table's kernel for `kind` on the given views.
void run(OpKind kind, Attrs attrs, std::vector<View> inputs, std::vector<View> outputs) {
  std::vector<ir::ValueType> operand_types;
  for (const View& input : inputs)
    operand_types.push_back({input.dtype, shape_from_dims({input.dims.begin(), input.dims.end()}), false});
  // Decoding checks the attributes (ir::AttrError, ir::InferError); the kernel checks the views.
  ir::Op op{kind, {}, {}, attrs, ir::SourceLoc{}, ir::NoParams{}};
  op.params = ir::decode_params(kind, attrs, operand_types);
  const exec::Kernel kernel = interp::kernel_for(kind);
  const bool has_kernel = kernel != nullptr;
  REQUIRE(has_kernel);
  const exec::PreparedState prepared = interp::prepare_kernel(op, inputs, outputs);
  std::vector<std::byte> scratch(interp::kernel_scratch_bytes(op, inputs, outputs));
  kernel(exec::KernelArgs{op, inputs, outputs, scratch, prepared.get()});
}

// Passes when |got - want| <= abs_tol + rel_tol * |want| everywhere; NaN must meet NaN.
template <class G, class W>
void check_close(const std::vector<G>& got, const std::vector<W>& want, double rel_tol, double abs_tol = 0.0) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    const bool ok = std::isnan(w) ? std::isnan(g) : (g == w || std::abs(g - w) <= abs_tol + rel_tol * std::abs(w));
    if (!ok) {
      FAIL_CHECK("element " << i << ": got " << g << ", want " << w);
      return;
    }
  }
}
template <class T> void check_equal(const std::vector<T>& got, const std::vector<T>& want) {
  check_close(got, want, 0.0);
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    flat = flat * dims[d] + index[d];
  return flat;
}

// numpy broadcasting, naively: the flat element of `in_dims` read at output position `out_index`.
int64_t broadcast_source(const std::vector<int64_t>& out_index, const std::vector<int64_t>& in_dims) {
  const size_t offset = out_index.size() - in_dims.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in_dims.size(); ++d)
    flat = flat * in_dims[d] + (in_dims[d] == 1 ? 0 : out_index[offset + d]);
  return flat;
}

std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1, db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// The broadcasting pairs every binary test runs: same shape, scalars, rows, columns, both sides
// broadcast, and rank mismatch.
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBroadcastCases = {
    {{7, 17}, {7, 17}}, {{33}, {33}},       {{}, {3, 7}},          {{3, 7}, {}},
    {{1}, {33}},        {{17}, {7, 17}},    {{7, 17}, {17}},       {{7, 1}, {7, 17}},
    {{7, 17}, {7, 1}},  {{7, 1}, {1, 17}},  {{3, 1, 5}, {7, 1}},   {{2, 3, 1, 4}, {3, 5, 1}},
    {{1, 1}, {1}},      {{40000}, {40000}}, {{300, 1}, {300, 200}}};

template <class T>
std::vector<T> naive_binary(const Buffer<T>& a, const Buffer<T>& b, std::vector<int64_t>& out_dims,
                            const std::function<T(T, T)>& fn) {
  out_dims = broadcast_dims(a.dims, b.dims);
  std::vector<T> out(size_t(count_of(out_dims)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    const std::vector<int64_t> index = unravel(i, out_dims);
    out[size_t(i)] =
        fn(a.values[size_t(broadcast_source(index, a.dims))], b.values[size_t(broadcast_source(index, b.dims))]);
  }
  return out;
}

} // namespace

TEST_CASE("kernel table covers every op the executor does not run itself") {
  const std::vector<OpKind> executor_ops = {OpKind::constant, OpKind::constant_external, OpKind::buffer_store,
                                            OpKind::call, OpKind::custom};
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const OpKind kind = OpKind(k);
    const bool executor_op = std::find(executor_ops.begin(), executor_ops.end(), kind) != executor_ops.end();
    CAPTURE(ir::op_info(kind).name);
    const bool has_kernel = interp::kernel_for(kind) != nullptr;
    CHECK(has_kernel != executor_op);
  }
  CHECK(exec::num_threads() >= 1);
}

namespace {

struct UnaryCase {
  const char* name;
  OpKind kind;
  double (*reference)(double);
  float low, high;
  Attrs attrs;
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", OpKind::neg, [](double x) { return -x; }, -5, 5, {}},
      {"abs", OpKind::abs, [](double x) { return x < 0 ? -x : x; }, -5, 5, {}},
      {"exp", OpKind::exp, [](double x) { return std::exp(x); }, -10, 10, {}},
      {"log", OpKind::log, [](double x) { return std::log(x); }, 0.01f, 100, {}},
      {"sqrt", OpKind::sqrt, [](double x) { return std::sqrt(x); }, 0, 100, {}},
      {"rsqrt", OpKind::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 0.01f, 100, {}},
      {"tanh", OpKind::tanh, [](double x) { return std::tanh(x); }, -6, 6, {}},
      {"sigmoid", OpKind::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -30, 30, {}},
      {"relu", OpKind::relu, [](double x) { return x > 0 ? x : 0.0; }, -5, 5, {}},
      {"silu", OpKind::silu, [](double x) { return x / (1.0 + std::exp(-x)); }, -30, 30, {}},
      {"erf", OpKind::erf, [](double x) { return std::erf(x); }, -4, 4, {}},
      {"sin", OpKind::sin, [](double x) { return std::sin(x); }, -10, 10, {}},
      {"cos", OpKind::cos, [](double x) { return std::cos(x); }, -10, 10, {}},
      {"gelu none",
       OpKind::gelu,
       [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
       -6,
       6,
       {{"approximate", Attr::of_string("none")}}},
      {"gelu tanh",
       OpKind::gelu,
       [](double x) {
         return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
       },
       -6,
       6,
       {{"approximate", Attr::of_string("tanh")}}},
  };
  return cases;
}

template <class T> void check_unary_float(const UnaryCase& c, int64_t n, double rel_tol, double abs_tol) {
  Buffer<T> x = make({n}, uniform_as<T>(n, unsigned(n), c.low, c.high));
  Buffer<T> y = empty<T>({n});
  run(c.kind, c.attrs, {x.view()}, {y.view()});
  std::vector<double> want;
  for (T v : x.values)
    want.push_back(c.reference(double(v)));
  check_close(y.values, want, rel_tol, abs_tol);
}

// f16/bf16 compute in f32 and round once: compare the decoded result with the exact result
// within one unit in the last place of the storage type.
void check_unary_half(const UnaryCase& c, DType dtype, int64_t n) {
  const bool f16 = dtype == DType::f16;
  std::vector<uint16_t> bits;
  for (float v : uniform(n, 7, c.low, c.high))
    bits.push_back(f16 ? float_to_f16(v) : float_to_bf16(v));
  Buffer<uint16_t> x = make({n}, bits, dtype);
  Buffer<uint16_t> y = empty<uint16_t>({n}, dtype);
  run(c.kind, c.attrs, {x.view()}, {y.view()});
  std::vector<double> got, want;
  for (size_t i = 0; i < bits.size(); ++i) {
    got.push_back(f16 ? f16_to_float(y.values[i]) : bf16_to_float(y.values[i]));
    want.push_back(c.reference(f16 ? f16_to_float(bits[i]) : bf16_to_float(bits[i])));
  }
  check_close(got, want, f16 ? 1.0 / 1024 : 1.0 / 128, 1e-4);
}

} // namespace

TEST_CASE("unary float kernels match the double-precision formulas on f32 and f64") {
  for (const UnaryCase& c : unary_cases()) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(7), int64_t(17), int64_t(33), int64_t(50000)}) {
      CAPTURE(c.name);
      CAPTURE(n);
      check_unary_float<float>(c, n, 1e-6, 1e-6);
      check_unary_float<double>(c, n, 1e-12, 1e-12);
    }
  }
}

TEST_CASE("unary kernels on f16 and bf16 compute in f32 and round to the storage type") {
  for (const UnaryCase& c : unary_cases()) {
    CAPTURE(c.name);
    check_unary_half(c, DType::f16, 33);
    check_unary_half(c, DType::bf16, 33);
  }
}

TEST_CASE("sigmoid and silu stay finite at large magnitudes") {
  // exp(-80) is still a normal float, so the relative tolerance applies.
  Buffer<float> x = make<float>({4}, {-1000.0f, -80.0f, 80.0f, 1000.0f});
  Buffer<float> y = empty<float>({4});
  run(OpKind::sigmoid, {}, {x.view()}, {y.view()});
  check_close(y.values, std::vector<double>{0.0, std::exp(-80.0), 1.0, 1.0}, 1e-6);
  run(OpKind::silu, {}, {x.view()}, {y.view()});
  check_close(y.values, std::vector<double>{0.0, -80.0 * std::exp(-80.0), 80.0, 1000.0}, 1e-6);
}

TEST_CASE("relu, neg and abs pass NaN through and work on integers with wrap-around") {
  Buffer<float> x = make<float>({3}, {kNaNf, -1.5f, 2.0f});
  Buffer<float> y = empty<float>({3});
  run(OpKind::relu, {}, {x.view()}, {y.view()});
  check_close(y.values, std::vector<double>{kNaN, 0.0, 2.0}, 0.0);
  run(OpKind::abs, {}, {x.view()}, {y.view()});
  check_close(y.values, std::vector<double>{kNaN, 1.5, 2.0}, 0.0);

  const int32_t min32 = std::numeric_limits<int32_t>::min();
  Buffer<int32_t> i = make<int32_t>({5}, {min32, -7, 0, 5, 2147483647});
  Buffer<int32_t> o = empty<int32_t>({5});
  run(OpKind::neg, {}, {i.view()}, {o.view()});
  check_equal(o.values, {min32, 7, 0, -5, -2147483647});
  run(OpKind::abs, {}, {i.view()}, {o.view()});
  check_equal(o.values, {min32, 7, 0, 5, 2147483647});
  run(OpKind::relu, {}, {i.view()}, {o.view()});
  check_equal(o.values, {0, 0, 0, 5, 2147483647});

  Buffer<int64_t> l = make<int64_t>({3}, {-(int64_t(1) << 40), 0, 9});
  Buffer<int64_t> lo = empty<int64_t>({3});
  run(OpKind::neg, {}, {l.view()}, {lo.view()});
  check_equal(lo.values, {int64_t(1) << 40, 0, -9});
}

TEST_CASE("transcendental kernels refuse integer and bool inputs with a dtype error") {
  Buffer<int32_t> x = make<int32_t>({2}, {1, 2});
  Buffer<int32_t> y = empty<int32_t>({2});
  CHECK_THROWS_WITH_AS(run(OpKind::exp, {}, {x.view()}, {y.view()}),
                       doctest::Contains("kiln.exp: the interpreter has no kernel for dtype i32"), Error);
  Buffer<uint8_t> b = make<uint8_t>({2}, {0, 1}, DType::boolean);
  Buffer<uint8_t> bo = empty<uint8_t>({2}, DType::boolean);
  try {
    run(OpKind::neg, {}, {b.view()}, {bo.view()});
    FAIL("neg on bool did not throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
  }
}

TEST_CASE("gelu refuses an unknown approximation before it can run") {
  Buffer<float> x = make<float>({1}, {1.0f});
  Buffer<float> y = empty<float>({1});
  CHECK_THROWS_WITH_AS(run(OpKind::gelu, {{"approximate", Attr::of_string("fast")}}, {x.view()}, {y.view()}),
                       "gelu approximate must be \"none\" or \"tanh\", got \"fast\"", ir::AttrError);
}

namespace {

struct BinaryCase {
  const char* name;
  OpKind kind;
  std::function<double(double, double)> reference;
};

const std::vector<BinaryCase>& float_binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", OpKind::add, [](double a, double b) { return a + b; }},
      {"sub", OpKind::sub, [](double a, double b) { return a - b; }},
      {"mul", OpKind::mul, [](double a, double b) { return a * b; }},
      {"div", OpKind::div, [](double a, double b) { return a / b; }},
      {"maximum", OpKind::maximum, [](double a, double b) { return a > b ? a : b; }},
      {"minimum", OpKind::minimum, [](double a, double b) { return a < b ? a : b; }},
      {"pow", OpKind::pow, [](double a, double b) { return std::pow(std::abs(a), b); }},
  };
  return cases;
}

// f32 results are compared with the double formula rounded once to float: 1 ulp (6e-8 relative).
template <class T> void check_binary(const BinaryCase& c, double rel_tol) {
  for (const auto& [a_dims, b_dims] : kBroadcastCases) {
    CAPTURE(c.name);
    CAPTURE(a_dims.size());
    CAPTURE(b_dims.size());
    Buffer<T> a = make(a_dims, uniform_as<T>(count_of(a_dims), 1, 0.5f, 3.0f));
    Buffer<T> b = make(b_dims, uniform_as<T>(count_of(b_dims), 2, -3.0f, 3.0f));
    if (c.kind == OpKind::pow)
      for (T& v : a.values)
        v = std::abs(v);
    std::vector<int64_t> out_dims;
    const std::vector<T> want =
        naive_binary<T>(a, b, out_dims, [&](T x, T y) { return T(c.reference(double(x), double(y))); });
    Buffer<T> out = empty<T>(out_dims);
    run(c.kind, {}, {a.view(), b.view()}, {out.view()});
    check_close(out.values, want, rel_tol);
  }
}

} // namespace

TEST_CASE("binary float kernels broadcast like numpy on f32 and f64") {
  for (const BinaryCase& c : float_binary_cases()) {
    check_binary<float>(c, c.kind == OpKind::pow ? 1e-6 : 0.0);
    check_binary<double>(c, c.kind == OpKind::pow ? 1e-14 : 0.0);
  }
}

TEST_CASE("integer binary kernels broadcast, wrap on overflow and divide toward zero") {
  Buffer<int32_t> a = make<int32_t>({2, 3}, {2147483647, -7, 7, std::numeric_limits<int32_t>::min(), 9, -9});
  Buffer<int32_t> b = make<int32_t>({3}, {1, 2, -2});
  Buffer<int32_t> out = empty<int32_t>({2, 3});
  run(OpKind::add, {}, {a.view(), b.view()}, {out.view()});
  check_equal(out.values,
              {std::numeric_limits<int32_t>::min(), -5, 5, std::numeric_limits<int32_t>::min() + 1, 11, -11});
  run(OpKind::div, {}, {a.view(), b.view()}, {out.view()});
  check_equal(out.values, {2147483647, -3, -3, std::numeric_limits<int32_t>::min(), 4, 4});
  run(OpKind::sub, {}, {b.view(), a.view()}, {out.view()});
  check_equal(out.values, {-2147483646, 9, -9, std::numeric_limits<int32_t>::min() + 1, -7, 7});

  Buffer<int32_t> zero = make<int32_t>({}, {0});
  run(OpKind::div, {}, {a.view(), zero.view()}, {out.view()});
  check_equal(out.values, {0, 0, 0, 0, 0, 0});
  Buffer<int32_t> minus_one = make<int32_t>({1}, {-1});
  run(OpKind::div, {}, {a.view(), minus_one.view()}, {out.view()});
  check_equal(out.values, {-2147483647, 7, -7, std::numeric_limits<int32_t>::min(), -9, 9});

  for (const auto& [a_dims, b_dims] : kBroadcastCases) {
    Buffer<int64_t> x = make(a_dims, std::vector<int64_t>(size_t(count_of(a_dims))));
    Buffer<int64_t> y = make(b_dims, std::vector<int64_t>(size_t(count_of(b_dims))));
    for (size_t i = 0; i < x.values.size(); ++i)
      x.values[i] = int64_t(i * 7919 % 2001) - 1000;
    for (size_t i = 0; i < y.values.size(); ++i)
      y.values[i] = int64_t(i * 104729 % 41) - 20;
    std::vector<int64_t> out_dims;
    Buffer<int64_t> got = empty<int64_t>(broadcast_dims(a_dims, b_dims));
    run(OpKind::mul, {}, {x.view(), y.view()}, {got.view()});
    check_equal(got.values, naive_binary<int64_t>(x, y, out_dims, [](int64_t p, int64_t q) { return p * q; }));
    run(OpKind::maximum, {}, {x.view(), y.view()}, {got.view()});
    check_equal(got.values, naive_binary<int64_t>(x, y, out_dims, [](int64_t p, int64_t q) { return std::max(p, q); }));
    run(OpKind::minimum, {}, {x.view(), y.view()}, {got.view()});
    check_equal(got.values, naive_binary<int64_t>(x, y, out_dims, [](int64_t p, int64_t q) { return std::min(p, q); }));
    run(OpKind::div, {}, {x.view(), y.view()}, {got.view()});
    check_equal(got.values,
                naive_binary<int64_t>(x, y, out_dims, [](int64_t p, int64_t q) { return q == 0 ? 0 : p / q; }));
  }
}

TEST_CASE("maximum and minimum propagate NaN from either operand") {
  Buffer<float> a = make<float>({4}, {kNaNf, 1.0f, kNaNf, -2.0f});
  Buffer<float> b = make<float>({4}, {1.0f, kNaNf, kNaNf, 3.0f});
  Buffer<float> out = empty<float>({4});
  run(OpKind::maximum, {}, {a.view(), b.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, kNaN, kNaN, 3.0}, 0.0);
  run(OpKind::minimum, {}, {a.view(), b.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, kNaN, kNaN, -2.0}, 0.0);
}

TEST_CASE("binary kernels on f16 and bf16 round the f32 result once") {
  for (DType dtype : {DType::f16, DType::bf16}) {
    auto encode = [&](float v) { return dtype == DType::f16 ? float_to_f16(v) : float_to_bf16(v); };
    auto decode = [&](uint16_t v) { return dtype == DType::f16 ? f16_to_float(v) : bf16_to_float(v); };
    std::vector<uint16_t> a_bits, b_bits;
    for (float v : uniform(7 * 17, 3))
      a_bits.push_back(encode(v));
    for (float v : uniform(17, 4))
      b_bits.push_back(encode(v));
    Buffer<uint16_t> a = make({7, 17}, a_bits, dtype);
    Buffer<uint16_t> b = make({17}, b_bits, dtype);
    Buffer<uint16_t> out = empty<uint16_t>({7, 17}, dtype);
    run(OpKind::mul, {}, {a.view(), b.view()}, {out.view()});
    for (size_t i = 0; i < out.values.size(); ++i) {
      CAPTURE(i);
      CHECK(out.values[i] == encode(decode(a_bits[i]) * decode(b_bits[i % 17])));
    }
  }
}

TEST_CASE("binary kernels refuse mismatched dtypes, bool operands and shapes that do not broadcast") {
  Buffer<float> f = make<float>({2}, {1, 2});
  Buffer<int32_t> i = make<int32_t>({2}, {1, 2});
  Buffer<float> out = empty<float>({2});
  CHECK_THROWS_WITH_AS(run(OpKind::add, {}, {f.view(), i.view()}, {out.view()}),
                       doctest::Contains("operand 1 is i32, expected f32"), Error);
  Buffer<uint8_t> b = make<uint8_t>({2}, {1, 0}, DType::boolean);
  Buffer<uint8_t> bo = empty<uint8_t>({2}, DType::boolean);
  CHECK_THROWS_WITH_AS(run(OpKind::add, {}, {b.view(), b.view()}, {bo.view()}),
                       doctest::Contains("no kernel for dtype i1"), Error);
  Buffer<float> g = make<float>({3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(run(OpKind::add, {}, {f.view(), g.view()}, {out.view()}),
                       doctest::Contains("operand 1 [3] does not broadcast to [2]"), Error);
  CHECK_THROWS_WITH_AS(run(OpKind::pow, {}, {b.view(), b.view()}, {bo.view()}),
                       doctest::Contains("no kernel for dtype i1"), Error); // torch: not implemented for 'Bool'
}

TEST_CASE("compare evaluates every predicate with broadcasting into bool, NaN unordered") {
  using Predicate = std::function<bool(double, double)>;
  const std::vector<std::pair<const char*, Predicate>> predicates = {
      {"eq", [](double a, double b) { return a == b; }}, {"ne", [](double a, double b) { return a != b; }},
      {"lt", [](double a, double b) { return a < b; }},  {"le", [](double a, double b) { return a <= b; }},
      {"gt", [](double a, double b) { return a > b; }},  {"ge", [](double a, double b) { return a >= b; }}};
  Buffer<float> a = make<float>({3, 4}, {1, 2, 3, kNaNf, 0, -1, 5, 2, 2, 2, 2, 2});
  Buffer<float> b = make<float>({4}, {2, 2, kNaNf, 1});
  Buffer<int64_t> ia = make<int64_t>({3, 4}, {1, 2, 3, 4, 0, -1, 5, 2, 2, 2, 2, 2});
  Buffer<int64_t> ib = make<int64_t>({4}, {2, 2, 3, 1});
  Buffer<uint8_t> ba = make<uint8_t>({2, 1}, {0, 1}, DType::boolean);
  Buffer<uint8_t> bb = make<uint8_t>({2}, {0, 1}, DType::boolean);
  std::vector<uint16_t> ha_bits, hb_bits;
  for (float v : a.values)
    ha_bits.push_back(float_to_f16(v));
  for (float v : b.values)
    hb_bits.push_back(float_to_f16(v));
  Buffer<uint16_t> ha = make({3, 4}, ha_bits, DType::f16), hb = make({4}, hb_bits, DType::f16);
  for (const auto& [name, predicate] : predicates) {
    CAPTURE(name);
    const Attrs attrs{{"predicate", Attr::of_string(name)}};
    auto expect = [&](auto& x, auto& y, auto to_double, const std::vector<int64_t>& out_dims) {
      Buffer<uint8_t> out = empty<uint8_t>(out_dims, DType::boolean);
      run(OpKind::compare, attrs, {x.view(), y.view()}, {out.view()});
      for (int64_t i = 0; i < count_of(out_dims); ++i) {
        const std::vector<int64_t> index = unravel(i, out_dims);
        const bool want = predicate(to_double(x.values[size_t(broadcast_source(index, x.dims))]),
                                    to_double(y.values[size_t(broadcast_source(index, y.dims))]));
        CAPTURE(i);
        CHECK(out.values[size_t(i)] == uint8_t(want));
      }
    };
    expect(a, b, [](float v) { return double(v); }, {3, 4});
    expect(b, a, [](float v) { return double(v); }, {3, 4});
    expect(ia, ib, [](int64_t v) { return double(v); }, {3, 4});
    expect(ba, bb, [](uint8_t v) { return double(v); }, {2, 2});
    expect(ha, hb, [](uint16_t v) { return double(f16_to_float(v)); }, {3, 4});
  }
}

TEST_CASE("where selects with broadcasting of condition and both branches for every element size") {
  Buffer<uint8_t> cond = make<uint8_t>({7, 1}, {1, 0, 0, 1, 1, 0, 1}, DType::boolean);
  auto check_where = [&](auto a, auto b) {
    using T = typename decltype(a.values)::value_type;
    Buffer<T> out = empty<T>({7, 17}, a.dtype);
    run(OpKind::where, {}, {cond.view(), a.view(), b.view()}, {out.view()});
    for (int64_t i = 0; i < 7 * 17; ++i) {
      const std::vector<int64_t> index = unravel(i, {7, 17});
      const T want = cond.values[size_t(index[0])] ? a.values[size_t(broadcast_source(index, a.dims))]
                                                   : b.values[size_t(broadcast_source(index, b.dims))];
      CAPTURE(i);
      CHECK(out.values[size_t(i)] == want);
    }
  };
  check_where(make({1, 17}, uniform_as<float>(17, 5)), make<float>({}, {-9.0f}));
  check_where(make<double>({}, {3.5}), make({7, 17}, uniform_as<double>(7 * 17, 6)));
  check_where(make({17}, std::vector<int64_t>(17, 4)), make({7, 1}, std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  check_where(make({17}, std::vector<uint16_t>(17, 0x3c00), DType::f16), make<uint16_t>({1}, {0x4000}, DType::f16));
  check_where(make({17}, std::vector<int8_t>(17, -3)), make<int8_t>({7, 17}, std::vector<int8_t>(7 * 17, 100)));
  check_where(make({17}, std::vector<uint8_t>(17, 1), DType::boolean), make<uint8_t>({}, {0}, DType::boolean));
}

TEST_CASE("clamp is min(max(x, lo), hi): NaN from any operand, hi where lo > hi, broadcast bounds") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  // PyTorch's torch.clamp, written out: NaN in x, lo or hi gives NaN; otherwise max then min.
  auto want = [](double x, double lo, double hi) {
    if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return std::numeric_limits<double>::quiet_NaN();
    return std::min(std::max(x, lo), hi);
  };
  const std::vector<float> xs = {-2.0f, -0.0f, 0.0f, 0.5f, 3.0f, 7.0f, kNaNf, inf, -inf, 1e-40f, 6.0f, 1e30f};
  const int64_t n = int64_t(xs.size());
  // relu6: scalar bounds.
  Buffer<float> x = make<float>({n}, xs), zero = make<float>({}, {0.0f}), six = make<float>({}, {6.0f});
  Buffer<float> y = empty<float>({n});
  run(OpKind::clamp, {}, {x.view(), zero.view(), six.view()}, {y.view()});
  for (int64_t i = 0; i < n; ++i) {
    CAPTURE(xs[size_t(i)]);
    check_close(std::vector<float>{y.values[size_t(i)]}, std::vector<double>{want(xs[size_t(i)], 0.0, 6.0)}, 0.0);
  }
  // Per-element bounds over a [3, n] broadcast of x, with NaN bounds and lo > hi rows.
  Buffer<float> lo = make<float>({3, 1}, {-1.0f, kNaNf, 4.0f}), hi = make<float>({3, 1}, {1.0f, 2.0f, -4.0f});
  Buffer<float> y2 = empty<float>({3, n});
  run(OpKind::clamp, {}, {x.view(), lo.view(), hi.view()}, {y2.view()});
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(r);
      CAPTURE(xs[size_t(i)]);
      const double expected = want(xs[size_t(i)], lo.values[size_t(r)], hi.values[size_t(r)]);
      check_close(std::vector<float>{y2.values[size_t(r * n + i)]}, std::vector<double>{expected}, 0.0);
    }
  // Integers, and f16 computed in f32 and rounded back.
  Buffer<int32_t> xi = make<int32_t>({5}, {-7, 0, 3, 6, 100}), loi = make<int32_t>({}, {0}),
                  hii = make<int32_t>({}, {6});
  Buffer<int32_t> yi = empty<int32_t>({5});
  run(OpKind::clamp, {}, {xi.view(), loi.view(), hii.view()}, {yi.view()});
  CHECK(yi.values == std::vector<int32_t>{0, 0, 3, 6, 6});
  Buffer<uint16_t> xh = make<uint16_t>({3}, {0xbc00, 0x3800, 0x4800}, DType::f16); // -1, 0.5, 8
  Buffer<uint16_t> loh = make<uint16_t>({}, {0x0000}, DType::f16), hih = make<uint16_t>({}, {0x4600}, DType::f16);
  Buffer<uint16_t> yh = empty<uint16_t>({3}, DType::f16);
  run(OpKind::clamp, {}, {xh.view(), loh.view(), hih.view()}, {yh.view()});
  CHECK(yh.values == std::vector<uint16_t>{0x0000, 0x3800, 0x4600}); // 0, 0.5, 6
  // Mixed dtypes are refused.
  Buffer<double> lod = make<double>({}, {0.0});
  CHECK_THROWS_AS(run(OpKind::clamp, {}, {x.view(), lod.view(), six.view()}, {y.view()}), Error);
}

TEST_CASE("hardsigmoid is min(max(x + 3, 0), 6) / 6 with NaN kept, in every float dtype") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  // torch.nn.functional.hardsigmoid, written out in float as torch computes it.
  auto want = [](float x) {
    const float t = x + 3.0f;
    return std::isnan(t) ? t : std::min(std::max(t, 0.0f), 6.0f) / 6.0f;
  };
  const std::vector<float> xs = {-4.0f, -3.0f, -0.0f, 0.0f, 1.0f, -1.5f, 2.9f, 3.0f, 7.0f, kNaNf, inf, -inf, 1e-40f};
  const int64_t n = int64_t(xs.size());
  Buffer<float> x = make<float>({n}, xs), y = empty<float>({n});
  run(OpKind::hardsigmoid, {}, {x.view()}, {y.view()});
  for (int64_t i = 0; i < n; ++i) {
    CAPTURE(xs[size_t(i)]);
    check_close(std::vector<float>{y.values[size_t(i)]}, std::vector<double>{want(xs[size_t(i)])}, 0.0);
  }
  CHECK(y.values[0] == 0.0f);
  CHECK(y.values[1] == 0.0f);
  CHECK(y.values[3] == 0.5f);
  CHECK(y.values[7] == 1.0f);
  // f16 is computed in f32 and rounded back: -1 -> 1/3 (0x3555), 0 -> 0.5, 8 -> 1.
  Buffer<uint16_t> xh = make<uint16_t>({3}, {0xbc00, 0x0000, 0x4800}, DType::f16),
                   yh = empty<uint16_t>({3}, DType::f16);
  run(OpKind::hardsigmoid, {}, {xh.view()}, {yh.view()});
  CHECK(yh.values == std::vector<uint16_t>{0x3555, 0x3800, 0x3c00});
  // Integers are refused, as torch refuses them.
  Buffer<int32_t> xi = make<int32_t>({2}, {-7, 0}), yi = empty<int32_t>({2});
  CHECK_THROWS_AS(run(OpKind::hardsigmoid, {}, {xi.view()}, {yi.view()}), Error);
}

namespace {

// Test-side encoding of doubles into any dtype's bytes and back (independent of the kernels).
std::vector<uint8_t> encode(DType dtype, const std::vector<double>& values) {
  std::vector<uint8_t> bytes(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = bytes.data() + i * dtype_size(dtype);
    const double v = values[i];
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (dtype) {
    case DType::f32: put(float(v)); break;
    case DType::f64: put(v); break;
    case DType::f16: put(float_to_f16(float(v))); break;
    case DType::bf16: put(float_to_bf16(float(v))); break;
    case DType::i8: put(int8_t(v)); break;
    case DType::i32: put(int32_t(v)); break;
    case DType::i64: put(int64_t(v)); break;
    case DType::u8: put(uint8_t(v)); break;
    case DType::boolean: put(uint8_t(v != 0)); break;
    }
  }
  return bytes;
}

double decode(DType dtype, const std::vector<uint8_t>& bytes, size_t i) {
  const uint8_t* p = bytes.data() + i * dtype_size(dtype);
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (dtype) {
  case DType::f32: return get(float{});
  case DType::f64: return get(double{});
  case DType::f16: return f16_to_float(get(uint16_t{}));
  case DType::bf16: return bf16_to_float(get(uint16_t{}));
  case DType::i8: return get(int8_t{});
  case DType::i32: return get(int32_t{});
  case DType::i64: return double(get(int64_t{}));
  case DType::u8: return get(uint8_t{});
  case DType::boolean: return get(uint8_t{});
  }
  return kNaN;
}

const DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                            DType::i32, DType::i64, DType::u8,  DType::boolean};

template <class To> std::vector<To> cast_values(Buffer<float> x) {
  Buffer<To> y = empty<To>(x.dims);
  run(OpKind::cast, {{"dtype", Attr::of_dtype(dtype_of<To>())}}, {x.view()}, {y.view()});
  return y.values;
}

} // namespace

TEST_CASE("cast converts between every pair of dtypes") {
  const std::vector<double> values = {0, 1, 3, 100, 0, 7, 1, 42};
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      CAPTURE(dtype_name(from));
      CAPTURE(dtype_name(to));
      std::vector<uint8_t> in = encode(from, values), out(values.size() * dtype_size(to), 0xAB);
      const std::vector<int64_t> dims = {2, 4};
      run(OpKind::cast, {{"dtype", Attr::of_dtype(to)}}, {View{in.data(), from, dims}}, {View{out.data(), to, dims}});
      for (size_t i = 0; i < values.size(); ++i) {
        const bool to_truth = to == DType::boolean || from == DType::boolean;
        const double want = to_truth ? double(values[i] != 0) : values[i];
        CAPTURE(i);
        CHECK(decode(to, out, i) == want);
      }
    }
}

TEST_CASE("cast from float truncates toward zero, saturates out of range and sends NaN to 0") {
  const float inf = std::numeric_limits<float>::infinity();
  Buffer<float> x = make<float>({9}, {-2.7f, -0.5f, 0.5f, 2.7f, 3e9f, -3e9f, kNaNf, inf, -0.0f});
  const int32_t max32 = std::numeric_limits<int32_t>::max(), min32 = std::numeric_limits<int32_t>::min();
  check_equal(cast_values<int32_t>(x), {-2, 0, 0, 2, max32, min32, 0, max32, 0});
  check_equal(cast_values<int64_t>(x),
              {-2, 0, 0, 2, 3000000000, -3000000000, 0, std::numeric_limits<int64_t>::max(), 0});
  check_equal(cast_values<uint8_t>(x), {0, 0, 0, 2, 255, 0, 0, 255, 0});
  check_equal(cast_values<int8_t>(x), {-2, 0, 0, 2, 127, -128, 0, 127, 0});
  Buffer<uint8_t> b = empty<uint8_t>({9}, DType::boolean);
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::boolean)}}, {x.view()}, {b.view()});
  check_equal(b.values, {1, 1, 1, 1, 1, 1, 1, 1, 0});
}

TEST_CASE("cast between integers wraps modulo the target width") {
  Buffer<int64_t> x = make<int64_t>({4}, {300, -129, (int64_t(1) << 40) + 5, -1});
  Buffer<int8_t> i8 = empty<int8_t>({4});
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::i8)}}, {x.view()}, {i8.view()});
  check_equal(i8.values, {44, 127, 5, -1});
  Buffer<uint8_t> u8 = empty<uint8_t>({4});
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::u8)}}, {x.view()}, {u8.view()});
  check_equal(u8.values, {44, 127, 5, 255});
  Buffer<int32_t> i32 = empty<int32_t>({4});
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::i32)}}, {x.view()}, {i32.view()});
  check_equal(i32.values, {300, -129, 5, -1});
}

TEST_CASE("cast to f16 and bf16 rounds to nearest even and overflows to infinity") {
  Buffer<float> x = make<float>({5}, {1.0f, 1.0f + 1.0f / 1024, 65520.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256});
  Buffer<uint16_t> h = empty<uint16_t>({5}, DType::f16), bf = empty<uint16_t>({5}, DType::bf16);
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::f16)}}, {x.view()}, {h.view()});
  check_equal(h.values, {0x3c00, 0x3c01, 0x7c00, 0x3c04, 0x3c0c});
  run(OpKind::cast, {{"dtype", Attr::of_dtype(DType::bf16)}}, {x.view()}, {bf.view()});
  check_equal(bf.values, {0x3f80, 0x3f80, 0x4780, 0x3f80, 0x3f82});
}

namespace {

std::vector<bool> reduced_mask(const std::vector<int64_t>& dims, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(dims.size(), axes.empty());
  for (int64_t a : axes)
    reduced[size_t(a < 0 ? a + int64_t(dims.size()) : a)] = true;
  return reduced;
}

// Naive reduction: walk every input element and fold it into its (keepdims-shaped) output slot.
std::vector<double> naive_reduce(const std::vector<double>& x, const std::vector<int64_t>& dims,
                                 const std::vector<bool>& reduced, const std::function<double(double, double)>& fold,
                                 double init) {
  std::vector<int64_t> keep_dims = dims;
  for (size_t d = 0; d < dims.size(); ++d)
    if (reduced[d]) keep_dims[d] = 1;
  std::vector<double> out(size_t(count_of(keep_dims)), init);
  for (int64_t i = 0; i < count_of(dims); ++i) {
    std::vector<int64_t> index = unravel(i, dims);
    for (size_t d = 0; d < dims.size(); ++d)
      if (reduced[d]) index[d] = 0;
    double& slot = out[size_t(ravel(index, keep_dims))];
    slot = fold(slot, x[size_t(i)]);
  }
  return out;
}

std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d])
      out.push_back(dims[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

} // namespace

TEST_CASE("reduce_sum, reduce_mean, reduce_max and reduce_min over any axes, with and without keepdims") {
  const double inf = std::numeric_limits<double>::infinity();
  struct Shape {
    std::vector<int64_t> dims;
    std::vector<std::vector<int64_t>> axes;
  };
  const std::vector<Shape> shapes = {{{3, 7, 1, 5}, {{}, {0}, {1}, {3}, {-1}, {0, 2}, {0, 3}, {1, 3}, {0, 1, 3}, {2}}},
                                     {{33}, {{}, {0}}},
                                     {{17, 3, 2}, {{1}, {0, 2}}},
                                     {{300, 200}, {{0}, {1}, {}}}};
  for (const Shape& s : shapes)
    for (const auto& axes : s.axes)
      for (bool keepdims : {false, true}) {
        CAPTURE(s.dims.size());
        CAPTURE(axes.size());
        CAPTURE(keepdims);
        const Attrs attrs{{"axes", Attr::of_ints(axes)}, {"keepdims", Attr::of_bool(keepdims)}};
        Buffer<float> x = make(s.dims, uniform(count_of(s.dims), 11));
        const std::vector<double> xd(x.values.begin(), x.values.end());
        const std::vector<bool> reduced = reduced_mask(s.dims, axes);
        const auto sum = naive_reduce(xd, s.dims, reduced, std::plus<>{}, 0.0);
        const auto max = naive_reduce(
            xd, s.dims, reduced, [](double a, double b) { return std::max(a, b); }, -inf);
        const auto min = naive_reduce(
            xd, s.dims, reduced, [](double a, double b) { return std::min(a, b); }, inf);
        const double count = double(count_of(s.dims)) / double(sum.size());
        std::vector<double> mean;
        for (double v : sum)
          mean.push_back(v / count);
        Buffer<float> out = empty<float>(reduced_dims(s.dims, reduced, keepdims));
        run(OpKind::reduce_sum, attrs, {x.view()}, {out.view()});
        check_close(out.values, sum, 1e-6, 1e-6);
        run(OpKind::reduce_mean, attrs, {x.view()}, {out.view()});
        check_close(out.values, mean, 1e-6, 1e-7);
        run(OpKind::reduce_max, attrs, {x.view()}, {out.view()});
        check_close(out.values, max, 0.0);
        run(OpKind::reduce_min, attrs, {x.view()}, {out.view()});
        check_close(out.values, min, 0.0);
      }
}

TEST_CASE("integer and half-precision reductions") {
  Buffer<int32_t> x = make<int32_t>({2, 3}, {2147483647, 1, -5, 4, -8, 6});
  Buffer<int32_t> out = empty<int32_t>({3});
  const Attrs axis0{{"axes", Attr::of_ints({0})}, {"keepdims", Attr::of_bool(false)}};
  run(OpKind::reduce_sum, axis0, {x.view()}, {out.view()});
  check_equal(out.values, {std::numeric_limits<int32_t>::min() + 3, -7, 1});
  run(OpKind::reduce_max, axis0, {x.view()}, {out.view()});
  check_equal(out.values, {2147483647, 1, 6});
  run(OpKind::reduce_min, axis0, {x.view()}, {out.view()});
  check_equal(out.values, {4, -8, -5});
  Buffer<int32_t> mean_out = empty<int32_t>({3});
  CHECK_THROWS_AS(run(OpKind::reduce_mean, axis0, {x.view()}, {mean_out.view()}), Error);

  Buffer<int64_t> l = make<int64_t>({33}, std::vector<int64_t>(33, int64_t(1) << 40));
  Buffer<int64_t> total = empty<int64_t>({});
  run(OpKind::reduce_sum, {{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(false)}}, {l.view()},
      {total.view()});
  check_equal(total.values, {33 * (int64_t(1) << 40)});

  // f16 cannot count past 2048 by ones; the wider accumulator can.
  Buffer<uint16_t> h = make({4096}, std::vector<uint16_t>(4096, 0x3c00), DType::f16);
  Buffer<uint16_t> hs = empty<uint16_t>({}, DType::f16);
  run(OpKind::reduce_sum, {{"axes", Attr::of_ints({0})}, {"keepdims", Attr::of_bool(false)}}, {h.view()}, {hs.view()});
  CHECK(f16_to_float(hs.values[0]) == 4096.0f);
}

// On aarch64 f32 max and min over rows run an explicit NEON loop (16 lanes, then a scalar tail),
// elsewhere reduce_rows' portable lanes: both must give the exact extremum, NaN wherever the row
// has one, at row lengths that end in every part of the loop.
TEST_CASE("reduce_max and reduce_min over rows are exact on edge values at odd row lengths") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f, -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f, inf, -inf};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int64_t length : {1, 7, 15, 16, 17, 33, 1023}) {
    for (int64_t nan_at : {int64_t(-1), int64_t(0), length / 2, length - 1}) {
      CAPTURE(length);
      CAPTURE(nan_at);
      const int64_t rows = 3;
      std::vector<float> values(size_t(rows * length));
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = i % 5 == 0 ? specials[(i / 5) % specials.size()] : normal(rng);
      if (nan_at >= 0) values[size_t(length + nan_at)] = kNaNf; // row 1 only
      std::vector<double> want_max, want_min;
      for (int64_t r = 0; r < rows; ++r) {
        double hi = -inf, lo = inf;
        bool nan = false;
        for (int64_t m = 0; m < length; ++m) {
          const double v = values[size_t(r * length + m)];
          nan = nan || std::isnan(v);
          hi = std::max(hi, v);
          lo = std::min(lo, v);
        }
        want_max.push_back(nan ? kNaN : hi);
        want_min.push_back(nan ? kNaN : lo);
      }
      Buffer<float> x = make<float>({rows, length}, values);
      Buffer<float> out = empty<float>({rows});
      const Attrs last{{"axes", Attr::of_ints({1})}, {"keepdims", Attr::of_bool(false)}};
      run(OpKind::reduce_max, last, {x.view()}, {out.view()});
      check_close(out.values, want_max, 0.0);
      run(OpKind::reduce_min, last, {x.view()}, {out.view()});
      check_close(out.values, want_min, 0.0);
    }
  }
}

TEST_CASE("reductions propagate NaN and handle empty axes") {
  const Attrs all{{"axes", Attr::of_ints({1})}, {"keepdims", Attr::of_bool(false)}};
  Buffer<float> x = make<float>({2, 3}, {1, kNaNf, 3, 4, 5, 6});
  Buffer<float> out = empty<float>({2});
  run(OpKind::reduce_max, all, {x.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, 6}, 0.0);
  run(OpKind::reduce_min, all, {x.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, 4}, 0.0);
  run(OpKind::reduce_sum, all, {x.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, 15}, 0.0);

  Buffer<float> empty_axis = make<float>({2, 0}, {});
  run(OpKind::reduce_sum, all, {empty_axis.view()}, {out.view()});
  check_close(out.values, std::vector<double>{0, 0}, 0.0);
  run(OpKind::reduce_mean, all, {empty_axis.view()}, {out.view()});
  check_close(out.values, std::vector<double>{kNaN, kNaN}, 0.0);
  CHECK_THROWS_WITH_AS(run(OpKind::reduce_max, all, {empty_axis.view()}, {out.view()}), doctest::Contains("empty axis"),
                       Error);
  CHECK_THROWS_WITH_AS(run(OpKind::reduce_sum, {{"axes", Attr::of_ints({2})}, {"keepdims", Attr::of_bool(false)}},
                           {x.view()}, {out.view()}),
                       doctest::Contains("axis 2 is out of range for rank 2"), ir::InferError);
}

TEST_CASE("argmax returns the first maximum along an axis, NaN counting as the maximum") {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{3, 7, 5}, {33}, {1, 17}})
    for (int64_t axis = -int64_t(dims.size()); axis < int64_t(dims.size()); ++axis)
      for (bool keepdims : {false, true}) {
        CAPTURE(axis);
        CAPTURE(keepdims);
        std::vector<int32_t> values = uniform_ints(count_of(dims), 13, -3, 3); // many ties
        Buffer<int32_t> x = make(dims, values);
        const size_t a = size_t(axis < 0 ? axis + int64_t(dims.size()) : axis);
        std::vector<int64_t> keep_dims = dims, out_dims;
        keep_dims[a] = 1;
        for (size_t d = 0; d < dims.size(); ++d)
          if (d != a || keepdims) out_dims.push_back(keep_dims[d]);
        std::vector<int64_t> want(size_t(count_of(keep_dims)), -1);
        std::vector<int32_t> best(want.size());
        for (int64_t i = 0; i < count_of(dims); ++i) {
          std::vector<int64_t> index = unravel(i, dims);
          const int64_t position = index[a];
          index[a] = 0;
          const size_t slot = size_t(ravel(index, keep_dims));
          if (want[slot] < 0 || values[size_t(i)] > best[slot]) {
            want[slot] = position;
            best[slot] = values[size_t(i)];
          }
        }
        Buffer<int64_t> out = empty<int64_t>(out_dims);
        run(OpKind::argmax, {{"axis", Attr::of_int(axis)}, {"keepdims", Attr::of_bool(keepdims)}}, {x.view()},
            {out.view()});
        check_equal(out.values, want);
      }

  Buffer<float> f = make<float>({2, 4}, {1, kNaNf, 5, kNaNf, 2, 7, 7, -1});
  Buffer<int64_t> out = empty<int64_t>({2});
  run(OpKind::argmax, {{"axis", Attr::of_int(1)}, {"keepdims", Attr::of_bool(false)}}, {f.view()}, {out.view()});
  check_equal(out.values, {1, 1});
  std::vector<uint16_t> bits;
  for (float v : {0.5f, -1.0f, 3.0f, 3.0f})
    bits.push_back(float_to_bf16(v));
  Buffer<uint16_t> h = make({4}, bits, DType::bf16);
  Buffer<int64_t> one = empty<int64_t>({});
  run(OpKind::argmax, {{"axis", Attr::of_int(0)}, {"keepdims", Attr::of_bool(false)}}, {h.view()}, {one.view()});
  check_equal(one.values, {2});
}

namespace {

std::vector<double> naive_softmax(const std::vector<double>& x, const std::vector<int64_t>& dims, size_t axis,
                                  bool log_form) {
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < count_of(dims); ++i) {
    std::vector<int64_t> index = unravel(i, dims);
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (index[axis] = 0; index[axis] < dims[axis]; ++index[axis])
      max = std::max(max, x[size_t(ravel(index, dims))]);
    for (index[axis] = 0; index[axis] < dims[axis]; ++index[axis])
      sum += std::exp(x[size_t(ravel(index, dims))] - max);
    const double v = x[size_t(i)] - max;
    out[size_t(i)] = log_form ? v - std::log(sum) : std::exp(v) / sum;
  }
  return out;
}

} // namespace

TEST_CASE("softmax and log_softmax along every axis match the max-subtracted formula") {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{3, 7, 5}, {33}, {4, 100, 100}, {1, 1}})
    for (int64_t axis = -int64_t(dims.size()); axis < int64_t(dims.size()); ++axis)
      for (bool log_form : {false, true}) {
        CAPTURE(axis);
        CAPTURE(log_form);
        Buffer<float> x = make(dims, uniform(count_of(dims), 17, -8.0f, 8.0f));
        Buffer<float> y = empty<float>(dims);
        run(log_form ? OpKind::log_softmax : OpKind::softmax, {{"axis", Attr::of_int(axis)}}, {x.view()}, {y.view()});
        const size_t a = size_t(axis < 0 ? axis + int64_t(dims.size()) : axis);
        check_close(y.values, naive_softmax({x.values.begin(), x.values.end()}, dims, a, log_form), 1e-5, 1e-7);
      }
}

TEST_CASE("softmax is stable for large logits and rounds once for f16") {
  Buffer<float> x = make<float>({3}, {1000.0f, 1001.0f, -1000.0f});
  Buffer<float> y = empty<float>({3});
  run(OpKind::softmax, {{"axis", Attr::of_int(0)}}, {x.view()}, {y.view()});
  const double e = std::exp(-1.0);
  check_close(y.values, std::vector<double>{e / (1 + e), 1 / (1 + e), 0.0}, 1e-6);
  run(OpKind::log_softmax, {{"axis", Attr::of_int(-1)}}, {x.view()}, {y.view()});
  check_close(y.values, std::vector<double>{-1 - std::log1p(e), -std::log1p(e), -2001 - std::log1p(e)}, 1e-6);

  std::vector<uint16_t> bits;
  for (float v : uniform(7 * 5, 19))
    bits.push_back(float_to_f16(v));
  Buffer<uint16_t> h = make({7, 5}, bits, DType::f16);
  Buffer<uint16_t> hy = empty<uint16_t>({7, 5}, DType::f16);
  run(OpKind::softmax, {{"axis", Attr::of_int(1)}}, {h.view()}, {hy.view()});
  std::vector<double> decoded, got;
  for (uint16_t b : bits)
    decoded.push_back(f16_to_float(b));
  for (uint16_t b : hy.values)
    got.push_back(f16_to_float(b));
  check_close(got, naive_softmax(decoded, {7, 5}, 1, false), 1.0 / 1024);
}

namespace {

struct NormInputs {
  Buffer<float> x, weight, bias;
};

// Rows are the dims before `axis`; each row is normalised over the dims from `axis` on.
std::vector<double> naive_layer_norm(const NormInputs& in, int64_t axis, size_t operands, double eps, bool rms) {
  const int64_t rows = count_of({in.x.dims.begin(), in.x.dims.begin() + axis});
  const int64_t features = count_of(in.x.dims) / rows;
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < features; ++i)
      mean += in.x.values[size_t(r * features + i)];
    mean = rms ? 0.0 : mean / double(features);
    for (int64_t i = 0; i < features; ++i)
      var += std::pow(in.x.values[size_t(r * features + i)] - mean, 2);
    var /= double(features);
    for (int64_t i = 0; i < features; ++i) {
      double v = (in.x.values[size_t(r * features + i)] - mean) / std::sqrt(var + eps);
      if (operands > 1) v *= in.weight.values[size_t(i)];
      if (operands > 2) v += in.bias.values[size_t(i)];
      out.push_back(v);
    }
  }
  return out;
}

} // namespace

TEST_CASE("layer_norm and rms_norm normalise the trailing dims with optional weight and bias") {
  const std::vector<int64_t> dims = {3, 7, 5};
  for (int64_t axis : {0, 1, 2, -1, -2})
    for (size_t operands : {size_t(1), size_t(2), size_t(3)})
      for (bool rms : {false, true}) {
        if (rms && operands == 3) continue;
        CAPTURE(axis);
        CAPTURE(operands);
        CAPTURE(rms);
        const int64_t first = axis < 0 ? axis + 3 : axis;
        const std::vector<int64_t> param_dims(dims.begin() + first, dims.end());
        NormInputs in{make(dims, uniform(105, 23, -3.0f, 5.0f)), make(param_dims, uniform(count_of(param_dims), 29)),
                      make(param_dims, uniform(count_of(param_dims), 31))};
        Buffer<float> y = empty<float>(dims);
        std::vector<View> inputs = {in.x.view(), in.weight.view(), in.bias.view()};
        inputs.resize(operands);
        const Attrs attrs{{"axis", Attr::of_int(axis)}, {"eps", Attr::of_float(1e-3)}};
        run(rms ? OpKind::rms_norm : OpKind::layer_norm, attrs, inputs, {y.view()});
        check_close(y.values, naive_layer_norm(in, first, operands, 1e-3, rms), 1e-5, 1e-5);
      }
}

TEST_CASE("layer_norm on f64 and f16") {
  const std::vector<double> values = {1.0, 2.0, 4.0, 8.0, -1.0, 0.0, 1.0, 2.0};
  Buffer<double> x = make<double>({2, 4}, values);
  Buffer<double> y = empty<double>({2, 4});
  run(OpKind::layer_norm, {{"axis", Attr::of_int(1)}, {"eps", Attr::of_float(0.0)}}, {x.view()}, {y.view()});
  // Row 1: mean 3.75, variance 7.1875.
  const double s1 = std::sqrt(7.1875), s2 = std::sqrt(1.25);
  check_close(
      y.values,
      std::vector<double>{-2.75 / s1, -1.75 / s1, 0.25 / s1, 4.25 / s1, -1.5 / s2, -0.5 / s2, 0.5 / s2, 1.5 / s2},
      1e-14);
  std::vector<uint16_t> bits;
  for (double v : values)
    bits.push_back(float_to_f16(float(v)));
  Buffer<uint16_t> h = make({2, 4}, bits, DType::f16);
  Buffer<uint16_t> hy = empty<uint16_t>({2, 4}, DType::f16);
  run(OpKind::layer_norm, {{"axis", Attr::of_int(1)}, {"eps", Attr::of_float(0.0)}}, {h.view()}, {hy.view()});
  std::vector<double> got;
  for (uint16_t b : hy.values)
    got.push_back(f16_to_float(b));
  check_close(got, y.values, 1.0 / 1024);
}

TEST_CASE("batch_norm applies per-channel inference statistics on axis 1") {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 3, 4, 5}, {4, 3}, {1, 3, 33}})
    for (size_t operands : {size_t(3), size_t(5)}) {
      CAPTURE(dims.size());
      CAPTURE(operands);
      Buffer<float> x = make(dims, uniform(count_of(dims), 37));
      Buffer<float> mean = make<float>({3}, {0.5f, -1.0f, 0.0f}), var = make<float>({3}, {1.0f, 4.0f, 0.25f});
      Buffer<float> weight = make<float>({3}, {2.0f, 1.0f, -1.0f}), bias = make<float>({3}, {0.0f, 3.0f, 0.5f});
      std::vector<View> inputs = {x.view(), mean.view(), var.view(), weight.view(), bias.view()};
      inputs.resize(operands);
      Buffer<float> y = empty<float>(dims);
      run(OpKind::batch_norm, {{"eps", Attr::of_float(1e-3)}}, inputs, {y.view()});
      std::vector<double> want;
      for (int64_t i = 0; i < count_of(dims); ++i) {
        const size_t c = size_t(unravel(i, dims)[1]);
        double v = (x.values[size_t(i)] - mean.values[c]) / std::sqrt(var.values[c] + 1e-3);
        if (operands == 5) v = v * weight.values[c] + bias.values[c];
        want.push_back(v);
      }
      check_close(y.values, want, 1e-5, 1e-6);
    }
}

namespace {

// Naive batched matmul in double plus, per element, the sum of |a_ik * b_kj| that bounds the
// rounding error of any summation order.
void naive_matmul(const std::vector<double>& a, const std::vector<int64_t>& a_dims, const std::vector<double>& b,
                  const std::vector<int64_t>& b_dims, std::vector<int64_t>& out_dims, std::vector<double>& out,
                  std::vector<double>& magnitude) {
  const int64_t m = a_dims[a_dims.size() - 2], k = a_dims.back(), n = b_dims.back();
  const std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2), b_batch(b_dims.begin(), b_dims.end() - 2);
  out_dims = broadcast_dims(a_batch, b_batch);
  const int64_t batches = count_of(out_dims);
  out_dims.push_back(m);
  out_dims.push_back(n);
  out.assign(size_t(batches * m * n), 0.0);
  magnitude.assign(out.size(), 0.0);
  for (int64_t t = 0; t < batches; ++t) {
    const std::vector<int64_t> index = unravel(t, {out_dims.begin(), out_dims.end() - 2});
    const int64_t ab = broadcast_source(index, a_batch), bb = broadcast_source(index, b_batch);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) {
          const double product = a[size_t((ab * m + i) * k + p)] * b[size_t((bb * k + p) * n + j)];
          out[size_t((t * m + i) * n + j)] += product;
          magnitude[size_t((t * m + i) * n + j)] += std::abs(product);
        }
  }
}

template <class T>
void check_matmul(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims, double tol) {
  CAPTURE(a_dims.size());
  CAPTURE(b_dims.size());
  CAPTURE(a_dims.back());
  Buffer<T> a = make(a_dims, uniform_as<T>(count_of(a_dims), 41));
  Buffer<T> b = make(b_dims, uniform_as<T>(count_of(b_dims), 43));
  std::vector<int64_t> out_dims;
  std::vector<double> want, magnitude;
  naive_matmul({a.values.begin(), a.values.end()}, a_dims, {b.values.begin(), b.values.end()}, b_dims, out_dims, want,
               magnitude);
  Buffer<T> out = empty<T>(out_dims);
  run(OpKind::matmul, {}, {a.view(), b.view()}, {out.view()});
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(double(out.values[i]) - want[i]) <= tol * magnitude[i] + 1e-30);
  }
}

} // namespace

TEST_CASE("matmul matches a naive triple loop for odd sizes within 1e-5 of the product magnitudes") {
  for (int64_t m : {1, 7, 33})
    for (int64_t k : {1, 3, 17, 33})
      for (int64_t n : {1, 7, 33}) {
        check_matmul<float>({m, k}, {k, n}, 1e-5);
        check_matmul<double>({m, k}, {k, n}, 1e-13);
      }
}

TEST_CASE("large f32 matmuls split into column or row blocks across threads cover every element") {
  // Wide enough to split columns (n >= 128), or only rows; sizes not multiples of any block.
  check_matmul<float>({37, 45}, {45, 301}, 1e-5);
  check_matmul<float>({150, 45}, {45, 100}, 1e-5);
  check_matmul<float>({33, 33}, {33, 33}, 1e-5);
  check_matmul<float>({1023, 17}, {17, 7}, 1e-5);
}

TEST_CASE("matmul broadcasts batch dims on both sides") {
  check_matmul<float>({2, 1, 3, 4}, {5, 4, 7}, 1e-5);
  check_matmul<float>({3, 4}, {2, 4, 5}, 1e-5);
  check_matmul<float>({4, 1, 7, 3}, {1, 6, 3, 2}, 1e-5);
  check_matmul<float>({64, 17, 33}, {33, 9}, 1e-5);
  check_matmul<float>({1, 200, 300}, {300, 150}, 1e-5);
  check_matmul<double>({3, 1, 5, 2}, {4, 2, 6}, 1e-13);
}

TEST_CASE("matmul on integers is exact and on f16 rounds the f32 product") {
  Buffer<int32_t> a = make<int32_t>({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 2, 7, -3, 1});
  Buffer<int32_t> b = make<int32_t>({3, 2}, {1, 0, 0, 1, 2, -2});
  Buffer<int32_t> out = empty<int32_t>({2, 2, 2});
  run(OpKind::matmul, {}, {a.view(), b.view()}, {out.view()});
  check_equal(out.values, {7, -4, 16, -7, 3, -4, 9, -5});
  Buffer<int64_t> la = make<int64_t>({1, 2}, {int64_t(1) << 40, 3}), lb = make<int64_t>({2, 1}, {4, 5});
  Buffer<int64_t> lo = empty<int64_t>({1, 1});
  run(OpKind::matmul, {}, {la.view(), lb.view()}, {lo.view()});
  check_equal(lo.values, {(int64_t(1) << 42) + 15});

  std::vector<uint16_t> ha = {float_to_f16(1.5f), float_to_f16(-2.0f)}, hb = {float_to_f16(4.0f), float_to_f16(0.25f)};
  Buffer<uint16_t> x = make({1, 2}, ha, DType::f16), y = make({2, 1}, hb, DType::f16);
  Buffer<uint16_t> z = empty<uint16_t>({1, 1}, DType::f16);
  run(OpKind::matmul, {}, {x.view(), y.view()}, {z.view()});
  CHECK(f16_to_float(z.values[0]) == 5.5f);
}

TEST_CASE("matmul with an empty inner dim writes zeros and refuses mismatched dims") {
  Buffer<float> a = make<float>({3, 0}, {}), b = make<float>({0, 2}, {});
  Buffer<float> out = make<float>({3, 2}, std::vector<float>(6, 7.0f));
  run(OpKind::matmul, {}, {a.view(), b.view()}, {out.view()});
  check_equal(out.values, std::vector<float>(6, 0.0f));
  Buffer<float> c = make<float>({3, 3}, std::vector<float>(9, 1.0f));
  CHECK_THROWS_WITH_AS(run(OpKind::matmul, {}, {c.view(), b.view()}, {out.view()}),
                       doctest::Contains("cannot multiply [3, 3] by [0, 2]"), Error);
}

namespace {

struct ConvCase {
  int64_t batch, channels, height, width, out_channels, kh, kw;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
};

int64_t window_size(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (size + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

Attrs conv_attrs(std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                 int64_t groups) {
  return {{"stride", Attr::of_ints(std::move(stride))},
          {"padding", Attr::of_ints(std::move(padding))},
          {"dilation", Attr::of_ints(std::move(dilation))},
          {"groups", Attr::of_int(groups)}};
}

template <class T> void check_conv(const ConvCase& c, double tol) {
  CAPTURE(c.channels);
  CAPTURE(c.groups);
  CAPTURE(c.kh);
  const int64_t cg = c.channels / c.groups, og = c.out_channels / c.groups;
  const int64_t oh = window_size(c.height, c.kh, c.stride[0], c.padding[0], c.dilation[0]);
  const int64_t ow = window_size(c.width, c.kw, c.stride[1], c.padding[1], c.dilation[1]);
  Buffer<T> x =
      make({c.batch, c.channels, c.height, c.width}, uniform_as<T>(c.batch * c.channels * c.height * c.width, 47));
  Buffer<T> w = make({c.out_channels, cg, c.kh, c.kw}, uniform_as<T>(c.out_channels * cg * c.kh * c.kw, 53));
  Buffer<T> bias = make({c.out_channels}, uniform_as<T>(c.out_channels, 59));
  Buffer<T> y = empty<T>({c.batch, c.out_channels, oh, ow});
  std::vector<View> inputs = {x.view(), w.view()};
  if (c.bias) inputs.push_back(bias.view());
  run(OpKind::conv2d, conv_attrs(c.stride, c.padding, c.dilation, c.groups), inputs, {y.view()});
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_channels; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double want = c.bias ? double(bias.values[size_t(o)]) : 0.0, magnitude = std::abs(want);
          const int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t p = 0; p < c.kh; ++p)
              for (int64_t q = 0; q < c.kw; ++q) {
                const int64_t h = i * c.stride[0] - c.padding[0] + p * c.dilation[0];
                const int64_t v = j * c.stride[1] - c.padding[1] + q * c.dilation[1];
                if (h < 0 || h >= c.height || v < 0 || v >= c.width) continue;
                const double product =
                    double(x.values[size_t(((n * c.channels + g * cg + ci) * c.height + h) * c.width + v)]) *
                    double(w.values[size_t(((o * cg + ci) * c.kh + p) * c.kw + q)]);
                want += product;
                magnitude += std::abs(product);
              }
          const double got = y.values[size_t(((n * c.out_channels + o) * oh + i) * ow + j)];
          CAPTURE(n);
          CAPTURE(o);
          REQUIRE(std::abs(got - want) <= tol * magnitude + 1e-30);
        }
}

const std::vector<ConvCase> kConvCases = {
    {2, 3, 7, 5, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},  {1, 4, 17, 9, 6, 3, 2, {2, 1}, {0, 2}, {2, 1}, 2, false},
    {3, 6, 7, 7, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 6, true},  // depthwise
    {2, 5, 3, 3, 7, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true},  // pointwise: no im2col
    {1, 3, 7, 7, 2, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false}, // strided 1x1 goes through im2col
    {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true},  {8, 3, 33, 17, 4, 5, 3, {2, 2}, {2, 1}, {1, 1}, 1, true},
};

} // namespace

TEST_CASE("conv2d matches a naive seven-deep loop for stride, padding, dilation and groups") {
  for (const ConvCase& c : kConvCases) {
    check_conv<float>(c, 1e-5);
    check_conv<double>(c, 1e-13);
  }
}

TEST_CASE("conv2d on f16 and refusing inconsistent channels") {
  Buffer<uint16_t> x = make({1, 1, 2, 2}, std::vector<uint16_t>{0x3c00, 0x4000, 0x4200, 0x4400}, DType::f16);
  Buffer<uint16_t> w = make({1, 1, 2, 2}, std::vector<uint16_t>(4, 0x3800), DType::f16); // 0.5
  Buffer<uint16_t> y = empty<uint16_t>({1, 1, 1, 1}, DType::f16);
  const Attrs unit = conv_attrs({1, 1}, {0, 0}, {1, 1}, 1);
  run(OpKind::conv2d, unit, {x.view(), w.view()}, {y.view()});
  CHECK(f16_to_float(y.values[0]) == 5.0f); // (1 + 2 + 3 + 4) / 2

  Buffer<float> xf = make<float>({1, 2, 2, 2}, std::vector<float>(8, 1.0f));
  Buffer<float> wf = make<float>({1, 3, 1, 1}, std::vector<float>(3, 1.0f));
  Buffer<float> yf = empty<float>({1, 1, 2, 2});
  CHECK_THROWS_WITH_AS(run(OpKind::conv2d, unit, {xf.view(), wf.view()}, {yf.view()}),
                       doctest::Contains("do not fit together"), Error);
}

namespace {

struct PoolCase {
  int64_t batch, channels, height, width, kh, kw, sh, sw, ph, pw;
};

template <class T> void check_pool(const PoolCase& c, bool max_pool, bool include_pad) {
  CAPTURE(c.height);
  CAPTURE(max_pool);
  CAPTURE(include_pad);
  const int64_t oh = window_size(c.height, c.kh, c.sh, c.ph, 1), ow = window_size(c.width, c.kw, c.sw, c.pw, 1);
  Buffer<T> x =
      make({c.batch, c.channels, c.height, c.width}, uniform_as<T>(c.batch * c.channels * c.height * c.width, 61));
  Buffer<T> y = empty<T>({c.batch, c.channels, oh, ow});
  Attrs attrs{{"kernel", Attr::of_ints({c.kh, c.kw})},
              {"stride", Attr::of_ints({c.sh, c.sw})},
              {"padding", Attr::of_ints({c.ph, c.pw})}};
  if (!max_pool) attrs.set("count_include_pad", Attr::of_bool(include_pad));
  run(max_pool ? OpKind::max_pool2d : OpKind::avg_pool2d, attrs, {x.view()}, {y.view()});
  std::vector<double> want;
  for (int64_t plane = 0; plane < c.batch * c.channels; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double max = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t valid = 0;
        for (int64_t p = 0; p < c.kh; ++p)
          for (int64_t q = 0; q < c.kw; ++q) {
            const int64_t h = i * c.sh - c.ph + p, v = j * c.sw - c.pw + q;
            if (h < 0 || h >= c.height || v < 0 || v >= c.width) continue;
            const double value = x.values[size_t((plane * c.height + h) * c.width + v)];
            max = std::max(max, value);
            sum += value;
            ++valid;
          }
        want.push_back(max_pool ? max : sum / double(include_pad ? c.kh * c.kw : valid));
      }
  check_close(y.values, want, 1e-6);
}

} // namespace

TEST_CASE("max_pool2d and avg_pool2d with stride and padding, counting padding on request") {
  const std::vector<PoolCase> cases = {{2, 3, 7, 5, 2, 2, 2, 2, 0, 0},
                                       {1, 2, 17, 9, 3, 3, 2, 1, 1, 1},
                                       {1, 1, 33, 3, 3, 1, 1, 1, 1, 0},
                                       {2, 2, 6, 6, 2, 2, 1, 1, 1, 1},
                                       {1, 1, 1, 1, 1, 1, 1, 1, 0, 0}};
  for (const PoolCase& c : cases) {
    check_pool<float>(c, true, false);
    check_pool<double>(c, true, false);
    check_pool<float>(c, false, true);
    check_pool<float>(c, false, false);
    check_pool<double>(c, false, false);
  }
}

TEST_CASE("max_pool2d propagates NaN and avg_pool2d with count_include_pad counts the padding") {
  Buffer<float> x = make<float>({1, 1, 2, 2}, {1.0f, kNaNf, 3.0f, 4.0f});
  Buffer<float> y = empty<float>({1, 1, 1, 1});
  run(OpKind::max_pool2d,
      {{"kernel", Attr::of_ints({2, 2})}, {"padding", Attr::of_ints({0, 0})}, {"stride", Attr::of_ints({2, 2})}},
      {x.view()}, {y.view()});
  CHECK(std::isnan(y.values[0]));
  Buffer<float> ones = make<float>({1, 1, 1, 1}, {4.0f});
  Buffer<float> avg = empty<float>({1, 1, 1, 1});
  run(OpKind::avg_pool2d,
      {{"count_include_pad", Attr::of_bool(true)},
       {"kernel", Attr::of_ints({2, 2})},
       {"padding", Attr::of_ints({1, 1})},
       {"stride", Attr::of_ints({2, 2})}},
      {ones.view()}, {avg.view()});
  CHECK(avg.values[0] == 1.0f);
}

TEST_CASE("reshape, squeeze and unsqueeze copy the bytes unchanged") {
  Buffer<float> x = make({3, 7}, uniform(21, 67));
  Buffer<float> y = empty<float>({7, 3});
  run(OpKind::reshape, {{"shape", Attr::of_shape({7, 3})}}, {x.view()}, {y.view()});
  check_equal(y.values, x.values);
  Buffer<int8_t> b = make<int8_t>({1, 5, 1}, {1, -2, 3, -4, 5});
  Buffer<int8_t> s = empty<int8_t>({5});
  run(OpKind::squeeze, {{"axes", Attr::of_ints({0, 2})}}, {b.view()}, {s.view()});
  check_equal(s.values, b.values);
  Buffer<int8_t> u = empty<int8_t>({5, 1});
  run(OpKind::unsqueeze, {{"axes", Attr::of_ints({1})}}, {s.view()}, {u.view()});
  check_equal(u.values, b.values);
  Buffer<float> wrong = empty<float>({4, 5});
  CHECK_THROWS_WITH_AS(run(OpKind::reshape, {{"shape", Attr::of_shape({4, 5})}}, {x.view()}, {wrong.view()}),
                       doctest::Contains("cannot view [3, 7] as [4, 5]"), Error);
}

namespace {

template <class T>
void check_transpose(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm, DType dtype) {
  CAPTURE(perm.size());
  Buffer<T> x = make(dims, std::vector<T>(size_t(count_of(dims))), dtype);
  for (size_t i = 0; i < x.values.size(); ++i)
    x.values[i] = T(i * 37 + 1);
  std::vector<int64_t> out_dims;
  for (int64_t p : perm)
    out_dims.push_back(dims[size_t(p < 0 ? p + int64_t(dims.size()) : p)]);
  Buffer<T> y = empty<T>(out_dims, dtype);
  run(OpKind::transpose, {{"perm", Attr::of_ints(perm)}}, {x.view()}, {y.view()});
  std::vector<T> want(y.values.size());
  for (int64_t i = 0; i < count_of(out_dims); ++i) {
    const std::vector<int64_t> out_index = unravel(i, out_dims);
    std::vector<int64_t> in_index(dims.size());
    for (size_t d = 0; d < perm.size(); ++d)
      in_index[size_t(perm[d] < 0 ? perm[d] + int64_t(dims.size()) : perm[d])] = out_index[d];
    want[size_t(i)] = x.values[size_t(ravel(in_index, dims))];
  }
  check_equal(y.values, want);
}

} // namespace

TEST_CASE("transpose applies any permutation for every element size") {
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& perm : perms) {
    check_transpose<float>({3, 7, 5}, perm, DType::f32);
    check_transpose<int8_t>({3, 7, 5}, perm, DType::i8);
    check_transpose<uint16_t>({1, 17, 3}, perm, DType::bf16);
    check_transpose<double>({33, 1, 7}, perm, DType::f64);
  }
  check_transpose<int64_t>({2, 3, 1, 4}, {-1, 0, 2, 1}, DType::i64);
  check_transpose<float>({300, 200}, {1, 0}, DType::f32);
  check_transpose<float>({}, {}, DType::f32);
}

TEST_CASE("broadcast_to repeats size-1 and missing leading dims") {
  for (const auto& [in_dims, out_dims] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{7, 1}, {3, 7, 17}}, {{}, {5}}, {{17}, {7, 17}}, {{1, 3}, {1, 3}}, {{1}, {200, 300}}}) {
    Buffer<int32_t> x = make(in_dims, uniform_ints(count_of(in_dims), 71, -100, 100));
    Buffer<int32_t> y = empty<int32_t>(out_dims);
    run(OpKind::broadcast_to, {{"shape", Attr::of_shape(shape_from_dims(out_dims))}}, {x.view()}, {y.view()});
    std::vector<int32_t> want;
    for (int64_t i = 0; i < count_of(out_dims); ++i)
      want.push_back(x.values[size_t(broadcast_source(unravel(i, out_dims), in_dims))]);
    check_equal(y.values, want);
  }
}

TEST_CASE("concat and split along any axis are inverse") {
  for (int64_t axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    const size_t a = size_t(axis < 0 ? axis + 3 : axis);
    std::vector<Buffer<float>> parts;
    std::vector<int64_t> out_dims = {3, 7, 5};
    out_dims[a] = 0;
    for (int64_t size : {2, 1, 3}) {
      std::vector<int64_t> dims = {3, 7, 5};
      dims[a] = size;
      out_dims[a] += size;
      parts.push_back(make(dims, uniform(count_of(dims), unsigned(79 + size))));
    }
    Buffer<float> joined = empty<float>(out_dims);
    std::vector<View> inputs;
    for (auto& p : parts)
      inputs.push_back(p.view());
    run(OpKind::concat, {{"axis", Attr::of_int(axis)}}, inputs, {joined.view()});
    for (int64_t i = 0; i < count_of(out_dims); ++i) {
      std::vector<int64_t> index = unravel(i, out_dims);
      size_t part = 0;
      while (index[a] >= parts[part].dims[a])
        index[a] -= parts[part++].dims[a];
      CAPTURE(i);
      REQUIRE(joined.values[size_t(i)] == parts[part].values[size_t(ravel(index, parts[part].dims))]);
    }
    std::vector<Buffer<float>> pieces;
    std::vector<View> outputs;
    for (const auto& p : parts)
      pieces.push_back(empty<float>(p.dims));
    for (auto& p : pieces)
      outputs.push_back(p.view());
    run(OpKind::split, {{"axis", Attr::of_int(axis)}, {"sizes", Attr::of_ints({2, 1, 3})}}, {joined.view()}, outputs);
    for (size_t p = 0; p < parts.size(); ++p)
      check_equal(pieces[p].values, parts[p].values);
  }
}

TEST_CASE("slice takes starts and positive steps per axis and refuses other steps") {
  Buffer<int64_t> x = make({7, 17, 3}, std::vector<int64_t>(7 * 17 * 3));
  for (size_t i = 0; i < x.values.size(); ++i)
    x.values[i] = int64_t(i);
  struct Case {
    std::vector<int64_t> starts, steps, out_dims;
  };
  for (const Case& c : std::vector<Case>{{{0, 0, 0}, {1, 1, 1}, {7, 17, 3}},
                                         {{1, 2, 0}, {2, 5, 1}, {3, 3, 3}},
                                         {{6, 16, 2}, {1, 1, 1}, {1, 1, 1}},
                                         {{0, 3, 1}, {3, 1, 2}, {3, 14, 1}},
                                         {{7, 0, 0}, {1, 1, 1}, {0, 17, 3}}}) {
    Buffer<int64_t> y = empty<int64_t>(c.out_dims);
    std::vector<int64_t> ends(3, std::numeric_limits<int64_t>::max());
    run(OpKind::slice,
        {{"starts", Attr::of_ints(c.starts)}, {"ends", Attr::of_ints(ends)}, {"steps", Attr::of_ints(c.steps)}},
        {x.view()}, {y.view()});
    std::vector<int64_t> want;
    for (int64_t i = 0; i < count_of(c.out_dims); ++i) {
      std::vector<int64_t> index = unravel(i, c.out_dims);
      for (size_t d = 0; d < 3; ++d)
        index[d] = c.starts[d] + index[d] * c.steps[d];
      want.push_back(x.values[size_t(ravel(index, x.dims))]);
    }
    check_equal(y.values, want);
  }
  Buffer<int64_t> y = empty<int64_t>({7, 17, 3});
  const Attrs reversed{
      {"starts", Attr::of_ints({0, 0, 0})}, {"ends", Attr::of_ints({7, 17, 3})}, {"steps", Attr::of_ints({1, -1, 1})}};
  try {
    run(OpKind::slice, reversed, {x.view()}, {y.view()});
    FAIL("a negative step was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::unsupported);
    CHECK(e.message().find("step -1 on axis 1") != std::string::npos);
  }
}

TEST_CASE("gather picks along an axis with i32 or i64 indices, wrapping negative ones") {
  Buffer<float> data = make({3, 5, 2}, uniform(30, 83));
  for (int64_t axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    const size_t a = size_t(axis < 0 ? axis + 3 : axis);
    const int64_t size = data.dims[a];
    std::vector<int64_t> raw = {0, size - 1, -1, -size, 1 % size, 0};
    Buffer<int64_t> idx64 = make({2, 3}, raw);
    std::vector<int64_t> out_dims(data.dims.begin(), data.dims.begin() + int64_t(a));
    out_dims.insert(out_dims.end(), {2, 3});
    out_dims.insert(out_dims.end(), data.dims.begin() + int64_t(a) + 1, data.dims.end());
    std::vector<float> want;
    for (int64_t i = 0; i < count_of(out_dims); ++i) {
      const std::vector<int64_t> o = unravel(i, out_dims);
      std::vector<int64_t> index(o.begin(), o.begin() + int64_t(a));
      const int64_t r = raw[size_t(o[a] * 3 + o[a + 1])];
      index.push_back(r < 0 ? r + size : r);
      index.insert(index.end(), o.begin() + int64_t(a) + 2, o.end());
      want.push_back(data.values[size_t(ravel(index, data.dims))]);
    }
    Buffer<float> y = empty<float>(out_dims);
    run(OpKind::gather, {{"axis", Attr::of_int(axis)}}, {data.view(), idx64.view()}, {y.view()});
    check_equal(y.values, want);
    Buffer<int32_t> idx32 = make({2, 3}, std::vector<int32_t>(raw.begin(), raw.end()));
    std::fill(y.values.begin(), y.values.end(), 0.0f);
    run(OpKind::gather, {{"axis", Attr::of_int(axis)}}, {data.view(), idx32.view()}, {y.view()});
    check_equal(y.values, want);
  }
}

TEST_CASE("gather reports an out-of-range index with the index and the axis") {
  Buffer<float> data = make({3, 5}, uniform(15, 89));
  Buffer<int32_t> idx = make<int32_t>({2}, {1, 5});
  Buffer<float> y = empty<float>({3, 2});
  try {
    run(OpKind::gather, {{"axis", Attr::of_int(1)}}, {data.view(), idx.view()}, {y.view()});
    FAIL("index 5 was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::shape);
    CHECK(e.message().find("index 5 is out of range for axis 1 of size 5") != std::string::npos);
  }
  Buffer<int64_t> negative = make<int64_t>({1}, {-4});
  Buffer<float> z = empty<float>({1, 5});
  CHECK_THROWS_WITH_AS(run(OpKind::gather, {{"axis", Attr::of_int(0)}}, {data.view(), negative.view()}, {z.view()}),
                       doctest::Contains("index -4 is out of range for axis 0 of size 3"), Error);
}

TEST_CASE("pad surrounds the input with a constant converted to its dtype") {
  struct Case {
    std::vector<int64_t> dims, pads;
  };
  for (const Case& c : std::vector<Case>{
           {{3, 7}, {1, 2, 0, 3}}, {{2, 1, 3}, {0, 0, 2, 1, 1, 0}}, {{5}, {0, 0}}, {{4, 1}, {0, 0, 2, 2}}, {{}, {}}}) {
    std::vector<int64_t> out_dims = c.dims;
    for (size_t d = 0; d < c.dims.size(); ++d)
      out_dims[d] += c.pads[2 * d] + c.pads[2 * d + 1];
    Buffer<int32_t> x = make(c.dims, uniform_ints(count_of(c.dims), 97, 1, 9));
    Buffer<int32_t> y = empty<int32_t>(out_dims);
    run(OpKind::pad, {{"pads", Attr::of_ints(c.pads)}, {"value", Attr::of_float(-7.9)}}, {x.view()}, {y.view()});
    std::vector<int32_t> want;
    for (int64_t i = 0; i < count_of(out_dims); ++i) {
      std::vector<int64_t> index = unravel(i, out_dims);
      bool inside = true;
      for (size_t d = 0; d < index.size(); ++d) {
        index[d] -= c.pads[2 * d];
        inside = inside && index[d] >= 0 && index[d] < c.dims[d];
      }
      want.push_back(inside ? x.values[size_t(ravel(index, c.dims))] : -7);
    }
    check_equal(y.values, want);
  }
  Buffer<uint16_t> h = make({1}, std::vector<uint16_t>{0x3c00}, DType::f16);
  Buffer<uint16_t> hy = empty<uint16_t>({3}, DType::f16);
  run(OpKind::pad, {{"pads", Attr::of_ints({1, 1})}, {"value", Attr::of_float(0.5)}}, {h.view()}, {hy.view()});
  check_equal(hy.values, {0x3800, 0x3c00, 0x3800});
}

TEST_CASE("full fills every element with the value converted to the dtype") {
  Buffer<float> f = empty<float>({7, 17});
  run(OpKind::full,
      {{"shape", Attr::of_shape({7, 17})}, {"value", Attr::of_float(2.5)}, {"dtype", Attr::of_dtype(DType::f32)}}, {},
      {f.view()});
  check_equal(f.values, std::vector<float>(7 * 17, 2.5f));
  Buffer<int32_t> i = empty<int32_t>({50000});
  run(OpKind::full,
      {{"shape", Attr::of_shape({50000})}, {"value", Attr::of_float(-3.7)}, {"dtype", Attr::of_dtype(DType::i32)}}, {},
      {i.view()});
  check_equal(i.values, std::vector<int32_t>(50000, -3));
  Buffer<uint8_t> b = empty<uint8_t>({3}, DType::boolean);
  run(OpKind::full,
      {{"shape", Attr::of_shape({3})}, {"value", Attr::of_float(0.25)}, {"dtype", Attr::of_dtype(DType::boolean)}}, {},
      {b.view()});
  check_equal(b.values, {1, 1, 1});
  Buffer<uint16_t> bf = empty<uint16_t>({2}, DType::bf16);
  run(OpKind::full,
      {{"shape", Attr::of_shape({2})}, {"value", Attr::of_float(-2.0)}, {"dtype", Attr::of_dtype(DType::bf16)}}, {},
      {bf.view()});
  check_equal(bf.values, {0xc000, 0xc000});
}

TEST_CASE("arange fills start + i * step, truncating toward zero for integers") {
  auto attrs = [](double start, double stop, double step, DType dtype) {
    return Attrs{{"start", Attr::of_float(start)},
                 {"stop", Attr::of_float(stop)},
                 {"step", Attr::of_float(step)},
                 {"dtype", Attr::of_dtype(dtype)}};
  };
  Buffer<float> f = empty<float>({4});
  run(OpKind::arange, attrs(0.5, 2.5, 0.5, DType::f32), {}, {f.view()});
  check_equal(f.values, {0.5f, 1.0f, 1.5f, 2.0f});
  Buffer<int64_t> l = empty<int64_t>({4});
  run(OpKind::arange, attrs(3, -2, -1.5, DType::i64), {}, {l.view()});
  check_equal(l.values, {3, 1, 0, -1});
  Buffer<double> d = empty<double>({33});
  run(OpKind::arange, attrs(0, 33, 1, DType::f64), {}, {d.view()});
  for (size_t k = 0; k < d.values.size(); ++k)
    CHECK(d.values[k] == double(k));
}

TEST_CASE("kernels refuse preallocated results whose dims do not fit the operands") {
  Buffer<float> x = make({3, 7}, uniform(21, 101));
  Buffer<float> wrong = empty<float>({7, 3});
  CHECK_THROWS_WITH_AS(run(OpKind::exp, {}, {x.view()}, {wrong.view()}),
                       doctest::Contains("result dims [7, 3] differ from operand dims [3, 7]"), Error);
  CHECK_THROWS_AS(run(OpKind::softmax, {{"axis", Attr::of_int(1)}}, {x.view()}, {wrong.view()}), Error);
  Buffer<float> two = empty<float>({2});
  CHECK_THROWS_WITH_AS(run(OpKind::reduce_sum, {{"axes", Attr::of_ints({1})}, {"keepdims", Attr::of_bool(false)}},
                           {x.view()}, {two.view()}),
                       doctest::Contains("do not match the reduction of [3, 7]"), Error);
  CHECK_THROWS_AS(
      run(OpKind::argmax, {{"axis", Attr::of_int(0)}, {"keepdims", Attr::of_bool(false)}}, {x.view()}, {two.view()}),
      Error);
  Buffer<float> y = make({3, 5}, uniform(15, 103));
  Buffer<float> joined = empty<float>({6, 7});
  CHECK_THROWS_WITH_AS(run(OpKind::concat, {{"axis", Attr::of_int(0)}}, {x.view(), y.view()}, {joined.view()}),
                       doctest::Contains("[3, 5] and [6, 7] differ outside axis 0"), Error);
}

TEST_CASE("floor, ceil, round and sign keep integers whole; the activations refuse them") {
  Buffer<int32_t> x = make<int32_t>({4}, {-7, 0, 3, INT32_MIN}), y = empty<int32_t>({4});
  for (OpKind kind : {OpKind::floor, OpKind::ceil, OpKind::round}) {
    run(kind, {}, {x.view()}, {y.view()});
    CHECK(y.values == x.values);
  }
  run(OpKind::sign, {}, {x.view()}, {y.view()});
  CHECK(y.values == std::vector<int32_t>{-1, 0, 1, -1});
  for (OpKind kind : {OpKind::hardswish, OpKind::log1p, OpKind::expm1})
    CHECK_THROWS_AS(run(kind, {}, {x.view()}, {y.view()}), Error);
  // f16 rounds in f32 and back: 2.5 -> 2 (halves to even), -1.5 -> -2.
  Buffer<uint16_t> xh = make<uint16_t>({2}, {0x4100, 0xbe00}, DType::f16), yh = empty<uint16_t>({2}, DType::f16);
  run(OpKind::round, {}, {xh.view()}, {yh.view()});
  CHECK(yh.values == std::vector<uint16_t>{0x4000, 0xc000});
}
