/* kiln extensions: custom ops in a shared library, registered through a small C ABI.
 *
 * An extension is a shared library (built with any C or C++ compiler, linked against nothing of
 * kiln: this header is all it needs) that exports one function:
 *
 *     int kiln_register_extension(kiln_ext_registrar* registrar);
 *
 * kiln loads it with dlopen (StageOptions/CompileOptions::custom_extensions, kiln::load_extension,
 * `kiln run --extension LIB.so`), calls kiln_register_extension once, and the library calls
 * registrar->register_op once per op. A graph then uses the op by name: F::custom("myext.scale",
 * inputs, attrs) while tracing, or "kiln.custom"(...) {op = "myext.scale", ...} in MLIR text.
 *
 * Each op brings two functions:
 *  - infer: the shape function. From the input types and the attributes it gives the output types.
 *    kiln calls it while tracing, when parsing or verifying a graph, and when an executable is built.
 *  - run: the kernel. kiln calls it on every execution with the inputs and preallocated outputs.
 *
 * Minimal extension (one op "demo.double" with y = 2 * x for f32):
 *
 *     static int infer(void* u, const kiln_ext_attrs* a, const kiln_ext_tensor_desc* in, int32_t n_in,
 *                      kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
 *       if (n_in != 1 || in[0].dtype != KILN_EXT_F32) { snprintf(err, err_len, "needs one f32 input"); return 1; }
 *       out[0] = in[0];
 *       *n_out = 1;
 *       return 0;
 *     }
 *     static int run(void* u, const kiln_ext_attrs* a, const kiln_ext_tensor* in, int32_t n_in,
 *                    kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
 *       const float* x = (const float*)in[0].data;
 *       float* y = (float*)out[0].data;
 *       for (int64_t i = 0; i < kiln_ext_numel(&in[0].desc); ++i) y[i] = 2 * x[i];
 *       return 0;
 *     }
 *     int kiln_register_extension(kiln_ext_registrar* r) {
 *       kiln_ext_op op = {KILN_EXTENSION_ABI_VERSION, "demo.double", infer, run, NULL};
 *       return r->register_op(r, &op);
 *     }
 *
 * Contract:
 *  - Threads: infer and run may be called from many threads at once, for the same op and for
 *    different ops; keep them free of unsynchronised shared state. user_data is shared by all calls.
 *  - Memory: kiln owns every buffer. Inputs are read-only; outputs are allocated by kiln, sized from
 *    the shape function's result, never alias an input, and must be fully written by run.
 *    Data are contiguous, C order, with no padding; bool is one byte holding 0 or 1.
 *  - Lifetime: a loaded library is never unloaded; pointers given to kiln (functions, user_data)
 *    must stay valid for the life of the process. Strings (name, attributes) are copied by kiln
 *    or valid only for the duration of one call.
 *  - Errors: return 0 on success. On failure return nonzero and write a NUL-terminated message of
 *    at most err_len bytes into err; kiln raises a kiln::Error naming the op, its source location
 *    and that message. Never throw C++ exceptions or longjmp across this ABI.
 *  - Versions: KILN_EXTENSION_ABI_VERSION changes whenever a struct or signature here changes.
 *    kiln refuses an op whose abi_version differs from its own (the field is first in kiln_ext_op
 *    in every version, so kiln can always read it).
 */
#ifndef KILN_EXTENSION_H
#define KILN_EXTENSION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_EXTENSION_ABI_VERSION 1

/* Highest rank of a tensor seen by an extension, and most outputs of one op. */
#define KILN_EXT_MAX_RANK 8
#define KILN_EXT_MAX_OUTPUTS 16

/* Element types; the values are kiln::DType's, in the same order. */
typedef enum kiln_ext_dtype {
  KILN_EXT_F32 = 0,
  KILN_EXT_F64 = 1,
  KILN_EXT_F16 = 2,
  KILN_EXT_BF16 = 3,
  KILN_EXT_I8 = 4,
  KILN_EXT_I32 = 5,
  KILN_EXT_I64 = 6,
  KILN_EXT_U8 = 7,
  KILN_EXT_BOOL = 8
} kiln_ext_dtype;

/* A tensor type. In a shape function a dim may be symbolic (a size known only at call time, such
 * as a batch dim): it is negative. Copy such a dim unchanged into an output dim to say "the same
 * size"; never compute with it (return an error when the rule needs its value: the op then works
 * only where that dim is static). Kernels always see sizes >= 0. */
typedef struct kiln_ext_tensor_desc {
  int32_t dtype; /* a kiln_ext_dtype (an int32_t, not the enum, so the layout is fixed) */
  int32_t rank;  /* 0 .. KILN_EXT_MAX_RANK */
  int64_t dims[KILN_EXT_MAX_RANK];
} kiln_ext_tensor_desc;

#define KILN_EXT_DIM_IS_SYMBOLIC(dim) ((dim) < 0)

/* A tensor as the kernel sees it: its type and its data. */
typedef struct kiln_ext_tensor {
  kiln_ext_tensor_desc desc;
  void* data;
} kiln_ext_tensor;

/* Attribute kinds. kiln passes the op's attributes typed, so kernels need no parser; an
 * attribute given as a kiln dtype arrives as a STRING ("f32", "i64", ...). */
typedef enum kiln_ext_attr_kind {
  KILN_EXT_ATTR_BOOL = 0,   /* int_value: 0 or 1 */
  KILN_EXT_ATTR_INT = 1,    /* int_value */
  KILN_EXT_ATTR_FLOAT = 2,  /* float_value */
  KILN_EXT_ATTR_STRING = 3, /* string_value (NUL-terminated), count = its length */
  KILN_EXT_ATTR_INTS = 4,   /* ints[count] */
  KILN_EXT_ATTR_FLOATS = 5  /* floats[count] */
} kiln_ext_attr_kind;

typedef struct kiln_ext_attr {
  const char* name;
  int32_t kind; /* a kiln_ext_attr_kind */
  int64_t count;
  int64_t int_value;
  double float_value;
  const char* string_value;
  const int64_t* ints;
  const double* floats;
} kiln_ext_attr;

/* The op's attributes sorted by name (the op name itself is not among them). */
typedef struct kiln_ext_attrs {
  const kiln_ext_attr* items;
  int32_t count;
} kiln_ext_attrs;

/* The shape function: fills outputs[0 .. *n_outputs) (on entry *n_outputs is the capacity,
 * KILN_EXT_MAX_OUTPUTS) from the input types and the attributes. */
typedef int (*kiln_ext_infer_fn)(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* inputs,
                                 int32_t n_inputs, kiln_ext_tensor_desc* outputs, int32_t* n_outputs, char* err,
                                 size_t err_len);

/* The kernel: reads inputs, writes every element of outputs (types as the shape function gave). */
typedef int (*kiln_ext_run_fn)(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* inputs,
                               int32_t n_inputs, kiln_ext_tensor* outputs, int32_t n_outputs, char* err,
                               size_t err_len);

/* One op. abi_version comes first in every ABI version: set it to KILN_EXTENSION_ABI_VERSION. */
typedef struct kiln_ext_op {
  int32_t abi_version;
  /* "<namespace>.<op>", e.g. "myext.scale_add": letters, digits, '_' and '.'; unique in the process.
   * The namespace "jit" is kiln's own. Copied by kiln. */
  const char* name;
  kiln_ext_infer_fn infer;
  kiln_ext_run_fn run;
  void* user_data; /* passed back to infer and run unchanged */
} kiln_ext_op;

/* What kiln passes to kiln_register_extension. */
typedef struct kiln_ext_registrar {
  int32_t abi_version; /* the ABI this kiln speaks; return nonzero if the library cannot serve it */
  /* Registers one op; returns 0, or nonzero when kiln refuses it (kiln then reports why itself). */
  int (*register_op)(struct kiln_ext_registrar* registrar, const kiln_ext_op* op);
  /* Where kiln_register_extension may explain a nonzero return (NUL-terminated). */
  char* error;
  size_t error_len;
  void* kiln_private; /* kiln's; do not touch */
} kiln_ext_registrar;

/* The one symbol an extension exports. Returns 0 when every op registered. */
typedef int (*kiln_register_extension_fn)(kiln_ext_registrar* registrar);
#define KILN_REGISTER_EXTENSION_SYMBOL "kiln_register_extension"

/* Helpers for extension code (inline: nothing to link). */

static inline int64_t kiln_ext_numel(const kiln_ext_tensor_desc* desc) {
  int64_t n = 1;
  for (int32_t i = 0; i < desc->rank; ++i)
    n *= desc->dims[i];
  return n;
}

/* The attribute called name, or NULL. */
static inline const kiln_ext_attr* kiln_ext_find_attr(const kiln_ext_attrs* attrs, const char* name) {
  for (int32_t i = 0; attrs && i < attrs->count; ++i)
    if (strcmp(attrs->items[i].name, name) == 0) return &attrs->items[i];
  return NULL;
}

/* A numeric attribute (INT, FLOAT or BOOL) as a double, or fallback when it is absent or not numeric. */
static inline double kiln_ext_attr_number(const kiln_ext_attrs* attrs, const char* name, double fallback) {
  const kiln_ext_attr* attr = kiln_ext_find_attr(attrs, name);
  if (!attr) return fallback;
  if (attr->kind == KILN_EXT_ATTR_FLOAT) return attr->float_value;
  if (attr->kind == KILN_EXT_ATTR_INT || attr->kind == KILN_EXT_ATTR_BOOL) return (double)attr->int_value;
  return fallback;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_EXTENSION_H */
