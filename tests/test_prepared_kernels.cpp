#include "exec/plan_executable.hpp"
#include "interp/interpreter_backend.hpp"
#include "interp/kernel_table.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <kiln/kiln.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>

// Kernels check an op's static dims and derive their loop geometry once, when the plan is built
// (exec::KernelPrepare); every call runs on that state.
using namespace kiln;
using exec::PlanExecutable;
using ir::OpKind;

namespace {

const ir::SourceLoc kPlace{"model.py", 12, 3};

// A graph of one op over f32 arguments of `arg_dims`, the op at kPlace. Its result type is inferred,
// or `result_dims` when given: an op whose result the kernel cannot produce.
std::shared_ptr<ir::Function> one_op(OpKind kind, const std::vector<std::vector<int64_t>>& arg_dims, ir::Attrs attrs,
                                     std::optional<std::vector<int64_t>> result_dims = {}) {
  auto fn = std::make_shared<ir::Function>();
  fn->name = "one_op";
  std::vector<ir::ValueId> args;
  std::vector<ir::ValueType> types;
  for (const std::vector<int64_t>& dims : arg_dims) {
    types.push_back(ir::ValueType{DType::f32, shape_from_dims(dims), false});
    args.push_back(fn->add_arg(types.back()));
  }
  std::vector<ir::ValueType> results = ir::infer_op(kind, types, attrs, {});
  if (result_dims) results.at(0).shape = shape_from_dims(*result_dims);
  const ir::OpId id = fn->add_op(kind, args, results, std::move(attrs), kPlace);
  fn->outputs = fn->ops[id].results;
  return fn;
}

// The message of the kiln::Error(shape) building the plan throws; empty when it builds.
std::string plan_error(std::shared_ptr<ir::Function> fn) {
  try {
    PlanExecutable exe(std::move(fn), {}, interp::interpreter_backend().steps);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::shape);
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Tensor sample(const std::vector<int64_t>& dims, unsigned seed) {
  Tensor t = Tensor::empty(dims);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = float((i * 7919 + seed * 104729) % 23) / 11.0f - 1.0f;
  return t;
}

// Runs the plan twice: the second call reuses the prepared state and a pooled call state.
Tensor run_twice(const std::shared_ptr<ir::Function>& fn, const std::vector<Tensor>& inputs) {
  PlanExecutable exe(fn, {}, interp::interpreter_backend().steps);
  const Tensor first = exe.run(inputs, {}).at(0);
  const Tensor second = exe.run(inputs, {}).at(0);
  REQUIRE(first.dims() == second.dims());
  for (int64_t i = 0; i < first.numel(); ++i)
    REQUIRE(first.data<float>()[i] == second.data<float>()[i]);
  return second;
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(size_t(got.numel()) == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(double(got.data<float>()[i]) - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

ir::Attr pair(int64_t a, int64_t b) { return ir::Attr::of_ints({a, b}); }

struct Conv {
  int64_t batch, channels, height, width, out_channels, k, stride, pad, dilation, groups;
  int64_t out(int64_t size) const { return (size + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

std::vector<double> naive_conv(const Conv& c, const Tensor& x, const Tensor& w) {
  const int64_t oh = c.out(c.height), ow = c.out(c.width), cg = c.channels / c.groups, og = c.out_channels / c.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_channels; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t p = 0; p < c.k; ++p)
              for (int64_t q = 0; q < c.k; ++q) {
                const int64_t h = i * c.stride - c.pad + p * c.dilation, v = j * c.stride - c.pad + q * c.dilation;
                if (h < 0 || h >= c.height || v < 0 || v >= c.width) continue;
                const int64_t channel = (o / og) * cg + ci;
                sum += double(x.data<float>()[((n * c.channels + channel) * c.height + h) * c.width + v]) *
                       double(w.data<float>()[((o * cg + ci) * c.k + p) * c.k + q]);
              }
          y.push_back(sum);
        }
  return y;
}

std::vector<double> naive_pool(const Tensor& x, int64_t k, int64_t stride, int64_t pad, bool max, bool include_pad) {
  const int64_t planes = x.dims()[0] * x.dims()[1], height = x.dims()[2], width = x.dims()[3];
  const int64_t oh = (height + 2 * pad - k) / stride + 1, ow = (width + 2 * pad - k) / stride + 1;
  std::vector<double> y;
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY, sum = 0;
        int64_t count = 0;
        for (int64_t p = 0; p < k; ++p)
          for (int64_t q = 0; q < k; ++q) {
            const int64_t h = i * stride - pad + p, v = j * stride - pad + q;
            if (h < 0 || h >= height || v < 0 || v >= width) continue;
            const double value = x.data<float>()[(plane * height + h) * width + v];
            best = std::max(best, value);
            sum += value;
            ++count;
          }
        y.push_back(max ? best : sum / double(include_pad ? k * k : count));
      }
  return y;
}

// x viewed as [outer, size, inner] around `axis`.
struct Split {
  int64_t outer = 1, size = 1, inner = 1;
};
Split split_at(const std::vector<int64_t>& dims, size_t axis) {
  Split s;
  for (size_t d = 0; d < dims.size(); ++d)
    (d < axis ? s.outer : d == axis ? s.size : s.inner) *= dims[d];
  return s;
}

std::vector<double> naive_reduce(const Tensor& x, size_t axis, OpKind kind) {
  const Split s = split_at(x.dims(), axis);
  std::vector<double> y;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0, best = -INFINITY, least = INFINITY;
      for (int64_t m = 0; m < s.size; ++m) {
        const double v = x.data<float>()[(o * s.size + m) * s.inner + i];
        sum += v, best = std::max(best, v), least = std::min(least, v);
      }
      y.push_back(kind == OpKind::reduce_sum    ? sum
                  : kind == OpKind::reduce_mean ? sum / double(s.size)
                  : kind == OpKind::reduce_max  ? best
                                                : least);
    }
  return y;
}

ir::Attrs reduce_attrs(int64_t axis) {
  return {{"axes", ir::Attr::of_ints({axis})}, {"keepdims", ir::Attr::of_bool(false)}};
}

} // namespace

// Each family declares its kernels' prepares beside them (interp/kernels/kernels.hpp); the plan finds
// them by kind, so a kind listed by two families, or one without a kernel, would be a silent mistake.
TEST_CASE("a kernel's prepare is declared once, beside a kernel the op table has") {
  std::map<OpKind, int> listed;
  for (OpKind kind : interp::kinds_with_setup())
    ++listed[kind];
  for (const auto& [kind, count] : listed) {
    CAPTURE(ir::op_info(kind).name);
    CHECK(count == 1);
    CHECK_FALSE(ir::has_trait(kind, ir::kNoKernel));
  }
}

// The kernels that walk windows, broadcast or reduce along axes derive that geometry once; a new
// one of these classes needs a prepare, or a reason here why it does without.
TEST_CASE("every broadcasting, reducing, normalising or windowed kernel has a prepare or a stated reason") {
  const std::map<OpKind, std::string_view> without_prepare = {
      {OpKind::topk, "sorts each row anew per call: the few compares of its shape checks are nothing beside it"},
      {OpKind::scaled_dot_product_attention, "checks its shapes per call: two matmuls and a softmax dwarf them"},
  };
  const ir::OpClass classes[] = {ir::OpClass::binary, ir::OpClass::reduction, ir::OpClass::normalization,
                                 ir::OpClass::nn};
  for (int k = 0; k < ir::kNumOpKinds; ++k) {
    const auto kind = OpKind(k);
    if (std::find(std::begin(classes), std::end(classes), ir::op_info(kind).cls) == std::end(classes)) continue;
    CAPTURE(ir::op_info(kind).name);
    CHECK((interp::prepare_for(kind) != nullptr) != without_prepare.contains(kind));
  }
}

TEST_CASE("a shape the kernel cannot run fails when the plan is built, naming the op and its place") {
  const std::string empty_max = plan_error(one_op(OpKind::reduce_max, {{3, 0}}, reduce_attrs(1)));
  CHECK(contains(empty_max, "kiln.reduce_max at model.py:12:3"));
  CHECK(contains(empty_max, "empty axis"));

  const std::string empty_argmax = plan_error(
      one_op(OpKind::argmax, {{4, 0}}, {{"axis", ir::Attr::of_int(1)}, {"keepdims", ir::Attr::of_bool(false)}}));
  CHECK(contains(empty_argmax, "kiln.argmax at model.py:12:3"));

  const ir::Attrs conv = {
      {"stride", pair(1, 1)}, {"padding", pair(0, 0)}, {"dilation", pair(1, 1)}, {"groups", ir::Attr::of_int(1)}};
  const std::string window = plan_error(one_op(OpKind::conv2d, {{1, 3, 7, 7}, {2, 3, 3, 3}}, conv, {{1, 2, 7, 7}}));
  CHECK(contains(window, "kiln.conv2d at model.py:12:3"));
  CHECK(contains(window, "does not match the window"));

  const std::string broadcast = plan_error(one_op(OpKind::add, {{2, 3}, {3}}, {}, {{2, 4}}));
  CHECK(contains(broadcast, "kiln.add at model.py:12:3"));
  CHECK(contains(broadcast, "does not broadcast"));

  const std::string norm = plan_error(one_op(OpKind::layer_norm, {{2, 7}}, {{"axis", ir::Attr::of_int(1)}}, {{2, 6}}));
  CHECK(contains(norm, "kiln.layer_norm at model.py:12:3"));
}

TEST_CASE("a plan's conv2d matches a naive loop on sizes 1, 7 and 17") {
  const std::vector<Conv> cases = {
      {1, 1, 1, 1, 1, 1, 1, 0, 1, 1},   {1, 7, 17, 7, 7, 3, 1, 1, 1, 1}, {2, 7, 7, 17, 7, 3, 2, 1, 1, 7},
      {1, 1, 17, 17, 7, 3, 2, 2, 2, 1}, {7, 7, 7, 7, 1, 1, 1, 0, 1, 1},  {1, 17, 7, 7, 17, 1, 2, 0, 1, 17},
  };
  for (const Conv& c : cases) {
    CAPTURE(c.channels);
    CAPTURE(c.height);
    CAPTURE(c.width);
    const ir::Attrs attrs = {{"stride", pair(c.stride, c.stride)},
                             {"padding", pair(c.pad, c.pad)},
                             {"dilation", pair(c.dilation, c.dilation)},
                             {"groups", ir::Attr::of_int(c.groups)}};
    const std::vector<int64_t> x_dims{c.batch, c.channels, c.height, c.width},
        w_dims{c.out_channels, c.channels / c.groups, c.k, c.k};
    const Tensor x = sample(x_dims, 1), w = sample(w_dims, 2);
    check_close(run_twice(one_op(OpKind::conv2d, {x_dims, w_dims}, attrs), {x, w}), naive_conv(c, x, w));
  }
}

TEST_CASE("a plan's max_pool2d and avg_pool2d match a naive loop on sizes 1, 7 and 17") {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {1, 7, 17, 7}, {7, 1, 7, 17}})
    for (const auto& [k, stride, pad] : std::vector<std::array<int64_t, 3>>{{1, 1, 0}, {3, 2, 1}, {3, 1, 1}}) {
      CAPTURE(dims[2]);
      CAPTURE(k);
      const ir::Attrs window = {{"kernel", pair(k, k)}, {"stride", pair(stride, stride)}, {"padding", pair(pad, pad)}};
      const Tensor x = sample(dims, 3);
      check_close(run_twice(one_op(OpKind::max_pool2d, {dims}, window), {x}),
                  naive_pool(x, k, stride, pad, true, false));
      for (bool include_pad : {false, true}) {
        ir::Attrs average = window;
        average.set("count_include_pad", ir::Attr::of_bool(include_pad));
        check_close(run_twice(one_op(OpKind::avg_pool2d, {dims}, average), {x}),
                    naive_pool(x, k, stride, pad, false, include_pad));
      }
    }
}

TEST_CASE("a plan's reductions match a naive loop on sizes 1, 7 and 17") {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1}, {7, 1, 17}, {17, 7}, {1, 17, 7}})
    for (size_t axis = 0; axis < dims.size(); ++axis)
      for (OpKind kind : {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max, OpKind::reduce_min}) {
        CAPTURE(dims.size());
        CAPTURE(axis);
        CAPTURE(ir::op_info(kind).name);
        const Tensor x = sample(dims, 4);
        check_close(run_twice(one_op(kind, {dims}, reduce_attrs(int64_t(axis))), {x}), naive_reduce(x, axis, kind));
      }
}
