#!/usr/bin/env bash
# Builds tests/consumer/consumer.cpp against the uninstalled pkg-config file and runs it.
set -euo pipefail
build_root=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PKG_CONFIG_PATH="$build_root/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
flags=$(pkg-config --cflags --libs kiln)
echo "pkg-config --cflags --libs kiln: $flags"
${CXX:-c++} -std=c++20 "$source_dir/consumer.cpp" -o "$out/consumer" $flags
LD_LIBRARY_PATH="$build_root${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$out/consumer"
