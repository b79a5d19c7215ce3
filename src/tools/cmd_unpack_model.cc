// `deepinfer unpack-model --compact FILE --out DIR [--config FILE] [--engram-token-map FILE]
// [--tokenizer DIR] [--copy FILE ...]`: expands a compact model (tools/compact_model.h, written by
// train/v41/compact.py) into a released-format checkpoint folder: DIR/model.safetensors,
// DIR/config.json (a byte copy of --config, default config.json beside FILE),
// DIR/engram_token_map.json (a byte copy of --engram-token-map, default engram_token_map.json
// beside FILE when it exists), the tokenizer files of --tokenizer (tokenizer.json, and
// tokenizer_config.json when present), DIR/dspark_draft_vocab.json for a model with DSpark stages
// (model/deepseek_v41/draft_vocab.h: a byte copy of the dspark_draft_vocab.json beside FILE when
// it exists and reads as a draft vocabulary of the model, else the kept ids) and any --copy files.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/progress.h"
#include "model/deepseek_v41/draft_vocab.h"
#include "tools/cli.h"
#include "tools/compact_model.h"

namespace deepinfer::tools {

namespace {

namespace fs = std::filesystem;

struct UnpackModelArgs {
  std::string compact;
  std::string out;
  std::string config;
  std::string engram_token_map;
  std::string tokenizer;
  std::vector<std::string> copy;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

Status CopyInto(const std::string& from, const std::string& dir, const std::string& name) {
  std::error_code ec;
  fs::copy_file(from, dir + "/" + name, fs::copy_options::overwrite_existing, ec);
  if (ec) return NotFound("cannot copy " + from + " to " + dir + ": " + ec.message());
  return Status::Ok();
}

int RunUnpackModel(const UnpackModelArgs& args) {
  const std::string beside = fs::path(args.compact).parent_path().string();
  const std::string base = beside.empty() ? "." : beside;
  const std::string config_path = args.config.empty() ? base + "/config.json" : args.config;
  std::string map_path = args.engram_token_map;
  if (map_path.empty() && fs::exists(base + "/engram_token_map.json")) {
    map_path = base + "/engram_token_map.json";
  }
  std::vector<std::string> tokenizer_files;
  if (!args.tokenizer.empty()) {
    if (!fs::exists(args.tokenizer + "/tokenizer.json")) {
      return Fail(NotFound(args.tokenizer + ": no tokenizer.json"));
    }
    tokenizer_files.push_back(args.tokenizer + "/tokenizer.json");
    if (fs::exists(args.tokenizer + "/tokenizer_config.json")) {
      tokenizer_files.push_back(args.tokenizer + "/tokenizer_config.json");
    }
  }

  StatusOr<model::ModelConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) return Fail(config.status());
  std::error_code ec;
  fs::create_directories(args.out, ec);
  if (ec) return Fail(NotFound(args.out + ": cannot create directory: " + ec.message()));

  const auto start = std::chrono::steady_clock::now();
  StatusOr<UnpackSummary> summary = UnpackCompactModel(args.compact, *config, args.out);
  if (!summary.ok()) return Fail(summary.status());
  if (Status s = CopyInto(config_path, args.out, "config.json"); !s.ok()) return Fail(s);
  if (!map_path.empty()) {
    if (Status s = CopyInto(map_path, args.out, "engram_token_map.json"); !s.ok()) return Fail(s);
  }
  for (const std::string& file : tokenizer_files) {
    if (Status s = CopyInto(file, args.out, fs::path(file).filename().string()); !s.ok()) {
      return Fail(s);
    }
  }
  // A model with DSpark stages drafts over the vocabulary shipped beside the compact file (e.g.
  // its most frequent ids), else over its trained rows (draft_vocab.h).
  const std::string shipped_draft_vocab = base + "/" + model::kDraftVocabFile;
  if (config->dspark_enabled() && fs::exists(shipped_draft_vocab)) {
    StatusOr<std::vector<int32_t>> ids =
        model::ReadDraftVocabularyFile(shipped_draft_vocab, config->vocab_size);
    if (!ids.ok()) return Fail(ids.status());
    if (Status s = CopyInto(shipped_draft_vocab, args.out, model::kDraftVocabFile); !s.ok()) {
      return Fail(s);
    }
  } else if (config->dspark_enabled() && !summary->kept_ids.empty()) {
    const Status s = model::WriteDraftVocabularyFile(
        args.out + "/" + model::kDraftVocabFile, summary->kept_ids,
        "the ids with their own rows in " + fs::path(args.compact).filename().string() +
            " (the training data's most frequent tokens)");
    if (!s.ok()) return Fail(s);
  }
  for (const std::string& file : args.copy) {
    if (Status s = CopyInto(file, args.out, fs::path(file).filename().string()); !s.ok()) {
      return Fail(s);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "wrote %s/model.safetensors: %s from %s (%lld kept ids + 1 shared row of %lld, %zu "
      "tied tables) in %.1f s\n",
      args.out.c_str(), io::ProgressBar::FormatBytes(summary->bytes_out).c_str(),
      io::ProgressBar::FormatBytes(summary->bytes_in).c_str(),
      static_cast<long long>(summary->kept), static_cast<long long>(summary->vocab),
      summary->tied_tables.size(), seconds);
  return 0;
}

}  // namespace

void RegisterUnpackModel(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "unpack-model", "Expand a compact model (tied tail vocabulary) into the released format");
  auto args = std::make_shared<UnpackModelArgs>();
  cmd->add_option("--compact", args->compact, "compact.safetensors (train/v41/compact.py)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out,
                  "output checkpoint folder (created; an existing checkpoint is replaced)")
      ->required();
  cmd->add_option("--config", args->config,
                  "the model's config.json (default: config.json beside --compact)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--engram-token-map", args->engram_token_map,
                  "engram_token_map.json to copy (default: the one beside --compact, if any; "
                  "without one the engine builds the map from tokenizer.json)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", args->tokenizer,
                  "folder whose tokenizer.json (and tokenizer_config.json) are copied")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--copy", args->copy, "more files to copy into the output folder")
      ->check(CLI::ExistingFile);
  cmd->callback([exit_code, args] { *exit_code = RunUnpackModel(*args); });
}

}  // namespace deepinfer::tools
