#include "tools/expert_parallel_setup.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/cpu_features.h"
#include "dist/eplb_planner.h"
#include "dist/mpi_world.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/layer_descriptor.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {
namespace {

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// FNV-1a: enough to tell two config files apart in a start-up check.
std::string Digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (const char ch : text) {
    h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

StatusOr<std::optional<dist::ExpertPlacement>> InitialExpertPlacement(const std::string& model_dir,
                                                                      const EngineFlags& flags) {
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  if (!world.distributed() || flags.expert_parallel != "on") {
    return std::optional<dist::ExpertPlacement>();
  }
  DI_ASSIGN_OR_RETURN(const model::ModelConfig config, model::LoadModelConfig(model_dir));
  std::vector<int64_t> experts;
  for (const model::LayerDescriptor& d : model::BuildLayerDescriptors(config)) {
    experts.push_back(d.n_routed_experts);
  }
  for (const int64_t n : experts) {
    if (n < world.size()) {
      return InvalidArgument("expert parallelism over " + std::to_string(world.size()) +
                             " ranks needs at least that many routed experts per layer (a layer "
                             "has " +
                             std::to_string(n) + "); use --expert-parallel off");
    }
  }
  if (flags.eplb_redundant > 0 && flags.eplb_interval == 0) {
    return InvalidArgument("--eplb-redundant needs --eplb-interval > 0");
  }
  return std::optional<dist::ExpertPlacement>(
      dist::ExpertPlacement::Blocked(experts, world.size()));
}

Status CheckRanksAgree(const std::string& model_dir, const EngineFlags& flags) {
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  if (!world.distributed()) return Status::Ok();
  // The weight files by count and total size (hashing hundreds of GiB would take minutes).
  uint64_t files = 0, bytes = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir, ec)) {
    if (entry.path().extension() == ".safetensors") {
      ++files;
      bytes += entry.file_size(ec);
    }
  }
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"config.json", Digest(FileText(model_dir + "/config.json"))},
      {"weight files", std::to_string(files) + " files, " + std::to_string(bytes) + " bytes"},
      {"CPU kernel level", CpuLevelName(ActiveCpuLevel())},
      {"engine flags", flags.Describe()},
  };
  std::string mine;
  for (const auto& [name, value] : fields) mine += value + "\n";
  const std::vector<std::string> all = world.AllGather(mine);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    std::istringstream a(all[0]), b(all[r]);
    for (const auto& [name, value] : fields) {
      std::string va, vb;
      std::getline(a, va);
      std::getline(b, vb);
      if (va != vb) {
        std::string msg = "rank " + std::to_string(r) + " differs from rank 0 in its ";
        msg += name;
        msg += " ('";
        msg += vb;
        msg += "' against '";
        msg += va;
        msg += "'): every rank must run the same model and flags";
        return InvalidArgument(msg);
      }
    }
  }
  return Status::Ok();
}

std::unique_ptr<dist::MpiExpertExchange> AttachExpertExchange(model::Model* model,
                                                              dist::ExpertPlacement placement,
                                                              const EngineFlags& flags) {
  dist::ExpertParallelOptions o;
  o.eplb_interval = flags.eplb_interval;
  o.eplb_redundant = static_cast<int>(flags.eplb_redundant);
  auto exchange = std::make_unique<dist::MpiExpertExchange>(model, std::move(placement), o);
  model->set_expert_exchange(exchange.get());
  return exchange;
}

Status RunEngineUntilIdle(engine::Engine& engine, dist::MpiExpertExchange* experts) {
  if (experts == nullptr) return engine.RunUntilIdle();
  Status failed = Status::Ok();
  for (;;) {
    if (failed.ok() && !engine.idle()) {
      const Status s = engine.Step();
      if (!s.ok()) failed = s;
    }
    DI_ASSIGN_OR_RETURN(const bool more, experts->EndStep(failed.ok() && !engine.idle()));
    if (!more) break;
  }
  return failed;
}

std::string ExpertParallelReport(const dist::MpiExpertExchange& experts) {
  const dist::ExpertParallelStats& s = experts.stats();
  const std::vector<int64_t> rows = experts.AllRanksRows();
  const double imbalance_now = experts.WindowImbalance();
  char line[512];
  std::snprintf(line, sizeof line,
                "rank %d: %lld MoE calls, %lld rounds, pairs %lld local / %lld remote, "
                "%.1f MB out / %.1f MB in, %.3f s in MPI, %lld layer placements switched (%lld "
                "experts loaded)",
                dist::MpiWorld::Instance().rank(), static_cast<long long>(s.calls),
                static_cast<long long>(s.rounds), static_cast<long long>(s.pairs_local),
                static_cast<long long>(s.pairs_remote), s.bytes_sent / 1e6, s.bytes_received / 1e6,
                s.exchange_seconds, static_cast<long long>(s.layer_switches),
                static_cast<long long>(s.experts_loaded));
  const std::vector<std::string> lines = dist::MpiWorld::Instance().GatherToRoot(line);
  if (dist::MpiWorld::Instance().rank() != 0) return "";
  std::string out = "expert parallel over " + std::to_string(rows.size()) + " ranks: rows run";
  for (const int64_t r : rows) out += " " + std::to_string(r);
  char tail[200];
  std::snprintf(
      tail, sizeof tail,
      "; mean layer imbalance (max-mean)/mean: %.3f before the first rebalance, %.3f after\n",
      s.imbalance_first_window < 0 ? imbalance_now : s.imbalance_first_window, imbalance_now);
  out += tail;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace deepinfer::tools
