// Symbolic dims you can compute with: expressions over symbols (batch*6, seq-1, (seq+1)/2), their
// canonical form and text, shape inference through them, binding and solving at a call, and the
// programs they make possible (a causal mask for any sequence length, the last token), checked
// against naive loops in both tiers.
#include "kiln_config.h"
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;

namespace {

std::shared_ptr<Session> session_in(JitMode mode) {
  TierPolicy p;
  p.mode = mode;
  return std::make_shared<Session>(p, 16);
}

std::vector<JitMode> tiers() {
#if KILN_HAS_JIT
  return {JitMode::off, JitMode::always};
#else
  return {JitMode::off};
#endif
}

template <class F> std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Deterministic values in [-2, 2).
Tensor ramp(const std::vector<int64_t>& dims, float phase = 0.0f) {
  Tensor t = Tensor::zeros(dims);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = 2.0f * std::sin(0.37f * float(i) + phase);
  return t;
}

} // namespace

TEST_CASE("dim expressions have one canonical form that prints and parses back") {
  const Dim batch("batch"), seq("seq");
  CHECK((batch * 6).name() == "batch*6");
  CHECK((seq - 1).name() == "seq-1");
  CHECK(((seq + 1) / 2).name() == "(seq+1)/2");
  CHECK((Dim("s0") * Dim("s1")).name() == "s0*s1");
  // Equal polynomials are equal dims however they were built.
  CHECK(Dim("s1") * Dim("s0") == Dim("s0") * Dim("s1"));
  CHECK(Dim("6*batch") == batch * 6);
  CHECK(Dim("batch + batch*5") == batch * 6);
  CHECK((seq * 2 + 3) / 2 == seq + 1);
  CHECK((batch * 6) / 3 == batch * 2);
  CHECK(((seq + 1) / 2) / 2 == (seq + 1) / 4);
  CHECK((Dim("a") * 2 + 2) / 4 == (Dim("a") + 1) / 2);
  CHECK((seq - seq).is_static());
  CHECK((seq - seq).size() == 0);
  CHECK((Dim(3) * 4).size() == 12);
  CHECK((Dim(7) / 2).size() == 3);
  CHECK(batch.is_symbol());
  CHECK(!(batch * 6).is_symbol());
  CHECK((batch * 6).is_symbolic());
  // What prints parses back to the same dim.
  for (const Dim& d : {batch * 6, seq - 1, (seq + 1) / 2, Dim("s0") * Dim("s1") - 4, ((seq + 1) / 2) * 4,
                       Dim("a") * ((Dim("b") + 1) / 2), Dim(0) - seq + 5, (Dim("a") - 3) / 2 * Dim("b")}) {
    CAPTURE(d.name());
    CHECK(Dim(d.name()) == d);
  }
  CHECK(((seq + 1) / 2 * 4).name() == "((seq+1)/2)*4");
  CHECK((Dim(0) - seq + 5).name() == "-seq+5");
}

TEST_CASE("malformed dim expressions are refused with the text and the column") {
  CHECK(mentions(message_of([] { Dim("seq/n"); }), "invalid symbolic dimension 'seq/n': a dim can only be divided "
                                                   "by a positive integer at column 5"));
  CHECK(mentions(message_of([] { Dim("(seq+1"); }), "missing ')'"));
  CHECK(mentions(message_of([] { Dim("seq+"); }), "missing operand"));
  CHECK(mentions(message_of([] { Dim("seq/0"); }), "divided by a positive integer"));
  CHECK(mentions(message_of([] { Dim("x.y"); }), "unexpected '.'"));
  CHECK(mentions(message_of([] { Dim(std::string(40, '(') + "a" + std::string(40, ')')); }), "nest deeper than 32"));
  CHECK(mentions(message_of([] { Dim("99999999999*99999999999"); }), "overflows int64"));
  CHECK(mentions(message_of([] { return Dim(3) - 5; }), "dimension size -2 is negative"));
  CHECK(mentions(message_of([] { return Dim("seq") / Dim("n"); }), "can only be divided by a static size > 0"));
}

TEST_CASE("shape inference computes with symbolic dims") {
  TensorLayout x3(DType::f32, {"batch", 6, 4});
  auto shape_of = [](auto fn, auto... specs) {
    StagedGraph g = stage(fn)(specs...);
    return g.to_mlir();
  };
  // reshape with -1 and flatten.
  CHECK(mentions(shape_of([](Tensor x) { return F::reshape(x, {-1, 4}); }, x3), "!kiln.tensor<[batch*6, 4], f32>"));
  CHECK(mentions(shape_of([](Tensor x) { return F::flatten(x, 0); }, x3), "!kiln.tensor<[batch*24], f32>"));
  CHECK(mentions(shape_of(
                     [](Tensor x) {
                       return F::reshape(x, {x.dim_of(0) * 2, -1});
                     },
                     x3),
                 "!kiln.tensor<[batch*2, 12], f32>"));
  // concat along a symbolic axis, slices with symbolic bounds, pad.
  TensorLayout tokens(DType::f32, {2, "seq", 8});
  TensorLayout one(DType::f32, {2, 1, 8});
  CHECK(mentions(shape_of(
                     [](Tensor x, Tensor y) {
                       return F::concat({x, y}, 1);
                     },
                     tokens, one),
                 "!kiln.tensor<[2, seq+1, 8], f32>"));
  CHECK(mentions(shape_of([](Tensor x) { return F::slice(x, 1, -1, std::numeric_limits<int64_t>::max()); }, tokens),
                 "!kiln.tensor<[2, 1, 8], f32>"));
  CHECK(mentions(shape_of([](Tensor x) { return F::slice(x, 1, Dim(0), x.dim_of(1) - 1); }, tokens),
                 "!kiln.tensor<[2, seq-1, 8], f32>"));
  CHECK(mentions(shape_of([](Tensor x) { return F::slice(x, 1, 0, -1, 2); }, tokens),
                 "!kiln.tensor<[2, seq/2, 8], f32>"));
  CHECK(mentions(shape_of(
                     [](Tensor x) {
                       return F::pad(x, {0, 0, 1, 2, 0, 0});
                     },
                     tokens),
                 "!kiln.tensor<[2, seq+3, 8], f32>"));
  // Convolution and pooling of symbolic spatial dims.
  TensorLayout image(DType::f32, {1, 3, "h", "w"});
  TensorLayout weight(DType::f32, {8, 3, 3, 3});
  CHECK(mentions(shape_of(
                     [](Tensor x, Tensor w) {
                       return F::conv2d(x, w, {}, {.stride = {2, 2}, .padding = {1, 1}});
                     },
                     image, weight),
                 "!kiln.tensor<[1, 8, (h+1)/2, (w+1)/2], f32>"));
  CHECK(mentions(shape_of(
                     [](Tensor x) {
                       return F::max_pool2d(x, {.kernel = {2, 2}, .stride = {2, 2}});
                     },
                     image),
                 "!kiln.tensor<[1, 3, h/2, w/2], f32>"));
  // Sizes taken from a tensor.
  CHECK(mentions(shape_of([](Tensor x) { return F::arange(x.dim_of(1)); }, tokens), "!kiln.tensor<[seq], i64>"));
  CHECK(mentions(shape_of(
                     [](Tensor x) {
                       return F::full({x.dim_of(1), x.dim_of(1)}, 0.0);
                     },
                     tokens),
                 "!kiln.tensor<[seq, seq], f32>"));
}

TEST_CASE("symbolic graphs print as MLIR text that parses back exactly") {
  TensorLayout tokens(DType::f32, {"batch", "seq", 4});
  StagedGraph g = stage([](Tensor x) {
    Tensor flat = F::reshape(x, {-1, 4});
    Tensor last = F::slice(x, 1, -1, std::numeric_limits<int64_t>::max());
    Tensor head = F::slice(x, 1, Dim(0), (x.dim_of(1) + 1) / 2);
    return std::vector<Tensor>{flat, last, head, F::arange(x.dim_of(1) - 1)};
  })(tokens);
  const std::string text = g.to_mlir();
  CHECK(mentions(text, "!kiln.tensor<[batch*seq, 4], f32>"));
  CHECK(mentions(text, "!kiln.tensor<[batch, (seq+1)/2, 4], f32>"));
  CHECK(mentions(text, "ends = [9223372036854775807, \"(seq+1)/2\", 4]"));
  CHECK(mentions(text, "length = [\"seq-1\"]"));
  CHECK(parse_staged(text).to_mlir() == text);
}

TEST_CASE("a call binds every symbol, solving ones that appear only inside expressions") {
  auto session = session_in(JitMode::off);
  // n is solved from the one dim that mentions it; the result is checked against a naive sum.
  auto pairs = compile(
      [](Tensor x) {
        return F::sum(F::reshape(x, {x.dim_of(0) / 2, 2}), {1});
      },
      {.session = session})(TensorLayout(DType::f32, {Dim("n") * 2}));
  Tensor x = ramp({6});
  Tensor y = pairs(x);
  REQUIRE(y.dims() == std::vector<int64_t>{3});
  for (int64_t i = 0; i < 3; ++i)
    CHECK(y.data<float>()[i] == doctest::Approx(x.data<float>()[2 * i] + x.data<float>()[2 * i + 1]));
  CHECK(message_of([&] { pairs(ramp({7})); }) == "spec error: argument 0 dim 0 is 7, which n*2 is for no size of 'n'");

  // A dim that is seq+1 beside one that is seq: checked against the bound seq.
  auto shifted =
      compile([](Tensor a, Tensor b) { return F::slice(b, 0, 1, std::numeric_limits<int64_t>::max()) + a; },
              {.session = session})(TensorLayout(DType::f32, {"seq"}), TensorLayout(DType::f32, {Dim("seq") + 1}));
  Tensor sum = shifted(Tensor::ones({4}), ramp({5}));
  for (int64_t i = 0; i < 4; ++i)
    CHECK(sum.data<float>()[i] == doctest::Approx(1.0f + ramp({5}).data<float>()[i + 1]));
  CHECK(message_of([&] { shifted(Tensor::ones({4}), ramp({6})); }) ==
        "spec error: argument 1 dim 0: expected seq+1 = 5 (seq = 4 from argument 0 dim 0), got 6");

  // A symbol no dim can solve is refused when the graph is traced.
  CHECK(message_of([&] {
          compile([](Tensor x) { return x; }, {.session = session})(TensorLayout(DType::f32, {Dim("n") * Dim("n")}));
        }) == "spec error: argument 0 dim 0 is n*n: symbol 'n' cannot be solved from any input dim; give some input a "
              "dim that is n, or linear in it such as n*2+1");
}

TEST_CASE("what symbolic inference assumed is checked against each call's sizes") {
  auto session = session_in(JitMode::off);
  auto rows = compile(
      [](Tensor x) {
        return F::reshape(x, {-1, 2});
      },
      {.session = session})(TensorLayout(DType::f32, {"n"}));
  CHECK(rows(ramp({6})).dims() == std::vector<int64_t>{3, 2});
  CHECK(mentions(message_of([&] { rows(ramp({7})); }), "cannot reshape [7] to [3, 2]: element counts differ"));
  // tail[4:] of a seq-long axis assumes seq >= 4.
  auto tail = compile([](Tensor x) { return F::slice(x, 0, 4, std::numeric_limits<int64_t>::max()); },
                      {.session = session})(TensorLayout(DType::f32, {"seq"}));
  CHECK(tail(ramp({9})).dims() == std::vector<int64_t>{5});
  const std::string short_input = message_of([&] { tail(ramp({2})); });
  CHECK(mentions(short_input, "kiln.slice at "));
  CHECK(mentions(short_input, "result [seq-4]: dimension size -2 is negative"));
}

TEST_CASE("a causal mask for any sequence length, in both tiers, against a naive loop") {
  // scores [batch, seq, seq] -> softmax over keys, each query seeing itself and earlier keys.
  auto causal_softmax = [](Tensor scores) {
    Dim seq = scores.dim_of(1);
    Tensor future = F::triu(F::full({seq, seq}, 1.0, DType::boolean), 1);
    return F::softmax(F::masked_fill(scores, future, -std::numeric_limits<double>::infinity()), -1);
  };
  for (JitMode mode : tiers()) {
    CAPTURE(int(mode));
    auto run =
        compile(causal_softmax, {.session = session_in(mode)})(TensorLayout(DType::f32, {"batch", "seq", "seq"}));
    for (int64_t seq : {1, 5, 17}) {
      CAPTURE(seq);
      Tensor scores = ramp({2, seq, seq}, float(seq));
      Tensor got = run(scores);
      REQUIRE(got.dims() == std::vector<int64_t>{2, seq, seq});
      const float* s = scores.data<float>();
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t q = 0; q < seq; ++q) {
          const float* row = s + (b * seq + q) * seq;
          double max = row[0], total = 0;
          for (int64_t k = 0; k <= q; ++k)
            max = std::max(max, double(row[k]));
          for (int64_t k = 0; k <= q; ++k)
            total += std::exp(double(row[k]) - max);
          for (int64_t k = 0; k < seq; ++k) {
            const double want = k <= q ? std::exp(double(row[k]) - max) / total : 0.0;
            CHECK(got.data<float>()[(b * seq + q) * seq + k] == doctest::Approx(want).epsilon(1e-5));
          }
        }
    }
  }
}

TEST_CASE("the last token and a position table sliced to the sequence, in both tiers") {
  // GPT-style: add pos[:seq] to the tokens, then take the last position of each sequence.
  TensorLayout tokens(DType::f32, {"batch", "seq", 4});
  Tensor positions = ramp({16, 4}, 0.5f);
  auto last_token = [&](Tensor x) {
    Tensor pos = F::slice(F::constant(positions), 0, Dim(0), x.dim_of(1));
    Tensor h = x + pos;
    return F::squeeze(F::slice(h, 1, -1, std::numeric_limits<int64_t>::max()), {1});
  };
  for (JitMode mode : tiers()) {
    CAPTURE(int(mode));
    auto run = compile(last_token, {.session = session_in(mode)})(tokens);
    for (int64_t seq : {1, 7, 16}) {
      CAPTURE(seq);
      Tensor x = ramp({3, seq, 4}, 1.0f);
      Tensor got = run(x);
      REQUIRE(got.dims() == std::vector<int64_t>{3, 4});
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t c = 0; c < 4; ++c)
          CHECK(got.data<float>()[b * 4 + c] == doctest::Approx(x.data<float>()[(b * seq + seq - 1) * 4 + c] +
                                                                positions.data<float>()[(seq - 1) * 4 + c]));
    }
    CHECK(mentions(message_of([&] { run(ramp({1, 17, 4})); }), "kiln.slice at "));
  }
}
