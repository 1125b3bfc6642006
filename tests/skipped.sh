#!/bin/sh
# Stands in for a test this configuration cannot run, so that `meson test` lists it as skipped
# (exit status 77) with the reason given as arguments.
echo "skipped: $*"
exit 77
