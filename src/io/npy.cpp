#include "io/npy.hpp"
#include "io/atomic_file.hpp"
#include "io/byte_count.hpp"
#include "io/reader_guard.hpp"
#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <kiln/io.hpp>
#include <limits>
#include <optional>
#include <system_error>

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little, "kiln's file formats assume a little-endian host");

[[noreturn]] void fail(ErrorKind kind, const std::string& where, const std::string& reason) {
  throw Error(kind, where + ": " + reason);
}

struct DescrCode {
  DType dtype;
  const char* code;
};
constexpr DescrCode descr_codes[] = {{DType::f32, "f4"}, {DType::f64, "f8"},    {DType::f16, "f2"},
                                     {DType::i8, "i1"},  {DType::i32, "i4"},    {DType::i64, "i8"},
                                     {DType::u8, "u1"},  {DType::boolean, "b1"}};
constexpr const char* supported_descrs = "<f4 <f8 <f2 <i1 <i4 <i8 |u1 |b1";

// '<' little-endian, '|' not applicable (one byte), '=' native (little-endian, see the static_assert).
DType dtype_of_descr(const std::string& descr, const std::string& where) {
  bool has_order = descr.size() == 3 && std::strchr("<>|=", descr[0]) != nullptr;
  for (const DescrCode& entry : descr_codes) {
    if (!has_order || descr.compare(1, 2, entry.code) != 0) continue;
    if (descr[0] == '>' && dtype_size(entry.dtype) > 1)
      fail(ErrorKind::unsupported, where, "big-endian data ('" + descr + "') is not supported");
    return entry.dtype;
  }
  fail(ErrorKind::unsupported, where, "unsupported dtype descr '" + descr + "' (kiln reads " + supported_descrs + ")");
}

// A hand-written reader for the one Python literal numpy writes: a dict of string keys whose values
// are strings, booleans or tuples of integers.
class HeaderDictParser {
public:
  HeaderDictParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  io::NpyHeader parse() {
    expect('{');
    while (true) {
      skip_spaces();
      if (consume('}')) break;
      parse_entry();
      skip_spaces();
      if (consume(',')) continue;
      expect('}');
      break;
    }
    skip_spaces();
    if (pos_ != text_.size()) fail_at("unexpected text after the header dict");
    return finish();
  }

private:
  [[noreturn]] void fail_at(const std::string& reason) const { fail_at(pos_, reason); }
  [[noreturn]] void fail_at(size_t at, const std::string& reason) const {
    fail(ErrorKind::parse, where_, "malformed .npy header at column " + std::to_string(at + 1) + ": " + reason);
  }

  void skip_spaces() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) != nullptr)
      ++pos_;
  }

  bool consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c) {
    if (!consume(c)) fail_at(std::string("expected '") + c + "'");
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void parse_entry() {
    size_t key_pos = pos_;
    std::string key = parse_string();
    skip_spaces();
    expect(':');
    skip_spaces();
    if (key == "descr")
      store(descr_, parse_string(), key, key_pos);
    else if (key == "fortran_order")
      store(fortran_order_, parse_bool(), key, key_pos);
    else if (key == "shape")
      store(dims_, parse_dims(), key, key_pos);
    else
      fail_at(key_pos, "unexpected key '" + key + "'");
  }

  template <class T> void store(std::optional<T>& slot, T value, const std::string& key, size_t key_pos) {
    if (slot) fail_at(key_pos, "duplicate key '" + key + "'");
    slot = std::move(value);
  }

  std::string parse_string() {
    char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"') fail_at("expected a quoted string");
    size_t close = text_.find(quote, pos_ + 1);
    if (close == std::string_view::npos) fail_at("unterminated string");
    std::string value(text_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return value;
  }

  bool parse_bool() {
    if (consume_word("True")) return true;
    if (consume_word("False")) return false;
    fail_at("expected True or False");
  }

  std::vector<int64_t> parse_dims() {
    std::vector<int64_t> dims;
    expect('(');
    while (true) {
      skip_spaces();
      if (consume(')')) break;
      dims.push_back(parse_size());
      consume('L'); // Python 2 wrote longs as 3L
      skip_spaces();
      if (consume(',')) continue;
      expect(')');
      break;
    }
    return dims;
  }

  int64_t parse_size() {
    size_t start = pos_;
    int64_t value = 0;
    for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
      int64_t digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail_at("dimension is too large");
      value = value * 10 + digit;
    }
    if (pos_ == start) fail_at("expected a non-negative integer");
    return value;
  }

  io::NpyHeader finish() const {
    if (!descr_) fail(ErrorKind::parse, where_, "malformed .npy header: the dict lacks 'descr'");
    if (!fortran_order_) fail(ErrorKind::parse, where_, "malformed .npy header: the dict lacks 'fortran_order'");
    if (!dims_) fail(ErrorKind::parse, where_, "malformed .npy header: the dict lacks 'shape'");
    if (*fortran_order_)
      fail(ErrorKind::unsupported, where_, "fortran_order arrays are not supported; save a C-ordered array");
    return {dtype_of_descr(*descr_, where_), *dims_};
  }

  std::string_view text_;
  const std::string& where_;
  size_t pos_ = 0;
  std::optional<std::string> descr_;
  std::optional<bool> fortran_order_;
  std::optional<std::vector<int64_t>> dims_;
};

} // namespace

namespace io {

NpyHeader parse_npy_header(std::string_view text, const std::string& where) {
  return HeaderDictParser(text, where).parse();
}

std::string format_npy_header(const NpyHeader& header, const std::string& where) {
  if (header.dtype == DType::bf16) fail(ErrorKind::unsupported, where, "bf16 has no .npy dtype; cast to f32 first");
  std::string descr;
  for (const DescrCode& entry : descr_codes)
    if (entry.dtype == header.dtype) descr = (dtype_size(header.dtype) == 1 ? "|" : "<") + std::string(entry.code);
  std::string shape = "(";
  for (size_t i = 0; i < header.dims.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(header.dims[i]);
  shape += header.dims.size() == 1 ? ",)" : ")";
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

} // namespace io

namespace {

constexpr std::array<char, 6> npy_magic = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t npy_alignment = 64;

uint32_t read_little_endian(std::istream& in, size_t bytes) {
  std::array<unsigned char, 4> buffer{};
  in.read(reinterpret_cast<char*>(buffer.data()), std::streamsize(bytes));
  uint32_t value = 0;
  for (size_t i = bytes; i-- > 0;)
    value = value << 8 | buffer[i];
  return value;
}

// The header length is checked against the file before the header is allocated: a v2/v3 length
// field can claim 4 GiB in a 20-byte file.
void check_header_length(uint64_t length, uint64_t preamble_size, uint64_t file_size, const std::string& path) {
  uint64_t follows = file_size > preamble_size ? file_size - preamble_size : 0;
  if (length > follows)
    fail(ErrorKind::parse, path,
         "header length " + std::to_string(length) + " exceeds the " + std::to_string(follows) +
             " bytes that follow it");
}

// Reads the preamble (magic, version, header length) and returns the header text after it.
std::string read_header_text(std::istream& in, uint64_t file_size, const std::string& path) {
  std::array<char, 8> preamble{};
  if (!in.read(preamble.data(), preamble.size())) fail(ErrorKind::parse, path, "file is too short to be a .npy file");
  if (!std::equal(npy_magic.begin(), npy_magic.end(), preamble.begin()))
    fail(ErrorKind::parse, path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(preamble[6]);
  int minor = static_cast<unsigned char>(preamble[7]);
  if (major < 1 || major > 3)
    fail(ErrorKind::unsupported, path,
         "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  size_t length_bytes = major == 1 ? 2 : 4;
  size_t length = read_little_endian(in, length_bytes);
  if (!in) fail(ErrorKind::parse, path, "file is too short to be a .npy file");
  check_header_length(length, preamble.size() + length_bytes, file_size, path);
  std::string text(length, '\0');
  if (!in.read(text.data(), std::streamsize(length)))
    fail(ErrorKind::parse, path, "header truncated: it should hold " + std::to_string(length) + " bytes");
  return text;
}

// Checks before allocating, so a header claiming a huge array fails cleanly.
size_t checked_data_size(const io::NpyHeader& header, uint64_t available, const std::string& path) {
  std::string layout = "shape " + shape_to_string(shape_from_dims(header.dims)) + " of " + dtype_name(header.dtype);
  std::optional<uint64_t> bytes = io::checked_byte_count(dtype_size(header.dtype), header.dims);
  if (!bytes) fail(ErrorKind::parse, path, layout + " is too large");
  if (*bytes > available)
    fail(ErrorKind::parse, path,
         "data truncated: " + layout + " needs " + std::to_string(*bytes) + " bytes, the file holds " +
             std::to_string(available) + " after the header");
  return size_t(*bytes);
}

// A bool holding anything but 0 or 1 is undefined behaviour in C++, so such data is refused.
void check_bool_bytes(const Tensor& tensor, const std::string& path) {
  const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.nbytes(); ++i)
    if (bytes[i] > 1)
      fail(ErrorKind::parse, path,
           "bool element " + std::to_string(i) + " holds byte " + std::to_string(bytes[i]) + ", not 0 or 1");
}

// The header length that makes the data start at a multiple of 64 bytes after a preamble of
// `prefix` bytes (magic, version and the length field itself).
size_t padded_header_length(size_t prefix, const std::string& dict) {
  return (prefix + dict.size() + 1 + npy_alignment - 1) / npy_alignment * npy_alignment - prefix;
}

// Magic, version, length and the dict padded with spaces and a newline; version 2.0 only when the
// header outgrows 1.0's 16-bit length field.
std::string npy_preamble(const std::string& dict) {
  size_t length_bytes = 2;
  size_t length = padded_header_length(8 + length_bytes, dict);
  if (length > std::numeric_limits<uint16_t>::max()) {
    length_bytes = 4;
    length = padded_header_length(8 + length_bytes, dict);
  }
  std::string out(npy_magic.begin(), npy_magic.end());
  out += char(length_bytes == 2 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < length_bytes; ++i)
    out += char((length >> (8 * i)) & 0xff);
  out += dict;
  out.append(length - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

} // namespace

namespace {

uint64_t file_size_of(const std::string& path) {
  std::error_code error;
  uint64_t size = std::filesystem::file_size(path, error);
  if (error) fail(ErrorKind::io, path, "cannot read its size: " + error.message());
  return size;
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::io, path, "cannot open: " + std::generic_category().message(errno));
  uint64_t file_size = file_size_of(path);
  io::NpyHeader header = io::parse_npy_header(read_header_text(in, file_size, path), path);
  uint64_t position = uint64_t(in.tellg());
  size_t bytes = checked_data_size(header, file_size > position ? file_size - position : 0, path);
  Tensor tensor = Tensor::empty(header.dims, header.dtype);
  if (!in.read(static_cast<char*>(tensor.raw_data()), std::streamsize(bytes)))
    fail(ErrorKind::io, path, "reading the data failed");
  if (header.dtype == DType::boolean) check_bool_bytes(tensor, path);
  return tensor;
}

} // namespace

Tensor load_npy(const std::string& path) {
  return io::guard_reader(path, [&] { return read_npy(path); });
}

void save_npy(const std::string& path, const Tensor& tensor) {
  if (!tensor.is_concrete()) fail(ErrorKind::spec, path, "the tensor has no values (undefined or symbolic)");
  std::string preamble = npy_preamble(io::format_npy_header({tensor.dtype(), tensor.dims()}, path));
  io::write_file_atomic(path, [&](std::ostream& out) {
    out.write(preamble.data(), std::streamsize(preamble.size()));
    out.write(static_cast<const char*>(tensor.raw_data()), std::streamsize(tensor.nbytes()));
  });
}

} // namespace kiln
