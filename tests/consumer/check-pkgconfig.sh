#!/usr/bin/env bash
# Builds tests/consumer/consumer.cpp against the uninstalled pkg-config file exactly as the README
# says (PKG_CONFIG_PATH=build/meson-uninstalled, c++ ... $(pkg-config --cflags --libs kiln)) and
# runs it as built: no LD_LIBRARY_PATH, so the .pc must say where libkiln.so is.
set -euo pipefail
build_root=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PKG_CONFIG_PATH="$build_root/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
flags=$(pkg-config --cflags --libs kiln)
echo "pkg-config --cflags --libs kiln: $flags"
libdir=$(pkg-config --variable=libdir kiln)
if [ ! -e "$libdir/libkiln.so" ]; then
  echo "pkg-config's libdir $libdir holds no libkiln.so" >&2
  exit 1
fi
${CXX:-c++} -std=c++20 "$source_dir/consumer.cpp" -o "$out/consumer" $flags
env -u LD_LIBRARY_PATH "$out/consumer"
