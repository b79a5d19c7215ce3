// SafetensorsFile: a validated, zero-copy view of one .safetensors file.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON header, then the data
// section. The header is an object: an optional "__metadata__" (string -> string) and, per
// tensor, {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]} with offsets relative to
// the data section. Every view handed out lies inside the file, has exactly numel * dtype-size
// bytes and overlaps no other tensor; anything else is a Status naming the file and the tensor.
// The parser never trusts the input: it runs under ASan/UBSan and libFuzzer
// (fuzz/safetensors_header_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "io/mapped_file.h"

namespace deepinfer::io {

// Headers larger than this are refused as corrupt (real headers are well under 10 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// Tensors of higher rank are refused as corrupt.
inline constexpr size_t kMaxSafetensorsRank = 64;

struct SafetensorsTensor {
  std::string name;
  TensorView view;     // data points into the parsed bytes
  uint64_t begin = 0;  // data_offsets as written, relative to the data section
  uint64_t end = 0;
};

// The parsed header of one file. Views point into the bytes given to ParseHeader.
struct SafetensorsHeader {
  uint64_t header_bytes = 0;  // N, the JSON length
  uint64_t data_offset = 0;   // 8 + N: file offset of the data section
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsTensor> tensors;  // in header (file) order
};

class SafetensorsFile {
 public:
  // Maps and validates the file at `path`.
  static StatusOr<SafetensorsFile> Open(const std::string& path);
  // Validates bytes owned by the caller, who keeps them alive as long as the result and its
  // views. `display_name` stands for the file in error messages.
  static StatusOr<SafetensorsFile> FromBuffer(std::span<const std::byte> file_bytes,
                                              std::string_view display_name);
  // The parser behind both: header and views of `file_bytes`, fully validated.
  static StatusOr<SafetensorsHeader> ParseHeader(std::span<const std::byte> file_bytes,
                                                 std::string_view display_name);

  SafetensorsFile(SafetensorsFile&&) = default;
  SafetensorsFile& operator=(SafetensorsFile&&) = default;

  // The path (or display name) used in messages.
  const std::string& path() const { return path_; }
  // The tensors in file order.
  const std::vector<SafetensorsTensor>& tensors() const { return header_.tensors; }
  size_t num_tensors() const { return header_.tensors.size(); }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  uint64_t data_offset() const { return header_.data_offset; }
  std::span<const std::byte> file_bytes() const { return bytes_; }
  // Sum of the tensors' byte sizes.
  uint64_t tensor_bytes() const { return tensor_bytes_; }
  // The mapping behind Open (for page-in / mlock); nullptr for FromBuffer.
  const MappedFile* mapping() const { return mapping_.data() ? &mapping_ : nullptr; }

  // nullptr if absent. The pointer lives as long as this object.
  const TensorView* Find(std::string_view name) const;
  const SafetensorsTensor* FindTensor(std::string_view name) const;
  // A copy of the view, or kNotFound naming the file and the tensor.
  StatusOr<TensorView> Get(std::string_view name) const;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  SafetensorsFile() = default;
  static StatusOr<SafetensorsFile> Build(MappedFile mapping, std::span<const std::byte> bytes,
                                         std::string_view display_name);

  std::string path_;
  MappedFile mapping_;
  std::span<const std::byte> bytes_;
  SafetensorsHeader header_;
  uint64_t tensor_bytes_ = 0;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
};

}  // namespace deepinfer::io
