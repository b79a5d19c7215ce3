// Helpers for io tests: a self-deleting temp directory and builders of (possibly malformed)
// safetensors files.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::io::testing {

// The v41-tiny-a fixture checkpoint (../shared/fixtures), a folder and its single file.
inline const std::string kFixtureDir = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";
inline const std::string kFixtureFile = kFixtureDir + "/model.safetensors";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "deepinfer_io_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

// 8-byte little-endian length `length` (the header's own size unless given), header, data.
inline std::string RawSafetensors(std::string_view header, std::string_view data,
                                  uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  out += header;
  out += data;
  return out;
}

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// A well-formed file: tensors packed in the given order, header padded with spaces to a multiple
// of 8 bytes (as the safetensors writer does, so that data stays aligned).
inline std::string BuildSafetensors(const std::vector<RawTensor>& tensors,
                                    std::string_view metadata_json = "") {
  std::string header = "{";
  if (!metadata_json.empty()) header += "\"__metadata__\":" + std::string(metadata_json);
  std::string data;
  for (const RawTensor& t : tensors) {
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';
  return RawSafetensors(header, data);
}

}  // namespace deepinfer::io::testing
