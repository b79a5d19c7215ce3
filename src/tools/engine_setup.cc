#include "tools/engine_setup.h"

#include <cctype>
#include <filesystem>

#include "dist/mpi_world.h"
#include "model/deepseek_v41/draft_vocab.h"
#include "tokenizer/engram_token_map.h"

namespace deepinfer::tools {

StatusOr<int64_t> DecoderReplayRows(const std::string& flag, int64_t window) {
  // DeepInfer's default keeps the window plus the longest backtrack (12).
  constexpr int64_t kBacktrack = 12;
  if (flag == "off") return 0;
  if (flag == "on") return window + kBacktrack;
  int64_t rows = 0;
  size_t used = 0;
  try {
    rows = std::stoll(flag, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != flag.size() || rows < window) {
    return InvalidArgument("--decoder-replay takes off, on or a row count >= the window (" +
                           std::to_string(window) + "), not '" + flag + "'");
  }
  return rows;
}

StatusOr<int64_t> ParseBytes(const std::string& text) {
  if (text.empty()) return InvalidArgument("empty byte count");
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return InvalidArgument("not a byte count: '" + text + "'");
  }
  std::string suffix = text.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "KiB")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    return InvalidArgument("unknown byte suffix in '" + text + "'");
  if (!(v > 0)) return InvalidArgument("byte count must be positive: '" + text + "'");
  return static_cast<int64_t>(v * mult);
}

StatusOr<LoadedEngine> LoadEngine(const std::string& model_dir, const std::string& tokenizer_dir,
                                  const EngineFlags& flags) {
  LoadedEngine e;
  std::string tok_dir = tokenizer_dir;
  if (tok_dir.empty() && std::filesystem::exists(model_dir + "/tokenizer.json"))
    tok_dir = model_dir;
  if (!tok_dir.empty()) {
    DI_ASSIGN_OR_RETURN(e.tokenizer, tokenizer::Tokenizer::Load(tok_dir));
  }
  model::LoadOptions lo;
  if (e.tokenizer && !std::filesystem::exists(model_dir + "/engram_token_map.json")) {
    DI_ASSIGN_OR_RETURN(lo.engram_token_map, tokenizer::BuildEngramTokenMap(*e.tokenizer));
  }
  DI_RETURN_IF_ERROR(CheckRanksAgree(model_dir, flags));
  DI_ASSIGN_OR_RETURN(std::optional<dist::ExpertPlacement> placement,
                      InitialExpertPlacement(model_dir, flags));
  const int rank = dist::MpiWorld::Instance().rank();
  if (placement) {
    lo.hold_expert = [&](int layer, int64_t expert) {
      return placement->holds(layer, expert, rank);
    };
  }
  DI_ASSIGN_OR_RETURN(e.model, model::Model::Load(model_dir, lo));
  if (placement) e.experts = AttachExpertExchange(e.model.get(), *std::move(placement), flags);
  engine::DeepSeekRunnerOptions ro;
  ro.index_key_mode =
      flags.mode == "owner" ? model::IndexKeyMode::kOwner : model::IndexKeyMode::kOfficial;
  ro.page_tokens = flags.page_tokens;
  DI_ASSIGN_OR_RETURN(ro.decoder_replay_keep,
                      DecoderReplayRows(flags.decoder_replay, e.model->config().window_size));
  if (ro.decoder_replay_keep > 0 && flags.prefix_cache == "on") {
    return InvalidArgument(
        "--decoder-replay is an approximation whose pages cannot be reused: add --prefix-cache "
        "off");
  }
  if (flags.spec == "dspark" && flags.spec_draft_vocab != "all") {
    std::string path = flags.spec_draft_vocab;
    if (path == "auto") {
      path = model_dir + "/" + model::kDraftVocabFile;
      if (!std::filesystem::exists(path)) path.clear();
    }
    if (!path.empty()) {
      DI_ASSIGN_OR_RETURN(ro.draft_vocab,
                          model::ReadDraftVocabularyFile(path, e.model->config().vocab_size));
      e.draft_vocab_source = path;
    }
  }
  DI_ASSIGN_OR_RETURN(e.runner, engine::DeepSeekRunner::Create(e.model.get(), ro));
  engine::EngineOptions eo;
  DI_ASSIGN_OR_RETURN(eo.kv_budget_bytes, ParseBytes(flags.kv_budget));
  eo.scheduler.max_running = flags.max_running;
  eo.scheduler.prefill_chunk = flags.prefill_chunk;
  eo.scheduler.max_batch_tokens = flags.max_batch_tokens;
  eo.prefix_cache = flags.prefix_cache == "on";
  eo.async_schedule = flags.async_schedule == "on";
  eo.spec.mode =
      flags.spec == "dspark" ? engine::spec::SpecMode::kDSpark : engine::spec::SpecMode::kOff;
  eo.spec.policy = flags.spec_policy == "fixed"       ? engine::spec::SpecPolicy::kFixed
                   : flags.spec_policy == "threshold" ? engine::spec::SpecPolicy::kThreshold
                                                      : engine::spec::SpecPolicy::kCostModel;
  eo.spec.fixed_length = flags.spec_length;
  eo.spec.threshold = static_cast<float>(flags.spec_threshold);
  eo.spec.coupled_drafts = flags.spec_draft_sampling == "coupled";
  eo.check_integrity = flags.check_integrity == "on";
#ifndef NDEBUG
  eo.check_integrity = true;  // debug builds check every invariant after every step
#endif
  DI_ASSIGN_OR_RETURN(e.engine, engine::Engine::Create(e.runner.get(), eo, &e.model->pool()));
  DI_ASSIGN_OR_RETURN(e.context, AttachContextParallel(e, flags));
  if (e.tokenizer) {
    DI_ASSIGN_OR_RETURN(e.structured,
                        api::StructuredOutputs::Create(*e.tokenizer, e.model->config().vocab_size));
    e.structured->set_json_schema_strict(flags.json_schema_strict == "on");
    e.structured->compiler().set_precompute_seconds(
        static_cast<double>(flags.grammar_precompute_ms) * 1e-3);
  }
  return e;
}

}  // namespace deepinfer::tools
