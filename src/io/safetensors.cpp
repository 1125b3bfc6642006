#include "io/atomic_file.hpp"
#include "io/byte_count.hpp"
#include "io/reader_guard.hpp"
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <kiln/io.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little, "kiln's file formats assume a little-endian host");

using nlohmann::json;
constexpr size_t header_length_bytes = 8;
constexpr const char* metadata_key = "__metadata__";
// The reference reader's limit: a header this large is not a weights file, and parsing it would
// cost many times its size in memory.
constexpr uint64_t max_header_length = 100'000'000;

[[noreturn]] void fail(ErrorKind kind, const std::string& path, const std::string& reason) {
  throw Error(kind, path + ": " + reason);
}

std::string errno_message() { return std::generic_category().message(errno); }

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName safetensors_dtypes[] = {{DType::f32, "F32"},   {DType::f64, "F64"}, {DType::f16, "F16"},
                                            {DType::bf16, "BF16"}, {DType::i8, "I8"},   {DType::i32, "I32"},
                                            {DType::i64, "I64"},   {DType::u8, "U8"},   {DType::boolean, "BOOL"}};

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeName& entry : safetensors_dtypes)
    if (name == entry.name) return entry.dtype;
  return std::nullopt;
}

const char* name_of(DType dtype) {
  for (const DTypeName& entry : safetensors_dtypes)
    if (dtype == entry.dtype) return entry.name;
  return "?";
}

// A private, copy-on-write mapping of a whole file: tensors are views into it, and a write through
// one of them changes this process's pages only, never the file.
class FileMapping {
public:
  FileMapping(void* base, size_t size) : base_(base), size_(size) {}
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  ~FileMapping() { ::munmap(base_, size_); }

  std::byte* data() const { return static_cast<std::byte*>(base_); }
  size_t size() const { return size_; }

private:
  void* base_;
  size_t size_;
};

size_t checked_file_size(int fd, const std::string& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail(ErrorKind::io, path, "cannot stat: " + errno_message());
  if (!S_ISREG(info.st_mode)) fail(ErrorKind::io, path, "not a regular file");
  size_t size = size_t(info.st_size);
  if (size < header_length_bytes)
    fail(ErrorKind::parse, path, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  return size;
}

std::shared_ptr<FileMapping> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::io, path, "cannot open: " + errno_message());
  size_t size = 0;
  void* base = MAP_FAILED;
  try {
    size = checked_file_size(fd, path);
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  } catch (...) {
    ::close(fd);
    throw;
  }
  int map_errno = errno;
  ::close(fd);
  if (base == MAP_FAILED) fail(ErrorKind::io, path, "cannot map: " + std::generic_category().message(map_errno));
  return std::make_shared<FileMapping>(base, size);
}

uint64_t header_length(const FileMapping& file, const std::string& path) {
  uint64_t length = 0;
  std::memcpy(&length, file.data(), sizeof length);
  if (length > file.size() - header_length_bytes)
    fail(ErrorKind::parse, path,
         "header length " + std::to_string(length) + " exceeds the " +
             std::to_string(file.size() - header_length_bytes) + " bytes that follow it");
  if (length > max_header_length)
    fail(ErrorKind::parse, path,
         "header length " + std::to_string(length) + " exceeds the limit of " + std::to_string(max_header_length) +
             " bytes");
  return length;
}

std::string entry_label(const std::string& name) {
  return name == metadata_key ? std::string(metadata_key) : "tensor '" + name + "'";
}

// nlohmann keeps the last of repeated keys without a word, so a repeated tensor name (or field)
// would silently hide an entry; the parse callback refuses repeats in every object.
class RepeatedKeyCheck {
public:
  explicit RepeatedKeyCheck(const std::string& path) : path_(path) {}

  bool operator()(int depth, json::parse_event_t event, const json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects_.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects_.pop_back();
    if (event == json::parse_event_t::key) check(depth, parsed.get_ref<const std::string&>());
    return true;
  }

private:
  void check(int depth, const std::string& key) {
    if (depth == 1) entry_ = key;
    if (open_objects_.back().insert(key).second) return;
    if (depth == 1) fail(ErrorKind::parse, path_, entry_label(key) + " appears twice in the header");
    fail(ErrorKind::parse, path_, (entry_ ? entry_label(*entry_) : "header") + ": key '" + key + "' appears twice");
  }

  const std::string& path_;
  std::vector<std::set<std::string>> open_objects_;
  std::optional<std::string> entry_; // the top-level key being parsed; none while the top is not an object
};

json parse_header(const FileMapping& file, uint64_t length, const std::string& path) {
  const char* text = reinterpret_cast<const char*>(file.data()) + header_length_bytes;
  json header;
  RepeatedKeyCheck repeated_keys(path);
  auto callback = [&repeated_keys](int depth, json::parse_event_t event, json& parsed) {
    return repeated_keys(depth, event, parsed);
  };
  try {
    header = json::parse(text, text + length, callback);
  } catch (const json::out_of_range& e) {
    fail(ErrorKind::parse, path, std::string("header holds a number out of range (") + e.what() + ")");
  } catch (const json::exception& e) {
    fail(ErrorKind::parse, path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail(ErrorKind::parse, path, "header is not a JSON object");
  return header;
}

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t begin;
  uint64_t end;
};

bool is_size(const json& value) {
  return value.is_number_unsigned() && value.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
}

class EntryParser {
public:
  EntryParser(const std::string& path, const std::string& name) : path_(path), name_(name) {}

  TensorEntry parse(const json& entry, uint64_t data_size) const {
    if (!entry.is_object()) fail(ErrorKind::parse, "entry is not a JSON object");
    TensorEntry result{name_, parse_dtype(field(entry, "dtype")), parse_dims(field(entry, "shape")), 0, 0};
    parse_offsets(field(entry, "data_offsets"), result);
    check_size(result);
    if (result.end > data_size)
      fail(ErrorKind::parse, "data_offsets " + offsets_text(result) + " lie outside the data section (" +
                                 std::to_string(data_size) + " bytes)");
    return result;
  }

private:
  [[noreturn]] void fail(ErrorKind kind, const std::string& reason) const {
    kiln::fail(kind, path_, "tensor '" + name_ + "': " + reason);
  }

  const json& field(const json& entry, const char* key) const {
    auto it = entry.find(key);
    if (it == entry.end()) fail(ErrorKind::parse, std::string("missing '") + key + "'");
    return *it;
  }

  DType parse_dtype(const json& value) const {
    if (!value.is_string()) fail(ErrorKind::parse, "'dtype' is not a string");
    std::optional<DType> dtype = dtype_from_name(value.get<std::string>());
    if (!dtype)
      fail(ErrorKind::unsupported,
           "unknown dtype '" + value.get<std::string>() + "' (kiln reads F32 F64 F16 BF16 I8 I32 I64 U8 BOOL)");
    return *dtype;
  }

  std::vector<int64_t> parse_dims(const json& value) const {
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), is_size))
      fail(ErrorKind::parse, "'shape' is not a list of non-negative integers");
    std::vector<int64_t> dims;
    for (const json& dim : value)
      dims.push_back(int64_t(dim.get<uint64_t>()));
    return dims;
  }

  void parse_offsets(const json& value, TensorEntry& entry) const {
    if (!value.is_array() || value.size() != 2 || !is_size(value[0]) || !is_size(value[1]))
      fail(ErrorKind::parse, "'data_offsets' is not a pair of non-negative integers [begin, end]");
    entry.begin = value[0].get<uint64_t>();
    entry.end = value[1].get<uint64_t>();
    if (entry.end < entry.begin)
      fail(ErrorKind::parse, "data_offsets " + offsets_text(entry) + " end before they begin");
  }

  void check_size(const TensorEntry& entry) const {
    std::optional<uint64_t> bytes = io::checked_byte_count(dtype_size(entry.dtype), entry.dims);
    if (!bytes) fail(ErrorKind::parse, "shape " + shape_to_string(shape_from_dims(entry.dims)) + " is too large");
    if (*bytes != entry.end - entry.begin)
      fail(ErrorKind::parse, "shape " + shape_to_string(shape_from_dims(entry.dims)) + " of " + name_of(entry.dtype) +
                                 " needs " + std::to_string(*bytes) + " bytes but data_offsets " + offsets_text(entry) +
                                 " span " + std::to_string(entry.end - entry.begin));
  }

  static std::string offsets_text(const TensorEntry& entry) {
    return "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
  }

  const std::string& path_;
  const std::string& name_;
};

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& path) {
  std::map<std::string, std::string> metadata;
  if (!value.is_object()) fail(ErrorKind::parse, path, "__metadata__ is not a JSON object");
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) fail(ErrorKind::parse, path, "__metadata__ value of '" + key + "' is not a string");
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// Empty ranges hold no bytes, so they overlap nothing.
void check_disjoint(std::vector<TensorEntry> entries, const std::string& path) {
  std::erase_if(entries, [](const TensorEntry& e) { return e.begin == e.end; });
  std::sort(entries.begin(), entries.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.begin < b.begin; });
  const TensorEntry* furthest = nullptr;
  for (const TensorEntry& entry : entries) {
    if (furthest && entry.begin < furthest->end)
      fail(ErrorKind::parse, path,
           "tensors '" + furthest->name + "' and '" + entry.name + "' have overlapping data_offsets");
    if (!furthest || entry.end > furthest->end) furthest = &entry;
  }
}

// A bool holding anything but 0 or 1 is undefined behaviour in C++, so such data is refused.
void check_bool_bytes(const TensorEntry& entry, const std::byte* data, const std::string& path) {
  for (uint64_t i = 0; i < entry.end - entry.begin; ++i)
    if (data[i] != std::byte{0} && data[i] != std::byte{1})
      fail(ErrorKind::parse, path,
           "tensor '" + entry.name + "': BOOL element " + std::to_string(i) + " holds byte " +
               std::to_string(int(data[i])) + ", not 0 or 1");
}

// The format does not align tensor data, and kernels read elements through typed pointers, so a
// tensor whose bytes are not aligned to its element size gets an aligned copy instead of a view.
Tensor tensor_of(const TensorEntry& entry, std::byte* data, const std::shared_ptr<FileMapping>& file) {
  bool aligned = reinterpret_cast<uintptr_t>(data) % dtype_size(entry.dtype) == 0;
  if (aligned || entry.begin == entry.end) return Tensor::wrap(data, entry.dims, entry.dtype, file);
  Tensor copy = Tensor::empty(entry.dims, entry.dtype);
  std::memcpy(copy.raw_data(), data, entry.end - entry.begin);
  return copy;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::shared_ptr<FileMapping> file = map_file(path);
  uint64_t length = header_length(*file, path);
  json header = parse_header(*file, length, path);
  std::byte* data_section = file->data() + header_length_bytes + length;
  uint64_t data_size = file->size() - header_length_bytes - length;

  SafetensorsFile result;
  std::vector<TensorEntry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == metadata_key)
      result.metadata = parse_metadata(value, path);
    else
      entries.push_back(EntryParser(path, name).parse(value, data_size));
  }
  check_disjoint(entries, path);
  for (const TensorEntry& entry : entries) {
    if (entry.dtype == DType::boolean) check_bool_bytes(entry, data_section + entry.begin, path);
    result.tensors.emplace(entry.name, tensor_of(entry, data_section + entry.begin, file));
  }
  return result;
}

} // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  return io::guard_reader(path, [&] { return read_safetensors(path); });
}

namespace {

using NamedTensor = std::pair<std::string, Tensor>;

// The reference layout: largest elements first, then by name, so every tensor stays aligned to its
// element size in a data section that starts at a multiple of 8.
std::vector<NamedTensor> layout_order(const std::map<std::string, Tensor>& tensors, const std::string& path) {
  std::vector<NamedTensor> order;
  for (const auto& [name, tensor] : tensors) {
    if (name == metadata_key) fail(ErrorKind::spec, path, "'__metadata__' is reserved and cannot name a tensor");
    if (!tensor.is_concrete())
      fail(ErrorKind::spec, path, "tensor '" + name + "' has no values (undefined or symbolic)");
    order.emplace_back(name, tensor);
  }
  std::stable_sort(order.begin(), order.end(), [](const NamedTensor& a, const NamedTensor& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  return order;
}

// ordered_json keeps the reference's key order: "__metadata__" first, then tensors in data order,
// each as dtype, shape, data_offsets.
std::string header_text(const std::vector<NamedTensor>& order, const std::map<std::string, std::string>& metadata,
                        const std::string& path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[metadata_key] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : order) {
    uint64_t end = offset + tensor.nbytes();
    header[name] = {{"dtype", name_of(tensor.dtype())}, {"shape", tensor.dims()}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error& e) {
    fail(ErrorKind::spec, path, std::string("tensor names and metadata must be valid UTF-8 (") + e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

} // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<NamedTensor> order = layout_order(tensors, path);
  std::string header = header_text(order, metadata, path);
  io::write_file_atomic(path, [&](std::ostream& out) {
    uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out.write(header.data(), std::streamsize(header.size()));
    for (const auto& [name, tensor] : order)
      out.write(static_cast<const char*>(tensor.raw_data()), std::streamsize(tensor.nbytes()));
  });
}

} // namespace kiln
