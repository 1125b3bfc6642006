#pragma once
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

// The benchmark workloads' reference data (a folder per workload: weights.safetensors, b1_input.npy,
// b1_output.npy, ...) is not part of the repository. KILN_TEST_BENCH_DATA names its folder (CI sets it);
// without it the suites that read it skip and say so.
inline std::optional<std::filesystem::path> bench_data_dir() {
  const char* dir = std::getenv("KILN_TEST_BENCH_DATA");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::filesystem::path(dir);
}

inline const std::string kNoBenchData = "skipped: KILN_TEST_BENCH_DATA does not name the workloads' reference data";
