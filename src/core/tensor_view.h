// TensorView: a typed, non-owning view of a dense row-major tensor (e.g. an mmap'd checkpoint
// tensor). Views are cheap to copy; the owner (a SafetensorsFile, an arena) must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace deepinfer {

struct TensorView {
  DType dtype = DType::kU8;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t n_bytes = 0;

  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int Rank() const { return static_cast<int>(shape.size()); }
  template <typename T>
  std::span<const T> As() const {
    return {reinterpret_cast<const T*>(data), n_bytes / sizeof(T)};
  }
  std::string ShapeString() const;
};

}  // namespace deepinfer
