// F::einsum against torch.einsum's results (tests/data/pytorch_einsum.inc, written by
// tests/data/make_pytorch_einsum.py), and F::embedding and F::expand against naive loops: eager
// mode, the interpreter and, where built, the JIT tier. All three are trace-time lowerings onto
// existing ops, so the graphs hold no op of their own.
#include "kiln_config.h"
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;

namespace {

struct EinsumRow {
  const char* equation;
  int64_t operands;
  int64_t dims[2][4]; // each operand's dims, as many as its subscript has letters
  int64_t rank;
  int64_t out[4];
  int64_t count;
  double want[714];
};

#include "tests/data/pytorch_einsum.inc"

// The generator's operands: exact in f32.
Tensor operand(uint64_t seed, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[size_t(i)] = float(double((uint64_t(i) * 7919 + seed * 104729) % 1024) / 256 - 2);
  return Tensor::from_vector(values, dims);
}

std::vector<Tensor> operands_of(const EinsumRow& row) {
  std::vector<size_t> letters(1, 0);
  for (const char* c = row.equation; *c && *c != '-'; ++c) {
    if (*c == ',') letters.push_back(0);
    if (std::isalpha(static_cast<unsigned char>(*c))) ++letters.back();
  }
  std::vector<Tensor> operands;
  for (int64_t i = 0; i < row.operands; ++i)
    operands.push_back(operand(uint64_t(i + 1), std::vector<int64_t>(row.dims[i], row.dims[i] + letters[size_t(i)])));
  return operands;
}

// Products of multiples of 1/256 below 2 summed 17 at a time are exact in f32: torch's f64
// results must come out within rounding of one f32 ulp.
void check_einsum(const EinsumRow& row, const char* where, const Tensor& y) {
  CAPTURE(where);
  CAPTURE(row.equation);
  REQUIRE(y.dims() == std::vector<int64_t>(row.out, row.out + row.rank));
  for (int64_t i = 0; i < row.count; ++i) {
    CAPTURE(i);
    const double got = y.data<float>()[i], want = row.want[i];
    CHECK_MESSAGE(std::fabs(got - want) <= 1e-6 * (1 + std::fabs(want)), "got " << got << ", torch " << want);
  }
}

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy policy;
  policy.mode = mode;
  return std::make_shared<Session>(policy, 4);
}

void check_einsum_compiled(JitMode mode, const char* where) {
  for (const EinsumRow& row : kEinsumRows) {
    const std::vector<Tensor> in = operands_of(row);
    const std::string equation = row.equation;
    if (in.size() == 1) {
      auto fn = [&](Tensor a) { return F::einsum(equation, {a}); };
      check_einsum(row, where, compile(fn, {.session = session_in(mode)})(in[0].layout())(in[0]));
      continue;
    }
    auto fn = [&](Tensor a, Tensor b) { return F::einsum(equation, {a, b}); };
    check_einsum(row, where, compile(fn, {.session = session_in(mode)})(in[0].layout(), in[1].layout())(in[0], in[1]));
  }
}

std::string einsum_error(const std::string& equation, const std::vector<Tensor>& operands) {
  try {
    F::einsum(equation, operands);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("eager einsum gives torch.einsum's results for one and two operands") {
  for (const EinsumRow& row : kEinsumRows)
    check_einsum(row, "eager", F::einsum(row.equation, operands_of(row)));
}

TEST_CASE("compiled on the interpreter, einsum gives torch.einsum's results") {
  check_einsum_compiled(JitMode::off, "interpreter");
}

#if KILN_HAS_JIT
TEST_CASE("compiled on the JIT tier, einsum gives torch.einsum's results") {
  check_einsum_compiled(JitMode::always, "jit");
}
#endif

TEST_CASE("einsum names the position of what is wrong in a malformed equation") {
  const Tensor m = operand(1, {3, 3}), v = operand(2, {3});
  CHECK(einsum_error("ii->i", {m}).find("'i' repeats in one operand (diagonals are not supported) at position 1") !=
        std::string::npos);
  CHECK(einsum_error("i...j", {m}).find("'...' (ellipsis) is not supported at position 1") != std::string::npos);
  CHECK(einsum_error("ij->k", {m}).find("output letter 'k' is in no operand at position 4") != std::string::npos);
  CHECK(einsum_error("ij->ii", {m}).find("'i' repeats in the output at position 5") != std::string::npos);
  CHECK(einsum_error("ij-j", {m}).find("unexpected '-' at position 2") != std::string::npos);
  CHECK(einsum_error("i2", {v}).find("unexpected '2' at position 1") != std::string::npos);
  CHECK(einsum_error("ij,jk->ik", {m}).find("names 2 operands, got 1") != std::string::npos);
  CHECK(einsum_error("ijk", {m}).find("has 2 dims, \"ijk\" names 3") != std::string::npos);
  CHECK(einsum_error("ij,j->i", {m, operand(2, {4})}).find("'j' is 3 and 4 in different operands") !=
        std::string::npos);
  CHECK(einsum_error("i,i,i->", {v, v, v}).find("one or two operands") != std::string::npos);
  CHECK(einsum_error("ij->k", {m}).find("kiln.einsum at") != std::string::npos);
}

#if KILN_HAS_JIT
TEST_CASE("einsum's decomposition agrees across tiers on edge values") {
  Tensor a = Tensor::rand({2, 7, 17}, 3, -4.0f, 4.0f), b = Tensor::rand({2, 17, 5}, 4, -4.0f, 4.0f);
  const float edges[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                         -1e30f};
  for (int64_t i = 0; i < a.numel(); i += 11)
    a.data<float>()[i] = edges[size_t(i / 11) % 5];
  auto fn = [](Tensor x, Tensor y) { return F::einsum("bij,bjk->bki", {x, y}); };
  const Tensor want = compile(fn, {.session = session_in(JitMode::off)})(a.layout(), b.layout())(a, b);
  const Tensor got = compile(fn, {.session = session_in(JitMode::always)})(a.layout(), b.layout())(a, b);
  REQUIRE(got.dims() == want.dims());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double e = want.data<float>()[i], g = got.data<float>()[i];
    const bool same = std::isnan(e)   ? std::isnan(g)
                      : std::isinf(e) ? g == e
                                      : std::fabs(g - e) <= 1e-4 * (1 + std::fabs(e));
    CHECK_MESSAGE(same, "element " << i << ": interpreter " << e << ", jit " << g);
  }
}
#endif

namespace {

// The naive loop: row indices[i] of weight for each i.
std::vector<float> embedding_reference(const std::vector<int64_t>& indices, const Tensor& weight) {
  std::vector<float> out;
  const int64_t d = weight.dims()[1];
  for (int64_t index : indices)
    for (int64_t c = 0; c < d; ++c)
      out.push_back(weight.data<float>()[index * d + c]);
  return out;
}

std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

} // namespace

TEST_CASE("embedding picks weight's rows in indices' shape, eager and on both tiers") {
  const Tensor weight = operand(1, {7, 5});
  const std::vector<int64_t> picks = {6, 0, 3, 3, 1, 6};
  const Tensor indices = Tensor::from_vector(picks, {2, 3});
  const Tensor eager = F::embedding(indices, weight);
  CHECK(eager.dims() == std::vector<int64_t>{2, 3, 5});
  CHECK(values_of(eager) == embedding_reference(picks, weight));
  const Tensor narrow = Tensor::from_vector(std::vector<int32_t>{6, 0, 3, 3, 1, 6}, {6});
  CHECK(values_of(F::embedding(narrow, weight)) == embedding_reference(picks, weight));
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    if (mode == JitMode::always && !KILN_HAS_JIT) continue;
    auto fn = [](Tensor i, Tensor w) { return F::embedding(i, w); };
    const Tensor y = compile(fn, {.session = session_in(mode)})(indices.layout(), weight.layout())(indices, weight);
    CHECK(values_of(y) == embedding_reference(picks, weight));
  }
}

TEST_CASE("an out-of-range embedding index is an error: eagerly as torch, in graphs on both tiers") {
  const Tensor weight = operand(1, {7, 5});
  for (int64_t bad : {int64_t(7), int64_t(-1), int64_t(1) << 40})
    CHECK_THROWS_WITH_AS(
        F::embedding(Tensor::from_vector(std::vector<int64_t>{0, bad}, {2}), weight),
        doctest::Contains(("index " + std::to_string(bad) + " (element 1) is out of range for 7 rows").c_str()), Error);
  CHECK_THROWS_WITH_AS(F::embedding(Tensor::from_vector(std::vector<int64_t>{0}, {1}), operand(1, {7})),
                       doctest::Contains("weight must be [rows, D]"), Error);
  const Tensor beyond = Tensor::from_vector(std::vector<int64_t>{2, 7}, {2});
  const Tensor negative = Tensor::from_vector(std::vector<int64_t>{-1}, {1});
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    if (mode == JitMode::always && !KILN_HAS_JIT) continue;
    auto fn = [](Tensor i, Tensor w) { return F::embedding(i, w); };
    auto compiled = compile(fn, {.session = session_in(mode)});
    CHECK_THROWS_WITH_AS(compiled(beyond.layout(), weight.layout())(beyond, weight),
                         doctest::Contains("index 7 is out of range for axis 0 of size 7"), Error);
    // Staged, gather's rule: -1 is the last row (torch raises; docs/tier-differences.md says so).
    CHECK(values_of(compiled(negative.layout(), weight.layout())(negative, weight)) ==
          embedding_reference({6}, weight));
  }
}

TEST_CASE("expand keeps -1 dims, adds leading dims and repeats size-1 dims, eager and on both tiers") {
  const Tensor x = operand(1, {3, 1});
  auto reference = [&](int64_t lead, int64_t cols) {
    std::vector<float> out;
    for (int64_t l = 0; l < lead; ++l)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < cols; ++c)
          out.push_back(x.data<float>()[r]);
    return out;
  };
  const Tensor y = F::expand(x, {2, -1, 4});
  CHECK(y.dims() == std::vector<int64_t>{2, 3, 4});
  CHECK(values_of(y) == reference(2, 4));
  CHECK(values_of(F::expand(x, {3, 1})) == reference(1, 1));
  CHECK(F::expand(x, {0, 3, 5}).dims() == std::vector<int64_t>{0, 3, 5});
  for (JitMode mode : {JitMode::off, JitMode::always}) {
    if (mode == JitMode::always && !KILN_HAS_JIT) continue;
    auto fn = [](Tensor t) { return F::expand(t, {2, -1, 17}); };
    CHECK(values_of(compile(fn, {.session = session_in(mode)})(x.layout())(x)) == reference(2, 17));
  }
}

TEST_CASE("expand refuses -1 for a new dim, a non-1 dim of another size and too few sizes") {
  const Tensor x = operand(1, {3, 1});
  CHECK_THROWS_WITH_AS(F::expand(x, {-1, 3, 1}), doctest::Contains("new leading dim 0 must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(F::expand(x, {4, 1}), doctest::Contains("dim 0 of [3, 1] is neither 1 nor 4"), Error);
  CHECK_THROWS_WITH_AS(F::expand(x, {3}), doctest::Contains("1 sizes for [3, 1], which has 2 dims"), Error);
  CHECK_THROWS_WITH_AS(F::expand(x, {3, -2}), doctest::Contains("kiln.expand at"), Error);
}
