#include "io/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace deepinfer::io {

namespace {

// "model-00002-of-00007.safetensors" (1-based, as the Hugging Face convention).
std::string ShardName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

}  // namespace

uint64_t TensorEntry::ByteSize() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * DTypeSize(dtype);
}

StatusOr<std::string> BuildSafetensorsHeader(const std::vector<TensorEntry>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  using Json = nlohmann::json;
  // Built by hand (not through a json object) so that the tensors keep their order; keys and
  // strings go through nlohmann for escaping.
  std::string h = "{";
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":" + Json(metadata).dump();
    first = false;
  }
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const TensorEntry& t : tensors) {
    if (t.name.empty()) return InvalidArgument("safetensors writer: empty tensor name");
    if (t.name == "__metadata__") {
      return InvalidArgument("safetensors writer: \"__metadata__\" is not a tensor name");
    }
    if (!seen.insert(t.name).second) {
      return InvalidArgument("safetensors writer: tensor \"" + t.name + "\" declared twice");
    }
    for (int64_t d : t.shape) {
      if (d < 0) {
        return InvalidArgument("safetensors writer: tensor \"" + t.name +
                               "\" has a negative dimension");
      }
    }
    const uint64_t end = offset + t.ByteSize();
    if (!first) h += ',';
    first = false;
    h += Json(t.name).dump();
    h += ":{\"dtype\":\"" + std::string(DTypeName(t.dtype)) +
         "\",\"shape\":" + Json(t.shape).dump() + ",\"data_offsets\":[" + std::to_string(offset) +
         "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += '}';
  while ((8 + h.size()) % 8 != 0) h += ' ';
  return h;
}

// --- SafetensorsWriter -----------------------------------------------------------------------

StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, const std::vector<TensorEntry>& tensors,
    const std::map<std::string, std::string>& metadata) {
  DI_ASSIGN_OR_RETURN(std::string header, BuildSafetensorsHeader(tensors, metadata));
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  w->path_ = path;
  w->tmp_path_ = path + ".tmp";
  for (const TensorEntry& t : tensors) w->data_bytes_ += t.ByteSize();
  w->fd_ = ::open(w->tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) {
    return Status(StatusCode::kNotFound, w->tmp_path_ + ": cannot create: " + ErrnoMessage(errno));
  }
  uint8_t len[8];
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  DI_RETURN_IF_ERROR(w->WriteAll(len, sizeof(len)));
  DI_RETURN_IF_ERROR(w->WriteAll(header.data(), header.size()));
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_ && !tmp_path_.empty()) ::unlink(tmp_path_.c_str());
}

Status SafetensorsWriter::WriteAll(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t r = ::write(fd_, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kResourceExhausted,
                    tmp_path_ + ": write failed: " + ErrnoMessage(errno));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status SafetensorsWriter::Append(std::span<const std::byte> bytes) {
  if (finished_ || fd_ < 0) return Internal(path_ + ": Append after Finish");
  if (bytes.size() > data_bytes_ - written_) {
    return InvalidArgument(path_ + ": " + std::to_string(written_ + bytes.size()) +
                           " data bytes appended, but the header declares " +
                           std::to_string(data_bytes_));
  }
  DI_RETURN_IF_ERROR(WriteAll(bytes.data(), bytes.size()));
  written_ += bytes.size();
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  if (finished_) return Status::Ok();
  if (written_ != data_bytes_) {
    return InvalidArgument(path_ + ": only " + std::to_string(written_) + " of " +
                           std::to_string(data_bytes_) + " data bytes were appended");
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status(StatusCode::kResourceExhausted,
                  tmp_path_ + ": close failed: " + ErrnoMessage(errno));
  }
  fd_ = -1;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return Status(StatusCode::kResourceExhausted,
                  "cannot rename " + tmp_path_ + " to " + path_ + ": " + ErrnoMessage(errno));
  }
  finished_ = true;
  return Status::Ok();
}

// --- CheckpointWriter ------------------------------------------------------------------------

std::vector<std::vector<size_t>> PlanShards(const std::vector<TensorEntry>& tensors,
                                            uint64_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards(1);
  uint64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t n = tensors[i].ByteSize();
    if (max_shard_bytes > 0 && !shards.back().empty() && bytes + n > max_shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(i);
    bytes += n;
  }
  return shards;
}

StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Create(
    const std::string& dir, std::vector<TensorEntry> tensors,
    const CheckpointWriterOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kNotFound, dir + ": cannot create directory: " + ec.message());
  // Catch duplicates before any file is written.
  DI_RETURN_IF_ERROR(BuildSafetensorsHeader(tensors, options.metadata).status());
  // A previous checkpoint in DIR would shadow or mix with this one (Checkpoint::Open prefers an
  // index): remove its files.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool shard = name.size() == 32 && name.rfind("model-", 0) == 0 &&
                       name.substr(11, 4) == "-of-" && name.ends_with(".safetensors");
    if (name == "model.safetensors" || name == "model.safetensors.index.json" || shard) {
      std::filesystem::remove(entry.path(), ec);
      if (ec)
        return Status(StatusCode::kNotFound,
                      entry.path().string() + ": cannot remove: " + ec.message());
    }
  }
  std::unique_ptr<CheckpointWriter> w(new CheckpointWriter());
  w->dir_ = dir;
  w->options_ = options;
  w->shards_ = PlanShards(tensors, options.max_shard_bytes);
  w->sharded_ = options.max_shard_bytes > 0;
  for (const std::vector<size_t>& shard : w->shards_) {
    uint64_t b = 0;
    for (size_t i : shard) b += tensors[i].ByteSize();
    w->shard_bytes_.push_back(b);
    w->total_bytes_ += b;
    w->file_names_.push_back(w->sharded_ ? ShardName(w->file_names_.size(), w->shards_.size())
                                         : std::string("model.safetensors"));
  }
  w->tensors_ = std::move(tensors);
  DI_RETURN_IF_ERROR(w->OpenShard(0));
  return w;
}

Status CheckpointWriter::OpenShard(size_t shard) {
  std::vector<TensorEntry> entries;
  for (size_t i : shards_[shard]) entries.push_back(tensors_[i]);
  DI_ASSIGN_OR_RETURN(writer_, SafetensorsWriter::Create(dir_ + "/" + file_names_[shard], entries,
                                                         options_.metadata));
  current_ = shard;
  return Status::Ok();
}

Status CheckpointWriter::Append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (writer_ == nullptr) return Internal(dir_ + ": Append after Finish");
    uint64_t room = writer_->data_bytes() - writer_->bytes_written();
    if (room == 0) {
      if (current_ + 1 >= shards_.size()) {
        return InvalidArgument(dir_ + ": more data appended than the tensors declare");
      }
      DI_RETURN_IF_ERROR(writer_->Finish());
      DI_RETURN_IF_ERROR(OpenShard(current_ + 1));
      continue;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(room, bytes.size()));
    DI_RETURN_IF_ERROR(writer_->Append(bytes.first(n)));
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

Status CheckpointWriter::Finish() {
  if (writer_ == nullptr) return Status::Ok();
  // Trailing shards whose tensors are all empty need no Append to be complete.
  while (writer_->bytes_written() == writer_->data_bytes() && current_ + 1 < shards_.size()) {
    DI_RETURN_IF_ERROR(writer_->Finish());
    DI_RETURN_IF_ERROR(OpenShard(current_ + 1));
  }
  if (current_ + 1 != shards_.size()) {
    return InvalidArgument(dir_ + ": Finish before the data of every shard was appended");
  }
  DI_RETURN_IF_ERROR(writer_->Finish());
  writer_.reset();
  if (!sharded_) return Status::Ok();
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards_.size(); ++s) {
    for (size_t i : shards_[s]) weight_map[tensors_[i].name] = file_names_[s];
  }
  nlohmann::json index = {{"metadata", {{"total_size", total_bytes_}}},
                          {"weight_map", std::move(weight_map)}};
  const std::string path = dir_ + "/model.safetensors.index.json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << index.dump(2) << "\n";
    if (!out) return Status(StatusCode::kResourceExhausted, tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status(StatusCode::kResourceExhausted,
                  "cannot rename " + tmp + " to " + path + ": " + ErrnoMessage(errno));
  }
  return Status::Ok();
}

}  // namespace deepinfer::io
