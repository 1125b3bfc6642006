// libFuzzer entry of check_mlir_parser (tests/fuzz/checks.hpp); tools/fuzz builds and runs it.
#include "fuzz/checks.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::fuzz::configure_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kiln::fuzz::run_or_abort(kiln::fuzz::check_mlir_parser, data, size);
}
