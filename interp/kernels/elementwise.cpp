#include "interp/kernels/kernels.hpp"
#include "interp/kernels/strided_loop.hpp"
#include "interp/kernels/vector_math.hpp"
#include <functional>

namespace kiln::interp {

using exec::KernelArgs;
using exec::View;

namespace {

// y[i] = fn(x[i]) for one element type; computed in E::Compute.
template <class E, class Fn> void unary_map(const KernelArgs& args, Fn fn) {
  using S = typename E::Storage;
  const S* x = args.inputs[0].as<const S>();
  S* y = args.outputs[0].as<S>();
  for_each_range(args.outputs[0].numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = E::store(fn(E::load(x[i])));
  });
}

template <class DTypes, class Fn> void unary(const KernelArgs& args, Fn fn) {
  require_same_dtype(args, {0});
  require_same_dims(args);
  dispatch_dtype(DTypes{}, args.inputs[0].dtype, args.op, [&](auto e) { unary_map<decltype(e)>(args, fn); });
}

// As unary, but f32 runs vector_math's dispatched array loop for the same function.
template <class DTypes, class Fn> void unary_math(const KernelArgs& args, vector_math::MapF32 f32_fn, Fn fn) {
  if (args.inputs[0].dtype != DType::f32 || args.outputs[0].dtype != DType::f32) return unary<DTypes>(args, fn);
  require_same_dims(args);
  const float* x = args.inputs[0].as<const float>();
  float* y = args.outputs[0].as<float>();
  for_each_range(args.outputs[0].numel(),
                 [&](int64_t begin, int64_t end) { vector_math::map_f32(f32_fn, x + begin, y + begin, end - begin); });
}

// One innermost row of out = fn(a, b), in one of its three shapes: both operands contiguous, a
// broadcast along it (scalar or column), or b broadcast along it.
template <class In, class Out, class Fn>
void binary_row(const typename In::Storage* x, const typename In::Storage* y, typename Out::Storage* z, int64_t count,
                bool a_contiguous, bool b_contiguous, Fn fn) {
  if (a_contiguous && b_contiguous) {
    for (int64_t i = 0; i < count; ++i)
      z[i] = Out::store(fn(In::load(x[i]), In::load(y[i])));
  } else if (!a_contiguous) {
    const auto x0 = In::load(x[0]);
    for (int64_t i = 0; i < count; ++i)
      z[i] = Out::store(fn(x0, In::load(y[i])));
  } else {
    const auto y0 = In::load(y[0]);
    for (int64_t i = 0; i < count; ++i)
      z[i] = Out::store(fn(In::load(x[i]), y0));
  }
}

// out = fn(a, b) with numpy broadcasting, row by row.
template <class In, class Out, class Fn> void binary_map(const KernelArgs& args, Fn fn) {
  using S = typename In::Storage;
  using R = typename Out::Storage;
  const View &a = args.inputs[0], &b = args.inputs[1], &out = args.outputs[0];
  const StridedLoop<2>& loop = prepared<StridedLoop<2>>(args);
  const S* a_data = a.as<const S>();
  const S* b_data = b.as<const S>();
  R* out_data = out.as<R>();
  const bool a_contiguous = loop.inner_stride(0) == 1, b_contiguous = loop.inner_stride(1) == 1;
  if (loop.rows() == 1 && loop.inner() <= kChunk) { // a small tensor: its one row, directly
    const std::array<int64_t, 2>& in = loop.first_row_offsets();
    return binary_row<In, Out>(a_data + in[0], b_data + in[1], out_data, loop.inner(), a_contiguous, b_contiguous, fn);
  }
  for_each_chunk(loop, [&](int64_t out_offset, std::array<int64_t, 2> in, int64_t count) {
    binary_row<In, Out>(a_data + in[0], b_data + in[1], out_data + out_offset, count, a_contiguous, b_contiguous, fn);
  });
}

template <class DTypes, class Fn> void binary(const KernelArgs& args, Fn fn) {
  dispatch_dtype(DTypes{}, args.inputs[0].dtype, args.op,
                 [&](auto e) { binary_map<decltype(e), decltype(e)>(args, fn); });
}

// x < 0, without a comparison that is always false for unsigned types.
template <class T> bool is_negative(T x) {
  if constexpr (std::is_unsigned_v<T>)
    return false;
  else
    return x < T(0);
}

// PyTorch's integer pow: squaring that wraps as the multiplications do; x ** -n truncates 1 / x ** n
// (1 for 1, +-1 for -1, else 0, 0 included).
template <class T> T power(T base, T exponent) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>)
      if (exponent < 0) return base == 1 ? T(1) : base == T(-1) ? T(exponent % 2 == 0 ? 1 : -1) : T(0);
    T result = 1;
    for (; exponent != 0; exponent /= 2, base = wrapping_mul(base, base))
      if (exponent % 2 != 0) result = wrapping_mul(result, base);
    return result;
  } else {
    return std::pow(base, exponent);
  }
}

// Integer division truncates toward zero (C++, MLIR arith.divsi); x / 0 gives 0 as in numpy,
// and INT_MIN / -1 wraps, so no input is undefined behaviour.
template <class T> T divide(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    if (b == 0) return T(0);
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>)
    if (b == T(-1)) return wrapping_neg(a);
  return a / b;
}

// torch's floor division: floats as its div_floor (exact for representable quotients, the sign of
// a zero kept), integers rounded toward -inf; an integer x // 0 gives 0, like divide.
template <class T> T floor_divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return wrapping_neg(a); // exact, and INT_MIN % -1 would overflow
    const T q = divide(a, b);
    return (a % b != 0 && is_negative(a) != is_negative(b)) ? T(q - 1) : q;
  } else {
    if (b == T(0)) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), a / b);
    T floored = std::floor(div);
    if (div - floored > T(0.5)) floored += T(1);
    return floored;
  }
}

// torch.remainder: the sign of the divisor; an integer x % 0 gives 0.
template <class T> T remainder(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0); // INT_MIN % -1 overflows
    const T r = T(a % b);
    return (r != 0 && is_negative(r) != is_negative(b)) ? T(r + b) : r;
  } else {
    T r = std::fmod(a, b);
    if (r != T(0) && ((b < T(0)) != (r < T(0)))) r += b;
    return r;
  }
}

template <class T> T absolute(T x) {
  if constexpr (std::is_integral_v<T>)
    return is_negative(x) ? wrapping_neg(x) : x;
  else
    return std::abs(x);
}

// fn(x) for floats; an integer is returned as it is.
template <class T, class Fn> T whole(T x, Fn fn) {
  if constexpr (std::is_integral_v<T>)
    return x;
  else
    return fn(x);
}

template <class T> T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>)
    return vector_math::exp(x);
  else
    return std::exp(x);
}
template <class T> T tanh_of(T x) {
  if constexpr (std::is_same_v<T, float>)
    return vector_math::tanh(x);
  else
    return std::tanh(x);
}

template <class T> T sigmoid_of(T x) {
  if constexpr (std::is_same_v<T, float>) return vector_math::sigmoid(x);
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x); // x < 0: exp(x) cannot overflow
  return e / (T(1) + e);
}

template <class T> T gelu_erf(T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440))); }
template <class T> T gelu_tanh(T x) {
  const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + tanh_of(inner));
}

template <class Fn> void with_predicate(const ir::Op& op, Fn&& fn) {
  switch (ir::params_of<ir::CompareParams>(op).predicate) {
  case ir::ComparePredicate::eq: return fn(std::equal_to<>{});
  case ir::ComparePredicate::ne: return fn(std::not_equal_to<>{});
  case ir::ComparePredicate::lt: return fn(std::less<>{});
  case ir::ComparePredicate::le: return fn(std::less_equal<>{});
  case ir::ComparePredicate::gt: return fn(std::greater<>{});
  case ir::ComparePredicate::ge: return fn(std::greater_equal<>{});
  }
}

} // namespace

exec::PreparedState prepare_binary(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  require_same_dtype(KernelArgs{op, inputs, outputs}, {0, 1});
  return make_prepared(broadcast_loop<2>(outputs[0].dims, {inputs[0].dims, inputs[1].dims}, op));
}

exec::PreparedState prepare_compare(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  require_same_dtype(KernelArgs{op, inputs, outputs}, {0, 1}, false);
  if (outputs[0].dtype != DType::boolean) throw_unsupported_dtype(op, outputs[0].dtype);
  return make_prepared(broadcast_loop<2>(outputs[0].dims, {inputs[0].dims, inputs[1].dims}, op));
}

exec::PreparedState prepare_where(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  if (inputs[0].dtype != DType::boolean) throw_unsupported_dtype(op, inputs[0].dtype);
  require_same_dtype(KernelArgs{op, inputs, outputs}, {1, 2});
  return make_prepared(broadcast_loop<3>(outputs[0].dims, {inputs[0].dims, inputs[1].dims, inputs[2].dims}, op));
}

exec::PreparedState prepare_masked_fill(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  if (inputs[1].dtype != DType::boolean) throw_unsupported_dtype(op, inputs[1].dtype);
  const KernelArgs args{op, inputs, outputs};
  require_same_dtype(args, {0});
  require_same_dims(args);
  return make_prepared(broadcast_loop<2>(outputs[0].dims, {inputs[0].dims, inputs[1].dims}, op));
}

exec::PreparedState prepare_clamp(const ir::Op& op, std::span<const View> inputs, std::span<const View> outputs) {
  require_same_dtype(KernelArgs{op, inputs, outputs}, {0, 1, 2});
  return make_prepared(broadcast_loop<3>(outputs[0].dims, {inputs[0].dims, inputs[1].dims, inputs[2].dims}, op));
}

void neg(const KernelArgs& args) {
  unary<ArithmeticDTypes>(args, [](auto x) { return wrapping_neg(x); });
}
void abs(const KernelArgs& args) {
  unary<ArithmeticDTypes>(args, [](auto x) { return absolute(x); });
}
void relu(const KernelArgs& args) {
  // `x < 0` is false for NaN, so NaN passes through like torch.relu.
  unary<ArithmeticDTypes>(args, [](auto x) { return is_negative(x) ? decltype(x)(0) : x; });
}
// relu6(x + 3), hardsigmoid's and hardswish's first steps in torch's order; the comparisons are
// written so that NaN falls through to the result.
template <class T> T relu6_of_x_plus_3(T x) {
  T t = x + T(3);
  t = t < T(0) ? T(0) : t;
  return t > T(6) ? T(6) : t;
}
void hardsigmoid(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return relu6_of_x_plus_3(x) / decltype(x)(6); });
}
// Integers are already whole, as in torch.
void floor(const KernelArgs& args) {
  unary<ArithmeticDTypes>(args, [](auto x) { return whole(x, [](auto v) { return std::floor(v); }); });
}
void ceil(const KernelArgs& args) {
  unary<ArithmeticDTypes>(args, [](auto x) { return whole(x, [](auto v) { return std::ceil(v); }); });
}
void round(const KernelArgs& args) {
  // nearbyint in the default rounding mode: halves to even, like torch.round.
  unary<ArithmeticDTypes>(args, [](auto x) { return whole(x, [](auto v) { return std::nearbyint(v); }); });
}
void sign(const KernelArgs& args) {
  // torch's formula: both comparisons are false for NaN and for -0, which give +0.
  unary<ArithmeticDTypes>(args, [](auto x) {
    using T = decltype(x);
    return T(int(T(0) < x) - int(is_negative(x)));
  });
}
void hardswish(const KernelArgs& args) {
  // torch's x * t / 6, in that order.
  unary<FloatDTypes>(args, [](auto x) { return x * relu6_of_x_plus_3(x) / decltype(x)(6); });
}
void leaky_relu(const KernelArgs& args) {
  const double slope = ir::params_of<ir::LeakyReluParams>(args.op).negative_slope;
  unary<FloatDTypes>(args, [slope](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : x * T(slope);
  });
}
void elu(const KernelArgs& args) {
  const double alpha = ir::params_of<ir::EluParams>(args.op).alpha;
  unary<FloatDTypes>(args, [alpha](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : T(alpha) * std::expm1(x);
  });
}
void softplus(const KernelArgs& args) {
  const ir::SoftplusParams p = ir::params_of<ir::SoftplusParams>(args.op);
  unary<FloatDTypes>(args, [p](auto x) {
    using T = decltype(x);
    const T z = x * T(p.beta);
    return z > T(p.threshold) ? x : std::log1p(exp_of(z)) / T(p.beta);
  });
}
void log1p(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::log1p(x); });
}
void expm1(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::expm1(x); });
}
void exp(const KernelArgs& args) {
  unary_math<FloatDTypes>(args, vector_math::MapF32::exp, [](auto x) { return exp_of(x); });
}
void log(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::log(x); });
}
void sqrt(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::sqrt(x); });
}
void rsqrt(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}
void tanh(const KernelArgs& args) {
  unary_math<FloatDTypes>(args, vector_math::MapF32::tanh, [](auto x) { return tanh_of(x); });
}
void sigmoid(const KernelArgs& args) {
  unary_math<FloatDTypes>(args, vector_math::MapF32::sigmoid, [](auto x) { return sigmoid_of(x); });
}
void silu(const KernelArgs& args) {
  unary_math<FloatDTypes>(args, vector_math::MapF32::silu, [](auto x) { return x * sigmoid_of(x); });
}
void erf(const KernelArgs& args) {
  unary_math<FloatDTypes>(args, vector_math::MapF32::erf, [](auto x) { return std::erf(x); });
}
void sin(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::sin(x); });
}
void cos(const KernelArgs& args) {
  unary<FloatDTypes>(args, [](auto x) { return std::cos(x); });
}

void gelu(const KernelArgs& args) {
  switch (ir::params_of<ir::GeluParams>(args.op).form) {
  case ir::GeluForm::exact:
    return unary_math<FloatDTypes>(args, vector_math::MapF32::gelu_erf, [](auto x) { return gelu_erf(x); });
  case ir::GeluForm::tanh:
    return unary_math<FloatDTypes>(args, vector_math::MapF32::gelu_tanh, [](auto x) { return gelu_tanh(x); });
  }
}

void add(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return wrapping_add(a, b); });
}
void sub(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return wrapping_sub(a, b); });
}
void mul(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return wrapping_mul(a, b); });
}
void div(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return divide(a, b); });
}
void pow(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return power(a, b); });
}
void maximum(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return nan_max(a, b); });
}
void minimum(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return nan_min(a, b); });
}
void floor_divide(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return floor_divide(a, b); });
}
void remainder(const KernelArgs& args) {
  binary<ArithmeticDTypes>(args, [](auto a, auto b) { return remainder(a, b); });
}

void compare(const KernelArgs& args) {
  with_predicate(args.op, [&](auto predicate) {
    dispatch_dtype(AllDTypes{}, args.inputs[0].dtype, args.op, [&](auto e) {
      binary_map<decltype(e), Element<DType::boolean>>(args, [&](auto a, auto b) { return predicate(a, b); });
    });
  });
}

void where(const KernelArgs& args) {
  const View &cond = args.inputs[0], &a = args.inputs[1], &b = args.inputs[2], &out = args.outputs[0];
  const StridedLoop<3>& loop = prepared<StridedLoop<3>>(args);
  const int64_t sc = loop.inner_stride(0), sa = loop.inner_stride(1), sb = loop.inner_stride(2);
  // Selection moves bits, so one instantiation per element size serves every dtype.
  dispatch_element_size(dtype_size(out.dtype), [&](auto word) {
    using W = decltype(word);
    const uint8_t* c_data = cond.as<const uint8_t>();
    const W* a_data = a.as<const W>();
    const W* b_data = b.as<const W>();
    W* out_data = out.as<W>();
    for_each_chunk(loop, [&](int64_t out_offset, std::array<int64_t, 3> in, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        out_data[out_offset + i] = c_data[in[0] + i * sc] ? a_data[in[1] + i * sa] : b_data[in[2] + i * sb];
    });
  });
}

void masked_fill(const KernelArgs& args) {
  const View &x = args.inputs[0], &mask = args.inputs[1], &out = args.outputs[0];
  const StridedLoop<2>& loop = prepared<StridedLoop<2>>(args);
  const int64_t sx = loop.inner_stride(0), sm = loop.inner_stride(1);
  const double value = ir::params_of<ir::MaskedFillParams>(args.op).value;
  dispatch_dtype(AllDTypes{}, x.dtype, args.op, [&](auto e) {
    using S = typename decltype(e)::Storage;
    const S fill = storage_from_double<decltype(e)>(value);
    const S* x_data = x.as<const S>();
    const uint8_t* m_data = mask.as<const uint8_t>();
    S* out_data = out.as<S>();
    for_each_chunk(loop, [&](int64_t out_offset, std::array<int64_t, 2> in, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        out_data[out_offset + i] = m_data[in[1] + i * sm] ? fill : x_data[in[0] + i * sx];
    });
  });
}

void clamp(const KernelArgs& args) {
  const View &x = args.inputs[0], &lo = args.inputs[1], &hi = args.inputs[2], &out = args.outputs[0];
  const StridedLoop<3>& loop = prepared<StridedLoop<3>>(args);
  const int64_t sx = loop.inner_stride(0), sl = loop.inner_stride(1), sh = loop.inner_stride(2);
  dispatch_dtype(ArithmeticDTypes{}, x.dtype, args.op, [&](auto e) {
    using E = decltype(e);
    using S = typename E::Storage;
    const S *x_data = x.as<const S>(), *lo_data = lo.as<const S>(), *hi_data = hi.as<const S>();
    S* out_data = out.as<S>();
    for_each_chunk(loop, [&](int64_t out_offset, std::array<int64_t, 3> in, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        const auto v = E::load(x_data[in[0] + i * sx]);
        const auto low = E::load(lo_data[in[1] + i * sl]), high = E::load(hi_data[in[2] + i * sh]);
        out_data[out_offset + i] = E::store(nan_min(nan_max(v, low), high));
      }
    });
  });
}

void cast(const KernelArgs& args) {
  require_same_dims(args);
  const View &x = args.inputs[0], &y = args.outputs[0];
  dispatch_dtype(AllDTypes{}, x.dtype, args.op, [&](auto from) {
    dispatch_dtype(AllDTypes{}, y.dtype, args.op, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const auto* src = x.as<const typename From::Storage>();
      auto* dst = y.as<typename To::Storage>();
      for_each_range(y.numel(), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          dst[i] = To::store(convert_value<typename To::Compute>(From::load(src[i])));
      });
    });
  });
}

// Broadcasting kernels derive their loops once.
std::span<const KernelSetup> elementwise_setups() {
  static constexpr KernelSetup kSetups[] = {
      KILN_KERNEL_SETUP(add, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(sub, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(mul, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(div, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(pow, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(maximum, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(minimum, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(floor_divide, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(remainder, prepare_binary, nullptr),
      KILN_KERNEL_SETUP(compare, prepare_compare, nullptr),
      KILN_KERNEL_SETUP(where, prepare_where, nullptr),
      KILN_KERNEL_SETUP(clamp, prepare_clamp, nullptr),
      KILN_KERNEL_SETUP(masked_fill, prepare_masked_fill, nullptr),
  };
  return kSetups;
}

} // namespace kiln::interp
