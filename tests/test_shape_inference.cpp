#include "core/checked_arithmetic.hpp"
#include "ir/ops.hpp"
#include "ir/shape_inference.hpp"
#include "ir/specialize.hpp"
#include "ir/verify.hpp"
#include "scoped_env.hpp"
#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <limits>
#include <optional>
#include <unistd.h>

using namespace kiln;
using ir::Attr;
using ir::Attrs;
using ir::OpKind;
using ir::ValueType;

namespace {

ValueType f32(Shape s) { return {DType::f32, std::move(s), false}; }
ValueType typed(DType d, Shape s) { return {d, std::move(s), false}; }

std::vector<ValueType> infer(OpKind kind, std::vector<ValueType> in, Attrs attrs = {}) {
  return ir::infer_op(kind, in, attrs, ir::SourceLoc{"model.cpp", 42, 17});
}
Shape shape_of(OpKind kind, std::vector<ValueType> in, Attrs attrs = {}) {
  return infer(kind, std::move(in), std::move(attrs)).at(0).shape;
}
std::string error_of(OpKind kind, std::vector<ValueType> in, Attrs attrs = {}) {
  try {
    infer(kind, std::move(in), std::move(attrs));
  } catch (const Error& e) {
    return e.message();
  }
  return "<no error>";
}
bool mentions(const std::string& haystack, const std::string& needle) {
  bool found = haystack.find(needle) != std::string::npos;
  if (!found) MESSAGE("'" << needle << "' not in '" << haystack << "'");
  return found;
}

template <class Fn> std::string thrown_by(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::shape);
    return e.message();
  }
  return "<no error>";
}

Attrs pool_attrs(int64_t kernel, int64_t stride, int64_t padding) {
  return {{"kernel", Attr::of_ints({kernel, kernel})},
          {"stride", Attr::of_ints({stride, stride})},
          {"padding", Attr::of_ints({padding, padding})}};
}

Attrs arange_attrs(double start, double stop, double step) {
  return {{"start", Attr::of_float(start)},
          {"stop", Attr::of_float(stop)},
          {"step", Attr::of_float(step)},
          {"dtype", Attr::of_dtype(DType::f32)}};
}

constexpr int64_t k2to32 = int64_t(1) << 32;
constexpr int64_t k2to62 = int64_t(1) << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

} // namespace

TEST_CASE("unary ops keep type and shape, symbolic dims included") {
  for (OpKind k : {OpKind::neg, OpKind::abs, OpKind::exp, OpKind::log, OpKind::sqrt, OpKind::rsqrt, OpKind::tanh,
                   OpKind::sigmoid, OpKind::relu, OpKind::silu, OpKind::erf, OpKind::sin, OpKind::cos})
    CHECK(shape_of(k, {f32({"batch", 3})}) == Shape{"batch", 3});
  CHECK(shape_of(OpKind::gelu, {f32({2})}, {{"approximate", Attr::of_string("tanh")}}) == Shape{2});
  CHECK(mentions(error_of(OpKind::gelu, {f32({2})}, {{"approximate", Attr::of_string("fast")}}), "approximate"));
  CHECK(mentions(error_of(OpKind::exp, {f32({2}), f32({2})}), "kiln.exp at model.cpp:42:17: takes 1 operands, got 2"));
}

TEST_CASE("binary ops broadcast like numpy") {
  for (OpKind k : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::pow, OpKind::maximum, OpKind::minimum}) {
    CHECK(shape_of(k, {f32({"batch", 3}), f32({3})}) == Shape{"batch", 3});
    CHECK(shape_of(k, {f32({4, 1}), f32({1, 5})}) == Shape{4, 5});
    CHECK(shape_of(k, {f32({}), f32({2, 2})}) == Shape{2, 2});
    CHECK(shape_of(k, {f32({"n", 1}), f32({"n", 7})}) == Shape{"n", 7});
    CHECK(shape_of(k, {f32({1}), f32({"n"})}) == Shape{"n"});
  }
  CHECK(mentions(error_of(OpKind::add, {f32({3}), f32({4})}), "shapes [3] and [4] do not broadcast (dim 0: 3 vs 4)"));
  CHECK(mentions(error_of(OpKind::add, {f32({"a"}), f32({"b"})}), "do not broadcast"));
  CHECK(mentions(error_of(OpKind::add, {f32({"a"}), f32({4})}), "do not broadcast"));
  CHECK(mentions(error_of(OpKind::mul, {f32({2}), typed(DType::i32, {2})}), "operand dtypes differ: f32 and i32"));
  // A dtype mismatch is a dtype error, a shape mismatch a shape error.
  auto kind_of = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::internal;
  };
  CHECK(kind_of([&] { infer(OpKind::mul, {f32({2}), typed(DType::i32, {2})}); }) == ErrorKind::dtype);
  CHECK(kind_of([&] { infer(OpKind::add, {f32({3}), f32({4})}); }) == ErrorKind::shape);
}

TEST_CASE("compare gives bool, where takes a bool condition, cast changes dtype") {
  auto t = infer(OpKind::compare, {f32({"n", 1}), f32({3})}, {{"predicate", Attr::of_string("lt")}})[0];
  CHECK(t.dtype == DType::boolean);
  CHECK(t.shape == Shape{"n", 3});
  CHECK(mentions(error_of(OpKind::compare, {f32({2}), f32({2})}, {{"predicate", Attr::of_string("approx")}}),
                 "unknown compare predicate \"approx\""));
  CHECK(shape_of(OpKind::where, {typed(DType::boolean, {2, 1}), f32({3}), f32({})}) == Shape{2, 3});
  CHECK(mentions(error_of(OpKind::where, {f32({2}), f32({2}), f32({2})}), "condition must be i1 (bool), got f32"));
  CHECK(infer(OpKind::cast, {f32({"n"})}, {{"dtype", Attr::of_dtype(DType::i64)}})[0].dtype == DType::i64);
}

TEST_CASE("reductions drop or keep axes") {
  Attrs a{{"axes", Attr::of_ints({1, -1})}, {"keepdims", Attr::of_bool(false)}};
  CHECK(shape_of(OpKind::reduce_sum, {f32({"b", 3, 4, 5})}, a) == Shape{"b", 4});
  Attrs k{{"axes", Attr::of_ints({0})}, {"keepdims", Attr::of_bool(true)}};
  for (OpKind kind : {OpKind::reduce_mean, OpKind::reduce_max, OpKind::reduce_min})
    CHECK(shape_of(kind, {f32({"b", 3})}, k) == Shape{1, 3});
  Attrs all{{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(false)}};
  CHECK(shape_of(OpKind::reduce_sum, {f32({2, 3})}, all) == Shape{});
  CHECK(mentions(
      error_of(OpKind::reduce_sum, {f32({2})}, {{"axes", Attr::of_ints({3})}, {"keepdims", Attr::of_bool(false)}}),
      "axis 3 is out of range for rank 1"));
  CHECK(mentions(error_of(OpKind::reduce_sum, {f32({2, 2})},
                          {{"axes", Attr::of_ints({1, 1})}, {"keepdims", Attr::of_bool(false)}}),
                 "axis 1 is repeated"));
  auto am = infer(OpKind::argmax, {f32({"b", 7})}, {{"axis", Attr::of_int(-1)}, {"keepdims", Attr::of_bool(false)}})[0];
  CHECK(am.dtype == DType::i64);
  CHECK(am.shape == Shape{"b"});
  CHECK(shape_of(OpKind::softmax, {f32({"b", 7})}, {{"axis", Attr::of_int(-1)}}) == Shape{"b", 7});
  CHECK(
      mentions(error_of(OpKind::log_softmax, {typed(DType::i32, {3})}, {{"axis", Attr::of_int(0)}}), "floating-point"));
}

TEST_CASE("normalisations check their parameters against the normalised dims") {
  Attrs a{{"axis", Attr::of_int(-1)}, {"eps", Attr::of_float(1e-5)}};
  CHECK(shape_of(OpKind::layer_norm, {f32({"b", 8, 16}), f32({16}), f32({16})}, a) == Shape{"b", 8, 16});
  CHECK(shape_of(OpKind::layer_norm, {f32({"b", 16})}, a) == Shape{"b", 16});
  CHECK(mentions(error_of(OpKind::layer_norm, {f32({"b", 16}), f32({8})}, a),
                 "parameter 1 has shape [8], expected [16] (the normalised dims of [b, 16])"));
  CHECK(shape_of(OpKind::rms_norm, {f32({2, 4}), f32({4})}, a) == Shape{2, 4});
  Attrs e{{"eps", Attr::of_float(1e-5)}};
  CHECK(shape_of(OpKind::batch_norm, {f32({"n", 3, 5, 5}), f32({3}), f32({3}), f32({3}), f32({3})}, e) ==
        Shape{"n", 3, 5, 5});
  CHECK(mentions(error_of(OpKind::batch_norm, {f32({2, 3}), f32({4}), f32({3})}, e),
                 "parameter 1 has shape [4], expected [3]"));
  CHECK(mentions(error_of(OpKind::batch_norm, {f32({2, 3}), f32({3}), f32({3}), f32({3})}, e),
                 "weight and bias come together"));
}

TEST_CASE("matmul matches inner dims and broadcasts batch dims") {
  CHECK(shape_of(OpKind::matmul, {f32({"batch", 3}), f32({3, 5})}) == Shape{"batch", 5});
  CHECK(shape_of(OpKind::matmul, {f32({2, 1, 4, 3}), f32({7, 3, 6})}) == Shape{2, 7, 4, 6});
  CHECK(shape_of(OpKind::matmul, {f32({"b", "s", "d"}), f32({"b", "d", "s"})}) == Shape{"b", "s", "s"});
  CHECK(error_of(OpKind::matmul, {f32({"batch", 3}), f32({4, 5})}) ==
        "kiln.matmul at model.cpp:42:17: inner dims differ: [batch, 3] x [4, 5]");
  CHECK(mentions(error_of(OpKind::matmul, {f32({3}), f32({3, 2})}), "operands need rank >= 2"));
}

TEST_CASE("conv2d and pooling compute output sizes for static and symbolic spatial dims") {
  Attrs c{{"stride", Attr::of_ints({2, 2})},
          {"padding", Attr::of_ints({1, 1})},
          {"dilation", Attr::of_ints({1, 1})},
          {"groups", Attr::of_int(1)}};
  CHECK(shape_of(OpKind::conv2d, {f32({"n", 32, 64, 64}), f32({64, 32, 3, 3}), f32({64})}, c) ==
        Shape{"n", 64, 32, 32});
  Attrs d{{"stride", Attr::of_ints({1, 1})},
          {"padding", Attr::of_ints({0, 0})},
          {"dilation", Attr::of_ints({2, 3})},
          {"groups", Attr::of_int(2)}};
  CHECK(shape_of(OpKind::conv2d, {f32({1, 4, 17, 17}), f32({6, 2, 3, 3})}, d) == Shape{1, 6, 13, 11});
  CHECK(mentions(error_of(OpKind::conv2d, {f32({1, 4, 8, 8}), f32({6, 4, 3, 3})}, d),
                 "expects 4 input channels per group"));
  // A symbolic spatial dim gives the window formula over it (channels and kernel stay static).
  CHECK(shape_of(OpKind::conv2d, {f32({1, 32, "h", 64}), f32({64, 32, 3, 3})}, c) ==
        Shape{1, 64, (Dim("h") + 1) / 2, 32});
  CHECK(
      mentions(error_of(OpKind::conv2d, {f32({1, "c", 8, 8}), f32({6, 3, 3, 3})}, c), "input channels must be static"));
  Attrs plain{{"stride", Attr::of_ints({1, 1})},
              {"padding", Attr::of_ints({0, 0})},
              {"dilation", Attr::of_ints({1, 1})},
              {"groups", Attr::of_int(1)}};
  CHECK(mentions(error_of(OpKind::conv2d, {f32({1, 3, 2, 2}), f32({6, 3, 5, 5})}, plain),
                 "larger than the padded input"));
  Attrs p{{"kernel", Attr::of_ints({3, 3})}, {"stride", Attr::of_ints({2, 2})}, {"padding", Attr::of_ints({1, 1})}};
  CHECK(shape_of(OpKind::max_pool2d, {f32({"n", 3, 7, 8})}, p) == Shape{"n", 3, 4, 4});
  CHECK(shape_of(OpKind::avg_pool2d, {f32({1, 1, 1, 1})},
                 {{"kernel", Attr::of_ints({1, 1})},
                  {"stride", Attr::of_ints({1, 1})},
                  {"padding", Attr::of_ints({0, 0})},
                  {"count_include_pad", Attr::of_bool(false)}}) == Shape{1, 1, 1, 1});
  CHECK(mentions(error_of(OpKind::max_pool2d, {f32({3, 7, 8})}, p), "needs an NCHW input"));
}

TEST_CASE("reshape infers one -1, symbolic dims included") {
  CHECK(ir::infer::resolve_reshape({"batch", 4, 6}, {"batch", -1}) == Shape{"batch", 24});
  CHECK(ir::infer::resolve_reshape({"batch", 128, 768}, {"batch", 128, 3, 4, -1}) == Shape{"batch", 128, 3, 4, 64});
  CHECK(ir::infer::resolve_reshape({"batch", 6}, {-1, 6}) == Shape{"batch", 6});
  CHECK(ir::infer::resolve_reshape({2, 3}, {-1}) == Shape{6});
  CHECK_THROWS_WITH_AS(ir::infer::resolve_reshape({2, 3}, {4, -1}),
                       "cannot reshape [2, 3] to [4, -1]: 4 does not divide the element count", ir::InferError);
  CHECK(ir::infer::resolve_reshape({"a", "b"}, {-1}) == Shape{Dim("a") * Dim("b")});
  CHECK(ir::infer::resolve_reshape({"batch", 6, 4}, {-1, 4}) == Shape{Dim("batch") * 6, 4});
  CHECK(ir::infer::resolve_reshape({"b", "s", 64}, {"s", -1}) == Shape{"s", Dim("b") * 64});
  // Not a whole multiple for every n: n/2, which each call's sizes confirm.
  CHECK(ir::infer::resolve_reshape({"n"}, {-1, 2}) == Shape{Dim("n") / 2, 2});
  CHECK_THROWS_AS(ir::infer::resolve_reshape({"a", 3}, {"b", -1}), ir::InferError);
  CHECK_THROWS_AS(ir::infer::resolve_reshape({2, 3}, {-1, -1}), ir::InferError);
  CHECK_THROWS_AS(ir::infer::resolve_reshape({"batch", 3}, {"seq", 3}), ir::InferError);
  CHECK(shape_of(OpKind::reshape, {f32({"b", 6})}, {{"shape", Attr::of_shape({"b", 2, 3})}}) == Shape{"b", 2, 3});
  CHECK(mentions(error_of(OpKind::reshape, {f32({2, 3})}, {{"shape", Attr::of_shape({5})}}), "element counts differ"));
}

TEST_CASE("layout ops: transpose, broadcast_to, concat, split, slice, squeeze, unsqueeze") {
  CHECK(shape_of(OpKind::transpose, {f32({"b", 3, 4})}, {{"perm", Attr::of_ints({2, 0, 1})}}) == Shape{4, "b", 3});
  CHECK(mentions(error_of(OpKind::transpose, {f32({2, 3})}, {{"perm", Attr::of_ints({0, 0})}}), "perm repeats axis 0"));
  CHECK(shape_of(OpKind::broadcast_to, {f32({3, 1})}, {{"shape", Attr::of_shape({"b", 3, 4})}}) == Shape{"b", 3, 4});
  CHECK(
      mentions(error_of(OpKind::broadcast_to, {f32({3, 2})}, {{"shape", Attr::of_shape({3, 4})}}), "do not broadcast"));
  CHECK(shape_of(OpKind::concat, {f32({"b", 2}), f32({"b", 5})}, {{"axis", Attr::of_int(1)}}) == Shape{"b", 7});
  CHECK(mentions(error_of(OpKind::concat, {f32({2, 2}), f32({3, 5})}, {{"axis", Attr::of_int(1)}}), "outside axis 1"));
  auto parts = infer(OpKind::split, {f32({"b", 10})}, {{"axis", Attr::of_int(1)}, {"sizes", Attr::of_ints({3, 7})}});
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].shape == Shape{"b", 7});
  CHECK(mentions(error_of(OpKind::split, {f32({10})}, {{"axis", Attr::of_int(0)}, {"sizes", Attr::of_ints({3, 3})}}),
                 "split sizes add up to 6, axis has 10"));
  Attrs s{{"starts", Attr::of_ints({0, 1})}, {"ends", Attr::of_ints({INT64_MAX, 8})}, {"steps", Attr::of_ints({1, 3})}};
  CHECK(shape_of(OpKind::slice, {f32({"b", 10})}, s) == Shape{"b", 3});
  // A symbolic axis takes the bounds as they are: [1, 3) is 2 long for any b >= 3.
  Attrs inner{{"starts", Attr::of_ints({1})}, {"ends", Attr::of_ints({3})}, {"steps", Attr::of_ints({1})}};
  CHECK(shape_of(OpKind::slice, {f32({"b"})}, inner) == Shape{2});
  Attrs tail{
      {"starts", Attr::of_shape({Dim("b") - 1})}, {"ends", Attr::of_ints({INT64_MAX})}, {"steps", Attr::of_ints({1})}};
  CHECK(shape_of(OpKind::slice, {f32({"b"})}, tail) == Shape{1});
  CHECK(shape_of(OpKind::squeeze, {f32({"b", 1, 3})}, {{"axes", Attr::of_ints({1})}}) == Shape{"b", 3});
  CHECK(mentions(error_of(OpKind::squeeze, {f32({2, 3})}, {{"axes", Attr::of_ints({1})}}),
                 "cannot squeeze axis 1 of size 3"));
  CHECK(shape_of(OpKind::unsqueeze, {f32({"b", 3})}, {{"axes", Attr::of_ints({0, -1})}}) == Shape{1, "b", 3, 1});
}

TEST_CASE("gather, pad and creation ops") {
  CHECK(shape_of(OpKind::gather, {f32({10, 4}), typed(DType::i64, {"b", 3})}, {{"axis", Attr::of_int(0)}}) ==
        Shape{"b", 3, 4});
  CHECK(mentions(error_of(OpKind::gather, {f32({10, 4}), f32({3})}, {{"axis", Attr::of_int(0)}}),
                 "indices must be i32 or i64"));
  CHECK(shape_of(OpKind::pad, {f32({"b", 3})}, {{"pads", Attr::of_ints({0, 0, 1, 2})}, {"value", Attr::of_float(0)}}) ==
        Shape{"b", 6});
  CHECK(mentions(error_of(OpKind::pad, {f32({3})}, {{"pads", Attr::of_ints({1})}, {"value", Attr::of_float(0)}}),
                 "pads needs 2 entries"));
  CHECK(shape_of(OpKind::constant, {}, {{"value", Attr::of_tensor(Tensor::zeros({2, 3}))}}) == Shape{2, 3});
  CHECK(shape_of(OpKind::full, {},
                 {{"shape", Attr::of_shape({"b", 2})},
                  {"value", Attr::of_float(1)},
                  {"dtype", Attr::of_dtype(DType::f32)}}) == Shape{"b", 2});
  auto ar = infer(OpKind::arange, {},
                  {{"start", Attr::of_float(0)},
                   {"stop", Attr::of_float(5)},
                   {"step", Attr::of_float(2)},
                   {"dtype", Attr::of_dtype(DType::i32)}})[0];
  CHECK(ar.shape == Shape{3});
  CHECK(ar.dtype == DType::i32);
}

TEST_CASE("buffer_store needs a buffer of the same type") {
  ValueType buf{DType::f32, {2}, true};
  CHECK(infer(OpKind::buffer_store, {buf, f32({2})}).empty());
  CHECK(mentions(error_of(OpKind::buffer_store, {f32({2}), f32({2})}), "staged as a tensor"));
  CHECK(mentions(error_of(OpKind::buffer_store, {buf, f32({3})}), "stores f32 [3] into a buffer of f32 [2]"));
}

TEST_CASE("the op table knows every op by name") {
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const ir::OpInfo& info = ir::op_info(OpKind(i));
    CHECK(info.kind == OpKind(i));
    CHECK(ir::op_kind_from_name(info.name) == OpKind(i));
  }
  CHECK_FALSE(ir::op_kind_from_name("frobnicate").has_value());
}

TEST_CASE("element counts that overflow int64 are shape errors, not wrapped numbers") {
  CHECK(mentions(thrown_by([] {
                   numel_of({k2to32, k2to32, 16});
                 }),
                 "[4294967296, 4294967296, 16] has more elements than int64 counts"));
  CHECK(numel_of({k2to32, k2to32, 0}) == 0); // a zero dim empties any shape
  CHECK(numel_of({3, 4}) == 12);
  CHECK(checked_numel(std::vector<int64_t>{}) == 1);
  CHECK(mentions(thrown_by([] { checked_byte_size(std::vector<int64_t>{int64_t(1) << 61}, DType::f64); }),
                 "the byte size overflows int64"));
  CHECK(mentions(thrown_by([] {
                   checked_static_byte_size({"batch", k2to32, k2to32}, DType::f32, "%x");
                 }),
                 "%x: f32 [batch, 4294967296, 4294967296] has more elements than int64 counts"));
  CHECK(checked_static_byte_size({"batch", 3}, DType::f32, "%x") == 12); // symbolic dims are not sized
}

TEST_CASE("checked add, sub, mul and float conversion refuse what int64 cannot hold") {
  CHECK(checked_add(2, 3, "x") == 5);
  CHECK(checked_sub(2, 3, "x") == -1);
  CHECK(checked_mul(-4, 3, "x") == -12);
  CHECK(mentions(thrown_by([] { checked_add(kMax, 1, "padded dim"); }),
                 "padded dim: 9223372036854775807 + 1 overflows int64"));
  CHECK(mentions(thrown_by([] { checked_sub(-kMax, 2, "x"); }), "overflows int64"));
  CHECK(mentions(thrown_by([] { checked_mul(k2to32, k2to32, "x"); }), "4294967296 * 4294967296 overflows int64"));
  CHECK(checked_int64(-3.0, "x") == -3);
  CHECK(checked_int64(9007199254740992.0, "x") == 9007199254740992);
  CHECK(mentions(thrown_by([] { checked_int64(9223372036854775808.0, "x"); }), "does not fit in int64"));
  CHECK(mentions(thrown_by([] { checked_int64(std::nan(""), "x"); }), "does not fit in int64"));
  CHECK(mentions(thrown_by([] { checked_int64(-INFINITY, "x"); }), "does not fit in int64"));
}

TEST_CASE("pooling and conv2d with huge padding, stride or dilation are refused without overflowing") {
  CHECK(mentions(error_of(OpKind::max_pool2d, {f32({1, 1, 7, 7})}, pool_attrs(3, 1, k2to62)),
                 "padding must be at most half the kernel"));
  CHECK(mentions(error_of(OpKind::max_pool2d, {f32({1, 1, 7, 7})}, pool_attrs(0, 1, 0)), "kernel sizes must be > 0"));
  CHECK(shape_of(OpKind::max_pool2d, {f32({1, 1, 7, 7})}, pool_attrs(3, kMax, 1)) == Shape{1, 1, 1, 1});
  auto conv = [](int64_t padding, int64_t dilation) {
    return Attrs{{"stride", Attr::of_ints({1, 1})},
                 {"padding", Attr::of_ints({padding, padding})},
                 {"dilation", Attr::of_ints({dilation, dilation})},
                 {"groups", Attr::of_int(1)}};
  };
  std::string padded = error_of(OpKind::conv2d, {f32({1, 1, 8, 8}), f32({1, 1, 3, 3})}, conv(k2to62, 1));
  CHECK(mentions(padded, "kiln.conv2d at model.cpp:42:17: padding: 2 * 4611686018427387904 overflows int64"));
  CHECK(mentions(error_of(OpKind::conv2d, {f32({1, 1, 8, 8}), f32({1, 1, 3, 3})}, conv(0, k2to62)),
                 "dilated window: 4611686018427387904 * 2 overflows int64"));
  CHECK(ir::infer::window_output(8, 3, 1, 1, 1) == 8);
}

TEST_CASE("arange lengths are checked before the float is cast") {
  CHECK(mentions(error_of(OpKind::arange, {}, arange_attrs(0, 1e30, 1e-3)), "does not fit in int64"));
  CHECK(mentions(error_of(OpKind::arange, {}, arange_attrs(0, std::nan(""), 1)), "does not fit in int64"));
  CHECK(mentions(error_of(OpKind::arange, {}, arange_attrs(0, 5, 0)), "step is zero"));
  CHECK(shape_of(OpKind::arange, {}, arange_attrs(0, -1e30, 1e-3)) == Shape{0});
  CHECK(checked_arange_size(0, 5, 2) == 3);
  CHECK(mentions(thrown_by([] { Tensor::arange(0.0, 1e30, 1e-3); }), "does not fit in int64"));
}

TEST_CASE("slice with a huge step keeps one element instead of overflowing") {
  auto sliced = [](int64_t start, int64_t end, int64_t step) {
    return shape_of(
        OpKind::slice, {f32({10})},
        {{"starts", Attr::of_ints({start})}, {"ends", Attr::of_ints({end})}, {"steps", Attr::of_ints({step})}});
  };
  CHECK(sliced(0, 10, kMax) == Shape{1});
  CHECK(sliced(3, kMax, kMax) == Shape{1});
  CHECK(sliced(3, 3, kMax) == Shape{0});
  CHECK(sliced(0, 10, 3) == Shape{4});
  CHECK(
      mentions(error_of(OpKind::slice, {f32({10})},
                        {{"starts", Attr::of_ints({0})}, {"ends", Attr::of_ints({10})}, {"steps", Attr::of_ints({0})}}),
               "slice step must be positive"));
}

TEST_CASE("reshape, concat, split and pad sizes that overflow are shape errors") {
  CHECK(mentions(error_of(OpKind::reshape, {f32({2})}, {{"shape", Attr::of_shape({k2to32, k2to32, 16})}}),
                 "kiln.reshape at model.cpp:42:17: dim size: 4294967296 * 4294967296 overflows int64"));
  CHECK_THROWS_AS(ir::infer::resolve_reshape({2}, {k2to32, k2to32, 16, -1}), SizeError);
  CHECK_THROWS_AS(ir::infer::resolve_reshape({k2to32, k2to32, 16}, {-1}), SizeError);
  CHECK(mentions(error_of(OpKind::concat, {f32({k2to62}), f32({k2to62})}, {{"axis", Attr::of_int(0)}}),
                 "dim size: 4611686018427387904 + 4611686018427387904 overflows int64"));
  CHECK(mentions(error_of(OpKind::split, {f32({10})}, {{"axis", Attr::of_int(0)}, {"sizes", Attr::of_ints({kMax, 1})}}),
                 "split sizes: 9223372036854775807 + 1 overflows int64"));
  CHECK(mentions(error_of(OpKind::pad, {f32({2})}, {{"pads", Attr::of_ints({1, kMax})}, {"value", Attr::of_float(0)}}),
                 "dim size: 3 + 9223372036854775807 overflows int64"));
}

TEST_CASE("KILN_MAX_TENSOR_BYTES bounds inferred results and allocated tensors") {
  ScopedEnv limit("KILN_MAX_TENSOR_BYTES", "1K");
  CHECK(max_tensor_bytes() == 1024);
  auto full = [](Shape shape) {
    return Attrs{{"shape", Attr::of_shape(std::move(shape))},
                 {"value", Attr::of_float(1)},
                 {"dtype", Attr::of_dtype(DType::f32)}};
  };
  CHECK(shape_of(OpKind::full, {}, full({256})) == Shape{256}); // exactly 1 KiB
  CHECK(mentions(error_of(OpKind::full, {}, full({512})),
                 "kiln.full at model.cpp:42:17: result 0: f32 [512] needs 2048 bytes, more than the limit of 1024 "
                 "bytes (KILN_MAX_TENSOR_BYTES)"));
  CHECK(mentions(error_of(OpKind::full, {}, full({"batch", 512})), "f32 [batch, 512] needs 2048 bytes"));
  CHECK(Tensor::zeros({256}).nbytes() == 1024);
  CHECK(mentions(thrown_by([] { Tensor::zeros({512}); }), "f32 [512] needs 2048 bytes"));
  CHECK(mentions(thrown_by([] { Tensor::ones({2, 256}, DType::i32); }), "i32 [2, 256] needs 2048 bytes"));
  CHECK(mentions(thrown_by([] { Tensor::arange(512); }), "needs 2048 bytes"));
}

TEST_CASE("without KILN_MAX_TENSOR_BYTES the limit is the machine's physical memory") {
  ScopedEnv unset("KILN_MAX_TENSOR_BYTES", nullptr);
  const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  CHECK(max_tensor_bytes() == physical);
  const int64_t elements = int64_t(physical / 4 + 1);
  CHECK(mentions(thrown_by([&] { Tensor::empty({elements}); }), "the machine's physical memory"));
}

TEST_CASE("specialising checks the shapes that bound symbols make concrete") {
  ScopedEnv limit("KILN_MAX_TENSOR_BYTES", "1M");
  ir::Module module;
  ir::Function& fn = module.functions.emplace_back();
  fn.name = "main";
  ir::ValueId n = fn.add_arg(f32({"n"}));
  Attrs square{
      {"shape", Attr::of_shape({"n", "n"})}, {"value", Attr::of_float(0)}, {"dtype", Attr::of_dtype(DType::f32)}};
  ir::ValueId grid = fn.ops[fn.add_op(OpKind::full, {}, {f32({"n", "n"})}, square, {"model.cpp", 9, 3})].results[0];
  fn.outputs = {grid, n};
  std::vector<ValueType> small{f32({100})}, large{f32({1000})};
  CHECK(ir::specialize(module, small).outputs.size() == 2); // 40000 bytes
  CHECK(mentions(thrown_by([&] { ir::specialize(module, large); }),
                 "kiln.full at model.cpp:9:3: result 0: f32 [1000, 1000] needs 4000000 bytes"));
  std::vector<ValueType> huge{f32({int64_t(1) << 40})};
  CHECK(mentions(thrown_by([&] { ir::specialize(module, huge); }), "argument 0: f32 [1099511627776] needs"));
}

TEST_CASE("op params are decoded once, with axes normalised, and encode back to equivalent attributes") {
  const std::vector<ValueType> x{f32({2, 3, 4})};
  const ir::OpParams reduce =
      ir::decode_params(OpKind::reduce_sum, {{"axes", Attr::of_ints({-1, 0})}, {"keepdims", Attr::of_bool(true)}}, x);
  CHECK(std::get<ir::ReduceParams>(reduce) == ir::ReduceParams{{0, 2}, true});
  const ir::OpParams all =
      ir::decode_params(OpKind::reduce_max, {{"axes", Attr::of_ints({})}, {"keepdims", Attr::of_bool(false)}}, x);
  CHECK(std::get<ir::ReduceParams>(all).axes == std::vector<int64_t>{0, 1, 2});
  CHECK(std::get<ir::TransposeParams>(ir::decode_params(OpKind::transpose, {{"perm", Attr::of_ints({-1, 0, 1})}}, x))
            .perm == std::vector<int64_t>{2, 0, 1});
  CHECK(std::get<ir::AxesParams>(ir::decode_params(OpKind::unsqueeze, {{"axes", Attr::of_ints({-1})}}, x)).axes ==
        std::vector<int64_t>{3});
  CHECK(std::get<ir::GeluParams>(ir::decode_params(OpKind::gelu, {{"approximate", Attr::of_string("tanh")}}, x)).form ==
        ir::GeluForm::tanh);
  // Every decoded form encodes to attributes that decode to it again.
  const ir::OpParams conv = ir::ConvParams{{2, 1}, {0, 3}, {1, 2}, 4};
  CHECK(ir::decode_params(OpKind::conv2d, ir::encode_params(conv), {}) == conv);
  const ir::OpParams pool = ir::AvgPoolParams{{{3, 3}, {2, 2}, {1, 1}}, false};
  CHECK(ir::decode_params(OpKind::avg_pool2d, ir::encode_params(pool), {}) == pool);
  CHECK(ir::decode_params(OpKind::reduce_sum, ir::encode_params(reduce), x) == reduce);
}

TEST_CASE("op params refuse missing, mistyped and out-of-domain attributes, and axes the operand lacks") {
  const std::vector<ValueType> x{f32({2, 3})};
  CHECK_THROWS_WITH_AS(ir::decode_params(OpKind::softmax, {}, x), "missing attribute 'axis' (i64)", ir::AttrError);
  CHECK_THROWS_WITH_AS(ir::decode_params(OpKind::softmax, {{"axis", Attr::of_float(1)}}, x),
                       "attribute 'axis' must be i64", ir::AttrError);
  CHECK_THROWS_WITH_AS(ir::decode_params(OpKind::compare, {{"predicate", Attr::of_string("approx")}}, x),
                       "unknown compare predicate \"approx\"", ir::AttrError);
  CHECK_THROWS_WITH_AS(
      ir::decode_params(
          OpKind::max_pool2d,
          {{"kernel", Attr::of_ints({2})}, {"stride", Attr::of_ints({1, 1})}, {"padding", Attr::of_ints({0, 0})}}, x),
      "kernel needs 2 values, got 1", ir::AttrError);
  CHECK_THROWS_WITH_AS(ir::decode_params(OpKind::softmax, {{"axis", Attr::of_int(2)}}, x),
                       "axis 2 is out of range for rank 2", ir::InferError);
  // A hand-built op keeps what did not decode, and verify_module names it with the op's place.
  ir::Function fn;
  fn.name = "f";
  const ir::ValueId arg = fn.add_arg(f32({2, 3}));
  fn.add_op(OpKind::softmax, {arg}, {f32({2, 3})}, {{"axis", Attr::of_int(5)}}, ir::SourceLoc{"m.cpp", 3, 4});
  CHECK(std::holds_alternative<ir::InvalidParams>(fn.ops[0].params));
  CHECK_THROWS_WITH_AS(ir::params_of<ir::AxisParams>(fn.ops[0]), doctest::Contains("out of range"), Error);
  ir::Module module;
  module.functions = {fn};
  CHECK_THROWS_WITH_AS(ir::verify_module(module), doctest::Contains("axis 5 is out of range for rank 2"), Error);
}

// One decoder and one inference serve every convolution row: conv<2> for conv2d, and a new
// convolution of another rank names conv<N> in its row and nothing else.
TEST_CASE("a convolution's params and inference take one value per spatial axis of their rank") {
  const Attrs one_axis{{"stride", Attr::of_ints({2})},
                       {"padding", Attr::of_ints({1})},
                       {"dilation", Attr::of_ints({3})},
                       {"groups", Attr::of_int(2)}};
  const ir::OpParams params = ir::decode::conv<1>(one_axis, {});
  CHECK(params == ir::OpParams{ir::ConvParams{{2}, {1}, {3}, 2}});
  CHECK(ir::decode::conv<1>(ir::encode_params(params), {}) == params);
  const std::vector<ValueType> in{f32({Dim(5), Dim(4), Dim(17)}), f32({Dim(6), Dim(2), Dim(3)})};
  // (17 + 2 * 1 - 3 * (3 - 1) - 1) / 2 + 1 = 7
  CHECK(ir::infer::conv<1>(in, params)[0].shape == Shape{Dim(5), Dim(6), Dim(7)});
  CHECK_THROWS_WITH_AS(ir::decode::conv<2>(one_axis, {}), "stride needs 2 values, got 1", ir::AttrError);
  CHECK_THROWS_WITH_AS(ir::infer::conv<2>(in, params), doctest::Contains("needs NCHW input and OIHW weight"),
                       ir::InferError);
  const std::vector<ValueType> short_input{f32({Dim(5), Dim(4), Dim(2)}), in[1]};
  CHECK_THROWS_WITH_AS(ir::infer::conv<1>(short_input, params), "window 7 is larger than the padded input 4",
                       ir::InferError);
}

TEST_CASE("every row of the op table names its params decoder") {
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const ir::OpInfo& info = ir::op_info(OpKind(k));
    CAPTURE(info.name);
    CHECK(info.kind == OpKind(k));
    const bool has_decoder = info.decode != nullptr;
    CHECK(has_decoder);
  }
}
