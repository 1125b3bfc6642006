// kiln's scaled_dot_product_attention and topk against PyTorch's results, checked in as data
// (tests/data/pytorch_attention.inc, written by tests/data/make_pytorch_attention.py): eager mode,
// the interpreter and, where built, the JIT tier; then the JIT's fused attention against the
// interpreter's reference kernel on random inputs, odd sizes and edge values.
#include "kiln_config.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct AttentionRow {
  const char* mask; // "none", "bool" [L, S], "float" [L, S] or "padding" (bool [2, 1, 1, S])
  int64_t L, S;
  bool causal;
  double scale; // 0: the default 1/sqrt(E)
  int64_t count;
  double want[204];
};

struct TopkRow {
  int64_t rows, cols, axis, k;
  bool largest;
  int64_t count;
  double values[17];
  int64_t indices[17];
};

#include "tests/data/pytorch_attention.inc"

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The generator's inputs: exact in f32.
Tensor input(uint64_t seed, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[size_t(i)] = float(double((uint64_t(i) * 7919 + seed * 104729) % 1024) / 256 - 2);
  return Tensor::from_vector(values, dims);
}

Tensor mask_of(const AttentionRow& row) {
  const std::string kind = row.mask;
  if (kind == "bool") {
    std::vector<bool> m;
    for (int64_t i = 0; i < row.L; ++i)
      for (int64_t j = 0; j < row.S; ++j)
        m.push_back(row.L > 1 && i == 1 ? false : (i * 3 + j * 5) % 4 != 0);
    return Tensor::from_vector(m, {row.L, row.S});
  }
  if (kind == "float") {
    std::vector<float> m;
    for (int64_t i = 0; i < row.L; ++i)
      for (int64_t j = 0; j < row.S; ++j)
        m.push_back((i * j) % 3 == 1 ? -kInf : float(((i + 2 * j) % 5 - 2) * 0.5));
    return Tensor::from_vector(m, {row.L, row.S});
  }
  if (kind == "padding") {
    std::vector<bool> m;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 0; j < row.S; ++j)
        m.push_back(j < row.S - b * 3);
    return Tensor::from_vector(m, {2, 1, 1, row.S});
  }
  return {};
}

std::optional<double> scale_of(const AttentionRow& row) {
  return row.scale == 0 ? std::nullopt : std::optional<double>(row.scale);
}

// torch's f64 results on the same f32 inputs; kiln computes in f32 (the JIT) or f64 rounded to f32
// (the interpreter). NaN must meet NaN.
void check_attention(const AttentionRow& row, const char* where, const Tensor& y) {
  CAPTURE(where);
  CAPTURE(row.mask);
  CAPTURE(row.L);
  CAPTURE(row.S);
  CAPTURE(row.causal);
  CAPTURE(row.scale);
  REQUIRE(y.dtype() == DType::f32);
  REQUIRE(y.dims() == std::vector<int64_t>{2, 2, row.L, 3});
  for (int64_t i = 0; i < row.count; ++i) {
    CAPTURE(i);
    const double got = y.data<float>()[i], want = row.want[i];
    if (std::isnan(want)) {
      CHECK_MESSAGE(std::isnan(got), "got " << got << ", torch NaN");
      continue;
    }
    CHECK_MESSAGE(std::fabs(got - want) <= 1e-5 * (1 + std::fabs(want)), "got " << got << ", torch " << want);
  }
}

Tensor attend(const AttentionRow& row, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  return F::scaled_dot_product_attention(q, k, v, mask, row.causal, scale_of(row));
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 4);
}

void check_attention_compiled(JitMode mode, const char* where) {
  for (const AttentionRow& row : kAttentionRows) {
    const Tensor q = input(1, {2, 2, row.L, 5}), k = input(2, {2, 2, row.S, 5}), v = input(3, {2, 2, row.S, 3});
    const Tensor mask = mask_of(row);
    if (!mask.defined()) {
      auto fn = [&row](Tensor a, Tensor b, Tensor c) { return attend(row, a, b, c, {}); };
      check_attention(row, where,
                      compile(fn, {.session = session_in(mode)})(q.layout(), k.layout(), v.layout())(q, k, v));
      continue;
    }
    auto fn = [&row](Tensor a, Tensor b, Tensor c, Tensor m) { return attend(row, a, b, c, m); };
    check_attention(
        row, where,
        compile(fn, {.session = session_in(mode)})(q.layout(), k.layout(), v.layout(), mask.layout())(q, k, v, mask));
  }
}

} // namespace

TEST_CASE("eager scaled_dot_product_attention gives PyTorch's results, NaN for a row that attends nothing") {
  for (const AttentionRow& row : kAttentionRows) {
    const Tensor q = input(1, {2, 2, row.L, 5}), k = input(2, {2, 2, row.S, 5}), v = input(3, {2, 2, row.S, 3});
    check_attention(row, "eager", attend(row, q, k, v, mask_of(row)));
  }
}

TEST_CASE("compiled on the interpreter, scaled_dot_product_attention gives PyTorch's results") {
  check_attention_compiled(JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, scaled_dot_product_attention gives PyTorch's results") {
  check_attention_compiled(JitMode::always, "jit");
}
#endif

TEST_CASE("scaled_dot_product_attention refuses a mask with is_causal and mismatched operands, naming them") {
  const Tensor q = input(1, {2, 3, 4}), k = input(2, {2, 5, 4}), v = input(3, {2, 5, 6});
  const Tensor mask = Tensor::full({3, 5}, 1.0, DType::boolean);
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(q, k, v, mask, true),
                       doctest::Contains("attn_mask and is_causal exclude each other"), Error);
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(q, input(2, {2, 5, 3}), v), doctest::Contains("embedding dim E"),
                       Error);
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(q, k, input(3, {2, 4, 6})), doctest::Contains("source length S"),
                       Error);
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(q, input(2, {3, 5, 4}), input(3, {3, 5, 6})),
                       doctest::Contains("batch dims"), Error);
  CHECK_THROWS_WITH_AS(F::scaled_dot_product_attention(q, k, v, Tensor::full({3, 4}, 1.0, DType::boolean)),
                       doctest::Contains("kiln.scaled_dot_product_attention"), Error);
  try {
    F::scaled_dot_product_attention(q, k, v, Tensor::full({3, 5}, 1.0, DType::i32));
    FAIL("an i32 mask was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::dtype);
    CHECK(std::string(e.what()).find("attn_mask must be bool") != std::string::npos);
  }
}

namespace {

Tensor topk_input(const TopkRow& row) {
  return Tensor::from_vector(std::vector<float>(kTopkInput, kTopkInput + 17), {row.rows, row.cols});
}

bool same_value(double got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; }

// Values match torch's (a zero of either sign meets a zero: torch orders -0 and +0 as ties); an
// index must point at its value, be unique, and equal torch's where the value occurs once (torch's
// order among ties is unspecified; kiln's is index order, checked separately).
void check_topk(const TopkRow& row, const char* where, const Tensor& values, const Tensor& indices) {
  CAPTURE(where);
  CAPTURE(row.rows);
  CAPTURE(row.cols);
  CAPTURE(row.axis);
  CAPTURE(row.k);
  CAPTURE(row.largest);
  REQUIRE(values.dtype() == DType::f32);
  REQUIRE(indices.dtype() == DType::i64);
  REQUIRE(values.numel() == row.count);
  REQUIRE(indices.numel() == row.count);
  const int64_t out_cols = row.axis == 1 ? row.k : row.cols;
  std::vector<std::pair<int64_t, int64_t>> seen; // (line along the axis, index)
  for (int64_t i = 0; i < row.count; ++i) {
    CAPTURE(i);
    const double got = values.data<float>()[i];
    const int64_t index = indices.data<int64_t>()[i], r = i / out_cols, c = i % out_cols;
    CHECK_MESSAGE(same_value(got, row.values[i]), "got " << got << ", torch " << row.values[i]);
    const int64_t line = row.axis == 1 ? r : c, size = row.axis == 1 ? row.cols : row.rows;
    REQUIRE(index >= 0);
    REQUIRE(index < size);
    auto input_at = [&](int64_t j) {
      return row.axis == 1 ? kTopkInput[r * row.cols + j] : kTopkInput[j * row.cols + c];
    };
    CHECK(same_value(input_at(index), got));
    CHECK(std::find(seen.begin(), seen.end(), std::pair(line, index)) == seen.end());
    seen.emplace_back(line, index);
    int64_t copies = 0;
    for (int64_t j = 0; j < size; ++j)
      copies += same_value(input_at(j), got);
    if (copies == 1) CHECK(index == row.indices[i]);
  }
}

void check_topk_compiled(JitMode mode, const char* where) {
  for (const TopkRow& row : kTopkRows) {
    const Tensor x = topk_input(row);
    auto values = [&row](Tensor t) { return F::topk(t, row.k, row.axis, row.largest).first; };
    auto indices = [&row](Tensor t) { return F::topk(t, row.k, row.axis, row.largest).second; };
    check_topk(row, where, compile(values, {.session = session_in(mode)})(x.layout())(x),
               compile(indices, {.session = session_in(mode)})(x.layout())(x));
  }
}

} // namespace

TEST_CASE("eager topk gives PyTorch's values, NaN above every number, and indices that point at them") {
  for (const TopkRow& row : kTopkRows) {
    const auto [values, indices] = F::topk(topk_input(row), row.k, row.axis, row.largest);
    check_topk(row, "eager", values, indices);
  }
}

TEST_CASE("compiled on the interpreter, topk gives PyTorch's values and indices") {
  check_topk_compiled(JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, topk gives PyTorch's values and indices") {
  check_topk_compiled(JitMode::always, "jit");
}
#endif

TEST_CASE("topk ties come in index order, integers included, and sorted = false keeps that order") {
  const Tensor x = Tensor::from_vector(std::vector<int32_t>{2, 1, 2, 1, 2, INT32_MIN, INT32_MAX}, {7});
  const auto [values, indices] = F::topk(x, 4, 0, true, false);
  CHECK(std::vector<int32_t>(values.data<int32_t>(), values.data<int32_t>() + 4) ==
        std::vector<int32_t>{INT32_MAX, 2, 2, 2});
  CHECK(std::vector<int64_t>(indices.data<int64_t>(), indices.data<int64_t>() + 4) == std::vector<int64_t>{6, 0, 2, 4});
  const auto [low, low_indices] = F::topk(x, 3, -1, false);
  CHECK(std::vector<int32_t>(low.data<int32_t>(), low.data<int32_t>() + 3) == std::vector<int32_t>{INT32_MIN, 1, 1});
  CHECK(std::vector<int64_t>(low_indices.data<int64_t>(), low_indices.data<int64_t>() + 3) ==
        std::vector<int64_t>{5, 1, 3});
}

TEST_CASE("topk refuses k beyond the axis, a negative k and a missing axis, naming the op") {
  const Tensor x = Tensor::rand({3, 5}, 1);
  CHECK_THROWS_WITH_AS(F::topk(x, 6), doctest::Contains("k 6 is larger than axis 1"), Error);
  CHECK_THROWS_WITH_AS(F::topk(x, -1), doctest::Contains("k must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(F::topk(x, 1, 2), doctest::Contains("kiln.topk"), Error);
  const auto [none, none_indices] = F::topk(x, 0, 0);
  CHECK(none.dims() == std::vector<int64_t>{0, 5});
  CHECK(none_indices.dims() == std::vector<int64_t>{0, 5});
}

#if KILN_HAS_JIT
namespace {

template <class Fn, class... Inputs> void check_tiers(const std::string& what, Fn fn, const Inputs&... inputs) {
  INFO(what);
  const Tensor want = compile(fn, {.session = session_in(JitMode::off)})(inputs.layout()...)(inputs...);
  const Tensor got = compile(fn, {.session = session_in(JitMode::always)})(inputs.layout()...)(inputs...);
  REQUIRE(got.dims() == want.dims());
  // The interpreter sums in f64; the JIT's oneDNN matmuls and f32 softmax differ in the last bits.
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double e = want.data<float>()[i], g = got.data<float>()[i];
    const bool same = std::isnan(e)   ? std::isnan(g)
                      : std::isinf(e) ? g == e
                                      : std::fabs(g - e) <= 1e-4 * (1 + std::fabs(e));
    CHECK_MESSAGE(same, "element " << i << ": interpreter " << e << ", jit " << g);
  }
}

// Random values in [lo, hi].
Tensor sample(const std::vector<int64_t>& dims, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
  return Tensor::rand(dims, seed, lo, hi);
}

} // namespace

TEST_CASE("the fused JIT attention agrees with the interpreter at odd sizes, with and without masks") {
  for (int64_t L : {1, 7, 17, 130}) {
    for (int64_t S : {1, 7, 17}) {
      const std::string size = "L " + std::to_string(L) + " S " + std::to_string(S);
      const Tensor q = sample({2, 3, L, 9}, 1), k = sample({2, 3, S, 9}, 2), v = sample({2, 3, S, 5}, 3);
      check_tiers(
          size, [](Tensor a, Tensor b, Tensor c) { return F::scaled_dot_product_attention(a, b, c); }, q, k, v);
      check_tiers(
          size + " causal",
          [](Tensor a, Tensor b, Tensor c) { return F::scaled_dot_product_attention(a, b, c, {}, true); }, q, k, v);
      Tensor additive = sample({L, S}, 4, -3.0f, 3.0f);
      for (int64_t i = 0; i < additive.numel(); i += 4)
        additive.data<float>()[i] = -kInf;
      check_tiers(
          size + " float mask",
          [](Tensor a, Tensor b, Tensor c, Tensor m) { return F::scaled_dot_product_attention(a, b, c, m); }, q, k, v,
          additive);
      const Tensor keep = F::gt(sample({3, 1, S}, 5), F::scalar(-1.0));
      check_tiers(
          size + " bool mask per head",
          [](Tensor a, Tensor b, Tensor c, Tensor m) {
            return F::scaled_dot_product_attention(a, b, c, m, false, 0.5);
          },
          q, k, v, keep);
    }
  }
}

TEST_CASE("topk on the JIT tier agrees with the interpreter at odd sizes and edge values") {
  Tensor x = sample({7, 17, 3}, 9, -4.0f, 4.0f);
  const float edges[] = {0.0f, -0.0f, kNaN, kInf, -kInf, 1e30f, -1e-40f};
  for (int64_t i = 0; i < x.numel(); i += 5)
    x.data<float>()[i] = edges[size_t(i / 5) % 7];
  for (int64_t axis : {0, 1, 2})
    for (bool largest : {true, false})
      for (int64_t k : {int64_t(1), x.dims()[size_t(axis)]}) {
        const std::string what =
            "axis " + std::to_string(axis) + " k " + std::to_string(k) + (largest ? " largest" : " smallest");
        check_tiers(
            what + " values", [=](Tensor t) { return F::topk(t, k, axis, largest).first; }, x);
        check_tiers(
            what + " indices", [=](Tensor t) { return F::cast(F::topk(t, k, axis, largest).second, DType::f32); }, x);
      }
}

TEST_CASE("the fused JIT attention agrees with the interpreter on large logits, -inf, NaN and empty rows") {
  Tensor q = sample({2, 17, 8}, 6, -50.0f, 50.0f), k = sample({2, 7, 8}, 7, -50.0f, 50.0f), v = sample({2, 7, 3}, 8);
  q.data<float>()[5] = kNaN; // one query row gives NaN
  k.data<float>()[9] = 0.0f; // and zeros of both signs
  k.data<float>()[10] = -0.0f;
  v.data<float>()[4] = 1e30f; // a huge value reaches the rows that weigh it
  Tensor mask = Tensor::full({17, 7}, 0.0);
  for (int64_t j = 0; j < 7; ++j)
    mask.data<float>()[3 * 7 + j] = -kInf; // row 3 attends nothing
  mask.data<float>()[4 * 7 + 2] = kInf;    // +inf in a row: inf - inf, NaN as torch
  check_tiers(
      "edges", [](Tensor a, Tensor b, Tensor c, Tensor m) { return F::scaled_dot_product_attention(a, b, c, m); }, q, k,
      v, mask);
  check_tiers(
      "large scale",
      [](Tensor a, Tensor b, Tensor c) { return F::scaled_dot_product_attention(a, b, c, {}, true, 1e3); }, q, k, v);
}
#endif
