#include "io/atomic_file.hpp"
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <kiln/error.hpp>
#include <streambuf>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace kiln::io {

namespace test_only {
namespace {

struct PlannedFailure {
  std::atomic<int> calls_left{0}; // 0: none planned
  std::atomic<int> error{0};
};
PlannedFailure planned[4];
std::atomic<int> next_write_error{0}; // set by a shortened write, for the call after it

PlannedFailure& plan_of(WriteStep step) { return planned[static_cast<int>(step)]; }

// The errno this call of `step` is planned to fail with, or 0.
int planned_error(WriteStep step) {
  PlannedFailure& plan = plan_of(step);
  if (plan.calls_left.load() <= 0) return 0;
  return plan.calls_left.fetch_sub(1) == 1 ? plan.error.load() : 0;
}

} // namespace

void fail_at(WriteStep step, int nth, int error) {
  plan_of(step).error = error;
  plan_of(step).calls_left = nth;
}

void clear_failures() {
  for (PlannedFailure& plan : planned)
    plan.calls_left = 0;
  next_write_error = 0;
}

} // namespace test_only

namespace {

using test_only::planned_error;
using test_only::WriteStep;

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::io, path + ": " + reason);
}

std::string errno_message(int error) { return std::generic_category().message(error); }

ssize_t write_some(int fd, const char* data, size_t size) {
  if (int error = test_only::next_write_error.exchange(0)) {
    errno = error;
    return -1;
  }
  if (int error = planned_error(WriteStep::write)) {
    if (size < 2) {
      errno = error;
      return -1;
    }
    test_only::next_write_error = error;
    size /= 2;
  }
  return ::write(fd, data, size);
}

// An output buffer over a file descriptor that keeps the errno of the first failed write; with
// std::ofstream the reason is gone by the time close() reports that something failed.
class FdOutputBuffer : public std::streambuf {
public:
  explicit FdOutputBuffer(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  // 0 while every write succeeded.
  int error() const { return error_; }

protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
    return ch;
  }

  // Large blocks (tensor data) go straight to the file instead of through the buffer.
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    if (size < std::streamsize(buffer_.size())) return std::streambuf::xsputn(data, size);
    return drain() && write_all(data, size_t(size)) ? size : 0;
  }

  int sync() override { return drain() ? 0 : -1; }

private:
  bool drain() {
    size_t pending = size_t(pptr() - pbase());
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return write_all(buffer_.data(), pending);
  }

  // write(2) may store fewer bytes than asked (a filling disk, a signal); keep going until it fails.
  bool write_all(const char* data, size_t size) {
    while (error_ == 0 && size > 0) {
      ssize_t written = write_some(fd_, data, size);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) error_ = written < 0 ? errno : EIO;
      if (written <= 0) break;
      data += written;
      size -= size_t(written);
    }
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::array<char, 64 * 1024> buffer_;
};

// A fresh file beside the target (so the final rename stays within one file system), removed on
// destruction unless it was renamed into place.
class TempFile {
public:
  explicit TempFile(const std::string& target) : target_(target) { create(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  int fd() const { return fd_; }

  void sync() {
    int error = planned_error(WriteStep::fsync);
    if (error == 0 && ::fsync(fd_) != 0) error = errno;
    if (error != 0) fail(target_, "fsync of the temporary file failed: " + errno_message(error));
  }

  // close(2) can report a failed write-back (NFS, quotas); the descriptor is released either way.
  void close() {
    int error = planned_error(WriteStep::close);
    if (::close(fd_) != 0 && error == 0) error = errno;
    fd_ = -1;
    if (error != 0) fail(target_, "closing the temporary file failed: " + errno_message(error));
  }

  void commit() {
    int error = planned_error(WriteStep::rename);
    if (error == 0 && std::rename(path_.c_str(), target_.c_str()) != 0) error = errno;
    if (error != 0) fail(target_, "cannot rename the temporary file into place: " + errno_message(error));
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
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        keep_permissions();
        return;
      }
      if (errno != EEXIST) fail(target_, "cannot create a temporary file beside it: " + errno_message(errno));
    }
    fail(target_, "cannot find an unused temporary file name beside it");
  }

  // Replacing a file must not widen (or narrow) who may read it. Best effort: a file we cannot
  // stat is one we are about to create.
  void keep_permissions() {
    struct stat existing {};
    if (::stat(target_.c_str(), &existing) == 0 && S_ISREG(existing.st_mode)) ::fchmod(fd_, existing.st_mode & 07777);
  }

  std::string target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

void fill(TempFile& temp, const std::string& target, const std::function<void(std::ostream&)>& writer) {
  FdOutputBuffer buffer(temp.fd());
  std::ostream out(&buffer);
  try {
    writer(out);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(target, std::string("writing failed: ") + e.what());
  }
  out.flush();
  if (buffer.error() != 0) fail(target, "writing the temporary file failed: " + errno_message(buffer.error()));
  if (!out) fail(target, "writing the temporary file failed: the output stream reported an error");
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
  temp.sync();
  temp.close();
  temp.commit();
  sync_parent_directory(path);
}

} // namespace kiln::io
