// `deepinfer make-checkpoint --config FILE --out DIR --seed N [--shard-size BYTES] [--threads T]`:
// a random checkpoint in the released format for any config (tests, benchmarks at real per-layer
// shapes). FILE is a Hugging Face config.json (or an official inference/config.json); DIR gets
// config.json (a byte copy of FILE), model.safetensors (or shards + index) and, with Engram layers,
// engram_token_map.json (the stand-in map i -> i * compressed / vocab). The statistics are those of
// model/deepseek_v41/random_checkpoint.h; the result is a pure function of (config, seed).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "core/thread_pool.h"
#include "io/json_file.h"
#include "io/progress.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/random_checkpoint.h"
#include "model/deepseek_v41/weight_manifest.h"
#include "tools/cli.h"

namespace deepinfer::tools {

namespace {

struct MakeCheckpointArgs {
  std::string config;
  std::string out;
  uint64_t seed = 0;
  uint64_t shard_size = 0;
  int threads = 0;
  bool quiet = false;
  float router_skew = 0.0f;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

int RunMakeCheckpoint(const MakeCheckpointArgs& args) {
  StatusOr<nlohmann::json> json = io::LoadJsonFile(args.config);
  if (!json.ok()) return Fail(json.status());
  // An HF config.json has "text_config" or "hidden_size"; the official file "dim".
  const bool official =
      json->is_object() && json->contains("dim") && !json->contains("text_config");
  StatusOr<model::ModelConfig> config =
      official ? model::ParseInferenceConfig(*json) : model::ParseHfConfig(*json);
  if (!config.ok())
    return Fail(Status(config.status().code(), args.config + ": " + config.status().message()));
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec) return Fail(NotFound(args.out + ": cannot create directory: " + ec.message()));
  std::filesystem::copy_file(args.config, args.out + "/config.json",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return Fail(NotFound("cannot copy " + args.config + " to " + args.out + ": " + ec.message()));

  std::unique_ptr<ThreadPool> own_pool;
  if (args.threads > 0) own_pool = std::make_unique<ThreadPool>(args.threads);
  model::RandomCheckpointOptions options;
  options.seed = args.seed;
  options.max_shard_bytes = args.shard_size;
  options.show_progress = !args.quiet;
  options.pool = own_pool.get();
  options.router_skew = args.router_skew;
  const auto start = std::chrono::steady_clock::now();
  if (Status s = model::WriteRandomCheckpoint(*config, args.out, options); !s.ok()) return Fail(s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const model::RoleBytes bytes = model::ManifestBytes(model::ExpectedTensors(*config));
  std::printf("wrote %s: %s in %.1f s (%.0f MB/s)\n%s", args.out.c_str(),
              io::ProgressBar::FormatBytes(bytes.total()).c_str(), seconds,
              seconds > 0 ? static_cast<double>(bytes.total()) / seconds / 1e6 : 0.0,
              model::DescribeRoleBytes(bytes).c_str());
  return 0;
}

}  // namespace

void RegisterMakeCheckpoint(CLI::App& app, int* exit_code) {
  CLI::App* cmd =
      app.add_subcommand("make-checkpoint", "Write a random checkpoint in the released format");
  auto args = std::make_shared<MakeCheckpointArgs>();
  cmd->add_option("--config", args->config,
                  "Hugging Face config.json (or official inference/config.json) of the model")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "output directory (created; existing files are replaced)")
      ->required();
  cmd->add_option("--seed", args->seed, "random seed (same seed, same bytes)")->required();
  cmd->add_option("--shard-size", args->shard_size,
                  "split into shards of at most this many tensor bytes, with "
                  "model.safetensors.index.json (default: one model.safetensors)");
  cmd->add_option("--threads", args->threads,
                  "generator threads (default: DEEPINFER_THREADS or all CPUs)");
  cmd->add_flag("--quiet", args->quiet, "no progress bar");
  cmd->add_option("--router-skew", args->router_skew,
                  "add skew * (1 - e/(E-1)) to each router bias so low-index experts are chosen "
                  "more (a reproducible skewed expert load for EPLB; default 0)");
  cmd->callback([exit_code, args] { *exit_code = RunMakeCheckpoint(*args); });
}

}  // namespace deepinfer::tools
