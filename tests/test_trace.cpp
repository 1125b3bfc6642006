#include "error_message.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/graph.hpp"
#include "ir/ops.hpp"
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>

using namespace kiln;

namespace {

const ir::Op& op_of_kind(const ir::Function& fn, ir::OpKind kind, int nth = 0) {
  for (const ir::Op& op : fn.ops)
    if (op.kind == kind && nth-- == 0) return op;
  FAIL("no such op");
  return fn.ops.front();
}

int count_kind(const ir::Function& fn, ir::OpKind kind) {
  int n = 0;
  for (const ir::Op& op : fn.ops)
    n += op.kind == kind;
  return n;
}

} // namespace

TEST_CASE("a lambda stages into a graph named main with typed arguments") {
  TensorLayout x_type(DType::f32, {"batch", 2});
  auto staged = stage([](Tensor x) { return F::relu(x) + x; })(x_type);
  const ir::Function& fn = staged.graph().entry();
  CHECK(staged.graph().name == "main");
  CHECK(fn.name == "main");
  REQUIRE(fn.args.size() == 1);
  CHECK(fn.type_of(fn.args[0]).shape == Shape{"batch", 2});
  CHECK(fn.ops.size() == 2);
  CHECK(fn.outputs.size() == 1);
  CHECK(fn.type_of(fn.outputs[0]).shape == Shape{"batch", 2});
}

TEST_CASE("StageOptions name the graph") {
  auto staged = stage([](Tensor x) { return -x; }, {.name = "negate"})(TensorLayout(DType::f32, {3}));
  CHECK(staged.graph().name == "negate");
  CHECK(staged.to_mlir().find("func.func @negate(") != std::string::npos);
}

TEST_CASE("specs nest in containers and the function receives the same containers") {
  TensorLayout s(DType::f32, {"n"});
  using Pair = std::pair<TensorLayout, TensorLayout>;
  auto fn = [](std::vector<Tensor> xs, std::map<std::string, Tensor> m, std::pair<Tensor, Tensor> p,
               std::tuple<Tensor, double> t, std::array<Tensor, 2> a) {
    CHECK(xs.size() == 3);
    CHECK(m.size() == 2);
    CHECK(std::get<1>(t) == 0.5);
    return xs[0] + xs[1] + xs[2] + m.at("a") + m.at("b") + p.first + p.second + std::get<0>(t) + a[0] + a[1];
  };
  auto staged = stage(fn)(std::vector<TensorLayout>{s, s, s}, std::map<std::string, TensorLayout>{{"b", s}, {"a", s}},
                          Pair{s, s}, std::tuple<TensorLayout, double>{s, 0.5}, std::array<TensorLayout, 2>{s, s});
  CHECK(staged.graph().entry().args.size() == 10);
  const auto& leaves = staged.input_leaves();
  std::vector<std::string> paths;
  for (const auto& l : leaves)
    paths.push_back(l.path);
  CHECK(paths == std::vector<std::string>{"0.0", "0.1", "0.2", "1.a", "1.b", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1"});
}

TEST_CASE("map specs are traced in sorted key order") {
  TensorLayout s2(DType::f32, {2}), s3(DType::f32, {3});
  auto staged = stage([](std::map<std::string, Tensor> m) { return m.at("z"); })(
      std::map<std::string, TensorLayout>{{"z", s3}, {"a", s2}});
  const ir::Function& fn = staged.graph().entry();
  CHECK(fn.type_of(fn.args[0]).shape == Shape{2}); // "a" first
  CHECK(fn.type_of(fn.args[1]).shape == Shape{3});
  CHECK(fn.outputs[0] == fn.args[1]);
}

TEST_CASE("results may be containers of tensors and give one output per tensor") {
  TensorLayout s(DType::f32, {4});
  auto staged = stage([](Tensor x) { return std::vector<Tensor>{x, x * 2.0}; })(s);
  CHECK(staged.graph().entry().outputs.size() == 2);
  auto staged2 = stage([](Tensor x) { return std::make_pair(x, std::map<std::string, Tensor>{{"k", -x}}); })(s);
  CHECK(staged2.graph().entry().outputs.size() == 2);
}

TEST_CASE("arithmetic and string arguments are baked into the graph") {
  TensorLayout s(DType::f32, {2});
  auto combine = [](std::map<std::string, Tensor> m, double scale) { return (m.at("a") + m.at("b")) * scale; };
  auto staged = stage(combine)(std::map<std::string, TensorLayout>{{"a", s}, {"b", s}}, 2.0);
  const ir::Function& fn = staged.graph().entry();
  CHECK(fn.args.size() == 2);
  const ir::Op& c = op_of_kind(fn, ir::OpKind::constant);
  CHECK(c.attrs.get_tensor("value").item_as_double(0) == 2.0);
  CHECK(staged.input_leaves()[2].baked == "2");
  auto with_string = stage([](Tensor x, std::string mode) { return mode == "neg" ? -x : x; })(s, std::string("neg"));
  CHECK(count_kind(with_string.graph().entry(), ir::OpKind::neg) == 1);
}

TEST_CASE("a live tensor is refused as a spec at compile time") {
  static_assert(!detail::SpecType<Tensor> || detail::is_live_tensor<Tensor>::value);
  static_assert(detail::is_live_tensor<Tensor>::value);
  static_assert(detail::SpecType<TensorLayout>);
  static_assert(detail::SpecType<std::vector<std::map<std::string, BufferLayout>>>);
  static_assert(!detail::SpecType<std::vector<Tensor>>);
  static_assert(!detail::SpecType<int*>);
}

TEST_CASE("captured concrete tensors become embedded constants") {
  Tensor bias = Tensor::from_vector<float>({1, 2}, {2});
  auto staged = stage([&](Tensor x) { return x + bias; })(TensorLayout(DType::f32, {"b", 2}));
  const ir::Op& c = op_of_kind(staged.graph().entry(), ir::OpKind::constant);
  CHECK(c.attrs.get_tensor("value").item_as_double(1) == 2.0);
}

TEST_CASE("ops record the user's source line, operators included") {
  static int add_line, mul_line, fn_line, neg_line;
  // Each op and the __LINE__ it is checked against must share a line.
  // clang-format off
  auto fn = [](Tensor x, Tensor y) {
    Tensor a = x + y; add_line = __LINE__;
    Tensor b = a * 3.0; mul_line = __LINE__;
    Tensor c = F::exp(b); fn_line = __LINE__;
    Tensor d = -c; neg_line = __LINE__;
    return d;
  };
  // clang-format on
  TensorLayout s(DType::f32, {2});
  auto staged = stage(fn)(s, s);
  const ir::Function& g = staged.graph().entry();
  CHECK(op_of_kind(g, ir::OpKind::add).loc.line == uint32_t(add_line));
  CHECK(op_of_kind(g, ir::OpKind::mul).loc.line == uint32_t(mul_line));
  CHECK(op_of_kind(g, ir::OpKind::exp).loc.line == uint32_t(fn_line));
  CHECK(op_of_kind(g, ir::OpKind::neg).loc.line == uint32_t(neg_line));
  CHECK(op_of_kind(g, ir::OpKind::add).loc.file == "test_trace.cpp");
  CHECK(op_of_kind(g, ir::OpKind::add).loc.column > 0);
}

TEST_CASE("a bad op is an error naming the op, the shapes and the user's line") {
  int line = 0;
  std::string msg = message_of([&] {
    stage([&](Tensor a, Tensor b) {
      line = __LINE__ + 1;
      return F::matmul(a, b);
    })(TensorLayout(DType::f32, {"batch", 3}), TensorLayout(DType::f32, {4, 5}));
  });
  std::string prefix = "shape error: kiln.matmul at test_trace.cpp:" + std::to_string(line) + ":";
  std::string suffix = ": inner dims differ: [batch, 3] x [4, 5]";
  CHECK(msg.rfind(prefix, 0) == 0);
  REQUIRE(msg.size() > suffix.size());
  CHECK(msg.substr(msg.size() - suffix.size()) == suffix);
}

TEST_CASE("eager evaluation without an eager evaluator is an unsupported error naming the op") {
  const std::vector<Tensor> inputs{Tensor::ones({3}), Tensor::ones({3})};
  const std::vector<ir::ValueType> types{{DType::f32, {3}, false}};
  CHECK(message_of([&] {
          ir::evaluate_eagerly(ir::EagerEvaluator{}, ir::OpKind::add, {}, inputs, types, {"model.cpp", 7, 3});
        }) ==
        "unsupported error: kiln.add at model.cpp:7:3: no eager evaluator was given to run it on concrete tensors");
  // Eager F:: on concrete tensors, outside any session, runs on the default tier set's evaluator.
  CHECK(F::add(inputs[0], inputs[1]).data<float>()[2] == 2.0f);
}

TEST_CASE("buffer_store writes buffers and refuses tensors") {
  TensorLayout t(DType::f32, {2});
  BufferLayout b(DType::f32, {2});
  auto staged = stage([](Tensor buf, Tensor x) { F::buffer_store(buf, x * 2.0); })(b, t);
  const ir::Function& fn = staged.graph().entry();
  CHECK(fn.outputs.empty());
  CHECK(fn.type_of(fn.args[0]).is_buffer);
  CHECK(count_kind(fn, ir::OpKind::buffer_store) == 1);
  std::string msg = message_of([&] { stage([](Tensor a, Tensor x) { F::buffer_store(a, x); })(t, t); });
  CHECK(msg.find("staged as a tensor") != std::string::npos);
  std::string shape_msg = message_of([&] {
    stage([](Tensor buf, Tensor x) { F::buffer_store(buf, F::concat({x, x}, 0)); })(b, t);
  });
  CHECK(shape_msg.find("stores f32 [4] into a buffer of f32 [2]") != std::string::npos);
}

TEST_CASE("constant_external declares a weight with its layout") {
  TensorLayout w(DType::f32, {2});
  auto staged =
      stage([&](Tensor x) { return x * F::constant_external("w", w); })(TensorLayout(DType::f32, {"batch", 2}));
  const ir::Op& op = op_of_kind(staged.graph().entry(), ir::OpKind::constant_external);
  CHECK(op.attrs.get_string("name") == "w");
  CHECK(message_of([] { F::constant_external("w", TensorLayout(DType::f32, {2})); }).find("only inside stage()") !=
        std::string::npos);
  CHECK(message_of([] {
          stage([](Tensor x) { return x * F::constant_external("w", TensorLayout(DType::f32, {"n"})); })(
              TensorLayout(DType::f32, {2}));
        }).find("weights need static dims") != std::string::npos);
}

TEST_CASE("subgraphs are traced once per signature and called") {
  TensorLayout s(DType::f32, {"batch", 4});
  auto block = [](Tensor x) { return F::relu(x) * 2.0; };
  auto staged = stage([&](Tensor x) {
    auto sub = F::as_subgraph("block", block);
    return sub(sub(sub(x)));
  })(s);
  const ir::Module& m = staged.graph();
  REQUIRE(m.functions.size() == 2);
  CHECK(m.functions[1].name == "block");
  CHECK(m.functions[1].is_private);
  CHECK(count_kind(m.entry(), ir::OpKind::call) == 3);
  std::string text = staged.to_mlir();
  CHECK(text.find("func.func private @block(") != std::string::npos);
}

TEST_CASE("subgraph bodies that differ get distinct names") {
  TensorLayout s(DType::f32, {4});
  auto scaled = [](Tensor x, double k) { return x * k; };
  auto staged = stage([&](Tensor x) {
    auto sub = F::as_subgraph("scale", scaled);
    return sub(x, 2.0) + sub(x, 3.0) + sub(x, 2.0);
  })(s);
  const ir::Module& m = staged.graph();
  REQUIRE(m.functions.size() == 3);
  CHECK(m.functions[1].name == "scale");
  CHECK(m.functions[2].name == "scale_1");
  CHECK(count_kind(m.entry(), ir::OpKind::call) == 3);
}

TEST_CASE("allow_subgraphs = false inlines the body") {
  TensorLayout s(DType::f32, {4});
  auto staged = stage(
      [](Tensor x) {
        auto sub = F::as_subgraph("block", [](Tensor y) { return F::exp(y); });
        return sub(sub(x));
      },
      {.allow_subgraphs = false})(s);
  CHECK(staged.graph().functions.size() == 1);
  CHECK(count_kind(staged.graph().entry(), ir::OpKind::exp) == 2);
}

TEST_CASE("tensors of a finished trace cannot be reused") {
  Tensor leaked;
  stage([&](Tensor x) {
    leaked = x;
    return x;
  })(TensorLayout(DType::f32, {2}));
  std::string msg = message_of([&] { stage([&](Tensor x) { return x + leaked; })(TensorLayout(DType::f32, {2})); });
  CHECK(msg.find("belongs to another graph") != std::string::npos);
}

TEST_CASE("graph names and devices are validated") {
  CHECK(message_of([] {
          stage([](Tensor x) { return x; }, {.name = "bad name"})(TensorLayout(DType::f32, {2}));
        }).find("graph name 'bad name'") != std::string::npos);
  CHECK(message_of([] {
          stage([](Tensor x) { return x; })(TensorLayout(DType::f32, {2}, CPU(1)));
        }).find("device cpu:1 is not supported") != std::string::npos);
}
