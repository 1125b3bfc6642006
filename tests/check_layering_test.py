#!/usr/bin/env python3
"""tools/check-layering fails where it should: on a temporary copy of the tree, each deliberately bad
include below is added alone and must make the check fail, naming the file and the include; the
untouched copy must pass. meson test runs this as 'layering_check'."""
import os
import shutil
import subprocess
import sys
import tempfile

FOLDERS = ["include", "src", "exec", "interp", "jit", "tiers", "tools", "python"]

# (file to write or append to, line(s) added, what the check must print)
BAD = [
    # core staging ops: what core/tensor.cpp did
    ("src/core/tensor.cpp", "#include <kiln/functional.hpp>\n",
     'src/core/tensor.cpp:', '#include "kiln/functional.hpp": core may not include include/kiln, of layer trace'),
    # core printing reaching the debugging tools
    ("src/core/tensor_printing.cpp", "#include <kiln/debug.hpp>\n",
     "src/core/tensor_printing.cpp:", "core may not include include/kiln, of layer runtime"),
    # a public header of core pulling in the runtime's
    ("include/kiln/tensor.hpp", "#include <kiln/session.hpp>\n",
     "include/kiln/tensor.hpp:", "core may not include include/kiln, of layer runtime"),
    # a public header reaching into src/
    ("include/kiln/tensor.hpp", '#include "core/tensor_impl.hpp"\n',
     "include/kiln/tensor.hpp:", "a public header may include only public headers"),
    # the IR including the runtime
    ("src/ir/graph.hpp", '#include "runtime/tier_set.hpp"\n',
     "src/ir/graph.hpp:", "ir may not include runtime"),
    # a tier including its peer
    ("interp/eager.cpp", '#include "jit/tier/jit_executable.hpp"\n',
     "interp/eager.cpp:", "interp may not include jit"),
    # nn modules past the public API
    ("src/nn/linear.cpp", '#include "runtime/tier_set.hpp"\n',
     "src/nn/linear.cpp:", "nn may include only include/kiln"),
    # a new public header nobody ranked
    ("include/kiln/unranked.hpp", "#pragma once\n",
     "include/kiln/unranked.hpp:", "a public header no layer defines"),
]


def run_check(tree):
    return subprocess.run([sys.executable, os.path.join(tree, "tools", "check-layering"), tree],
                          capture_output=True, text=True)


def main():
    source = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        for folder in FOLDERS:
            if os.path.isdir(os.path.join(source, folder)):
                shutil.copytree(os.path.join(source, folder), os.path.join(clean, folder))
        result = run_check(clean)
        if result.returncode != 0:
            failures.append("the untouched tree fails:\n" + result.stderr)
        for index, (path, added, where, why) in enumerate(BAD):
            tree = os.path.join(tmp, f"bad{index}")
            shutil.copytree(clean, tree)
            with open(os.path.join(tree, path), "a", encoding="utf-8") as f:
                f.write(added)
            result = run_check(tree)
            named = [line for line in result.stderr.splitlines() if where in line and why in line]
            if result.returncode != 1 or not named:
                failures.append(f"{added.strip()} in {path}: expected a failure naming '{where}' and "
                                f"'{why}', got exit {result.returncode}:\n{result.stdout}{result.stderr}")
            shutil.rmtree(tree)
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures:
        return 1
    print(f"check-layering passes the tree and fails each of {len(BAD)} bad includes, naming it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
