#include "tools/compact_model.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "core/tensor_view.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/deepseek_v41/weight_manifest.h"

namespace deepinfer::tools {

namespace {

constexpr size_t kGatherBytes = size_t{4} << 20;  // rows gathered per write

std::vector<std::string> SplitNames(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::string Describe(DType dtype, const std::vector<int64_t>& shape) {
  TensorView v;
  v.shape = shape;
  return std::string(DTypeName(dtype)) + " " + v.ShapeString();
}

std::string MetadataOr(const io::SafetensorsFile& f, const std::string& key) {
  auto it = f.metadata().find(key);
  return it == f.metadata().end() ? std::string() : it->second;
}

// The rows of each token: kept_ids[r] -> r, every other id -> K.
StatusOr<std::vector<int32_t>> RowMap(const io::SafetensorsFile& f, int64_t vocab) {
  const TensorView* kept = f.Find("kept_ids");
  if (kept == nullptr) return DataLoss(f.path() + ": no kept_ids tensor");
  if (kept->dtype != DType::kI32 || kept->Rank() != 1 || kept->shape[0] > vocab) {
    return DataLoss(f.path() + ": kept_ids is " + Describe(kept->dtype, kept->shape) +
                    ", expected I32 [K] with K <= vocab_size " + std::to_string(vocab));
  }
  const int64_t k = kept->shape[0];
  std::vector<int32_t> ids(static_cast<size_t>(k));
  if (k > 0) std::memcpy(ids.data(), kept->data, kept->n_bytes);
  std::vector<int32_t> rows(static_cast<size_t>(vocab), static_cast<int32_t>(k));
  for (int64_t r = 0; r < k; ++r) {
    const int32_t id = ids[r];
    if (id < 0 || id >= vocab || (r > 0 && id <= ids[r - 1])) {
      return DataLoss(f.path() + ": kept_ids[" + std::to_string(r) + "] = " + std::to_string(id) +
                      ": the ids must be strictly increasing and in [0, " + std::to_string(vocab) +
                      ")");
    }
    rows[id] = static_cast<int32_t>(r);
  }
  return rows;
}

}  // namespace

StatusOr<model::ModelConfig> LoadConfigFile(const std::string& path) {
  DI_ASSIGN_OR_RETURN(nlohmann::json json, io::LoadJsonFile(path));
  const bool official = json.is_object() && json.contains("dim") && !json.contains("text_config");
  StatusOr<model::ModelConfig> config =
      official ? model::ParseInferenceConfig(json) : model::ParseHfConfig(json);
  if (!config.ok()) return Status(config.status().code(), path + ": " + config.status().message());
  return config;
}

StatusOr<UnpackSummary> UnpackCompactModel(const std::string& compact_path,
                                           const model::ModelConfig& config,
                                           const std::string& out_dir) {
  DI_ASSIGN_OR_RETURN(io::SafetensorsFile f, io::SafetensorsFile::Open(compact_path));
  const std::string& path = f.path();
  if (MetadataOr(f, "format") != kCompactFormat) {
    return InvalidArgument(path + ": not a compact model (metadata \"format\" is \"" +
                           MetadataOr(f, "format") + "\", expected \"" + kCompactFormat +
                           "\"; a released checkpoint needs no unpacking)");
  }
  if (MetadataOr(f, "version") != kCompactVersion) {
    return InvalidArgument(path + ": compact format version \"" + MetadataOr(f, "version") +
                           "\", this build reads version " + kCompactVersion);
  }
  const int64_t vocab = config.vocab_size;
  if (MetadataOr(f, "vocab_size") != std::to_string(vocab)) {
    return InvalidArgument(path + ": vocab_size " + MetadataOr(f, "vocab_size") +
                           " in the file, the config says " + std::to_string(vocab));
  }
  DI_ASSIGN_OR_RETURN(std::vector<int32_t> rows, RowMap(f, vocab));
  UnpackSummary summary;
  summary.vocab = vocab;
  summary.kept = f.Find("kept_ids")->shape[0];
  for (int64_t id = 0; id < vocab; ++id) {
    if (rows[static_cast<size_t>(id)] < summary.kept) {
      summary.kept_ids.push_back(static_cast<int32_t>(id));
    }
  }
  summary.bytes_in = f.tensor_bytes();
  summary.tied_tables = SplitNames(MetadataOr(f, "tied_tables"));
  const std::set<std::string, std::less<>> tied(summary.tied_tables.begin(),
                                                summary.tied_tables.end());

  // Every manifest tensor, checked; the tied tables' manifest shape is [V, cols].
  const std::vector<model::TensorSpec> specs = model::ExpectedTensors(config);
  std::set<std::string_view> expected;
  std::vector<io::TensorEntry> entries;
  std::vector<const TensorView*> sources;
  for (const model::TensorSpec& s : specs) {
    expected.insert(s.name);
    const TensorView* v = f.Find(s.name);
    if (v == nullptr) {
      return InvalidArgument(path + ": tensor " + s.name + " (" + Describe(s.dtype, s.shape) +
                             ") is missing");
    }
    std::vector<int64_t> want = s.shape;
    if (tied.count(s.name)) {
      if (s.dtype != DType::kBF16 || s.shape.size() != 2 || s.shape[0] != vocab) {
        return InvalidArgument(path + ": tied table " + s.name + " is " +
                               Describe(s.dtype, s.shape) + " in the manifest, not BF16 [" +
                               std::to_string(vocab) + ", n]");
      }
      want[0] = summary.kept + 1;
    }
    if (v->dtype != s.dtype || v->shape != want) {
      return InvalidArgument(path + ": tensor " + s.name + " is " + Describe(v->dtype, v->shape) +
                             ", expected " + Describe(s.dtype, want));
    }
    entries.push_back({s.name, s.dtype, s.shape});
    sources.push_back(v);
  }
  for (const std::string& name : summary.tied_tables) {
    if (!expected.count(name)) {
      std::string msg = path;
      msg += ": tied table ";
      msg += name;
      msg += " is not a tensor of the model";
      return InvalidArgument(std::move(msg));
    }
  }
  for (const io::SafetensorsTensor& t : f.tensors()) {
    if (t.name != "kept_ids" && !expected.count(t.name)) {
      return InvalidArgument(path + ": unexpected tensor " + t.name + " (" +
                             Describe(t.view.dtype, t.view.shape) + ")");
    }
  }

  DI_ASSIGN_OR_RETURN(
      std::unique_ptr<io::CheckpointWriter> writer,
      io::CheckpointWriter::Create(out_dir, entries, io::CheckpointWriterOptions{}));
  std::vector<std::byte> buf;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorView& v = *sources[i];
    if (!tied.count(entries[i].name)) {
      DI_RETURN_IF_ERROR(writer->Append(std::span<const std::byte>(v.data, v.n_bytes)));
      continue;
    }
    const size_t row_bytes = v.n_bytes / static_cast<size_t>(v.shape[0]);
    const size_t per_batch = std::max<size_t>(1, kGatherBytes / std::max<size_t>(row_bytes, 1));
    buf.resize(per_batch * row_bytes);
    for (int64_t t0 = 0; t0 < vocab; t0 += static_cast<int64_t>(per_batch)) {
      const int64_t t1 = std::min<int64_t>(vocab, t0 + static_cast<int64_t>(per_batch));
      for (int64_t t = t0; t < t1; ++t) {
        std::memcpy(buf.data() + (t - t0) * row_bytes, v.data + rows[t] * row_bytes, row_bytes);
      }
      DI_RETURN_IF_ERROR(
          writer->Append(std::span<const std::byte>(buf.data(), (t1 - t0) * row_bytes)));
    }
  }
  DI_RETURN_IF_ERROR(writer->Finish());
  summary.bytes_out = writer->total_bytes();
  return summary;
}

}  // namespace deepinfer::tools
