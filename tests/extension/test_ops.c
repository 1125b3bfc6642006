/* The extension the test suite loads: a few ops written against kiln/extension.h in plain C.
 *   kiln_test.scale_add(x, y) {alpha}        x + alpha * y (f32, same shapes; alpha defaults to 1)
 *   kiln_test.pairwise_concat(a, b)          concatenation along the last axis (static there)
 *   kiln_test.minmax(a, b)                   two results: elementwise min and max
 *   kiln_test.checked_sqrt(x)                sqrt; the kernel fails on a negative element
 *   kiln_test.fill() {shape, value, negate, dtype}  a new tensor of one value (f32 or i32)
 */
#include <kiln/extension.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int fail(char* err, size_t err_len, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(err, err_len, format, args);
  va_end(args);
  return 1;
}

static int same_shape(const kiln_ext_tensor_desc* a, const kiln_ext_tensor_desc* b) {
  if (a->rank != b->rank) return 0;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->dims[d] != b->dims[d]) return 0; /* a symbolic dim is the same token for the same name */
  return 1;
}

static int two_f32_same_shape(const kiln_ext_tensor_desc* in, int32_t n_in, char* err, size_t err_len) {
  if (n_in != 2) return fail(err, err_len, "takes 2 inputs, got %d", (int)n_in);
  if (in[0].dtype != KILN_EXT_F32 || in[1].dtype != KILN_EXT_F32) return fail(err, err_len, "inputs must be f32");
  if (!same_shape(&in[0], &in[1])) return fail(err, err_len, "inputs must have the same shape");
  return 0;
}

static int scale_add_infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in, int32_t n_in,
                           kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  if (two_f32_same_shape(in, n_in, err, err_len)) return 1;
  out[0] = in[0];
  *n_out = 1;
  return 0;
}

static int scale_add_run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
                         kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)n_in;
  (void)n_out;
  (void)err;
  (void)err_len;
  const float alpha = (float)kiln_ext_attr_number(attrs, "alpha", 1.0);
  const float* x = (const float*)in[0].data;
  const float* y = (const float*)in[1].data;
  float* result = (float*)out[0].data;
  const int64_t n = kiln_ext_numel(&out[0].desc);
  for (int64_t i = 0; i < n; ++i)
    result[i] = x[i] + alpha * y[i];
  return 0;
}

static int pairwise_concat_infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in,
                                 int32_t n_in, kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  if (n_in != 2) return fail(err, err_len, "takes 2 inputs, got %d", (int)n_in);
  if (in[0].dtype != KILN_EXT_F32 || in[1].dtype != KILN_EXT_F32) return fail(err, err_len, "inputs must be f32");
  if (in[0].rank < 1 || in[0].rank != in[1].rank) return fail(err, err_len, "inputs need the same rank >= 1");
  const int32_t last = in[0].rank - 1;
  for (int32_t d = 0; d < last; ++d)
    if (in[0].dims[d] != in[1].dims[d]) return fail(err, err_len, "leading dims differ at axis %d", (int)d);
  if (KILN_EXT_DIM_IS_SYMBOLIC(in[0].dims[last]) || KILN_EXT_DIM_IS_SYMBOLIC(in[1].dims[last]))
    return fail(err, err_len, "the last axis must be static to concatenate along it");
  out[0] = in[0];
  out[0].dims[last] = in[0].dims[last] + in[1].dims[last];
  *n_out = 1;
  return 0;
}

static int pairwise_concat_run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
                               kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  (void)n_in;
  (void)n_out;
  (void)err;
  (void)err_len;
  const int32_t last = in[0].desc.rank - 1;
  const int64_t a_cols = in[0].desc.dims[last], b_cols = in[1].desc.dims[last];
  const int64_t rows = a_cols + b_cols == 0 ? 0 : kiln_ext_numel(&out[0].desc) / (a_cols + b_cols);
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  float* result = (float*)out[0].data;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < a_cols; ++c)
      *result++ = a[r * a_cols + c];
    for (int64_t c = 0; c < b_cols; ++c)
      *result++ = b[r * b_cols + c];
  }
  return 0;
}

static int minmax_infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in, int32_t n_in,
                        kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  if (two_f32_same_shape(in, n_in, err, err_len)) return 1;
  if (*n_out < 2) return fail(err, err_len, "needs room for 2 outputs");
  out[0] = in[0];
  out[1] = in[0];
  *n_out = 2;
  return 0;
}

static int minmax_run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
                      kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  (void)n_in;
  (void)n_out;
  (void)err;
  (void)err_len;
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  float* low = (float*)out[0].data;
  float* high = (float*)out[1].data;
  const int64_t n = kiln_ext_numel(&in[0].desc);
  for (int64_t i = 0; i < n; ++i) {
    low[i] = a[i] < b[i] ? a[i] : b[i];
    high[i] = a[i] < b[i] ? b[i] : a[i];
  }
  return 0;
}

static int checked_sqrt_infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in,
                              int32_t n_in, kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  if (n_in != 1 || in[0].dtype != KILN_EXT_F32) return fail(err, err_len, "takes one f32 input");
  out[0] = in[0];
  *n_out = 1;
  return 0;
}

static int checked_sqrt_run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
                            kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  (void)n_in;
  (void)n_out;
  const float* x = (const float*)in[0].data;
  float* result = (float*)out[0].data;
  const int64_t n = kiln_ext_numel(&in[0].desc);
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < 0) return fail(err, err_len, "negative input %g at element %lld", (double)x[i], (long long)i);
    result[i] = sqrtf(x[i]);
  }
  return 0;
}

static int fill_infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in, int32_t n_in,
                      kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)in;
  if (n_in != 0) return fail(err, err_len, "takes no inputs");
  const kiln_ext_attr* shape = kiln_ext_find_attr(attrs, "shape");
  const kiln_ext_attr* dtype = kiln_ext_find_attr(attrs, "dtype");
  if (!shape || shape->kind != KILN_EXT_ATTR_INTS || shape->count > KILN_EXT_MAX_RANK)
    return fail(err, err_len, "needs a 'shape' attribute of at most %d ints", KILN_EXT_MAX_RANK);
  if (!dtype || dtype->kind != KILN_EXT_ATTR_STRING) return fail(err, err_len, "needs a 'dtype' string attribute");
  if (strcmp(dtype->string_value, "f32") == 0)
    out[0].dtype = KILN_EXT_F32;
  else if (strcmp(dtype->string_value, "i32") == 0)
    out[0].dtype = KILN_EXT_I32;
  else
    return fail(err, err_len, "dtype '%s' is neither f32 nor i32", dtype->string_value);
  out[0].rank = (int32_t)shape->count;
  for (int64_t d = 0; d < shape->count; ++d) {
    if (shape->ints[d] < 0) return fail(err, err_len, "negative size in 'shape'");
    out[0].dims[d] = shape->ints[d];
  }
  *n_out = 1;
  return 0;
}

static int fill_run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
                    kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)in;
  (void)n_in;
  (void)n_out;
  (void)err;
  (void)err_len;
  const kiln_ext_attr* negate = kiln_ext_find_attr(attrs, "negate");
  double value = kiln_ext_attr_number(attrs, "value", 0.0);
  if (negate && negate->kind == KILN_EXT_ATTR_BOOL && negate->int_value) value = -value;
  const int64_t n = kiln_ext_numel(&out[0].desc);
  for (int64_t i = 0; i < n; ++i) {
    if (out[0].desc.dtype == KILN_EXT_F32)
      ((float*)out[0].data)[i] = (float)value;
    else
      ((int32_t*)out[0].data)[i] = (int32_t)value;
  }
  return 0;
}

int kiln_register_extension(kiln_ext_registrar* registrar) {
  if (registrar->abi_version != KILN_EXTENSION_ABI_VERSION) {
    snprintf(registrar->error, registrar->error_len, "built for kiln extension ABI %d", KILN_EXTENSION_ABI_VERSION);
    return 1;
  }
  const kiln_ext_op ops[] = {
      {KILN_EXTENSION_ABI_VERSION, "kiln_test.scale_add", scale_add_infer, scale_add_run, NULL},
      {KILN_EXTENSION_ABI_VERSION, "kiln_test.pairwise_concat", pairwise_concat_infer, pairwise_concat_run, NULL},
      {KILN_EXTENSION_ABI_VERSION, "kiln_test.minmax", minmax_infer, minmax_run, NULL},
      {KILN_EXTENSION_ABI_VERSION, "kiln_test.checked_sqrt", checked_sqrt_infer, checked_sqrt_run, NULL},
      {KILN_EXTENSION_ABI_VERSION, "kiln_test.fill", fill_infer, fill_run, NULL},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (registrar->register_op(registrar, &ops[i]) != 0) return 1;
  return 0;
}
