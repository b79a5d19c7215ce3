#include "tools/instance_fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <xxhash.h>

#include "core/cpu_features.h"

namespace deepinfer::tools {
namespace {

constexpr std::streamoff kEdgeBytes = std::streamoff{1} << 20;

Status HashRange(std::ifstream& in, std::streamoff from, std::streamoff n, XXH3_state_t* st) {
  std::vector<char> buf(static_cast<size_t>(n));
  in.seekg(from);
  in.read(buf.data(), n);
  if (in.gcount() != n) return DataLoss("short read");
  XXH3_64bits_update(st, buf.data(), buf.size());
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> InstanceFingerprint(const std::string& model_dir, const LoadedEngine& e,
                                          const EngineFlags& flags) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(model_dir, ec)) {
    const std::string name = d.path().filename().string();
    if (name == "config.json" || d.path().extension() == ".safetensors") files.push_back(d.path());
  }
  if (ec) return NotFound("fingerprint: cannot list " + model_dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  char tail[160];
  std::snprintf(tail, sizeof(tail), "%s, %lldx%lld B pages, %s, spec %s",
                CpuLevelName(ActiveCpuLevel()), static_cast<long long>(e.runner->page_tokens()),
                static_cast<long long>(e.runner->page_bytes()), flags.mode.c_str(),
                flags.spec == "off" ? "off" : "on");
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  Status status;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    const auto size = static_cast<std::streamoff>(fs::file_size(f, ec));
    std::ifstream in(f, std::ios::binary);
    if (ec || !in) {
      status = NotFound("fingerprint: cannot read " + f.string());
      break;
    }
    XXH3_64bits_update(st, name.data(), name.size() + 1);
    XXH3_64bits_update(st, &size, sizeof(size));
    const std::streamoff head = std::min(size, kEdgeBytes);
    status = HashRange(in, 0, head, st);
    if (status.ok() && size > head) {
      status = HashRange(in, size - std::min(size - head, kEdgeBytes),
                         std::min(size - head, kEdgeBytes), st);
    }
    if (!status.ok()) {
      status = DataLoss("fingerprint: " + f.string() + ": " + status.message());
      break;
    }
  }
  XXH3_64bits_update(st, tail, std::char_traits<char>::length(tail));
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  if (!status.ok()) return status;
  char hex[20];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex) + " (" + tail + ")";
}

}  // namespace deepinfer::tools
