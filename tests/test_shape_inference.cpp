#include "ir/ops.hpp"
#include "ir/shape_inference.hpp"
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>

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

TEST_CASE("conv2d and pooling compute output sizes for static spatial dims") {
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
  CHECK(mentions(error_of(OpKind::conv2d, {f32({1, 3, "h", 8}), f32({6, 3, 3, 3})}, c), "input height must be static"));
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
                  {"padding", Attr::of_ints({0, 0})}}) == Shape{1, 1, 1, 1});
  CHECK(mentions(error_of(OpKind::max_pool2d, {f32({3, 7, 8})}, p), "needs an NCHW input"));
}

TEST_CASE("reshape infers one -1, symbolic dims included") {
  CHECK(ir::infer::resolve_reshape({"batch", 4, 6}, {"batch", -1}) == Shape{"batch", 24});
  CHECK(ir::infer::resolve_reshape({"batch", 128, 768}, {"batch", 128, 3, 4, -1}) == Shape{"batch", 128, 3, 4, 64});
  CHECK(ir::infer::resolve_reshape({"batch", 6}, {-1, 6}) == Shape{"batch", 6});
  CHECK(ir::infer::resolve_reshape({2, 3}, {-1}) == Shape{6});
  CHECK_THROWS_WITH_AS(ir::infer::resolve_reshape({2, 3}, {4, -1}),
                       "cannot reshape [2, 3] to [4, -1]: 4 does not divide the element count", ir::InferError);
  CHECK_THROWS_AS(ir::infer::resolve_reshape({"a", "b"}, {-1}), ir::InferError);
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
  Attrs bad{{"starts", Attr::of_ints({1})}, {"ends", Attr::of_ints({3})}, {"steps", Attr::of_ints({1})}};
  CHECK(mentions(error_of(OpKind::slice, {f32({"b"})}, bad), "symbolic axis 'b' can only be sliced whole"));
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
