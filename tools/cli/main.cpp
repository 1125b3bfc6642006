// The kiln command line: print, verify, run, demo and bench (tools/cli/cli.cpp).
#include "cli/cli.hpp"

int main(int argc, char** argv) { return kiln::tools::run_cli(argc, argv); }
