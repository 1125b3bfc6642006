#include "cli/commands.hpp"
#include "cli/summary.hpp"
#include <cmath>
#include <cstdlib>
#include <kiln/io.hpp>

namespace kiln::tools {

// Two builds' outputs of one graph (x86-64 and aarch64 in tools/run-tests-aarch64) are compared
// here rather than in Python, which CI may run before numpy is there.
int compare_npy_files(const CompareOptions& options, std::ostream& out) {
  const Tensor expected = load_npy(options.expected_path), actual = load_npy(options.actual_path);
  if (expected.dtype() != actual.dtype())
    throw Error(ErrorKind::spec, "cannot compare " + std::string(dtype_name(expected.dtype())) + " with " +
                                     std::string(dtype_name(actual.dtype())));
  const double difference = max_abs_difference(expected, actual);
  const bool within = difference <= options.atol; // false for NaN
  out << "max abs difference " << difference << " over " << expected.numel() << " values"
      << (within ? " (within " : " (OVER ") << options.atol << ")\n";
  return within ? EXIT_SUCCESS : EXIT_FAILURE;
}

} // namespace kiln::tools
