// AlignedBuffer<T>: a fixed-size, 64-byte aligned, uninitialised heap array (cache-line and zmm
// aligned). Used for repacked weights and per-thread kernel scratch; it grows only through
// EnsureSize, so steady-state kernel calls allocate nothing. From 2 MiB up it is on transparent
// huge pages where the kernel allows (core/huge_pages.h): the weight stream of a decode step.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

#include "core/huge_pages.h"

namespace deepinfer::kernels {

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t n) { EnsureSize(n); }

  // Makes room for at least n elements; old contents are not kept when it reallocates.
  void EnsureSize(size_t n) {
    if (n <= size_) return;
    void* p = AllocateLarge(n * sizeof(T));  // 64-byte aligned, rounded up to whole lines
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<T*>(p));
    size_ = n;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  std::unique_ptr<T, FreeLarge> data_;
  size_t size_ = 0;
};

}  // namespace deepinfer::kernels
