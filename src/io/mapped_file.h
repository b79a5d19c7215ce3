// MappedFile: a whole file mapped read-only into memory (RAII, move-only).
//
// The mapping is private and read-only; views into it (TensorView::data) stay valid while the
// MappedFile lives, including across moves (a move transfers the mapping, the address stays).
// Empty files are refused: there is nothing to map and no checkpoint file is empty.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/status.h"

namespace deepinfer::io {

class MappedFile {
 public:
  // Errors name the path: missing file (kNotFound), no permission, a directory or other
  // non-regular file, an empty file, or a failed mmap (kInvalidArgument / kResourceExhausted).
  static StatusOr<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Asks the kernel to start reading the whole file in (madvise WILLNEED); a hint, never fails.
  void AdviseWillNeed() const;
  // Pins the pages in RAM (mlock). Fails with the path and errno text, e.g. when RLIMIT_MEMLOCK
  // is too small.
  Status Lock() const;

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  void Release();

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace deepinfer::io
