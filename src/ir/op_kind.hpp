#pragma once
#include <cstdint>

namespace kiln::ir {

// Every op kind, once. The X-macro keeps the enum and the op table (ops.cpp) in step.
// Semantics and attributes of each op are documented in ops.hpp.
// One family per line: clang-format would reflow the X-macro.
// clang-format off
#define KILN_OP_KINDS(X)                                                                           \
  /* elementwise unary */                                                                          \
  X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(tanh) X(sigmoid) X(relu) X(gelu) X(silu) X(erf)  \
  X(sin) X(cos)                                                                                    \
  /* elementwise binary (numpy broadcasting) */                                                   \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)                                         \
  /* other elementwise */                                                                          \
  X(compare) X(where) X(cast) X(clamp)                                                             \
  /* reductions and normalisations */                                                             \
  X(reduce_sum) X(reduce_mean) X(reduce_max) X(reduce_min) X(argmax) X(softmax) X(log_softmax)     \
  X(layer_norm) X(rms_norm) X(batch_norm)                                                          \
  /* linear algebra and nn */                                                                      \
  X(matmul) X(conv2d) X(max_pool2d) X(avg_pool2d)                                                  \
  /* shape */                                                                                      \
  X(reshape) X(transpose) X(broadcast_to) X(concat) X(split) X(slice) X(squeeze) X(unsqueeze)      \
  X(gather) X(pad)                                                                                 \
  /* creation */                                                                                   \
  X(constant) X(constant_external) X(full) X(arange)                                               \
  /* side effects, calls, extensions */                                                            \
  X(buffer_store) X(call) X(custom)
// clang-format on

enum class OpKind : uint16_t {
#define KILN_OP_ENUM(name) name,
  KILN_OP_KINDS(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

inline constexpr int kNumOpKinds = 0
#define KILN_OP_COUNT(name) +1
    KILN_OP_KINDS(KILN_OP_COUNT)
#undef KILN_OP_COUNT
    ;

} // namespace kiln::ir
