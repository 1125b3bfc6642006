// Writes the fuzzers' seed corpora and dictionaries from kiln's own examples:
//   kiln-fuzz-seeds OUT_DIR [BENCH_DATA_DIR]
// OUT_DIR/<target>/ gets the seeds of each target and OUT_DIR/<target>.dict its dictionary: staged
// graphs (the benchmark workloads and one small graph per op family), small safetensors and .npy
// files of every dtype (and miniatures of the benchmark weights files, same names and dtypes) and
// kiln command lines over the CLI check's fixture files.
#include "ir/ops.hpp"
#include "workloads.hpp"
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

const TensorLayout kRows(DType::f32, {"batch", 4});

std::vector<std::pair<std::string, std::function<StagedGraph()>>> small_graphs() {
  const TensorLayout image(DType::f32, {1, 2, 5, 5});
  const TensorLayout ids(DType::i64, {3});
  return {
      {"unary",
       [] { return stage([](Tensor x) { return F::gelu(F::silu(F::erf(F::sin(F::exp(-x)))), "tanh"); })(kRows); }},
      {"math",
       [] { return stage([](Tensor x) { return F::sqrt(F::abs(F::log(x))) + F::rsqrt(F::tanh(F::cos(x))); })(kRows); }},
      {"binary",
       [] {
         return stage([](Tensor a, Tensor b) { return F::maximum(F::pow(a, b), F::minimum(a / b, a - b)); })(kRows,
                                                                                                             kRows);
       }},
      {"where",
       [] {
         return stage([](Tensor a, Tensor b) {
           return F::where(F::lt(a, b), F::sigmoid(a), F::cast(F::ge(a, b), DType::f32));
         })(kRows, kRows);
       }},
      {"reduce",
       [] {
         return stage([](Tensor x) {
           return F::sum(x, {1}, true) + F::mean(x, {-1}, true) + F::max(x, {1}, true) - F::min(x);
         })(kRows);
       }},
      {"argmax", [] { return stage([](Tensor x) { return F::argmax(F::log_softmax(F::softmax(x, 1)), 1); })(kRows); }},
      {"norms",
       [] {
         return stage([](Tensor x) {
           Tensor w = F::constant_external("norm.weight", TensorLayout(DType::f32, {4}));
           return F::rms_norm(F::layer_norm(x, w, F::full({4}, 0.5)), w);
         })(kRows);
       }},
      {"batch_norm",
       [image] {
         return stage([](Tensor x) {
           Tensor c = F::arange(0, 2);
           return F::batch_norm(x, c, c + 1.0, c, c);
         })(image);
       }},
      {"matmul",
       [] {
         return stage([](Tensor x) {
           return F::matmul(x, F::transpose(F::constant_external("m", TensorLayout(DType::f32, {2, 4})), 0, 1));
         })(kRows);
       }},
      {"conv",
       [image] {
         return stage([](Tensor x) {
           Tensor w = F::constant_external("conv.weight", TensorLayout(DType::f32, {4, 1, 3, 3}));
           Tensor y = F::conv2d(x, w, Tensor(), {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 2});
           return F::avg_pool2d(F::max_pool2d(y, {.kernel = {2, 2}}),
                                {.kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1}, .count_include_pad = true});
         })(image);
       }},
      {"shape",
       [] {
         return stage([](Tensor x) {
           Tensor y = F::unsqueeze(F::reshape(x, {"batch", 2, 2}), {0});
           Tensor z = F::squeeze(F::permute(y, {0, 1, 3, 2}), {0});
           return F::flatten(F::broadcast_to(F::slice(z, 1, 0, 2), {"batch", 2, 2}));
         })(kRows);
       }},
      {"concat_split",
       [] {
         return stage([](Tensor x) {
           auto parts = F::split(x, {1, 3}, 1);
           return F::concat({parts[1], parts[0], F::pad(parts[0], {0, 0, 1, 2}, 3.0)}, 1);
         })(kRows);
       }},
      {"gather",
       [ids] {
         return stage([](Tensor table, Tensor i) { return F::gather(table, i, 0); })(TensorLayout(DType::f32, {10, 4}),
                                                                                     ids);
       }},
      {"integers",
       [] {
         return stage([](Tensor x) { return F::cast(F::cast(x, DType::i32) + F::cast(x, DType::i32), DType::i8); })(
             TensorLayout(DType::u8, {3, "n"}));
       }},
      {"constants",
       [] {
         return stage([](Tensor x) {
           return x * F::constant(Tensor::from_vector<double>({1.5, -2.0}, {2})) + F::scalar(2.0, DType::f64);
         })(TensorLayout(DType::f64, {2}));
       }},
      {"half", [] { return stage([](Tensor x) { return F::cast(F::cast(x, DType::f16), DType::bf16); })(kRows); }},
      {"buffer",
       [] {
         return stage([](Tensor buf, Tensor x) { F::buffer_store(buf, x * 2.0); })(
             BufferLayout(DType::f32, {"batch", 4}), kRows);
       }},
      {"subgraph",
       [] {
         return stage([](Tensor x) {
           auto block = F::as_subgraph("block", [](Tensor t) { return F::relu(t) + 1.0; });
           return block(block(x));
         })(kRows);
       }},
  };
}

void write_file(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_graph_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  for (const std::string& name : tools::workload_names())
    tools::stage_workload(name).save((dir / (name + ".mlir")).string());
  for (const auto& [name, make] : small_graphs())
    make().save((dir / (name + ".mlir")).string());
}

std::map<std::string, Tensor> every_dtype() {
  std::map<std::string, Tensor> out;
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::u8})
    out.emplace(std::string("t_") + dtype_name(d), Tensor::arange(0, 6, 1, d).reshape({2, 3}));
  out.emplace("t_bool", Tensor::from_vector<bool>({true, false, true}, {3}));
  out.emplace("empty", Tensor::zeros({0, 3}));
  out.emplace("scalar", Tensor::full({}, 7.0));
  return out;
}

// Same names and dtypes as a real weights file, every dim clamped to 2, so the seed stays small.
std::map<std::string, Tensor> miniature(const std::string& path) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : load_safetensors(path).tensors) {
    std::vector<int64_t> dims = t.dims();
    for (int64_t& d : dims)
      d = std::min<int64_t>(d, 2);
    out.emplace(name, Tensor::rand(dims, out.size()).cast(t.dtype()));
  }
  return out;
}

void write_tensor_seeds(const fs::path& safetensors_dir, const fs::path& npy_dir, const fs::path& bench) {
  fs::create_directories(safetensors_dir);
  fs::create_directories(npy_dir);
  const auto tensors = every_dtype();
  save_safetensors((safetensors_dir / "every_dtype.safetensors").string(), tensors, {{"format", "pt"}});
  save_safetensors((safetensors_dir / "one.safetensors").string(), {{"w", Tensor::ones({2, 2})}});
  save_safetensors((safetensors_dir / "none.safetensors").string(), {});
  for (const auto& [name, t] : tensors)
    if (t.dtype() != DType::bf16) save_npy((npy_dir / (name + ".npy")).string(), t);
  save_npy((npy_dir / "rank4.npy").string(), Tensor::rand({1, 2, 3, 2}, 3));
  if (bench.empty() || !fs::is_directory(bench)) return;
  for (const auto& entry : fs::directory_iterator(bench)) {
    const fs::path weights = entry.path() / "weights.safetensors";
    if (fs::exists(weights))
      save_safetensors((safetensors_dir / (entry.path().filename().string() + "_mini.safetensors")).string(),
                       miniature(weights.string()));
  }
}

void write_cli_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"print", "print\nmodel.mlir"},
      {"verify", "verify\nmodel.mlir"},
      {"verify_extension", "verify\nsplit.mlir\n--extension\nmissing"},
      {"run", "run\nmodel.mlir\n--weights\nweights.safetensors\n--input\n0=x.npy\n--output\nout.npy"},
      {"run_split", "run\nsplit.mlir\n--input=arg0=x.npy\n--output\ny.npy\n--stats\n--tier\ninterp\n--repeat\n2"},
      {"run_missing", "run\nmodel.mlir\n--input\n1=x.npy\n--output\nout.npy"},
      {"run_bad_graph", "run\nx.npy\n--output\nout.npy"},
      {"print_weights", "print\nweights.safetensors"},
      {"help", "--help"},
      {"run_help", "run\n--help"},
      {"none", ""},
  };
  for (const auto& [name, text] : lines)
    write_file(dir / (name + ".txt"), text);
}

void write_dictionaries(const fs::path& out) {
  std::ofstream mlir(out / "mlir_parser.dict");
  for (int k = 0; k < ir::kNumOpKinds; ++k)
    mlir << "\"kiln." << ir::op_info(ir::OpKind(k)).name << "\"\n";
  for (const char* token :
       {"module",   "@main",  "func.func", "private",    "return",     "func.call", "!kiln.tensor<", "!kiln.buffer<",
        "loc(",     "dense<", "tensor<",   "array<i64:", "array<f64:", ": i64",     ": f64",         "f32",
        "f64",      "f16",    "bf16",      "i8",         "i32",        "i64",       "ui8",           "i1",
        "true",     "false",  "%arg0",     "->",         "callee",     "value",     "name",          "axes",
        "keepdims", "shape",  "perm",      "axis"})
    mlir << "\"" << token << "\"\n";
  std::ofstream cli(out / "cli.dict");
  for (const char* token :
       {"print",  "verify",      "run",    "--weights", "--input", "--output",   "--repeat",   "--stats",
        "--tier", "--extension", "interp", "jit",       "auto",    "model.mlir", "split.mlir", "weights.safetensors",
        "x.npy",  "0=x.npy",     "--help", "\\x0a"})
    cli << "\"" << token << "\"\n";
  std::ofstream npy(out / "npy.dict");
  for (const char* token : {"\\x93NUMPY", "\\x01\\x00", "\\x02\\x00", "\\x03\\x00", "'descr':", "'fortran_order':",
                            "'shape':",   "False",      "True",       "'<f4'",      "'<f8'",    "'<f2'",
                            "'<i8'",      "'<i4'",      "'|i1'",      "'|u1'",      "'|b1'",    "'>f4'",
                            "()",         "(0,)",       "L,",         ", "})
    npy << "\"" << token << "\"\n";
  std::ofstream safetensors(out / "safetensors.dict");
  for (const char* token :
       {"\\\"__metadata__\\\"", "\\\"dtype\\\"", "\\\"shape\\\"", "\\\"data_offsets\\\"", "\\\"F32\\\"", "\\\"F16\\\"",
        "\\\"BF16\\\"", "\\\"BOOL\\\"", "\\\"I64\\\"", "\\\"U8\\\"", "[0,0]", "{}", "\\\\u0000", "1e3", "-1"})
    safetensors << "\"" << token << "\"\n";
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: kiln-fuzz-seeds OUT_DIR [BENCH_DATA_DIR]\n";
    return 2;
  }
  const fs::path out = argv[1];
  try {
    write_graph_seeds(out / "mlir_parser");
    write_tensor_seeds(out / "safetensors", out / "npy", argc == 3 ? fs::path(argv[2]) : fs::path());
    write_cli_seeds(out / "cli");
    write_dictionaries(out);
  } catch (const std::exception& e) {
    std::cerr << "kiln-fuzz-seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
