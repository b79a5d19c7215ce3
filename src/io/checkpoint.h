// Checkpoint: every tensor of a model directory, mapped and validated, looked up by name.
//
// Layouts accepted by Open(path), first match wins:
//   1. path is a .safetensors file: that file alone;
//   2. DIR/model.safetensors.index.json exists: its "weight_map" (tensor -> shard file) decides;
//      each shard is opened once, every mapped tensor must exist in its shard, and every tensor
//      of a shard must be mapped to that shard (so no tensor is in two shards);
//   3. DIR/model.safetensors exists: that file alone (other *.safetensors beside it, such as
//      golden outputs, are ignored);
//   4. otherwise every DIR/*.safetensors, in sorted order; a tensor name may appear only once.
// Errors name the file and the tensor. Views stay valid while the Checkpoint lives (moves too).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "io/progress.h"
#include "io/safetensors.h"

namespace deepinfer::io {

inline constexpr std::string_view kSafetensorsIndexFile = "model.safetensors.index.json";

struct CheckpointOptions {
  // A progress bar over shards on stderr while opening (only on a TTY, only after 1 s).
  bool show_progress = true;
};

class Checkpoint {
 public:
  static StatusOr<Checkpoint> Open(const std::string& path, const CheckpointOptions& options = {});

  Checkpoint(Checkpoint&&) = default;
  Checkpoint& operator=(Checkpoint&&) = default;

  const std::string& path() const { return path_; }
  // nullptr if absent; the pointer lives as long as the Checkpoint.
  const TensorView* Find(std::string_view name) const;
  // A copy of the view, or kNotFound naming the checkpoint and the tensor.
  StatusOr<TensorView> Get(std::string_view name) const;
  // The file that holds `name`, or nullptr.
  const SafetensorsFile* FileOf(std::string_view name) const;

  // All tensor names: files in order, each file's tensors in header order.
  const std::vector<std::string_view>& names() const { return names_; }
  size_t num_tensors() const { return names_.size(); }
  // Sum of tensor byte sizes (headers excluded).
  uint64_t total_bytes() const { return total_bytes_; }
  // Sum of file sizes (headers included): what PageIn reads.
  uint64_t file_bytes() const { return file_bytes_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

  // Reads one byte of every page of every file so that later accesses do not fault (warm-up
  // before serving). Advances `progress` by bytes if given (total: file_bytes()). Returns the
  // number of bytes covered.
  uint64_t PageIn(ProgressBar* progress = nullptr) const;
  // mlock()s every file; the error names the file.
  Status Lock() const;

 private:
  struct Location {
    uint32_t file;
    uint32_t tensor;
  };
  Checkpoint() = default;
  // Adds files_[i]'s tensors to the name index; a name already present is an error.
  Status IndexFile(size_t i);

  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string_view, Location> index_;  // keys point into files_
  std::vector<std::string_view> names_;
  uint64_t total_bytes_ = 0;
  uint64_t file_bytes_ = 0;
};

}  // namespace deepinfer::io
