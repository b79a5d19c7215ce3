// Writing safetensors files, streamed: the caller declares every tensor up front (name, dtype,
// shape), then appends the data section as one byte stream, in declaration order, in chunks of
// any size. Nothing but the header is held in memory, so multi-GB files need no RAM.
//
// File format written (readable by io::SafetensorsFile and the reference `safetensors`):
//   8-byte little-endian N, N bytes of JSON header, then the tensors' bytes without gaps.
//   The header is {"__metadata__": {...}, "<name>": {"dtype", "shape", "data_offsets"}, ...}
//   with the tensors in declaration (= data) order, padded with trailing spaces so that 8 + N is
//   a multiple of 8 (the data section starts 8-byte aligned, as the format recommends).
//
// Sharding (CheckpointWriter with max_shard_bytes > 0): tensors are packed in order into
// DIR/model-00001-of-0000K.safetensors, ... so that each shard's data stays <= the limit (a single
// tensor larger than the limit gets a shard of its own), and DIR/model.safetensors.index.json
// ({"metadata": {"total_size": bytes}, "weight_map": {tensor: file}}) is written last. Unsharded:
// DIR/model.safetensors. An existing checkpoint in DIR (model.safetensors, the index,
// model-NNNNN-of-NNNNN.safetensors) is removed first, so shards of an earlier run cannot shadow
// or mix with the new files; other files are left alone. Every file is written as "<file>.tmp" and
// renamed when complete, so a crashed writer never leaves a file that looks finished.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace deepinfer::io {

struct TensorEntry {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<int64_t> shape;

  // numel * DTypeSize(dtype).
  uint64_t ByteSize() const;
};

// The JSON header for `tensors` laid out back to back, padded as described above (the N bytes,
// without the 8-byte length). Errors: empty or duplicate names, negative dimensions.
StatusOr<std::string> BuildSafetensorsHeader(const std::vector<TensorEntry>& tensors,
                                             const std::map<std::string, std::string>& metadata);

// One file. Usage: Create, Append the data stream (sum of ByteSize()), Finish.
class SafetensorsWriter {
 public:
  // Opens "<path>.tmp" and writes the header. `metadata` defaults to {"format": "pt"}.
  static StatusOr<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, const std::vector<TensorEntry>& tensors,
      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
  ~SafetensorsWriter();  // an unfinished file is closed and removed
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends the next bytes of the data section. More bytes than declared is an error.
  Status Append(std::span<const std::byte> bytes);
  // Checks that every declared byte arrived, closes the file and renames it to `path`.
  Status Finish();

  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t bytes_written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  SafetensorsWriter() = default;
  Status WriteAll(const void* data, size_t n);

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  uint64_t data_bytes_ = 0;
  uint64_t written_ = 0;
  bool finished_ = false;
};

struct CheckpointWriterOptions {
  uint64_t max_shard_bytes = 0;  // 0 = one file, model.safetensors
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
};

// A whole checkpoint directory (created if missing): one file or shards plus the index.
class CheckpointWriter {
 public:
  static StatusOr<std::unique_ptr<CheckpointWriter>> Create(const std::string& dir,
                                                            std::vector<TensorEntry> tensors,
                                                            const CheckpointWriterOptions& options);

  // Appends the next bytes of the concatenated data of all tensors, in declaration order;
  // shard boundaries are crossed transparently.
  Status Append(std::span<const std::byte> bytes);
  // Finishes the last shard and writes the index (sharded only).
  Status Finish();

  // The files written (relative names), in order.
  const std::vector<std::string>& file_names() const { return file_names_; }
  uint64_t total_bytes() const { return total_bytes_; }

 private:
  CheckpointWriter() = default;
  Status OpenShard(size_t shard);

  std::string dir_;
  std::vector<TensorEntry> tensors_;
  CheckpointWriterOptions options_;
  std::vector<std::vector<size_t>> shards_;  // tensor indices per shard
  std::vector<uint64_t> shard_bytes_;
  std::vector<std::string> file_names_;
  size_t current_ = 0;
  std::unique_ptr<SafetensorsWriter> writer_;
  uint64_t total_bytes_ = 0;
  bool sharded_ = false;
};

// Tensor indices per shard for the packing rule above. max_shard_bytes == 0: one shard.
std::vector<std::vector<size_t>> PlanShards(const std::vector<TensorEntry>& tensors,
                                            uint64_t max_shard_bytes);

}  // namespace deepinfer::io
