#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace deepinfer::io {

StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                  path + ": cannot open: " + ErrnoMessage(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return InvalidArgument(path + ": cannot stat: " + ErrnoMessage(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": is a directory, expected a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return DataLoss(path + ": file is empty");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) {
    return Status(
        err == ENOMEM ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument,
        path + ": mmap of " + std::to_string(size) + " bytes failed: " + ErrnoMessage(err));
  }
  return MappedFile(path, static_cast<const std::byte*>(p), size);
}

MappedFile::~MappedFile() { Release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::Release() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::AdviseWillNeed() const {
  if (data_ != nullptr) ::madvise(const_cast<std::byte*>(data_), size_, MADV_WILLNEED);
}

Status MappedFile::Lock() const {
  if (data_ == nullptr) return Status::Ok();
  if (::mlock(data_, size_) != 0) {
    int err = errno;
    return Status(StatusCode::kResourceExhausted,
                  path_ + ": mlock of " + std::to_string(size_) + " bytes failed: " +
                      ErrnoMessage(err) + " (raise the memlock limit, e.g. ulimit -l unlimited)");
  }
  return Status::Ok();
}

}  // namespace deepinfer::io
