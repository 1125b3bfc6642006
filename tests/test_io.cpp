#include "bench_data.hpp"
#include "io/atomic_file.hpp"
#include "io/npy.hpp"
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <kiln/io.hpp>
#include <kiln/kiln.hpp>
#include <map>
#include <optional>
#include <sched.h>
#include <sstream>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed with everything in it afterwards.
struct TempDir {
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("kiln-test-io-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path))
      names.push_back(entry.path().filename().string());
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
  for (size_t i = 0; i < bytes; ++i)
    out += char((value >> (8 * i)) & 0xff);
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
    std::memcpy(static_cast<char*>(tensor.raw_data()) + i * dtype_size(dtype), one.raw_data(), dtype_size(dtype));
  }
  return {tensor, values};
}

void check_values(const Tensor& tensor, const std::vector<double>& values) {
  REQUIRE(tensor.numel() == int64_t(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    CHECK(tensor.item_as_double(int64_t(i)) == values[i]);
}

const DType all_dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                            DType::i32, DType::i64, DType::u8,  DType::boolean};

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
    io::write_file_atomic(dir.file("out.txt"), [](std::ostream&) { throw Error(ErrorKind::shape, "bad shape"); });
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
  for (DType dtype : all_dtypes)
    tensors[dtype_name(dtype)] = sample(dtype).tensor;
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
  CHECK(failure.message == dir.file("bad.safetensors") + ": file is 3 bytes, shorter than the 8-byte header length");
}

TEST_CASE("safetensors reader refuses a header length larger than the file") {
  TempDir dir;
  Failure failure = safetensors_failure(dir, little_endian(1000, 8) + "{}");
  CHECK(failure.message == dir.file("bad.safetensors") + ": header length 1000 exceeds the 2 bytes that follow it");
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
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "abcd")).message ==
        prefix + "missing 'dtype'");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "abcd")).message ==
        prefix + "missing 'shape'");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd")).message ==
        prefix + "missing 'data_offsets'");
  CHECK(
      safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"))
          .message == prefix + "'shape' is not a list of non-negative integers");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", "abcd"))
            .message == prefix + "'data_offsets' is not a pair of non-negative integers [begin, end]");
}

TEST_CASE("safetensors reader refuses an unknown dtype") {
  TempDir dir;
  Failure failure =
      safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "a"));
  CHECK(failure.kind == ErrorKind::unsupported);
  CHECK(failure.message ==
        dir.file("bad.safetensors") +
            ": tensor 'w': unknown dtype 'F8_E4M3' (kiln reads F32 F64 F16 BF16 I8 I32 I64 U8 BOOL)");
}

TEST_CASE("safetensors reader refuses a shape that does not match the byte range") {
  TempDir dir;
  Failure failure = safetensors_failure(
      dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(16, 'x')));
  CHECK(failure.message == dir.file("bad.safetensors") +
                               ": tensor 'w': shape [2, 2] of F32 needs 16 bytes but data_offsets [0, 12] span 12");
}

TEST_CASE("safetensors reader refuses a range outside the data section") {
  TempDir dir;
  Failure failure =
      safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd"));
  CHECK(failure.message ==
        dir.file("bad.safetensors") + ": tensor 'w': data_offsets [0, 8] lie outside the data section (4 bytes)");
}

TEST_CASE("safetensors reader refuses overlapping ranges") {
  TempDir dir;
  Failure failure =
      safetensors_failure(dir, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                                 std::string(12, 'x')));
  CHECK(failure.message == dir.file("bad.safetensors") + ": tensors 'a' and 'b' have overlapping data_offsets");
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
  CHECK(failure.message == dir.file("bad.safetensors") + ": tensor 'm': BOOL element 2 holds byte 2, not 0 or 1");
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
  CHECK(io::format_npy_header({DType::u8, {3}}, "t") == "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }");
  CHECK(io::format_npy_header({DType::boolean, {}}, "t") == "{'descr': '|b1', 'fortran_order': False, 'shape': (), }");
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
    write_bytes(dir.file("t.npy"), npy_bytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                             float_bytes({0.5f, -2.0f})));
    check_values(load_npy(dir.file("t.npy")), {0.5, -2.0});
  }
}

TEST_CASE("npy header parser accepts any key order, double quotes, Python 2 longs and no trailing comma") {
  io::NpyHeader header = io::parse_npy_header(R"({ "shape" : (2L, 3L),"fortran_order":False , "descr":"<i8"}   )"
                                              "\n",
                                              "t");
  CHECK(header.dtype == DType::i64);
  CHECK(header.dims == std::vector<int64_t>{2, 3});
  CHECK(io::parse_npy_header("{'descr': '>u1', 'fortran_order': False, 'shape': (5,)}", "t").dtype == DType::u8);
  CHECK(io::parse_npy_header("{'descr': '=f8', 'fortran_order': False, 'shape': ()}", "t").dtype == DType::f64);
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
  CHECK(header_failure("{'descr': '<f4', 'fortran_order': False}").message == prefix + ": the dict lacks 'shape'");
  CHECK(header_failure("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}").message ==
        prefix + " at column 57: unexpected key 'x'");
  CHECK(header_failure("{'descr': '<f4', 'descr': '<f4'}").message == prefix + " at column 18: duplicate key 'descr'");
  CHECK(header_failure("{'descr' '<f4'}").message == prefix + " at column 10: expected ':'");
  CHECK(header_failure("{'descr': '<f4', 'shape': (2, -1)}").message ==
        prefix + " at column 31: expected a non-negative integer");
  CHECK(header_failure("{'fortran_order': false}").message == prefix + " at column 19: expected True or False");
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
        path + ": header length " + std::to_string(dict.size() + 1) + " exceeds the 20 bytes that follow it");
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
  const std::optional<fs::path> data = bench_data_dir();
  if (!data) {
    MESSAGE(kNoBenchData);
    return;
  }
  const std::string path = (*data / "mlp/weights.safetensors").string();
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
  CHECK(std::memcmp(file.tensors.at("fc1.weight").raw_data(), bytes.data() + fc1_weight_offset, 1024 * 256 * 4) == 0);

  TempDir dir;
  save_safetensors(dir.file("copy.safetensors"), file.tensors, file.metadata);
  CHECK(read_bytes(dir.file("copy.safetensors")) == bytes);
}

TEST_CASE("reads the numpy-written mlp input and rewrites it byte for byte") {
  const std::optional<fs::path> data = bench_data_dir();
  if (!data) {
    MESSAGE(kNoBenchData);
    return;
  }
  const std::string path = (*data / "mlp/b1_input.npy").string();
  Tensor input = load_npy(path);
  CHECK(input.dtype() == DType::f32);
  CHECK(input.dims() == std::vector<int64_t>{1, 256});
  std::string bytes = read_bytes(path);
  CHECK(std::memcmp(input.raw_data(), bytes.data() + 128, 256 * 4) == 0); // numpy pads the header to 128

  TempDir dir;
  save_npy(dir.file("copy.npy"), input);
  CHECK(read_bytes(dir.file("copy.npy")) == bytes);
}

TEST_CASE("safetensors reader turns 1e400 anywhere in the header into a parse error naming the file") {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  for (std::string header :
       {R"({"__metadata__":{"a":1e400}})", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,1e400]}})",
        R"({"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,8]}})"}) {
    CAPTURE(header);
    Failure failure = safetensors_failure(dir, safetensors_bytes(header, std::string(8, 'x')));
    CHECK(failure.kind == ErrorKind::parse);
    CHECK(failure.message.rfind(path + ": header holds a number out of range (", 0) == 0);
  }
}

TEST_CASE("safetensors reader refuses a tensor name or a field that appears twice") {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                   R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                   std::string(8, 'x')))
            .message == path + ": tensor 'w' appears twice in the header");
  CHECK(safetensors_failure(dir,
                            safetensors_bytes(R"({"w":{"dtype":"F32","dtype":"I8","shape":[2],"data_offsets":[0,8]}})",
                                              std::string(8, 'x')))
            .message == path + ": tensor 'w': key 'dtype' appears twice");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"__metadata__":{"a":"1","a":"2"}})", "")).message ==
        path + ": __metadata__: key 'a' appears twice");
}

TEST_CASE("safetensors reader refuses offsets and dims that are not non-negative integers") {
  TempDir dir;
  std::string prefix = dir.file("bad.safetensors") + ": tensor 'w': ";
  for (std::string offsets : {"[0.0,8.0]", "[-8,0]", R"(["0","8"])", "[0,8,16]", "null"}) {
    CAPTURE(offsets);
    std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}}";
    CHECK(safetensors_failure(dir, safetensors_bytes(header, std::string(8, 'x'))).message ==
          prefix + "'data_offsets' is not a pair of non-negative integers [begin, end]");
  }
  for (std::string shape : {"[2.0]", "[-2]", R"(["2"])", "2", "[9223372036854775808]"}) {
    CAPTURE(shape);
    std::string header = R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]}})";
    CHECK(safetensors_failure(dir, safetensors_bytes(header, std::string(8, 'x'))).message ==
          prefix + "'shape' is not a list of non-negative integers");
  }
}

TEST_CASE("safetensors reader refuses data_offsets that end before they begin") {
  TempDir dir;
  CHECK(safetensors_failure(
            dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::string(8, 'x')))
            .message == dir.file("bad.safetensors") + ": tensor 'w': data_offsets [8, 0] end before they begin");
}

TEST_CASE("safetensors reader refuses a shape whose byte count overflows, even an empty one") {
  TempDir dir;
  std::string prefix = dir.file("bad.safetensors") + ": tensor 'w': ";
  CHECK(safetensors_failure(
            dir, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""))
            .message == prefix + "shape [4294967296, 4294967296] is too large");
  CHECK(safetensors_failure(dir, safetensors_bytes(R"({"w":{"dtype":"I8","shape":[0,4611686018427387904,)"
                                                   R"(4611686018427387904],"data_offsets":[0,0]}})",
                                                   ""))
            .message == prefix + "shape [0, 4611686018427387904, 4611686018427387904] is too large");
}

TEST_CASE("safetensors reader refuses a header over the reference reader's 100 MB limit") {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  write_bytes(path, little_endian(100'000'001, 8) + "{}");
  fs::resize_file(path, 8 + 100'000'001); // sparse: no disk space used
  CHECK(failure_of([&] { load_safetensors(path); }).message ==
        path + ": header length 100000001 exceeds the limit of 100000000 bytes");
}

TEST_CASE("safetensors reader refuses a header that is not UTF-8 and a path that is not a file") {
  TempDir dir;
  Failure utf8 =
      safetensors_failure(dir, safetensors_bytes("{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                                                 std::string(8, 'x')));
  CHECK(utf8.kind == ErrorKind::parse);
  CHECK(utf8.message.rfind(dir.file("bad.safetensors") + ": header is not valid JSON (", 0) == 0);
  Failure directory = failure_of([&] { load_safetensors(dir.path.string()); });
  CHECK(directory.kind == ErrorKind::io);
  CHECK(directory.message == dir.path.string() + ": not a regular file");
}

TEST_CASE("safetensors reader copies a tensor whose data is not aligned to its element size") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  write_bytes(path, safetensors_bytes(R"({"flag":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                      R"("v":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},)"
                                      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                                      "\x09" + float_bytes({2.5f, -1.0f}) + "pad" + float_bytes({4.0f})));
  SafetensorsFile file = load_safetensors(path);
  const Tensor& v = file.tensors.at("v");
  CHECK(reinterpret_cast<uintptr_t>(v.raw_data()) % alignof(float) == 0);
  check_values(v, {2.5, -1.0});
  // Aligned tensors stay zero-copy views of the mapping.
  CHECK(static_cast<const char*>(file.tensors.at("a").raw_data()) -
            static_cast<const char*>(file.tensors.at("flag").raw_data()) ==
        12);
}

TEST_CASE("npy reader refuses a v2 header length of 0xFFFFFFFF before allocating it") {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  for (int major : {2, 3}) {
    CAPTURE(major);
    Failure failure = npy_failure(dir, std::string("\x93NUMPY") + char(major) + '\0' + little_endian(0xFFFFFFFF, 4) +
                                           dict + float_bytes({1, 2}));
    CHECK(failure.kind == ErrorKind::parse);
    // The check against the file size comes first: reading the header would allocate 4 GiB.
    CHECK(failure.message ==
          path + ": header length 4294967295 exceeds the " + std::to_string(dict.size() + 8) + " bytes that follow it");
  }
}

TEST_CASE("npy reader refuses a shape whose byte count overflows, even an empty one") {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  CHECK(npy_failure(dir,
                    npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""))
            .message == path + ": shape [4294967296, 4294967296] of f32 is too large");
  CHECK(npy_failure(dir, npy_bytes(1,
                                   "{'descr': '|u1', 'fortran_order': False, "
                                   "'shape': (0, 4611686018427387904, 4611686018427387904), }",
                                   ""))
            .message == path + ": shape [0, 4611686018427387904, 4611686018427387904] of ui8 is too large");
}

TEST_CASE("npy reader refuses a path that is not a file") {
  TempDir dir;
  Failure failure = failure_of([&] { load_npy(dir.path.string()); });
  CHECK(failure.kind == ErrorKind::io);
  CHECK(failure.message.rfind(dir.path.string() + ": ", 0) == 0);
}

namespace {

using io::test_only::WriteStep;

// Plans one failure inside write_file_atomic for the life of this object.
struct PlannedFailure {
  PlannedFailure(WriteStep step, int nth, int error) { io::test_only::fail_at(step, nth, error); }
  ~PlannedFailure() { io::test_only::clear_failures(); }
};

const std::string kOldContents = "old contents";

// Overwrites out.bin (holding kOldContents) with 1 MiB, in 16 KiB pieces so the data reaches the
// file in many writes, and returns what the failure left behind.
struct Leftovers {
  Failure failure;
  std::string contents;
  std::vector<std::string> entries;
};

Leftovers overwrite_out_bin(const fs::path& dir) {
  std::string path = (dir / "out.bin").string();
  write_bytes(path, kOldContents);
  Failure failure = failure_of([&] {
    io::write_file_atomic(path, [](std::ostream& out) {
      std::string piece(16 * 1024, 'n');
      for (int i = 0; i < 64; ++i)
        out << piece;
    });
  });
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir))
    entries.push_back(entry.path().filename().string());
  return {failure, read_bytes(path), entries};
}

void check_nothing_lost(const Leftovers& left, const fs::path& dir, const std::string& reason) {
  CHECK(left.failure.kind == ErrorKind::io);
  CHECK(left.failure.message == (dir / "out.bin").string() + ": " + reason);
  CHECK(left.contents == kOldContents);
  CHECK(left.entries == std::vector<std::string>{"out.bin"});
}

struct Skipped {
  std::string reason;
};

// Runs `body` in a forked child, so that what it changes for its process (a file size limit, a
// mount namespace) never reaches the test runner, and returns the Leftovers it reports; nullopt
// with a MESSAGE when the body throws Skipped.
std::optional<Leftovers> leftovers_from_child(const std::function<Leftovers()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string report;
    int status = 0;
    try {
      Leftovers left = body();
      report = std::to_string(int(left.failure.kind)) + "\n" + left.failure.message + "\n" + left.contents + "\n";
      for (const std::string& entry : left.entries)
        report += entry + "\n";
    } catch (const Skipped& skipped) {
      status = 77;
      report = skipped.reason;
    } catch (const std::exception& e) {
      status = 1;
      report = e.what();
    }
    ssize_t ignored = ::write(fds[1], report.data(), report.size());
    (void)ignored;
    ::_exit(status);
  }
  ::close(fds[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    report.append(buffer, size_t(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    MESSAGE("skipped: " << report);
    return std::nullopt;
  }
  REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, report);
  std::istringstream lines(report);
  Leftovers left;
  std::string kind;
  std::getline(lines, kind);
  left.failure.kind = ErrorKind(std::stoi(kind));
  std::getline(lines, left.failure.message);
  std::getline(lines, left.contents);
  for (std::string entry; std::getline(lines, entry);)
    left.entries.push_back(entry);
  return left;
}

std::string errno_text(int error) { return std::strerror(error); }

} // namespace

TEST_CASE("atomic write that fails at any step keeps the old file, removes its temporary and names the path") {
  struct Case {
    WriteStep step;
    int nth;
    int error;
    std::string reason;
  };
  const Case cases[] = {
      {WriteStep::write, 1, ENOSPC, "writing the temporary file failed: " + errno_text(ENOSPC)},
      {WriteStep::write, 5, ENOSPC, "writing the temporary file failed: " + errno_text(ENOSPC)}, // midway
      {WriteStep::write, 9, EIO, "writing the temporary file failed: " + errno_text(EIO)},
      {WriteStep::fsync, 1, EIO, "fsync of the temporary file failed: " + errno_text(EIO)},
      {WriteStep::close, 1, EDQUOT, "closing the temporary file failed: " + errno_text(EDQUOT)},
      {WriteStep::rename, 1, EXDEV, "cannot rename the temporary file into place: " + errno_text(EXDEV)},
  };
  for (const Case& c : cases) {
    CAPTURE(int(c.step));
    CAPTURE(c.nth);
    TempDir dir;
    PlannedFailure planned(c.step, c.nth, c.error);
    check_nothing_lost(overwrite_out_bin(dir.path), dir.path, c.reason);
  }
  TempDir dir; // and with nothing planned, the same write succeeds
  overwrite_out_bin(dir.path);
  CHECK(read_bytes(dir.file("out.bin")) == std::string(1 << 20, 'n'));
}

TEST_CASE("every file writer keeps the old file when its write fails midway") {
  TempDir dir;
  const std::map<std::string, std::function<void(const std::string&)>> writers = {
      {"w.safetensors",
       [](const std::string& path) {
         save_safetensors(path, {{"w", Tensor::ones({64, 64})}});
       }},
      {"t.npy",
       [](const std::string& path) {
         save_npy(path, Tensor::ones({64, 64}));
       }},
      {"g.mlir", [](const std::string& path) {
         stage([](const Tensor& x) { return x * 2.0; })(TensorLayout(DType::f32, {2})).save(path);
       }}};
  for (const auto& [name, save] : writers) {
    CAPTURE(name);
    std::string path = dir.file(name);
    write_bytes(path, kOldContents);
    Failure failure;
    {
      PlannedFailure planned(WriteStep::write, 1, ENOSPC);
      failure = failure_of([&] { save(path); });
    }
    CHECK(failure.kind == ErrorKind::io);
    CHECK(failure.message == path + ": writing the temporary file failed: " + errno_text(ENOSPC));
    CHECK(read_bytes(path) == kOldContents);
    save(path); // nothing planned: replaces the old file
    CHECK(read_bytes(path) != kOldContents);
  }
  CHECK(dir.entries().size() == writers.size());
}

TEST_CASE("atomic write keeps the permission bits of the file it replaces") {
  TempDir dir;
  std::string path = dir.file("secret.bin");
  write_bytes(path, kOldContents);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  io::write_file_atomic(path, [](std::ostream& out) { out << "new"; });
  CHECK(read_bytes(path) == "new");
  CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("atomic write that hits a real write error (the file size limit) keeps the old file") {
  TempDir dir;
  std::optional<Leftovers> left = leftovers_from_child([&] {
    std::signal(SIGXFSZ, SIG_IGN); // so that write(2) fails with EFBIG instead of killing the child
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 64 * 1024;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) throw Skipped{"cannot lower RLIMIT_FSIZE"};
    return overwrite_out_bin(dir.path);
  });
  if (left) check_nothing_lost(*left, dir.path, "writing the temporary file failed: " + errno_text(EFBIG));
  CHECK(dir.entries() == std::vector<std::string>{"out.bin"});
}

TEST_CASE("atomic write onto a full file system keeps the old file (needs mount privileges)") {
  TempDir dir;
  fs::path small = dir.path / "small";
  fs::create_directory(small);
  // A private mount namespace keeps the 64 KiB tmpfs invisible outside the child, and gone with it.
  std::optional<Leftovers> left = leftovers_from_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) throw Skipped{"no mount namespace: " + errno_text(errno)};
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      throw Skipped{"cannot make mounts private: " + errno_text(errno)};
    if (::mount("kiln-test-io", small.c_str(), "tmpfs", 0, "size=64k") != 0)
      throw Skipped{"cannot mount a tmpfs: " + errno_text(errno)};
    return overwrite_out_bin(small);
  });
  if (left) check_nothing_lost(*left, small, "writing the temporary file failed: " + errno_text(ENOSPC));
}

namespace {

const fs::path kHostile = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "hostile";

// Why each reader refuses each io_* file; a new file needs a line here and one in the README.
const std::map<std::string, std::string> kHostileRefusals = {
    {"io_truncated.safetensors", "file is 3 bytes, shorter than the 8-byte header length"},
    {"io_header_length_lies.safetensors", "header length 1000000 exceeds the 64 bytes that follow it"},
    {"io_header_length_huge.safetensors", "header length 18446744073709551615 exceeds"},
    {"io_header_cut_short.safetensors", "header is not valid JSON ("},
    {"io_header_not_object.safetensors", "header is not a JSON object"},
    {"io_1e400_metadata.safetensors", "header holds a number out of range ("},
    {"io_1e400_offsets.safetensors", "header holds a number out of range ("},
    {"io_1e400_shape.safetensors", "header holds a number out of range ("},
    {"io_unknown_dtype.safetensors", "tensor 'w': unknown dtype 'C64'"},
    {"io_offsets_overlap.safetensors", "tensors 'a' and 'b' have overlapping data_offsets"},
    {"io_offsets_out_of_range.safetensors", "tensor 'w': data_offsets [8, 24] lie outside the data section"},
    {"io_offsets_end_before_begin.safetensors", "tensor 'w': data_offsets [8, 0] end before they begin"},
    {"io_offsets_not_integer.safetensors", "tensor 'w': 'data_offsets' is not a pair of non-negative integers"},
    {"io_offsets_negative.safetensors", "tensor 'w': 'data_offsets' is not a pair of non-negative integers"},
    {"io_shape_negative.safetensors", "tensor 'w': 'shape' is not a list of non-negative integers"},
    {"io_shape_size_mismatch.safetensors", "tensor 'w': shape [2, 2] of F32 needs 16 bytes"},
    {"io_shape_overflow.safetensors", "tensor 'w': shape [4294967296, 4294967296] is too large"},
    {"io_shape_overflow_empty.safetensors", "is too large"},
    {"io_duplicate_name.safetensors", "tensor 'w' appears twice in the header"},
    {"io_duplicate_field.safetensors", "tensor 'w': key 'dtype' appears twice"},
    {"io_metadata_not_strings.safetensors", "__metadata__ value of 'epoch' is not a string"},
    {"io_bool_bytes.safetensors", "tensor 'm': BOOL element 2 holds byte 2"},
    {"io_invalid_utf8.safetensors", "header is not valid JSON ("},
    {"io_header_length_ffffffff.npy", "header length 4294967295 exceeds the 124 bytes that follow it"},
    {"io_v3_header_length_ffffffff.npy", "header length 4294967295 exceeds the 124 bytes that follow it"},
    {"io_header_length_lies.npy", "header length 65535 exceeds the 126 bytes that follow it"},
    {"io_bad_magic.npy", "not a .npy file (bad magic)"},
    {"io_version_4.npy", "unsupported .npy format version 4.0"},
    {"io_big_endian.npy", "big-endian data ('>f4') is not supported"},
    {"io_fortran_order.npy", "fortran_order arrays are not supported"},
    {"io_unknown_descr.npy", "unsupported dtype descr '<c8'"},
    {"io_malformed_dict.npy", "unexpected key 'x'"},
    {"io_dict_missing_shape.npy", "the dict lacks 'shape'"},
    {"io_negative_dim.npy", "expected a non-negative integer"},
    {"io_shape_overflow.npy", "shape [4294967296, 4294967296] of f32 is too large"},
    {"io_truncated_data.npy", "data truncated: shape [2, 3] of f32 needs 24 bytes, the file holds 20"},
    {"io_bool_bytes.npy", "bool element 1 holds byte 5"},
};

} // namespace

TEST_CASE("every io_* file in tests/data/hostile is refused with one kiln::Error naming it and saying why") {
  REQUIRE(fs::is_directory(kHostile));
  const std::string readme = read_bytes((kHostile / "README.md").string());
  size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(kHostile)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("io_", 0) != 0) continue;
    CAPTURE(name);
    ++seen;
    CHECK(fs::file_size(entry.path()) < 2048);
    CHECK_MESSAGE(contains(readme, "`" + name + "`"), "README.md has no line for it");
    REQUIRE_MESSAGE(kHostileRefusals.count(name) == 1, "no expected refusal for it in test_io.cpp");
    const std::string path = entry.path().string();
    Failure failure = failure_of([&] {
      if (entry.path().extension() == ".npy")
        load_npy(path);
      else
        load_safetensors(path);
    });
    CHECK(failure.message.rfind(path + ": ", 0) == 0);
    CHECK_MESSAGE(contains(failure.message, kHostileRefusals.at(name)), failure.message);
  }
  CHECK(seen == kHostileRefusals.size());
}
