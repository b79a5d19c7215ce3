#include "engine/deepseek_runner.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "model/deepseek_v41/rollback.h"
#include "model/deepseek_v41/sequence_snapshot.h"

namespace deepinfer::engine {
namespace {

class DeepSeekSequence : public RunnerSequence {
 public:
  explicit DeepSeekSequence(model::SequenceState state) : state_(std::move(state)) {}
  int64_t length() const override { return state_.length; }
  model::SequenceState& state() { return state_; }
  const model::SequenceState& state() const { return state_; }

  // An open verify call: its checkpoint, and the taps of its rows (extended at EndSpeculation).
  model::SpeculationCheckpoint checkpoint;
  std::vector<uint16_t> pending_taps;

 private:
  model::SequenceState state_;
};

// Context limit when the config does not state one.
constexpr int64_t kDefaultMaxPositions = 1 << 20;

}  // namespace

StatusOr<std::unique_ptr<DeepSeekRunner>> DeepSeekRunner::Create(
    const model::Model* model, const DeepSeekRunnerOptions& options) {
  int64_t page_tokens = options.page_tokens;
  const int64_t min_tokens = model::MinPageTokens(model->config(), model->layers());
  if (page_tokens == 0) page_tokens = (64 + min_tokens - 1) / min_tokens * min_tokens;
  DI_ASSIGN_OR_RETURN(model::KvPageLayout layout,
                      model::MakeKvPageLayout(model->config(), model->layers(), page_tokens));
  return std::unique_ptr<DeepSeekRunner>(new DeepSeekRunner(model, std::move(layout), options));
}

int64_t DeepSeekRunner::vocab_size() const { return model_->config().vocab_size; }
int32_t DeepSeekRunner::eos_token_id() const { return model_->config().eos_token_id; }

int64_t DeepSeekRunner::sequence_bytes() const { return model_->NewSequence().CacheBytes(); }

int64_t DeepSeekRunner::max_positions() const {
  const int64_t m = model_->config().max_position_embeddings;
  return m > 0 ? m : kDefaultMaxPositions;
}

Status DeepSeekRunner::InitPages(int64_t n_pages) {
  if (store_) return InvalidArgument("InitPages called twice");
  store_ = std::make_unique<model::KvPageStore>(layout_, n_pages, /*growable=*/false);
  return Status::Ok();
}

std::unique_ptr<RunnerSequence> DeepSeekRunner::NewSequence(int64_t prompt_len) {
  model::SequenceState st =
      model::NewSequenceState(model_->config(), model_->layers(), store_.get());
  st.prompt_length = prompt_len;
  return std::make_unique<DeepSeekSequence>(std::move(st));
}

Status DeepSeekRunner::AdoptPrefix(RunnerSequence* seq, std::span<const int32_t> pages,
                                   std::span<const int32_t> tokens) {
  if (options_.decoder_replay_keep > 0) {
    return InvalidArgument(
        "prefix reuse with decoder-side replay: the pages' window tails are incomplete");
  }
  model::SequenceState& st = static_cast<DeepSeekSequence*>(seq)->state();
  st.pages = pages;
  DI_RETURN_IF_ERROR(model_->AdoptPrefix(&st, tokens));
  if (drafts_) DI_RETURN_IF_ERROR(model::RestoreDSparkFromTails(&st));
  return Status::Ok();
}

StatusOr<std::unique_ptr<RunnerSequence>> DeepSeekRunner::Fork(const RunnerSequence& parent) {
  return std::unique_ptr<RunnerSequence>(std::make_unique<DeepSeekSequence>(
      model::ForkSequenceState(static_cast<const DeepSeekSequence&>(parent).state())));
}

Status DeepSeekRunner::CopyPage(int32_t from, int32_t to) {
  if (!store_) return InvalidArgument("CopyPage before InitPages");
  const int64_t n = store_->capacity();
  if (from < 0 || from >= n || to < 0 || to >= n) {
    return InvalidArgument("CopyPage: page id outside the pool");
  }
  std::copy_n(store_->page(from), layout_.page_bytes, store_->page(to));
  return Status::Ok();
}

std::span<uint8_t> DeepSeekRunner::PageBytes(int32_t page) {
  if (!store_ || page < 0 || page >= store_->capacity()) return {};
  return {store_->page(page), static_cast<size_t>(layout_.page_bytes)};
}

StatusOr<std::string> DeepSeekRunner::SaveSequence(const RunnerSequence& rs) {
  const auto& seq = static_cast<const DeepSeekSequence&>(rs);
  if (seq.state().group_undo != nullptr) {
    return InvalidArgument("SaveSequence: the sequence is inside a verify call");
  }
  return model::EncodeSequenceState(seq.state());
}

Status DeepSeekRunner::RestoreSequence(RunnerSequence* rs, std::span<const int32_t> pages,
                                       std::string_view state) {
  if (options_.decoder_replay_keep > 0) {
    return InvalidArgument(
        "a hand-off with decoder-side replay: the pages' window tails are incomplete");
  }
  model::SequenceState& st = static_cast<DeepSeekSequence*>(rs)->state();
  const int64_t prompt_len = st.prompt_length;
  DI_RETURN_IF_ERROR(model::RestoreSequenceState(state, &st));
  st.pages = pages;
  if (st.prompt_length != prompt_len) {
    return InvalidArgument("RestoreSequence: a state of a " + std::to_string(st.prompt_length) +
                           "-token prompt for a sequence whose prompt has " +
                           std::to_string(prompt_len));
  }
  if (st.covered() < st.length) {
    return InvalidArgument("RestoreSequence: the page table covers " +
                           std::to_string(st.covered()) + " of " + std::to_string(st.length) +
                           " positions");
  }
  if (drafts_ && st.dspark_length != st.length) {
    return InvalidArgument("RestoreSequence: the sender's DSpark rings cover " +
                           std::to_string(st.dspark_length) + " of " + std::to_string(st.length) +
                           " positions");
  }
  return Status::Ok();
}

Status DeepSeekRunner::Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) {
  std::vector<model::ForwardInput> fin;
  fin.reserve(inputs.size());
  size_t out_rows = 0;
  for (const RunnerInput& in : inputs) {
    auto* seq = static_cast<DeepSeekSequence*>(in.seq);
    model::SequenceState& st = seq->state();
    st.pages = in.pages;
    const int64_t n = static_cast<int64_t>(in.tokens.size());
    const int64_t rows = std::clamp<int64_t>(in.logits_rows, 1, std::max<int64_t>(n, 1));
    fin.push_back({&st, in.tokens, in.want_logits, rows, in.prefill_end});
    out_rows += static_cast<size_t>(rows);
    if (in.speculative) {
      if (!drafts_) return InvalidArgument("a speculative input without EnableDrafts");
      DI_RETURN_IF_ERROR(model::BeginSpeculation(&st, n, &seq->checkpoint));
    }
  }
  model::ForwardOptions opt;
  opt.index_key_mode = options_.index_key_mode;
  opt.want_taps = drafts_;
  opt.decoder_replay_keep = options_.decoder_replay_keep;
  model::ForwardOutput out;
  out.logits.swap(*logits);  // the previous step's buffer, reused by the head (not cleared)
  Status fs = model_->Forward(fin, opt, &out);
  if (!fs.ok()) {
    for (const RunnerInput& in : inputs) {
      static_cast<DeepSeekSequence*>(in.seq)->state().group_undo = nullptr;
    }
    return fs;
  }
  const size_t vocab = static_cast<size_t>(vocab_size());
  bool every_input_wants_logits = true;
  for (const RunnerInput& in : inputs) every_input_wants_logits &= in.want_logits;
  if (every_input_wants_logits) {
    // The model's rows are the caller's rows (decode and verify steps): hand the buffer over.
    CHECK_EQ(out.logits.size(), out_rows * vocab);
    logits->swap(out.logits);
  } else {
    logits->resize(out_rows * vocab);
  }
  size_t k = 0, o = 0;  // the model returns rows only for inputs that want them, in input order
  for (size_t i = 0; i < inputs.size() && !every_input_wants_logits; ++i) {
    const auto rows = static_cast<size_t>(fin[i].logits_rows);
    if (inputs[i].want_logits) {
      std::copy_n(out.logits.data() + k * vocab, rows * vocab, logits->data() + o * vocab);
      k += rows;
    }
    o += rows;
  }
  if (drafts_) {
    // The stage rings of every non-speculative row, in one batch (one pass over main_proj and
    // the stage wkv per step, not one per sequence); verify rows wait for EndSpeculation.
    const int64_t width = TapWidth();
    int64_t row0 = 0;
    std::vector<model::DSparkExtendItem> extend;
    for (const RunnerInput& in : inputs) {
      auto* seq = static_cast<DeepSeekSequence*>(in.seq);
      const auto n = static_cast<int64_t>(in.tokens.size());
      const uint16_t* taps = out.taps.data() + row0 * width;
      if (in.speculative) {
        seq->pending_taps.assign(taps, taps + n * width);
      } else {
        extend.push_back({&seq->state(), taps, n});
      }
      row0 += n;
    }
    DI_RETURN_IF_ERROR(model_->DSparkExtend(extend));
  }
  return Status::Ok();
}

int64_t DeepSeekRunner::TapWidth() const {
  return static_cast<int64_t>(model_->config().dspark_target_layer_ids.size()) *
         model_->config().dim;
}

Status DeepSeekRunner::EnableDrafts() {
  if (!model_->config().dspark_enabled()) {
    return InvalidArgument("the model has no DSpark stages: speculative decoding is unavailable");
  }
  if (store_) return InvalidArgument("EnableDrafts after InitPages");
  if (options_.decoder_replay_keep > 0) {
    return InvalidArgument(
        "DSpark drafting needs the taps of every prompt row: decoder-side replay must be off");
  }
  if (!options_.draft_vocab.empty()) {
    DI_ASSIGN_OR_RETURN(draft_vocab_, model::DraftVocabulary::Build(*model_, options_.draft_vocab));
  }
  drafts_ = true;
  return Status::Ok();
}

int64_t DeepSeekRunner::max_drafts() const {
  return drafts_ ? model_->config().dspark_block_size : 0;
}

Status DeepSeekRunner::Draft(RunnerSequence* rs, const DraftRequest& request, DraftProposal* out) {
  if (!drafts_) return InvalidArgument("Draft without EnableDrafts");
  const model::SequenceState& st = static_cast<DeepSeekSequence*>(rs)->state();
  if (st.dspark_length != st.length) {
    return Internal("Draft: the DSpark rings cover " + std::to_string(st.dspark_length) + " of " +
                    std::to_string(st.length) + " positions");
  }
  DI_ASSIGN_OR_RETURN(
      model::DraftOutput d,
      model_->DSparkDraft(st, request.token, draft_vocab_ ? &*draft_vocab_ : nullptr,
                          request.choose ? &request.choose : nullptr));
  const size_t n = std::min<size_t>(d.confidence.size(),
                                    static_cast<size_t>(std::max<int64_t>(0, request.max_drafts)));
  out->tokens.assign(d.ids.begin() + 1, d.ids.begin() + 1 + static_cast<std::ptrdiff_t>(n));
  out->confidence.assign(d.confidence.begin(),
                         d.confidence.begin() + static_cast<std::ptrdiff_t>(n));
  out->probs.clear();  // deterministic drafts (greedy, or chosen by request.choose)
  return Status::Ok();
}

Status DeepSeekRunner::EndSpeculation(RunnerSequence* rs, int64_t kept_length) {
  auto* seq = static_cast<DeepSeekSequence*>(rs);
  model::SequenceState& st = seq->state();
  const int64_t from = st.dspark_length;
  DI_RETURN_IF_ERROR(model::RollbackSpeculation(*model_, &st, &seq->checkpoint, kept_length));
  const int64_t width = TapWidth();
  const int64_t rows = kept_length - from;
  if (rows < 0 || rows * width > static_cast<int64_t>(seq->pending_taps.size())) {
    return Internal("EndSpeculation: the kept rows have no taps");
  }
  if (rows > 0) DI_RETURN_IF_ERROR(model_->DSparkExtend(&st, seq->pending_taps.data(), rows));
  seq->pending_taps.clear();
  return Status::Ok();
}

}  // namespace deepinfer::engine
