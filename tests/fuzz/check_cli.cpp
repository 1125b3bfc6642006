#include "cli/cli.hpp"
#include "fuzz/checks.hpp"
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <sstream>
#include <unistd.h>

namespace kiln::fuzz {

namespace {

namespace fs = std::filesystem;

// The files every run starts from, written afresh into an empty folder: a graph with a weight, a
// graph with two outputs and one input for both.
struct Fixture {
  std::string name, bytes;
};

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<Fixture> make_fixtures() {
  const fs::path dir = fs::path(scratch_dir()) / "fixtures";
  fs::create_directories(dir);
  const TensorLayout x(DType::f32, {"batch", 4});
  auto dense = [](const Tensor& in) {
    return F::relu(F::linear(in, F::constant_external("w", TensorLayout(DType::f32, {3, 4})),
                             F::constant_external("b", TensorLayout(DType::f32, {3}))));
  };
  auto halves = [](const Tensor& in) { return F::split(in, {1, 3}, 1); };
  stage(dense)(x).save((dir / "model.mlir").string());
  stage(halves)(x).save((dir / "split.mlir").string());
  save_safetensors((dir / "weights.safetensors").string(), {{"w", Tensor::randn({3, 4}, 2)}, {"b", Tensor::ones({3})}});
  save_npy((dir / "x.npy").string(), Tensor::randn({5, 4}, 1));
  std::vector<Fixture> fixtures;
  for (const char* name : {"model.mlir", "split.mlir", "weights.safetensors", "x.npy"})
    fixtures.push_back({name, file_bytes(dir / name)});
  fs::remove_all(dir);
  return fixtures;
}

std::vector<std::string> split_arguments(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"kiln"};
  if (size > 0) args.emplace_back();
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n' || data[i] == '\0')
      args.emplace_back(); // argv strings hold no NUL
    else
      args.back().push_back(char(data[i]));
  }
  return args;
}

bool is_small_count(const std::string& text) {
  return !text.empty() && text.size() <= 2 && text.find_first_not_of("0123456789") == std::string::npos;
}

// Argument lists the check does not run: a '/' could name a file outside the scratch folder, ".so"
// a system library to dlopen; bench and demo run for seconds by design and read no input; a large
// --repeat only takes long.
bool is_runnable(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.find('/') != std::string::npos || a.find(".so") != std::string::npos) return false;
    if (a == "bench" || a == "demo") return false;
    if (a.rfind("--repeat", 0) == 0) {
      const size_t eq = a.find('=');
      const std::string value = eq != std::string::npos ? a.substr(eq + 1) : i + 1 < args.size() ? args[i + 1] : "1";
      if (!is_small_count(value)) return false;
    }
  }
  return true;
}

bool reports_kiln_error(const std::string& err) {
  for (ErrorKind kind :
       {ErrorKind::spec, ErrorKind::shape, ErrorKind::dtype, ErrorKind::weight, ErrorKind::parse, ErrorKind::io,
        ErrorKind::unsupported, ErrorKind::internal, ErrorKind::extension, ErrorKind::numeric, ErrorKind::memory})
    if (err.find("kiln: error: " + std::string(error_kind_name(kind)) + " error: ") != std::string::npos) return true;
  return false;
}

// Restores the streams and the working folder however run_cli ends.
struct CliScope {
  std::ostringstream out, err;
  std::streambuf* cout_buf = std::cout.rdbuf(out.rdbuf());
  std::streambuf* cerr_buf = std::cerr.rdbuf(err.rdbuf());
  fs::path previous = fs::current_path();
  ~CliScope() {
    std::cout.rdbuf(cout_buf);
    std::cerr.rdbuf(cerr_buf);
    fs::current_path(previous);
  }
};

} // namespace

int check_cli(const uint8_t* data, size_t size) {
  static const std::vector<Fixture> fixtures = make_fixtures();
  std::vector<std::string> args = split_arguments(data, size);
  if (!is_runnable(args)) return 0;
  const fs::path work = fs::path(scratch_dir()) / "cli";
  fs::remove_all(work);
  fs::create_directories(work);
  for (const Fixture& f : fixtures)
    std::ofstream(work / f.name, std::ios::binary) << f.bytes;
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  int status = 0;
  std::string err;
  {
    CliScope scope;
    fs::current_path(work);
    status = tools::run_cli(int(args.size()), argv.data());
    err = scope.err.str();
  }
  fs::remove_all(work);
  if (std::getenv("KILN_FUZZ_VERBOSE")) std::fprintf(stderr, "kiln fuzz: cli exit status %d\n%s", status, err.c_str());
  if (status == 1 && !reports_kiln_error(err))
    throw CheckFailure("kiln exited with 1 without reporting a kiln::Error: " + err);
  if (status != 0 && status != 1 && status != 2) throw CheckFailure("kiln exited with " + std::to_string(status));
  return 0;
}

} // namespace kiln::fuzz
