#include "io/atomic_file.hpp"
#include "io/npy.hpp"
#include <kiln/io.hpp>
#include <doctest/doctest.h>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed with everything in it afterwards.
struct TempDir {
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("kiln-test-io-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path)) names.push_back(entry.path().filename().string());
    return names;
  }
  fs::path path;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string little_endian(uint64_t value, size_t bytes) {
  std::string out;
  for (size_t i = 0; i < bytes; ++i) out += char((value >> (8 * i)) & 0xff);
  return out;
}

// Pads the header with spaces as the reference writer does, so the data section starts aligned.
std::string safetensors_bytes(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return little_endian(header.size(), 8) + header + data;
}

std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string out = std::string("\x93NUMPY") + char(major) + '\0';
  return out + little_endian(dict.size() + 1, major == 1 ? 2 : 4) + dict + "\n" + data;
}

std::string float_bytes(std::initializer_list<float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

struct Failure {
  ErrorKind kind;
  std::string message;
};

template <class Action> Failure failure_of(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return {e.kind(), e.message()};
  }
  return {ErrorKind::internal, "(no kiln::Error was thrown)"};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A [2, 3] tensor of `dtype` and the values it holds, written out by hand.
struct Sample {
  Tensor tensor;
  std::vector<double> values;
};

Sample sample(DType dtype) {
  std::vector<double> values = {-1.0, -0.5, 0.0, 0.5, 1.5, 2.0}; // exact in f16 and bf16
  if (dtype_is_integer(dtype)) values = {-6, -4, 0, 3, 5, 100};
  if (dtype == DType::u8) values = {0, 1, 2, 127, 200, 255};
  if (dtype == DType::boolean) values = {1, 0, 0, 1, 1, 0};
  Tensor tensor = Tensor::zeros({2, 3}, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    Tensor one = Tensor::full({1}, values[i], dtype);
    std::memcpy(static_cast<char*>(tensor.raw_data()) + i * dtype_size(dtype), one.raw_data(),
                dtype_size(dtype));
  }
  return {tensor, values};
}

void check_values(const Tensor& tensor, const std::vector<double>& values) {
  REQUIRE(tensor.numel() == int64_t(values.size()));
  for (size_t i = 0; i < values.size(); ++i) CHECK(tensor.item_as_double(int64_t(i)) == values[i]);
}

const DType all_dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                            DType::i32, DType::i64, DType::u8,  DType::boolean};

std::string bench_data(const std::string& name) {
  return std::string(KILN_SOURCE_DIR) + "/../shared/bench/data/" + name;
}

} // namespace

TEST_CASE("atomic write creates the file and leaves no temporary behind") {
  TempDir dir;
  io::write_file_atomic(dir.file("out.txt"), [](std::ostream& out) { out << "hello"; });
  CHECK(read_bytes(dir.file("out.txt")) == "hello");
  CHECK(dir.entries() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("atomic write leaves the old file untouched when the writer throws") {
  TempDir dir;
  std::string path = dir.file("out.txt");
  write_bytes(path, "old contents");
  Failure failure = failure_of([&] {
    io::write_file_atomic(path, [](std::ostream& out) {
      out << "half of the new conte";
      throw std::runtime_error("disk on fire");
    });
  });
  CHECK(failure.kind == ErrorKind::io);
  CHECK(failure.message == path + ": writing failed: disk on fire");
  CHECK(read_bytes(path) == "old contents");
  CHECK(dir.entries() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("atomic write passes a kiln::Error from the writer through unchanged") {
  TempDir dir;
  Failure failure = failure_of([&] {
    io::write_file_atomic(dir.file("out.txt"),
                          [](std::ostream&) { throw Error(ErrorKind::shape, "bad shape"); });
  });
  CHECK(failure.kind == ErrorKind::shape);
  CHECK(failure.message == "bad shape");
  CHECK(dir.entries().empty());
}

TEST_CASE("atomic write into a missing directory names the path and the reason") {
  TempDir dir;
  std::string path = dir.file("missing/out.txt");
  Failure failure = failure_of([&] { io::write_file_atomic(path, [](std::ostream& out) { out << "x"; }); });
  CHECK(failure.kind == ErrorKind::io);
  INFO(failure.message);
  CHECK(contains(failure.message, path + ": cannot create a temporary file beside it: No such file"));
}

TEST_CASE("atomic write that cannot rename into place removes its temporary file") {
  TempDir dir;
  fs::create_directory(dir.path / "taken");
  fs::create_directory(dir.path / "taken" / "child");
  Failure failure =
      failure_of([&] { io::write_file_atomic(dir.file("taken"), [](std::ostream& out) { out << "x"; }); });
  CHECK(failure.kind == ErrorKind::io);
  INFO(failure.message);
  CHECK(contains(failure.message, dir.file("taken") + ": cannot rename the temporary file into place"));
  CHECK(dir.entries() == std::vector<std::string>{"taken"});
}

TEST_CASE("safetensors round-trips every dtype and the metadata") {
  TempDir dir;
  std::map<std::string, Tensor> tensors;
  for (DType dtype : all_dtypes) tensors[dtype_name(dtype)] = sample(dtype).tensor;
  save_safetensors(dir.file("all.safetensors"), tensors, {{"format", "pt"}, {"note", "h\u00e9"}});

  SafetensorsFile file = load_safetensors(dir.file("all.safetensors"));
  CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "h\u00e9"}});
  REQUIRE(file.tensors.size() == std::size(all_dtypes));
  for (DType dtype : all_dtypes) {
    CAPTURE(dtype_name(dtype));
    const Tensor& loaded = file.tensors.at(dtype_name(dtype));
    CHECK(loaded.dtype() == dtype);
    CHECK(loaded.dims() == std::vector<int64_t>{2, 3});
    check_values(loaded, sample(dtype).values);
  }
}

TEST_CASE("safetensors writer matches the reference layout byte for byte") {
  TempDir dir;
  std::map<std::string, Tensor> tensors = {{"a", Tensor::full({1}, 7, DType::i8)},
                                           {"b", Tensor::from_vector<float>({1.0f, 2.0f}, {2})}};
  save_safetensors(dir.file("small.safetensors"), tensors, {{"k", "v"}});
  // Wider elements first; 131 header bytes padded to 136.
  std::string header = R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("a":{"dtype":"I8","shape":[1],"data_offsets":[8,9]}})";
  REQUIRE(header.size() == 131);
  std::string expected = little_endian(136, 8) + header + "     " + float_bytes({1.0f, 2.0f}) + "\x07";
  CHECK(read_bytes(dir.file("small.safetensors")) == expected);
}

TEST_CASE("safetensors tensors are zero-copy views that keep the mapping alive") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  std::string data = float_bytes({1, 2, 3, 4, 5, 6});
  write_bytes(path, safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("y":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                                      data));
  Tensor y;
  const void* first_x = nullptr;
  {
    SafetensorsFile file = load_safetensors(path);
    const Tensor& x = file.tensors.at("x");
    y = file.tensors.at("y");
    first_x = x.raw_data();
    CHECK(static_cast<const char*>(y.raw_data()) - static_cast<const char*>(x.raw_data()) == 8);
    CHECK(load_safetensors(path).tensors.at("x").raw_data() != first_x);
  }
  // The file object is gone; the tensor still reads the file's bytes.
  CHECK(std::memcmp(y.raw_data(), data.data() + 8, 16) == 0);
}

TEST_CASE("writing into a loaded safetensors tensor leaves the file unchanged") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  std::string bytes =
      safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", float_bytes({1, 2}));
  write_bytes(path, bytes);
  Tensor x = load_safetensors(path).tensors.at("x");
  x.data<float>()[0] = 42.0f;
  CHECK(x.item_as_double(0) == 42.0);
  CHECK(read_bytes(path) == bytes);
  CHECK(load_safetensors(path).tensors.at("x").item_as_double(0) == 1.0);
}

TEST_CASE("safetensors reader accepts unaligned data and empty tensors sharing an offset") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  write_bytes(path, safetensors_bytes(R"({"flag":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                      R"("e1":{"dtype":"F32","shape":[0],"data_offsets":[1,1]},)"
                                      R"("e2":{"dtype":"I64","shape":[2,0],"data_offsets":[1,1]},)"
                                      R"("v":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})",
                                      "\x09" + float_bytes({2.5f})));
  SafetensorsFile file = load_safetensors(path);
  float v = 0;
  std::memcpy(&v, file.tensors.at("v").raw_data(), sizeof v);
  CHECK(v == 2.5f);
  CHECK(file.tensors.at("flag").item_as_double(0) == 9.0);
  CHECK(file.tensors.at("e2").dims() == std::vector<int64_t>{2, 0});
  CHECK(file.metadata.empty());
}

namespace {

Failure safetensors_failure(const TempDir& dir, const std::string& bytes) {
  std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  return failure_of([&] { load_safetensors(path); });
}

} // namespace

TEST_CASE("safetensors reader refuses a file shorter than the 8-byte header length") {
  TempDir dir;
  Failure failure = safetensors_failure(dir, "abc");
  CHECK(failure.kind == ErrorKind::parse);
  CHECK(failure.message ==
        dir.file("bad.safetensors") + ": file is 3 bytes, shorter than the 8-byte header length");
}

TEST_CASE("safetensors reader refuses a header length larger than the file") {
  TempDir dir;
  Failure failure = safetensors_failure(dir, little_endian(1000, 8) + "{}");
  CHECK(failure.message ==
        dir.file("bad.safetensors") + ": header length 1000 exceeds the 2 bytes that follow it");
}

TEST_CASE("safetensors reader refuses a header that is not JSON or not an object") {
  TempDir dir;
  Failure not_json = safetensors_failure(dir, safetensors_bytes(R"({"x": )", ""));
  INFO(not_json.message);
  CHECK(contains(not_json.message, dir.file("bad.safetensors") + ": header is not valid JSON ("));
  CHECK(safetensors_failure(dir, safetensors_bytes("[1, 2]", "")).message ==
        dir.file("bad.safetensors") + ": header is not a JSON object");
}

TEST_CASE("safetensors reader names the tensor whose entry lacks a field") {
  TempDir dir;
  std::string prefix = dir.file("bad.safetensors") + ": tensor 'w': ";
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "abcd"))
            .message == prefix + "missing 'dtype'");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "abcd"))
            .message == prefix + "missing 'shape'");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd")).message ==
        prefix + "missing 'data_offsets'");
  CHECK(safetensors_failure(
            dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"))
            .message == prefix + "'shape' is not a list of non-negative integers");
  CHECK(safetensors_failure(
            dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", "abcd"))
            .message == prefix + "'data_offsets' is not a pair of non-negative integers [begin, end]");
}

TEST_CASE("safetensors reader refuses an unknown dtype") {
  TempDir dir;
  Failure failure = safetensors_failure(
      dir, safetensors_bytes(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "a"));
  CHECK(failure.kind == ErrorKind::unsupported);
  CHECK(failure.message ==
        dir.file("bad.safetensors") +
            ": tensor 'w': unknown dtype 'F8_E4M3' (kiln reads F32 F64 F16 BF16 I8 I32 I64 U8 BOOL)");
}

TEST_CASE("safetensors reader refuses a shape that does not match the byte range") {
  TempDir dir;
  Failure failure = safetensors_failure(
      dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})",
                             std::string(16, 'x')));
  CHECK(failure.message ==
        dir.file("bad.safetensors") +
            ": tensor 'w': shape [2, 2] of F32 needs 16 bytes but data_offsets [0, 12] span 12");
}

TEST_CASE("safetensors reader refuses a range outside the data section") {
  TempDir dir;
  Failure failure = safetensors_failure(
      dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd"));
  CHECK(failure.message == dir.file("bad.safetensors") +
                               ": tensor 'w': data_offsets [0, 8] lie outside the data section (4 bytes)");
}

TEST_CASE("safetensors reader refuses overlapping ranges") {
  TempDir dir;
  Failure failure =
      safetensors_failure(dir, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                                 std::string(12, 'x')));
  CHECK(failure.message ==
        dir.file("bad.safetensors") + ": tensors 'a' and 'b' have overlapping data_offsets");
}

TEST_CASE("safetensors reader refuses metadata that is not a string map") {
  TempDir dir;
  Failure failure = safetensors_failure(dir, safetensors_bytes(R"({"__metadata__":{"n":3}})", ""));
  CHECK(failure.message == dir.file("bad.safetensors") + ": __metadata__ value of 'n' is not a string");
}

TEST_CASE("safetensors reader refuses BOOL bytes other than 0 and 1") {
  TempDir dir;
  Failure failure =
      safetensors_failure(dir, safetensors_bytes(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                                 std::string("\x01\x00\x02", 3)));
  CHECK(failure.message ==
        dir.file("bad.safetensors") + ": tensor 'm': BOOL element 2 holds byte 2, not 0 or 1");
}

TEST_CASE("safetensors reader names a file it cannot open") {
  TempDir dir;
  Failure failure = failure_of([&] { load_safetensors(dir.file("absent.safetensors")); });
  CHECK(failure.kind == ErrorKind::io);
  CHECK(failure.message == dir.file("absent.safetensors") + ": cannot open: No such file or directory");
}

TEST_CASE("safetensors writer refuses undefined tensors and the reserved name") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  CHECK(failure_of([&] {
          save_safetensors(path, {{"w", Tensor()}});
        }).message == path + ": tensor 'w' has no values (undefined or symbolic)");
  CHECK(failure_of([&] {
          save_safetensors(path, {{"__metadata__", Tensor::ones({1})}});
        }).message == path + ": '__metadata__' is reserved and cannot name a tensor");
  CHECK(dir.entries().empty());
}

TEST_CASE("npy round-trips every dtype it has") {
  TempDir dir;
  for (DType dtype : all_dtypes) {
    if (dtype == DType::bf16) continue;
    CAPTURE(dtype_name(dtype));
    save_npy(dir.file("t.npy"), sample(dtype).tensor);
    Tensor loaded = load_npy(dir.file("t.npy"));
    CHECK(loaded.dtype() == dtype);
    CHECK(loaded.dims() == std::vector<int64_t>{2, 3});
    check_values(loaded, sample(dtype).values);
  }
}

TEST_CASE("npy round-trips scalars, vectors and empty arrays") {
  TempDir dir;
  for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {3}, {0, 4}}) {
    Tensor tensor = Tensor::full(dims, 1.25, DType::f64);
    save_npy(dir.file("t.npy"), tensor);
    Tensor loaded = load_npy(dir.file("t.npy"));
    CHECK(loaded.dims() == dims);
    check_values(loaded, std::vector<double>(size_t(tensor.numel()), 1.25));
  }
}

TEST_CASE("npy header dict is written the way numpy writes it") {
  CHECK(io::format_npy_header({DType::f32, {3, 4}}, "t") ==
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }");
  CHECK(io::format_npy_header({DType::u8, {3}}, "t") ==
        "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }");
  CHECK(io::format_npy_header({DType::boolean, {}}, "t") ==
        "{'descr': '|b1', 'fortran_order': False, 'shape': (), }");
}

TEST_CASE("npy writer pads the header so the data starts at a multiple of 64 bytes") {
  TempDir dir;
  save_npy(dir.file("t.npy"), Tensor::from_vector<int32_t>({7, 8}, {2}));
  std::string bytes = read_bytes(dir.file("t.npy"));
  REQUIRE(bytes.size() == 128 + 8);
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  std::string padding(128 - 10 - dict.size() - 1, ' ');
  int32_t values[] = {7, 8};
  CHECK(bytes == npy_bytes(1, dict + padding, std::string(reinterpret_cast<const char*>(values), 8)));
}

TEST_CASE("npy writer switches to version 2.0 when the header outgrows 65535 bytes") {
  TempDir dir;
  std::vector<int64_t> dims(22000, 1); // "1, " per dim: about 66000 header bytes
  save_npy(dir.file("t.npy"), Tensor::full(dims, 3.0, DType::i64));
  std::string bytes = read_bytes(dir.file("t.npy"));
  CHECK(bytes[6] == 2);
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + 8, 4);
  CHECK((12 + length) % 64 == 0);
  Tensor loaded = load_npy(dir.file("t.npy"));
  CHECK(loaded.dims() == dims);
  CHECK(loaded.item_as_double(0) == 3.0);
}

TEST_CASE("npy reader accepts format versions 2.0 and 3.0") {
  TempDir dir;
  for (int major : {2, 3}) {
    write_bytes(dir.file("t.npy"),
                npy_bytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                          float_bytes({0.5f, -2.0f})));
    check_values(load_npy(dir.file("t.npy")), {0.5, -2.0});
  }
}

TEST_CASE("npy header parser accepts any key order, double quotes, Python 2 longs and no trailing comma") {
  io::NpyHeader header =
      io::parse_npy_header(R"({ "shape" : (2L, 3L),"fortran_order":False , "descr":"<i8"}   )"
                           "\n",
                           "t");
  CHECK(header.dtype == DType::i64);
  CHECK(header.dims == std::vector<int64_t>{2, 3});
  CHECK(io::parse_npy_header("{'descr': '>u1', 'fortran_order': False, 'shape': (5,)}", "t").dtype ==
        DType::u8);
  CHECK(io::parse_npy_header("{'descr': '=f8', 'fortran_order': False, 'shape': ()}", "t").dtype ==
        DType::f64);
}

namespace {

Failure npy_failure(const TempDir& dir, const std::string& bytes) {
  std::string path = dir.file("bad.npy");
  write_bytes(path, bytes);
  return failure_of([&] { load_npy(path); });
}

Failure header_failure(const std::string& dict) {
  return failure_of([&] { io::parse_npy_header(dict, "h.npy"); });
}

} // namespace

TEST_CASE("npy reader refuses a bad magic string and unknown versions") {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  Failure magic = npy_failure(dir, "\x93NUMPZ\x01\x00" + little_endian(2, 2) + "{}");
  CHECK(magic.kind == ErrorKind::parse);
  CHECK(magic.message == path + ": not a .npy file (bad magic)");
  CHECK(npy_failure(dir, "\x93NU").message == path + ": file is too short to be a .npy file");
  Failure version = npy_failure(dir, npy_bytes(4, "{}", ""));
  CHECK(version.kind == ErrorKind::unsupported);
  CHECK(version.message == path + ": unsupported .npy format version 4.0");
}

TEST_CASE("npy reader refuses Fortran order") {
  Failure failure = header_failure("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }");
  CHECK(failure.kind == ErrorKind::unsupported);
  CHECK(failure.message == "h.npy: fortran_order arrays are not supported; save a C-ordered array");
}

TEST_CASE("npy reader refuses big-endian data") {
  Failure failure = header_failure("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }");
  CHECK(failure.kind == ErrorKind::unsupported);
  CHECK(failure.message == "h.npy: big-endian data ('>f4') is not supported");
}

TEST_CASE("npy reader refuses dtypes kiln does not have") {
  for (std::string descr : {"<c8", "<i2", "<U5", "|O", "f4"}) {
    Failure failure = header_failure("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }");
    CHECK(failure.kind == ErrorKind::unsupported);
    CHECK(failure.message ==
          "h.npy: unsupported dtype descr '" + descr + "' (kiln reads <f4 <f8 <f2 <i1 <i4 <i8 |u1 |b1)");
  }
}

TEST_CASE("npy reader refuses malformed header dicts, saying where") {
  std::string prefix = "h.npy: malformed .npy header";
  CHECK(header_failure("{'descr': '<f4', 'fortran_order': False}").message ==
        prefix + ": the dict lacks 'shape'");
  CHECK(header_failure("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}").message ==
        prefix + " at column 57: unexpected key 'x'");
  CHECK(header_failure("{'descr': '<f4', 'descr': '<f4'}").message ==
        prefix + " at column 18: duplicate key 'descr'");
  CHECK(header_failure("{'descr' '<f4'}").message == prefix + " at column 10: expected ':'");
  CHECK(header_failure("{'descr': '<f4', 'shape': (2, -1)}").message ==
        prefix + " at column 31: expected a non-negative integer");
  CHECK(header_failure("{'fortran_order': false}").message ==
        prefix + " at column 19: expected True or False");
  CHECK(header_failure("{'descr': '<f4'").message == prefix + " at column 16: expected '}'");
  CHECK(header_failure("{'descr': '<f4'} x").message ==
        prefix + " at column 18: unexpected text after the header dict");
  CHECK(header_failure("{'descr: 1}").message == prefix + " at column 2: unterminated string");
}

TEST_CASE("npy reader refuses truncated headers and data") {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  Failure data = npy_failure(dir, npy_bytes(1, dict, float_bytes({1, 2, 3, 4, 5})));
  CHECK(data.message ==
        path + ": data truncated: shape [2, 3] of f32 needs 24 bytes, the file holds 20 after the header");
  Failure header = npy_failure(dir, npy_bytes(1, dict, "").substr(0, 30));
  CHECK(header.message ==
        path + ": header truncated: it should hold " + std::to_string(dict.size() + 1) + " bytes");
}

TEST_CASE("npy reader refuses bool bytes other than 0 and 1") {
  TempDir dir;
  Failure failure =
      npy_failure(dir, npy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x05"));
  CHECK(failure.message == dir.file("bad.npy") + ": bool element 1 holds byte 5, not 0 or 1");
}

TEST_CASE("npy writer refuses bf16 and leaves an existing file untouched") {
  TempDir dir;
  std::string path = dir.file("t.npy");
  write_bytes(path, "old");
  Failure failure = failure_of([&] { save_npy(path, Tensor::ones({2}, DType::bf16)); });
  CHECK(failure.kind == ErrorKind::unsupported);
  CHECK(failure.message == path + ": bf16 has no .npy dtype; cast to f32 first");
  CHECK(read_bytes(path) == "old");
  CHECK(dir.entries() == std::vector<std::string>{"t.npy"});
}

TEST_CASE("reads the mlp benchmark weights and rewrites them byte for byte") {
  std::string path = bench_data("mlp/weights.safetensors");
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  SafetensorsFile file = load_safetensors(path);
  std::map<std::string, std::vector<int64_t>> expected = {{"fc1.weight", {1024, 256}},  {"fc1.bias", {1024}},
                                                          {"fc2.weight", {1024, 1024}}, {"fc2.bias", {1024}},
                                                          {"fc3.weight", {10, 1024}},   {"fc3.bias", {10}}};
  REQUIRE(file.tensors.size() == expected.size());
  for (const auto& [name, dims] : expected) {
    CAPTURE(name);
    CHECK(file.tensors.at(name).dtype() == DType::f32);
    CHECK(file.tensors.at(name).dims() == dims);
  }
  std::string bytes = read_bytes(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  size_t fc1_weight_offset = 8 + header_length + 4096; // after fc1.bias, per the header
  CHECK(std::memcmp(file.tensors.at("fc1.weight").raw_data(), bytes.data() + fc1_weight_offset,
                    1024 * 256 * 4) == 0);

  TempDir dir;
  save_safetensors(dir.file("copy.safetensors"), file.tensors, file.metadata);
  CHECK(read_bytes(dir.file("copy.safetensors")) == bytes);
}

TEST_CASE("reads the numpy-written mlp input and rewrites it byte for byte") {
  std::string path = bench_data("mlp/b1_input.npy");
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  Tensor input = load_npy(path);
  CHECK(input.dtype() == DType::f32);
  CHECK(input.dims() == std::vector<int64_t>{1, 256});
  std::string bytes = read_bytes(path);
  CHECK(std::memcmp(input.raw_data(), bytes.data() + 128, 256 * 4) == 0); // numpy pads the header to 128

  TempDir dir;
  save_npy(dir.file("copy.npy"), input);
  CHECK(read_bytes(dir.file("copy.npy")) == bytes);
}
