#include "fuzz/checks.hpp"
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <typeinfo>
#include <unistd.h>

namespace kiln::fuzz {

void configure_environment() {
  setenv("KILN_MAX_TENSOR_BYTES", "64M", 0);
  setenv("KILN_JIT", "off", 0);
  setenv("KILN_NUM_THREADS", "1", 0);
}

const std::string& scratch_dir() {
  // Never destroyed: the atexit cleanup below runs after static destructors registered later.
  static const std::string& dir = *new std::string([] {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-fuzz-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      std::perror("kiln fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return pattern;
  }());
  return dir;
}

int run_or_abort(int (*check)(const uint8_t*, size_t), const uint8_t* data, size_t size) {
  try {
    if (check(data, size) == 0) return 0;
    std::fprintf(stderr, "kiln fuzz: the check returned non-zero\n");
  } catch (const CheckFailure& e) {
    std::fprintf(stderr, "kiln fuzz: check failed: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln fuzz: %s escaped: %s\n", typeid(e).name(), e.what());
  } catch (...) {
    std::fprintf(stderr, "kiln fuzz: a non-std exception escaped\n");
  }
  std::abort();
}

} // namespace kiln::fuzz
