#include "io/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "core/thread_pool.h"
#include "io/json_file.h"

namespace deepinfer::io {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::json;

// Joins string-like pieces into one message without temporaries.
template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::string s;
  (s.append(std::string_view(parts)), ...);
  return s;
}

// A shard name from an index must stay inside the checkpoint directory.
bool IsSafeRelativePath(const std::string& name) {
  if (name.empty()) return false;
  fs::path p(name);
  if (p.is_absolute()) return false;
  for (const fs::path& part : p) {
    if (part == "..") return false;
  }
  return true;
}

struct IndexPlan {
  std::vector<std::string> shards;                     // sorted, unique
  std::map<std::string, std::string> tensor_to_shard;  // from weight_map
};

StatusOr<IndexPlan> ReadIndex(const std::string& index_path) {
  DI_ASSIGN_OR_RETURN(Json index, LoadJsonFile(index_path));
  if (!index.is_object()) {
    return DataLoss(index_path + ": must be a JSON object, got " + index.type_name());
  }
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) {
    return DataLoss(index_path + ": missing \"weight_map\" object");
  }
  IndexPlan plan;
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string()) {
      return DataLoss(StrCat(index_path, ": tensor \"", tensor, "\": shard must be a string, got ",
                             shard.type_name()));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    if (!IsSafeRelativePath(name)) {
      return DataLoss(StrCat(index_path, ": tensor \"", tensor, "\": shard \"", name,
                             "\" is not a relative path inside the checkpoint directory"));
    }
    plan.tensor_to_shard[tensor] = name;
    shards.insert(name);
  }
  if (plan.tensor_to_shard.empty()) return DataLoss(index_path + ": \"weight_map\" is empty");
  plan.shards.assign(shards.begin(), shards.end());
  return plan;
}

StatusOr<std::vector<std::string>> ListSafetensors(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors") out.push_back(it->path().string());
  }
  if (ec) return InvalidArgument(dir + ": cannot list directory: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

StatusOr<Checkpoint> Checkpoint::Open(const std::string& path, const CheckpointOptions& options) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return NotFound(path + ": no such file or directory");

  Checkpoint ckpt;
  ckpt.path_ = path;
  std::vector<std::string> files;
  std::optional<IndexPlan> plan;
  std::string index_path;
  if (fs::is_regular_file(st)) {
    files.push_back(path);
  } else if (!fs::is_directory(st)) {
    return InvalidArgument(path + ": neither a directory nor a .safetensors file");
  } else if (index_path = (fs::path(path) / kSafetensorsIndexFile).string();
             fs::exists(index_path, ec)) {
    DI_ASSIGN_OR_RETURN(plan, ReadIndex(index_path));
    for (const std::string& shard : plan->shards)
      files.push_back((fs::path(path) / shard).string());
  } else if (std::string single = (fs::path(path) / "model.safetensors").string();
             fs::exists(single, ec)) {
    files.push_back(single);
  } else {
    DI_ASSIGN_OR_RETURN(files, ListSafetensors(path));
    if (files.empty()) {
      return NotFound(path + ": no " + std::string(kSafetensorsIndexFile) +
                      ", no model.safetensors and no *.safetensors files");
    }
  }

  uint64_t total_file_bytes = 0;
  ProgressBar::Options bar_options;
  bar_options.label = "validating checkpoint";
  bar_options.total = files.size();
  bar_options.force = false;
  std::optional<ProgressBar> bar;
  if (options.show_progress) bar.emplace(bar_options);
  for (size_t i = 0; i < files.size(); ++i) {
    StatusOr<SafetensorsFile> file = SafetensorsFile::Open(files[i]);
    if (!file.ok()) {
      if (!plan) return file.status();
      // Name a tensor that sent us to this shard, to make a bad index easy to find.
      std::string shard = plan->shards[i];
      auto it = std::find_if(plan->tensor_to_shard.begin(), plan->tensor_to_shard.end(),
                             [&](const auto& kv) { return kv.second == shard; });
      return Status(file.status().code(),
                    StrCat(index_path, ": shard \"", shard, "\" (mapped for tensor \"", it->first,
                           "\"): ", file.status().message()));
    }
    total_file_bytes += file->file_bytes().size();
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file).value()));
    DI_RETURN_IF_ERROR(ckpt.IndexFile(i));
    if (bar) bar->Set(i + 1);
  }

  if (plan) {
    // Each mapped tensor is in its shard, and each shard tensor is mapped to that shard.
    for (const auto& [tensor, shard] : plan->tensor_to_shard) {
      auto it = ckpt.index_.find(tensor);
      const std::string shard_path = (fs::path(path) / shard).string();
      if (it == ckpt.index_.end() || ckpt.files_[it->second.file]->path() != shard_path) {
        return DataLoss(StrCat(index_path, ": tensor \"", tensor, "\" is mapped to ", shard_path,
                               ", which has no such tensor"));
      }
    }
    for (const auto& f : ckpt.files_) {
      for (const SafetensorsTensor& t : f->tensors()) {
        auto it = plan->tensor_to_shard.find(t.name);
        if (it == plan->tensor_to_shard.end()) {
          return DataLoss(
              StrCat(f->path(), ": tensor \"", t.name, "\" is not listed in ", index_path));
        }
      }
    }
  }
  ckpt.file_bytes_ = total_file_bytes;
  return ckpt;
}

Status Checkpoint::IndexFile(size_t i) {
  const SafetensorsFile& f = *files_[i];
  for (size_t t = 0; t < f.tensors().size(); ++t) {
    const std::string& name = f.tensors()[t].name;
    auto [it, inserted] =
        index_.emplace(name, Location{static_cast<uint32_t>(i), static_cast<uint32_t>(t)});
    if (!inserted) {
      return DataLoss("tensor \"" + name + "\" appears in two files: " +
                      files_[it->second.file]->path() + " and " + f.path());
    }
    names_.push_back(name);
    total_bytes_ += f.tensors()[t].view.n_bytes;
  }
  return Status::Ok();
}

const TensorView* Checkpoint::Find(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return nullptr;
  return &files_[it->second.file]->tensors()[it->second.tensor].view;
}

StatusOr<TensorView> Checkpoint::Get(std::string_view name) const {
  const TensorView* v = Find(name);
  if (v == nullptr) return NotFound(path_ + ": tensor \"" + std::string(name) + "\" not found");
  return *v;
}

const SafetensorsFile* Checkpoint::FileOf(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : files_[it->second.file].get();
}

uint64_t Checkpoint::PageIn(ProgressBar* progress) const {
  const int64_t page = std::max<long>(4096, ::sysconf(_SC_PAGESIZE));
  constexpr int64_t kChunk = int64_t{64} << 20;  // progress granularity
  std::atomic<uint8_t> sink{0};
  uint64_t covered = 0;
  for (const auto& f : files_) {
    const std::span<const std::byte> bytes = f->file_bytes();
    if (f->mapping() != nullptr) f->mapping()->AdviseWillNeed();
    for (int64_t chunk = 0; chunk < static_cast<int64_t>(bytes.size()); chunk += kChunk) {
      const int64_t chunk_end = std::min<int64_t>(chunk + kChunk, bytes.size());
      const int64_t n_pages = (chunk_end - chunk + page - 1) / page;
      // Threads fault pages in parallel: page-in of a cold file is I/O- and fault-bound.
      ThreadPool::Default().ParallelFor(n_pages, 16, [&](int64_t begin, int64_t end) {
        uint8_t acc = 0;
        for (int64_t p = begin; p < end; ++p) {
          acc ^= static_cast<uint8_t>(bytes[static_cast<size_t>(chunk + p * page)]);
        }
        sink.fetch_xor(acc, std::memory_order_relaxed);
      });
      covered += static_cast<uint64_t>(chunk_end - chunk);
      if (progress != nullptr) progress->Add(static_cast<uint64_t>(chunk_end - chunk));
    }
  }
  return covered;
}

Status Checkpoint::Lock() const {
  for (const auto& f : files_) {
    if (f->mapping() != nullptr) DI_RETURN_IF_ERROR(f->mapping()->Lock());
  }
  return Status::Ok();
}

}  // namespace deepinfer::io
