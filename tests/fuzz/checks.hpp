#pragma once
// The fuzz targets' checks, one per input format. Each returns 0 for an input kiln accepts or refuses
// with a kiln::Error; anything else escaping is a bug: a CheckFailure (a broken round-trip) or any
// other exception. The libFuzzer entries (fuzz_<target>.cpp) abort on those; test_fuzz_regressions
// replays the saved crash inputs through the same functions.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln::fuzz {

// A property the check asserts does not hold (a round-trip that changed the data).
struct CheckFailure : std::logic_error {
  using std::logic_error::logic_error;
};

// parse -> verify -> print -> parse -> print (the two prints equal), the default passes (their
// result prints and parses back), compile_staged with zero weights; runs the callable when every
// argument is small once symbolic dims are bound to 2.
int check_mlir_parser(const uint8_t* data, size_t size);
// load_safetensors, every byte read, save_safetensors, reload: names, dtypes, shapes, bytes and
// metadata unchanged.
int check_safetensors(const uint8_t* data, size_t size);
// load_npy, every byte read, save_npy, reload: dtype, shape and bytes unchanged.
int check_npy(const uint8_t* data, size_t size);
// The input split at newlines and NULs is argv[1..] of `kiln`, run in-process inside a scratch folder that
// holds a small graph, its weights and an input; the exit status must be 0, 1 or 2 and a status 1
// must report a kiln::Error. KILN_FUZZ_VERBOSE=1 prints each status and what kiln wrote on stderr.
int check_cli(const uint8_t* data, size_t size);

// KILN_MAX_TENSOR_BYTES=64M (unless set) and the interpreter only, so no input can make kiln
// allocate more than the fuzzer's memory limit or start background JIT work.
void configure_environment();

// A folder of this process under the temporary directory, created on first use.
const std::string& scratch_dir();

// Runs check, aborting with a message naming the exception when anything but 0 comes back.
int run_or_abort(int (*check)(const uint8_t*, size_t), const uint8_t* data, size_t size);

} // namespace kiln::fuzz
