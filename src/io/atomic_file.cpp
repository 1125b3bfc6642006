#include "io/atomic_file.hpp"
#include <kiln/error.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unistd.h>

namespace kiln::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::io, path + ": " + reason);
}

std::string errno_message() { return std::generic_category().message(errno); }

// A fresh file beside the target (so the final rename stays within one file system), removed on
// destruction unless it was renamed into place.
class TempFile {
public:
  explicit TempFile(const std::string& target) : target_(target) { create(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!committed_) ::unlink(path_.c_str());
  }

  const std::string& path() const { return path_; }

  void commit() {
    if (std::rename(path_.c_str(), target_.c_str()) != 0)
      fail(target_, "cannot rename the temporary file into place: " + errno_message());
    committed_ = true;
  }

private:
  // O_EXCL makes the name ours alone, even against other processes writing the same target.
  void create() {
    static std::atomic<unsigned long> counter{0};
    std::filesystem::path target(target_);
    std::string stem = "." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-";
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = (target.parent_path() / (stem + std::to_string(counter++))).string();
      int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      if (errno != EEXIST) fail(target_, "cannot create a temporary file beside it: " + errno_message());
    }
    fail(target_, "cannot find an unused temporary file name beside it");
  }

  std::string target_;
  std::string path_;
  bool committed_ = false;
};

void fill(const TempFile& temp, const std::string& target, const std::function<void(std::ostream&)>& writer) {
  std::ofstream out(temp.path(), std::ios::binary | std::ios::trunc);
  if (!out) fail(target, "cannot open the temporary file for writing: " + errno_message());
  try {
    writer(out);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(target, std::string("writing failed: ") + e.what());
  }
  out.close();
  if (!out) fail(target, "writing the temporary file failed: " + errno_message());
}

void sync_file(const std::string& file, const std::string& target) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(target, "cannot reopen the temporary file to sync it: " + errno_message());
  int rc = ::fsync(fd);
  int sync_errno = errno;
  ::close(fd);
  if (rc != 0) fail(target, "fsync failed: " + std::generic_category().message(sync_errno));
}

// Makes the rename itself durable. Best effort: the new file is already in place, so a failure here
// is not reported as a failed write.
void sync_parent_directory(const std::string& target) {
  std::filesystem::path parent = std::filesystem::path(target).parent_path();
  int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

} // namespace

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& writer) {
  TempFile temp(path);
  fill(temp, path, writer);
  sync_file(temp.path(), path);
  temp.commit();
  sync_parent_directory(path);
}

} // namespace kiln::io
