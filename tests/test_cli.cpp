// The kiln command line, run as a separate process on files written here.
#include "bench_data.hpp"
#include "interp/implementation_table.hpp"
#include "ir/graph.hpp"
#include "kiln_config.h"
#include "workloads.hpp"
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <sstream>
#include <sys/wait.h>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

// KILN_TEST_EXEC_PREFIX: what starts one of this build's programs ("" natively; qemu-aarch64 and
// its sysroot in the aarch64 cross build).
const std::string kKiln = KILN_TEST_EXEC_PREFIX KILN_BUILD_DIR "/tools/kiln";
const std::string kCheckWorkloads = KILN_TEST_EXEC_PREFIX KILN_BUILD_DIR "/tools/kiln-check-workloads";

struct CommandResult {
  int status = -1;
  std::string out, err;
};

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t line_count(const std::string& text) { return size_t(std::count(text.begin(), text.end(), '\n')); }

// A fresh folder per test, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "kiln-test-cli-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Scratch() { fs::remove_all(dir); }
  fs::path operator/(const std::string& name) const { return dir / name; }

  CommandResult run(const std::string& program, const std::string& args) const {
    const std::string command =
        program + " " + args + " >" + quoted(dir / "stdout.txt") + " 2>" + quoted(dir / "stderr.txt");
    const int raw = std::system(command.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_text(dir / "stdout.txt"), read_text(dir / "stderr.txt")};
  }
  CommandResult kiln(const std::string& args) const { return run(kKiln, args); }
};

// relu(x @ wᵀ + b): x [batch, 4], w [3, 4], b [3].
Tensor dense_relu(const Tensor& x) {
  return F::relu(F::linear(x, F::constant_external("w", TensorLayout(DType::f32, {3, 4})),
                           F::constant_external("b", TensorLayout(DType::f32, {3}))));
}

const TensorLayout kDenseInput(DType::f32, {"batch", 4});

struct DenseFiles {
  Tensor x = Tensor::randn({5, 4}, 1);
  Tensor w = Tensor::randn({3, 4}, 2);
  Tensor b = Tensor::randn({3}, 3);
  std::string graph, weights, input, output;

  explicit DenseFiles(const Scratch& scratch)
      : graph(quoted(scratch / "model.mlir")), weights(quoted(scratch / "weights.safetensors")),
        input(quoted(scratch / "x.npy")), output(quoted(scratch / "out.npy")) {
    stage(dense_relu)(kDenseInput).save((scratch / "model.mlir").string());
    save_safetensors((scratch / "weights.safetensors").string(), {{"w", w}, {"b", b}});
    save_npy((scratch / "x.npy").string(), x);
  }
  std::string run_args() const {
    return "run " + graph + " --weights " + weights + " --input 0=" + input + " --output " + output;
  }
};

double naive_dense_relu(const Tensor& x, const Tensor& w, const Tensor& b, int64_t row, int64_t col) {
  double acc = b.item_as_double(col);
  for (int64_t k = 0; k < 4; ++k)
    acc += x.item_as_double(row * 4 + k) * w.item_as_double(col * 4 + k);
  return std::max(acc, 0.0);
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dims() == b.dims());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.item_as_double(i) - b.item_as_double(i)));
  return worst;
}

// A failed command: non-zero status, exactly one "kiln: error:" line naming `problem`, no output file.
void check_refused(const CommandResult& result, const std::string& problem, const fs::path& output) {
  CHECK(result.status != 0);
  CHECK(line_count(result.err) == 1);
  CHECK(result.err.rfind("kiln: error: ", 0) == 0);
  CHECK_MESSAGE(result.err.find(problem) != std::string::npos, "stderr: " << result.err);
  CHECK_FALSE(fs::exists(output));
}

} // namespace

TEST_CASE("kiln run writes the output of an in-process compile of the same graph") {
  Scratch scratch;
  DenseFiles files(scratch);
  const CommandResult result = scratch.kiln(files.run_args());
  REQUIRE_MESSAGE(result.status == 0, result.err);
  const Tensor written = load_npy((scratch / "out.npy").string());
  REQUIRE(written.dims() == std::vector<int64_t>{5, 3});

  CompileOptions options;
  options.weights = {{"w", files.w}, {"b", files.b}};
  auto in_process = compile(dense_relu, options)(kDenseInput);
  CHECK(max_abs_difference(written, in_process(files.x)) <= 1e-6);
  for (int64_t row = 0; row < 5; ++row)
    for (int64_t col = 0; col < 3; ++col)
      CHECK(std::abs(written.item_as_double(row * 3 + col) - naive_dense_relu(files.x, files.w, files.b, row, col)) <=
            1e-5);
}

TEST_CASE("kiln warns once about a misspelled KILN_ variable, naming the setting meant") {
  Scratch scratch;
  DenseFiles files(scratch);
  const CommandResult result =
      scratch.run("KILN_DEBUG_NAN=1 KILN_JIT=auto KILN_TEST_ANYTHING=1 " + kKiln, files.run_args() + " --repeat 3");
  REQUIRE_MESSAGE(result.status == 0, result.err);
  CHECK(result.err == "kiln: KILN_DEBUG_NAN is not a kiln setting; did you mean KILN_DEBUG_NANS?\n");
}

TEST_CASE("kiln run gives the same output on every tier") {
  Scratch scratch;
  DenseFiles files(scratch);
  REQUIRE(scratch.kiln(files.run_args() + " --tier interp").status == 0);
  const Tensor interpreted = load_npy((scratch / "out.npy").string());
  for (const std::string tier : {"jit", "auto"}) {
    CAPTURE(tier);
    const CommandResult result = scratch.kiln(files.run_args() + " --tier " + tier + " --repeat 3 --stats");
    REQUIRE_MESSAGE(result.status == 0, result.err);
    CHECK(result.out.find("median latency") != std::string::npos);
    CHECK(result.out.find("arena bytes") != std::string::npos); // the stats table header
    CHECK(max_abs_difference(load_npy((scratch / "out.npy").string()), interpreted) <= 1e-5);
  }
}

TEST_CASE("kiln devices lists the accelerators; kiln run --tier/--device accelerator runs on one") {
  Scratch scratch;
  DenseFiles files(scratch);
  const fs::path output = scratch / "out.npy";
  const CommandResult devices = scratch.kiln("devices");
  REQUIRE(devices.status == 0);
  CHECK(devices.out.rfind("cpu:0: the host CPU", 0) == 0);
  check_refused(scratch.kiln(files.run_args() + " --tier jit --device accelerator"),
                "--tier jit runs on the CPU: it cannot go with --device accelerator", output);
#if KILN_HAS_VULKAN
  // lavapipe at least, in CI and wherever setup-deps ran.
  REQUIRE_MESSAGE(devices.out.find("\naccelerator:0: ") != std::string::npos, devices.out);
  REQUIRE(scratch.kiln(files.run_args() + " --tier interp").status == 0);
  const Tensor interpreted = load_npy(output.string());
  for (const std::string options : {" --tier accelerator --stats", " --device accelerator --repeat 4"}) {
    CAPTURE(options);
    fs::remove(output);
    const CommandResult result = scratch.kiln(files.run_args() + options);
    REQUIRE_MESSAGE(result.status == 0, result.err);
    CHECK(result.err.empty()); // no warning that another tier served
    CHECK(max_abs_difference(load_npy(output.string()), interpreted) <= 1e-5);
  }
  CHECK(scratch.kiln(files.run_args() + " --tier accelerator --stats").out.find(" accelerator ") != std::string::npos);
  // KILN_LOG=jit names who took each op: the device's kernels, and why it left the weights to the host.
  const CommandResult logged = scratch.run("KILN_LOG=jit " + kKiln, files.run_args() + " --tier accelerator");
  CHECK_MESSAGE(logged.err.find("kiln.matmul at ") != std::string::npos, logged.err);
  CHECK(logged.err.find(": vulkan.matmul took it\n") != std::string::npos);
  CHECK(logged.err.find("kiln.constant_external at ") != std::string::npos);
  CHECK(logged.err.find(": vulkan refused: a constant the plan computes once on the host; bound took it\n") !=
        std::string::npos);
  // The loader told of no driver: both options say what is missing, and nothing is written.
  fs::remove(output);
  const std::string no_driver = "VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json ";
  check_refused(scratch.run(no_driver + kKiln, files.run_args() + " --tier accelerator"),
                "--tier accelerator: no accelerator: ", output);
  check_refused(scratch.run(no_driver + kKiln, files.run_args() + " --device accelerator"),
                "--device accelerator: no accelerator: ", output);
  CHECK(scratch.run(no_driver + kKiln, "devices").out.find("\nno accelerator: ") != std::string::npos);
  // A session promoting to the accelerator where there is none never fails the call: the promotion
  // records why and the interpreter serves.
  const CommandResult served =
      scratch.run(no_driver + "KILN_PROMOTE_TO=accelerator KILN_JIT=always " + kKiln, files.run_args() + " --stats");
  REQUIRE_MESSAGE(served.status == 0, served.err);
  CHECK(max_abs_difference(load_npy(output.string()), interpreted) <= 1e-5);
  CHECK(served.out.find(" interp ") != std::string::npos);
#else
  CHECK(devices.out.find("no accelerator: this build has no accelerator tier (-Dvulkan=disabled)") !=
        std::string::npos);
  check_refused(scratch.kiln(files.run_args() + " --tier accelerator"), "this build has no accelerator tier", output);
#endif
}

TEST_CASE("kiln run writes further outputs next to the first as <stem>_<i>.npy") {
  Scratch scratch;
  auto twice_and_negated = [](const Tensor& x) { return std::pair<Tensor, Tensor>{x * 2.0, F::neg(x)}; };
  stage(twice_and_negated)(TensorLayout(DType::f32, {2, 3})).save((scratch / "pair.mlir").string());
  const Tensor x = Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  save_npy((scratch / "x.npy").string(), x);

  const CommandResult result =
      scratch.kiln("run " + quoted(scratch / "pair.mlir") + " --input arg0=" + quoted(scratch / "x.npy") +
                   " --output " + quoted(scratch / "y.npy"));
  REQUIRE_MESSAGE(result.status == 0, result.err);
  const Tensor doubled = load_npy((scratch / "y.npy").string()), negated = load_npy((scratch / "y_1.npy").string());
  for (int64_t i = 0; i < 6; ++i) {
    CHECK(doubled.item_as_double(i) == 2 * x.item_as_double(i));
    CHECK(negated.item_as_double(i) == -x.item_as_double(i));
  }
}

namespace {

// x - y, with its arguments named in the graph file as a hand-written or exported graph may.
void write_named_graph(const fs::path& path) {
  std::ofstream(path) << R"(module @named {
  func.func @main(%x: !kiln.tensor<[2], f32>, %y: !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32> {
    %0 = "kiln.sub"(%x, %y) : (!kiln.tensor<[2], f32>, !kiln.tensor<[2], f32>) -> !kiln.tensor<[2], f32>
    return %0 : !kiln.tensor<[2], f32>
  }
}
)";
}

// The tier column of the first row of `kiln run --stats`'s table (Session::stats_table): the word
// below the header's "tier".
std::string stats_tier(const std::string& out) {
  const size_t header = out.find("graph ");
  const size_t row = out.find('\n', header);
  REQUIRE(header != std::string::npos);
  REQUIRE(row != std::string::npos);
  const size_t column = out.find(" tier ", header) + 1 - header;
  const std::string rest = out.substr(row + 1 + column);
  return rest.substr(0, rest.find(' '));
}

} // namespace

TEST_CASE("kiln run takes inputs by the argument names of the graph file as well as by index") {
  Scratch scratch;
  write_named_graph(scratch / "named.mlir");
  save_npy((scratch / "a.npy").string(), Tensor::from_vector<float>({1, 2}, {2}));
  save_npy((scratch / "b.npy").string(), Tensor::from_vector<float>({10, 20}, {2}));
  const std::string graph = "run " + quoted(scratch / "named.mlir"), a = quoted(scratch / "a.npy"),
                    b = quoted(scratch / "b.npy"), output = " --output " + quoted(scratch / "out.npy");
  for (const std::string& inputs : {" --input x=" + a + " --input y=" + b, " --input y=" + b + " --input 0=" + a,
                                    " --input arg1=" + b + " --input x=" + a}) {
    CAPTURE(inputs);
    const CommandResult result = scratch.kiln(graph + inputs + output);
    REQUIRE_MESSAGE(result.status == 0, result.err);
    const Tensor difference = load_npy((scratch / "out.npy").string());
    CHECK(difference.item_as_double(0) == -9);
    CHECK(difference.item_as_double(1) == -18);
    fs::remove(scratch / "out.npy");
  }
  SUBCASE("an unknown name is refused, listing the graph's names") {
    check_refused(scratch.kiln(graph + " --input z=" + a + " --input y=" + b + output),
                  "--input 'z=" + (scratch / "a.npy").string() +
                      "': unknown argument 'z'; the graph names x, y, and "
                      "every argument has an index",
                  scratch / "out.npy");
  }
  SUBCASE("a name and an index of the same argument are refused as given twice") {
    check_refused(scratch.kiln(graph + " --input x=" + a + " --input 0=" + b + output), "argument 0 is given twice",
                  scratch / "out.npy");
  }
}

TEST_CASE("kiln run and kiln bench default to the auto tier") {
  Scratch scratch;
  DenseFiles files(scratch);
  // bench's JSON records the tier it ran under.
  const CommandResult bench =
      scratch.kiln("bench --workloads oneop --time-s 0.01 --json " + quoted(scratch / "bench.json"));
  REQUIRE_MESSAGE(bench.status == 0, bench.err);
  CHECK(read_text(scratch / "bench.json").find("\n \"tier\": \"auto\"") != std::string::npos);
  // run: one call stays on the interpreter (not jit); with promotion on the calling thread the
  // fourth call is the JIT tier's (not interp) where the JIT is built.
  const CommandResult once = scratch.kiln(files.run_args() + " --stats");
  REQUIRE_MESSAGE(once.status == 0, once.err);
  CHECK(stats_tier(once.out) == "interp");
  const CommandResult repeated = scratch.run("KILN_JIT_ASYNC=0 " + kKiln, files.run_args() + " --stats --repeat 4");
  REQUIRE_MESSAGE(repeated.status == 0, repeated.err);
  CHECK(stats_tier(repeated.out) == (KILN_HAS_JIT ? "jit" : "interp"));
}

TEST_CASE("kiln run refuses bad input with one error line and no output file") {
  Scratch scratch;
  DenseFiles files(scratch);
  const fs::path output = scratch / "out.npy";
  const std::string weights_and_output = " --weights " + files.weights + " --output " + files.output;

  SUBCASE("missing graph file") {
    check_refused(
        scratch.kiln("run " + quoted(scratch / "absent.mlir") + " --input 0=" + files.input + weights_and_output),
        "absent.mlir", output);
  }
  SUBCASE("missing input file") {
    check_refused(
        scratch.kiln("run " + files.graph + " --input 0=" + quoted(scratch / "absent.npy") + weights_and_output),
        "absent.npy", output);
  }
  SUBCASE("malformed npy file") {
    std::ofstream(scratch / "bad.npy") << "this is not a numpy file";
    check_refused(scratch.kiln("run " + files.graph + " --input 0=" + quoted(scratch / "bad.npy") + weights_and_output),
                  "bad.npy", output);
  }
  SUBCASE("input of the wrong shape") {
    save_npy((scratch / "wide.npy").string(), Tensor::ones({5, 7}));
    check_refused(
        scratch.kiln("run " + files.graph + " --input 0=" + quoted(scratch / "wide.npy") + weights_and_output),
        "expected f32 [batch, 4]", output);
  }
  SUBCASE("input of the wrong dtype is a dtype error, not a shape error") {
    save_npy((scratch / "double.npy").string(), files.x.cast(DType::f64));
    check_refused(
        scratch.kiln("run " + files.graph + " --input 0=" + quoted(scratch / "double.npy") + weights_and_output),
        "kiln: error: dtype error: input 0 (" + (scratch / "double.npy").string() +
            "): expected f32 [batch, 4], got f64 [5, 4]",
        output);
  }
  SUBCASE("weight missing from the weights file") {
    save_safetensors((scratch / "partial.safetensors").string(), {{"w", files.w}});
    check_refused(scratch.kiln("run " + files.graph + " --input 0=" + files.input + " --weights " +
                               quoted(scratch / "partial.safetensors") + " --output " + files.output),
                  "'b'", output);
  }
  SUBCASE("no input for a graph argument") {
    check_refused(scratch.kiln("run " + files.graph + weights_and_output), "no --input for graph argument 0", output);
  }
  SUBCASE("input name that is not an argument index of a graph that names none") {
    check_refused(scratch.kiln("run " + files.graph + " --input x=" + files.input + weights_and_output),
                  "unknown argument 'x'; this graph names none", output);
  }
  SUBCASE("unknown tier") { check_refused(scratch.kiln(files.run_args() + " --tier fastest"), "fastest", output); }
  SUBCASE("a repeat count out of range, said in words") {
    check_refused(scratch.kiln(files.run_args() + " --repeat 0"), "not in range 1 to 1000000", output);
  }
  SUBCASE("an output that is not a .npy file") {
    check_refused(scratch.kiln("run " + files.graph + " --input 0=" + files.input + " --weights " + files.weights +
                               " --output " + quoted(scratch / "out.txt")),
                  "must end in .npy", scratch / "out.txt");
  }
  SUBCASE("weights file whose header holds 1e400") {
    const fs::path weights = scratch / "huge.safetensors";
    std::string header = R"({"__metadata__":{"a":1e400}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    for (size_t i = 0; i < 8; ++i)
      bytes[i] = char((header.size() >> (8 * i)) & 0xff);
    std::ofstream(weights, std::ios::binary) << bytes << header;
    const CommandResult result = scratch.kiln("run " + files.graph + " --input 0=" + files.input + " --weights " +
                                              quoted(weights) + " --output " + files.output);
    check_refused(result, weights.string() + ": header holds a number out of range (", output);
    CHECK(result.err.rfind("kiln: error: parse error: " + weights.string() + ": ", 0) == 0);
  }
}

TEST_CASE("kiln run refuses every hostile io_* file with one error line naming it") {
  Scratch scratch;
  DenseFiles files(scratch);
  const fs::path hostile = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "hostile";
  REQUIRE(fs::is_directory(hostile));
  size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(hostile)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("io_", 0) != 0) continue;
    CAPTURE(name);
    ++seen;
    const bool is_npy = entry.path().extension() == ".npy";
    const std::string weights = is_npy ? files.weights : quoted(entry.path());
    const std::string input = is_npy ? quoted(entry.path()) : files.input;
    const CommandResult result = scratch.kiln("run " + files.graph + " --input 0=" + input + " --weights " + weights +
                                              " --output " + files.output);
    check_refused(result, entry.path().string() + ": ", scratch / "out.npy");
  }
  CHECK(seen >= 12);
}

// Each graph_* file lies in one way (tests/data/hostile/graph_cases.md): verify and run must both
// refuse it with one line naming the file, never crash, and leave no output behind.
TEST_CASE("kiln verify and kiln run refuse every hostile graph_* file with one error line naming it") {
  Scratch scratch;
  DenseFiles files(scratch);
  const fs::path hostile = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "hostile";
  size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(hostile)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("graph_", 0) != 0 || entry.path().extension() != ".mlir") continue;
    CAPTURE(name);
    ++seen;
    check_refused(scratch.kiln("verify " + quoted(entry.path())), name, scratch / "out.npy");
    check_refused(scratch.kiln("run " + quoted(entry.path()) + " --input 0=" + files.input + " --weights " +
                               files.weights + " --output " + files.output),
                  name, scratch / "out.npy");
  }
  CHECK(seen >= 12);
}

TEST_CASE("kiln run keeps the old output file when writing the new one fails") {
  Scratch scratch;
  DenseFiles files(scratch);
  save_npy((scratch / "x.npy").string(), Tensor::randn({4096, 4}, 1)); // a 48 KiB output
  const std::string old_output = "old output";
  std::ofstream(scratch / "out.npy") << old_output;
  // A real EFBIG from write(2): the output outgrows the file size limit (8 blocks of 512 bytes in sh).
  const CommandResult result = scratch.run("trap '' XFSZ; ulimit -f 8; " + kKiln, files.run_args());
  CHECK(result.status != 0);
  CHECK(line_count(result.err) == 1);
  CHECK_MESSAGE(result.err.rfind("kiln: error: io error: " + (scratch / "out.npy").string() +
                                     ": writing the temporary file failed: File too large",
                                 0) == 0,
                result.err);
  CHECK(read_text(scratch / "out.npy") == old_output);
  for (const auto& entry : fs::directory_iterator(scratch.dir))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path());
}

TEST_CASE("kiln print and verify accept a staged graph and refuse a malformed one") {
  Scratch scratch;
  const StagedGraph staged = stage(dense_relu)(kDenseInput);
  staged.save((scratch / "model.mlir").string());
  const std::string text = staged.to_mlir();
  std::ofstream(scratch / "broken.mlir") << text.substr(0, text.find("kiln.relu")); // ends in an open string
  size_t ops = 0;
  for (const ir::Function& fn : staged.graph().functions)
    ops += fn.ops.size();
  REQUIRE(ops >= 3); // two weights, the linear layer, relu

  const CommandResult printed = scratch.kiln("print " + quoted(scratch / "model.mlir"));
  CHECK(printed.status == 0);
  CHECK(printed.out == staged.to_mlir());
  const CommandResult verified = scratch.kiln("verify " + quoted(scratch / "model.mlir"));
  CHECK(verified.status == 0);
  CHECK(verified.out == "ok: " + std::to_string(ops) + " ops\n");

  for (const std::string command : {"print", "verify"}) {
    CAPTURE(command);
    const CommandResult refused = scratch.kiln(command + " " + quoted(scratch / "broken.mlir"));
    CHECK(refused.status != 0);
    CHECK(refused.out.empty());
    CHECK(line_count(refused.err) == 1);
    CHECK(refused.err.find("broken.mlir") != std::string::npos);
  }
}

// The implementations the demo printed for one batch's matmuls on `tier`: "batch 8 matmuls: interp
// packed_gemm, packed_gemm, packed_gemm; jit dnnl.matmul, ...".
std::vector<std::string> demo_matmul_implementations(const std::string& out, int64_t batch, const std::string& tier) {
  const std::string prefix = "  batch " + std::to_string(batch) + " matmuls: ";
  const size_t start = out.find(prefix);
  if (start == std::string::npos) return {};
  const std::string line = out.substr(start + prefix.size(), out.find('\n', start) - start - prefix.size());
  const size_t at = line.find(tier + " ");
  if (at == std::string::npos) return {};
  std::string list = line.substr(at + tier.size() + 1);
  list = list.substr(0, list.find(';'));
  std::vector<std::string> names;
  for (size_t from = 0; from <= list.size();) {
    const size_t comma = std::min(list.find(", ", from), list.size());
    names.push_back(list.substr(from, comma - from));
    from = comma + 2;
  }
  return names;
}

// The reference: debug::profile's steps of the staged mlp at this batch, built apart from the demo.
std::vector<std::string> profiled_matmul_implementations(int64_t batch, const std::string& tier) {
  CompileOptions options;
  options.weights = tools::deterministic_weights("mlp", 1);
  options.session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off});
  auto callable = compile_staged(tools::stage_workload("mlp"), options);
  std::vector<std::string> names;
  for (const debug::StepProfile& step : debug::profile(callable, {Tensor::randn({batch, 256}, 3)}, 1).steps)
    if (step.tier == tier && step.op.find(" = kiln.matmul at ") != std::string::npos)
      names.push_back(step.implementation);
  return names;
}

TEST_CASE("kiln demo runs the mlp workload twice and the two runs agree") {
  Scratch scratch;
  // --out keeps the files (tools/run-tests-aarch64 runs them on another machine); without it the
  // demo writes to a fresh temporary folder.
  const CommandResult result = scratch.kiln("demo --out " + quoted(scratch / "mlp"));
  REQUIRE_MESSAGE(result.status == 0, result.out << result.err);
  for (const char* name : {"model.mlir", "weights.safetensors", "x.npy", "out.npy"})
    CHECK(fs::exists(scratch / "mlp" / name));
  const fs::path mlp = scratch / "mlp";
  const CommandResult again =
      scratch.kiln("run " + quoted(mlp / "model.mlir") + " --weights " + quoted(mlp / "weights.safetensors") +
                   " --input 0=" + quoted(mlp / "x.npy") + " --output " + quoted(mlp / "again.npy"));
  REQUIRE_MESSAGE(again.status == 0, again.err);
  const CommandResult same =
      scratch.kiln("compare " + quoted(mlp / "out.npy") + " " + quoted(mlp / "again.npy") + " --atol 1e-5");
  CHECK(same.status == 0);
  CHECK(same.out.find("max abs difference ") == 0);
  CHECK(result.out.find("interpreter output: f32 [8, 10]") != std::string::npos);
  CHECK(result.out.find("(ok)") != std::string::npos);
  CHECK(result.out.find("func.func @mlp") != std::string::npos);
  // Then the module compiled at call time: one symbolic entry, promoted, agreeing with the interpreter.
  CHECK(result.out.find("entries 1 (0=f32[s0, 256]), hits 57, misses 1; tiers agree within 1e-4: yes") !=
        std::string::npos);
  CHECK(result.out.find("batch 64 call 4: served by " + std::string(KILN_HAS_JIT ? "jit" : "interp")) !=
        std::string::npos);
}

TEST_CASE("kiln demo names the implementation that ran each matmul on each tier, as debug::profile does") {
  Scratch scratch;
  const CommandResult result = scratch.kiln("demo");
  REQUIRE_MESSAGE(result.status == 0, result.out << result.err);
  std::vector<std::string> interpreter_list;
  for (const exec::Implementation& entry : interp::interp_implementations(ir::OpKind::matmul))
    interpreter_list.emplace_back(entry.name);
  for (int64_t batch : {8, 64}) {
    CAPTURE(batch);
    const std::vector<std::string> interp = demo_matmul_implementations(result.out, batch, "interp");
    CHECK(interp.size() == 3); // the mlp's three linear layers
    for (const std::string& name : interp)
      CHECK(std::find(interpreter_list.begin(), interpreter_list.end(), name) != interpreter_list.end());
    CHECK(interp == profiled_matmul_implementations(batch, "interp"));
    if (KILN_HAS_JIT) {
      const std::vector<std::string> jit = demo_matmul_implementations(result.out, batch, "jit");
      CHECK(jit.size() == 3);
      CHECK(jit == profiled_matmul_implementations(batch, "jit"));
      // Where the two tiers run the same code, the demo says so under the line, before its timings.
      const size_t line = result.out.find("  batch " + std::to_string(batch) + " matmuls: ");
      const size_t next = result.out.find('\n', line) + 1;
      CHECK((result.out.compare(next, 13, "  (both tiers") == 0) == (jit == interp));
    }
  }
}

TEST_CASE("kiln ops lists the kernels the mlp needs, as tools/mlp-ops.txt, then the -Dops building them") {
  Scratch scratch;
  tools::stage_workload("mlp").save((scratch / "mlp.mlir").string());
  const CommandResult result = scratch.kiln("ops " + quoted(scratch / "mlp.mlir"));
  REQUIRE_MESSAGE(result.status == 0, result.err);
  // Each F::linear stages transpose(weight), matmul and add (the bias), gelu follows the first two; the
  // weights are constant_external ops, which the plan binds without a kernel, and nothing folds.
  CHECK(result.out == "add\ngelu\nmatmul\ntranspose\n-Dops=add,gelu,matmul,transpose\n");
  // The list the minimal build is configured from (-Dops_file) cannot go stale.
  std::string listed;
  std::stringstream file(read_text(KILN_SOURCE_DIR "/tools/mlp-ops.txt"));
  for (std::string line; std::getline(file, line);)
    if (!line.empty() && line[0] != '#') listed += line + "\n";
  CHECK(result.out.starts_with(listed));
  CHECK(line_count(listed) == line_count(result.out) - 1);
}

TEST_CASE("kiln ops counts the ops constant folding runs while compiling") {
  Scratch scratch;
  const std::string t2 = "!kiln.tensor<[2], f32>";
  std::ofstream(scratch / "folded.mlir")
      << "module @m {\n  func.func @f(%arg0: " << t2 << ") -> " << t2 << " {\n"
      << "    %0 = \"kiln.constant\"() {value = dense<\"0x0000803F0000803F\"> : tensor<2xf32>} : () -> " << t2 << "\n"
      << "    %1 = \"kiln.exp\"(%0) : (" << t2 << ") -> " << t2 << "\n"
      << "    %2 = \"kiln.add\"(%arg0, %1) : (" << t2 << ", " << t2 << ") -> " << t2 << "\n"
      << "    return %2 : " << t2 << "\n  }\n}\n";
  const CommandResult result = scratch.kiln("ops " + quoted(scratch / "folded.mlir"));
  REQUIRE_MESSAGE(result.status == 0, result.err);
  // The passes leave constant + add, but computed exp(constant) with exp's kernel to get there.
  CHECK(result.out == "add\nexp\n-Dops=add,exp\n");
}

TEST_CASE("kiln compare passes within --atol and fails over it, on NaN and on other shapes") {
  Scratch scratch;
  save_npy((scratch / "a.npy").string(), Tensor::from_vector<float>({1.0f, 2.0f}, {2}));
  save_npy((scratch / "b.npy").string(), Tensor::from_vector<float>({1.0f, 2.5f}, {2}));
  save_npy((scratch / "nan.npy").string(),
           Tensor::from_vector<float>({1.0f, std::numeric_limits<float>::quiet_NaN()}, {2}));
  save_npy((scratch / "long.npy").string(), Tensor::from_vector<float>({1.0f, 2.0f, 3.0f}, {3}));
  const std::string a = quoted(scratch / "a.npy") + " ";
  const CommandResult over = scratch.kiln("compare " + a + quoted(scratch / "b.npy") + " --atol 0.1");
  CHECK(over.status == 1);
  CHECK(over.out == "max abs difference 0.5 over 2 values (OVER 0.1)\n");
  CHECK(scratch.kiln("compare " + a + quoted(scratch / "b.npy") + " --atol 0.5").status == 0);
  CHECK(scratch.kiln("compare " + a + quoted(scratch / "nan.npy") + " --atol 1").status == 1);
  const CommandResult shapes = scratch.kiln("compare " + a + quoted(scratch / "long.npy") + " --atol 1");
  CHECK(shapes.status == 1);
  CHECK(shapes.err.find("cannot compare tensors of shapes") != std::string::npos);
}

TEST_CASE("kiln-check-workloads reports a missing reference folder") {
  Scratch scratch;
  const CommandResult result = scratch.run(kCheckWorkloads, quoted(scratch / "absent"));
  CHECK(result.status == 2);
  CHECK(result.err.find("reference data folder") != std::string::npos);
  CHECK(result.err.find("is missing") != std::string::npos);
}

TEST_CASE("kiln-check-workloads skips a workload without data unless every workload is required") {
  Scratch scratch;
  fs::create_directories(scratch / "data");
  const CommandResult skipped = scratch.run(kCheckWorkloads, quoted(scratch / "data"));
  CHECK(skipped.status == 0);
  CHECK(skipped.out.find("resnet18     skipped: no resnet18/ reference folder") != std::string::npos);
  CHECK(skipped.out.find("6 skipped for want of data") != std::string::npos);
  const CommandResult required = scratch.run(kCheckWorkloads, quoted(scratch / "data") + " --require-all");
  CHECK(required.status == 1);
  CHECK(required.out.find("resnet18     FAILED: no resnet18/ reference folder") != std::string::npos);
}

TEST_CASE("the small workloads reproduce PyTorch's reference outputs") {
  const std::optional<fs::path> reference_data = bench_data_dir();
  if (!reference_data) {
    MESSAGE(kNoBenchData);
    return;
  }
  Scratch scratch;
  const CommandResult result = scratch.run(kCheckWorkloads, quoted(*reference_data));
  INFO(result.out << result.err);
  CHECK(result.status == 0);
  size_t passed_cases = 0;
  for (size_t at = result.out.find("  ok\n"); at != std::string::npos; at = result.out.find("  ok\n", at + 1))
    ++passed_cases;
  // mlp b1 b8 b64, ewchain b64, attn b1 b8, cnn b1 b8, then mlp, attn and cnn again as nn modules
  CHECK(passed_cases == 15);
  CHECK(result.out.find("cnn (nn)     b8 ") != std::string::npos);
}

TEST_CASE("kiln debug reads a piped script: breakpoint, watchpoint, print, finish; a typo fails it") {
  Scratch scratch;
  // log(x @ w^T - 1) on rows of ones and twos: the first row reaches log(0) = -inf.
  auto model = [](Tensor x) {
    Tensor h = F::linear(x, F::constant_external("w", TensorLayout(DType::f32, {3, 4})), Tensor());
    return F::log(h - 1.0) * 2.0;
  };
  stage(model)(TensorLayout(DType::f32, {2, 4})).save((scratch / "nan.mlir").string());
  save_safetensors((scratch / "w.safetensors").string(), {{"w", Tensor::ones({3, 4}) * 0.25}});
  save_npy((scratch / "x.npy").string(), Tensor::from_vector<float>({1, 1, 1, 1, 2, 2, 2, 2}, {2, 4}));
  const std::string args = "debug " + quoted(scratch / "nan.mlir") + " --weights " + quoted(scratch / "w.safetensors") +
                           " --input 0=" + quoted(scratch / "x.npy") + " < " + quoted(scratch / "script.txt");
  {
    std::ofstream script(scratch / "script.txt");
    script << "break kiln.log\nwatch inf\ncontinue\nprint %4\nlist\ncontinue\nfinish\nquit\n";
  }
  const CommandResult result = scratch.kiln(args);
  CAPTURE(result.out);
  CHECK(result.status == 0);
  CHECK(result.out.find("stopped: break kiln.log: kiln.log at ") != std::string::npos);
  // Values are named as `kiln print` prints the graph.
  CHECK(result.out.find("%4 = tensor([[0, 0, 0], [1, 1, 1]], f32)") != std::string::npos);
  CHECK(result.out.find("%5 = \"kiln.log\"(%4) : ") != std::string::npos); // list: the printed line
  CHECK(result.out.find("stopped: watch inf: %5 = kiln.log at ") != std::string::npos);
  CHECK(result.out.find("produced 3 Inf of 6 values; its input %4 has min 0, max 1") != std::string::npos);
  CHECK(result.out.find("output 0 = tensor([[-inf, -inf, -inf], [0, 0, 0]], f32)") != std::string::npos);
  CHECK(result.out.find("(kiln)") == std::string::npos); // no prompt when stdin is not a terminal
  {
    std::ofstream script(scratch / "script.txt");
    script << "stpe\nfinish\n";
  }
  const CommandResult typo = scratch.kiln(args);
  CHECK(typo.status == 2);
  CHECK(typo.out.find("unknown command 'stpe'") != std::string::npos);
  CHECK(typo.out.find("output 0") == std::string::npos);
#if KILN_HAS_JIT
  {
    // The JIT tier's call, replayed: the same first Inf, the same outputs.
    std::ofstream script(scratch / "script.txt");
    script << "watch inf\ncontinue\nfinish\n";
  }
  const CommandResult on_jit = scratch.kiln(args + " --tier jit");
  CAPTURE(on_jit.out);
  CHECK(on_jit.status == 0);
  // The log is fused into the kernel that writes the mul's result: the first Inf the JIT keeps.
  CHECK(on_jit.out.find("stopped: watch inf: %7 = kiln.mul at ") != std::string::npos);
  CHECK(on_jit.out.find("the JIT computed it in one kernel with kiln.sub %4, kiln.log %5") != std::string::npos);
  CHECK(on_jit.out.find("output 0 = tensor([[-inf, -inf, -inf], [0, 0, 0]], f32)") != std::string::npos);
#endif
}

TEST_CASE("kiln debug: next runs a subgraph call as one step, where prints the call stack") {
  Scratch scratch;
  auto block = [](Tensor h) { return F::exp(h) * 2.0; };
  auto model = [&block](Tensor x) { return F::as_subgraph("block", block)(x + 1.0) - 3.0; };
  stage(model)(TensorLayout(DType::f32, {2})).save((scratch / "calls.mlir").string());
  save_npy((scratch / "x.npy").string(), Tensor::from_vector<float>({0, 1}, {2}));
  {
    std::ofstream script(scratch / "script.txt");
    script << "step 2\nwhere\nstep\nwhere\nnext\nwhere\nquit\n";
  }
  const CommandResult result =
      scratch.kiln("debug " + quoted(scratch / "calls.mlir") + " --input 0=" + quoted(scratch / "x.npy") + " < " +
                   quoted(scratch / "script.txt"));
  CAPTURE(result.out);
  CHECK(result.status == 0);
  // After the constant and the add, the stepper stands at the call; step goes into @block.
  CHECK(result.out.find("at op 2: %2 = func.call @block(%1) at ") != std::string::npos);
  CHECK(result.out.find("#0 @main at ") != std::string::npos);
  // Values are named as kiln print prints them, "@block %0" in the body; %1 is @main's.
  CHECK(result.out.find("at op 2 in @block: @block %0 = kiln.exp(%1) at ") != std::string::npos);
  CHECK(result.out.find("#1 @block at ") != std::string::npos);
  // next from inside the body steps one op there, not the rest of the call.
  CHECK(result.out.find("at op 3 in @block: @block %1 = kiln.constant() at ") != std::string::npos);
}

TEST_CASE("kiln debug names values as kiln print does, takes @block %N, and restart keeps what was set") {
  Scratch scratch;
  // sqrt(exp(x) - 2) in @block makes NaN where exp(x) < 2; the tanh nobody reads is optimised away.
  auto block = [](Tensor h) { return F::sqrt(h - 2.0) * 3.0; };
  auto model = [&block](Tensor x) {
    Tensor unused = F::tanh(x);
    return F::log(F::as_subgraph("block", block)(F::exp(x)) + 1.0);
  };
  stage(model)(TensorLayout(DType::f32, {4})).save((scratch / "block.mlir").string());
  save_npy((scratch / "x.npy").string(), Tensor::from_vector<float>({-1, 0, 1, 2}, {4}));
  const CommandResult printed = scratch.kiln("print " + quoted(scratch / "block.mlir"));
  const std::string body = printed.out.substr(printed.out.find("@block("));
  REQUIRE(body.find("%1 = \"kiln.sub\"") != std::string::npos);
  REQUIRE(body.find("%2 = \"kiln.sqrt\"(%1)") != std::string::npos);
  {
    std::ofstream script(scratch / "script.txt");
    script << "watch nan\ncontinue\nprint @block %1\nkeep @block %1\nrestart\ncontinue\nprint @block %1\n"
              "break @block %2\nrestart\ncontinue\nlist\nquit\n";
  }
  const CommandResult result =
      scratch.kiln("debug " + quoted(scratch / "block.mlir") + " --input 0=" + quoted(scratch / "x.npy") + " < " +
                   quoted(scratch / "script.txt"));
  CAPTURE(result.out);
  CHECK(result.status == 0);
  const std::string stop = "stopped: watch nan: @block %2 = kiln.sqrt at ";
  const size_t first_stop = result.out.find(stop);
  REQUIRE(first_stop != std::string::npos);
  CHECK(result.out.find("error: debug::Stepper: @block %1 was freed after its last reader") != std::string::npos);
  // After restart the watchpoint stops there again, and the kept value can be printed.
  const size_t second_stop = result.out.find(stop, first_stop + 1);
  REQUIRE(second_stop != std::string::npos);
  CHECK(result.out.find("@block %1 = tensor([-1.63", second_stop) != std::string::npos); // exp(-1) - 2
  CHECK(result.out.find("stopped: break @block %2: kiln.sqrt at ", second_stop) != std::string::npos);
  CHECK(result.out.find("\n%2 = \"kiln.sqrt\"(%1) : ", second_stop) != std::string::npos); // list: print's line
}
