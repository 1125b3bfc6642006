/* Libraries kiln must refuse, one per define, each with a clear error:
 *   KILN_TEST_NO_SYMBOL      exports no kiln_register_extension
 *   KILN_TEST_ABI_MISMATCH   registers an op built for another ABI version
 *   KILN_TEST_REFUSES        kiln_register_extension fails and says why
 *   KILN_TEST_DUPLICATE      registers an op name the test extension already took
 *   KILN_TEST_RESERVED_NAME  registers an op in kiln's own "jit" namespace
 */
#include <kiln/extension.h>
#include <stdio.h>

#if defined(KILN_TEST_NO_SYMBOL)

int kiln_test_not_an_extension(void) { return 0; }

#elif defined(KILN_TEST_REFUSES)

int kiln_register_extension(kiln_ext_registrar* registrar) {
  snprintf(registrar->error, registrar->error_len, "this extension needs a GPU");
  return 3;
}

#else

static int infer(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor_desc* in, int32_t n_in,
                 kiln_ext_tensor_desc* out, int32_t* n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  (void)err;
  (void)err_len;
  if (n_in != 1) return 1;
  out[0] = in[0];
  *n_out = 1;
  return 0;
}

static int run(void* user_data, const kiln_ext_attrs* attrs, const kiln_ext_tensor* in, int32_t n_in,
               kiln_ext_tensor* out, int32_t n_out, char* err, size_t err_len) {
  (void)user_data;
  (void)attrs;
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)err;
  (void)err_len;
  return 0;
}

int kiln_register_extension(kiln_ext_registrar* registrar) {
#if defined(KILN_TEST_ABI_MISMATCH)
  const kiln_ext_op op = {999, "kiln_test_bad.future", infer, run, NULL};
  return registrar->register_op(registrar, &op);
#elif defined(KILN_TEST_DUPLICATE)
  /* The first op is fine; the library must still register nothing, since the second is taken. */
  const kiln_ext_op first = {KILN_EXTENSION_ABI_VERSION, "kiln_test_dup.extra", infer, run, NULL};
  const kiln_ext_op second = {KILN_EXTENSION_ABI_VERSION, "kiln_test.scale_add", infer, run, NULL};
  if (registrar->register_op(registrar, &first) != 0) return 1;
  return registrar->register_op(registrar, &second);
#elif defined(KILN_TEST_RESERVED_NAME)
  const kiln_ext_op op = {KILN_EXTENSION_ABI_VERSION, "jit.sneaky", infer, run, NULL};
  return registrar->register_op(registrar, &op);
#else
#error "define one of the KILN_TEST_* cases"
#endif
}

#endif
