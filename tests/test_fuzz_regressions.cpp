// Every input that ever crashed a fuzzer (tests/fuzz/regressions/<target>/) replays through the
// target's check: kiln accepts it or refuses it with a kiln::Error, nothing else escapes.
#include "fuzz/checks.hpp"
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

namespace fs = std::filesystem;
using namespace kiln::fuzz;

namespace {

using Check = int (*)(const uint8_t*, size_t);

const std::map<std::string, Check> kTargets = {
    {"mlir_parser", check_mlir_parser}, {"safetensors", check_safetensors}, {"npy", check_npy}, {"cli", check_cli}};

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void replay_folder(const std::string& target) {
  configure_environment();
  const fs::path dir = fs::path(KILN_FUZZ_REGRESSIONS) / target;
  if (!fs::is_directory(dir)) return;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) continue;
    const std::vector<uint8_t> bytes = read_bytes(entry.path());
    INFO("input: ", entry.path().string());
    CHECK_NOTHROW(kTargets.at(target)(bytes.data(), bytes.size()));
  }
}

} // namespace

TEST_CASE("regression folders are named after fuzz targets") {
  if (!fs::is_directory(KILN_FUZZ_REGRESSIONS)) return;
  for (const auto& entry : fs::directory_iterator(KILN_FUZZ_REGRESSIONS)) {
    if (!entry.is_directory()) continue;
    INFO("folder: ", entry.path().string());
    CHECK(kTargets.count(entry.path().filename().string()) == 1);
  }
}

TEST_CASE("every target accepts an empty input") {
  configure_environment();
  for (const auto& [name, check] : kTargets) {
    INFO("target: ", name);
    CHECK_NOTHROW(check(nullptr, 0));
  }
}

TEST_CASE("saved mlir_parser inputs replay without a non-kiln exception") { replay_folder("mlir_parser"); }
TEST_CASE("saved safetensors inputs replay without a non-kiln exception") { replay_folder("safetensors"); }
TEST_CASE("saved npy inputs replay without a non-kiln exception") { replay_folder("npy"); }
TEST_CASE("saved cli inputs replay without a non-kiln exception") { replay_folder("cli"); }
