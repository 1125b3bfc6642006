#pragma once
// The `kiln` command line as a function, so the executable and the CLI fuzzer (tests/fuzz) run the
// same code.

namespace kiln::tools {

// Parses argv (argv[0] is the program name), runs the one subcommand and returns the exit status: 0,
// 1 after a failure, 2 after a usage error, each failure reported as one "kiln: error: ..." line on
// stderr.
int run_cli(int argc, char** argv);

} // namespace kiln::tools
