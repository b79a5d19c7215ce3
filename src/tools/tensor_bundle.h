// TensorBundle: named F32 / I64 tensors collected in memory and written as one safetensors file
// (the output format of `deepinfer eval-golden`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace deepinfer::tools {

class TensorBundle {
 public:
  void AddF32(const std::string& name, std::vector<int64_t> shape,
              const std::vector<float>& values);
  void AddI64(const std::string& name, std::vector<int64_t> shape,
              const std::vector<int64_t>& values);
  // bf16 values widened to F32 (exact).
  void AddBf16AsF32(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<uint16_t>& values);
  Status Write(const std::string& path) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> entries_;
};

}  // namespace deepinfer::tools
