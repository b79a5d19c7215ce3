// DeepSeekRunner: the ModelRunner of a loaded DeepSeek-V4.1 model (model/deepseek_v41/model.h),
// its pages in one KvPageStore sized by the engine.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/model_runner.h"
#include "model/deepseek_v41/draft_vocab.h"
#include "model/deepseek_v41/kv_pages.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::engine {

struct DeepSeekRunnerOptions {
  model::IndexKeyMode index_key_mode = model::IndexKeyMode::kOfficial;
  int64_t page_tokens = 0;  // 0: the smallest legal length >= 64
  // Decoder-side bounded replay (model/deepseek_v41/decoder_replay.h): rows of a prefill the
  // layers after the last KV source keep; 0 = off (exact). Not with the prefix cache: the page
  // tails of those layers stay incomplete, so AdoptPrefix refuses.
  int64_t decoder_replay_keep = 0;
  // DSpark: the ids drafts are ranked over (model/deepseek_v41/draft_vocab.h); empty = all.
  std::vector<int32_t> draft_vocab;
};

class DeepSeekRunner : public ModelRunner {
 public:
  static StatusOr<std::unique_ptr<DeepSeekRunner>> Create(const model::Model* model,
                                                          const DeepSeekRunnerOptions& options);

  int64_t vocab_size() const override;
  int32_t eos_token_id() const override;
  int64_t page_tokens() const override { return layout_.page_tokens; }
  int64_t page_bytes() const override { return layout_.page_bytes; }
  int64_t sequence_bytes() const override;
  int64_t max_positions() const override;

  bool prompt_sensitive() const override {
    return options_.index_key_mode == model::IndexKeyMode::kOfficial;
  }
  Status InitPages(int64_t n_pages) override;
  std::unique_ptr<RunnerSequence> NewSequence(int64_t prompt_len) override;
  Status AdoptPrefix(RunnerSequence* seq, std::span<const int32_t> pages,
                     std::span<const int32_t> tokens) override;
  StatusOr<std::unique_ptr<RunnerSequence>> Fork(const RunnerSequence& parent) override;
  Status CopyPage(int32_t from, int32_t to) override;
  std::span<uint8_t> PageBytes(int32_t page) override;
  StatusOr<std::string> SaveSequence(const RunnerSequence& seq) override;
  Status RestoreSequence(RunnerSequence* seq, std::span<const int32_t> pages,
                         std::string_view state) override;
  Status Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) override;

  // DSpark (engine/spec/): once enabled, every Forward extends every sequence's stage rings
  // over all its rows (a verify call: over the kept rows, at EndSpeculation), and AdoptPrefix
  // restores the rings from the pages' DSpark tails (all written that way). Drafts rank
  // options.draft_vocab's ids when it is given.
  Status EnableDrafts() override;
  int64_t max_drafts() const override;
  Status Draft(RunnerSequence* seq, const DraftRequest& request, DraftProposal* out) override;
  Status EndSpeculation(RunnerSequence* seq, int64_t kept_length) override;

  const model::Model& model() const { return *model_; }
  const DeepSeekRunnerOptions& options() const { return options_; }
  bool drafts_enabled() const { return drafts_; }
  // Ids drafts rank (the vocabulary's size without a draft vocabulary).
  size_t draft_vocab_size() const {
    return draft_vocab_ ? draft_vocab_->ids().size() : static_cast<size_t>(vocab_size());
  }

 private:
  DeepSeekRunner(const model::Model* model, model::KvPageLayout layout,
                 const DeepSeekRunnerOptions& options)
      : model_(model), layout_(std::move(layout)), options_(options) {}

  const model::Model* model_;
  model::KvPageLayout layout_;
  DeepSeekRunnerOptions options_;
  std::unique_ptr<model::KvPageStore> store_;
  bool drafts_ = false;
  std::optional<model::DraftVocabulary> draft_vocab_;  // options_.draft_vocab's rows
  int64_t TapWidth() const;                            // bf16 lanes of one row's DSpark taps
};

}  // namespace deepinfer::engine
