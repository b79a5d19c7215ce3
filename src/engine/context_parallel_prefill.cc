#include "engine/context_parallel_prefill.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/context_parallel_gather.h"
#include "model/deepseek_v41/kv_pages.h"
#include "model/deepseek_v41/sequence_snapshot.h"

namespace deepinfer::engine {
namespace {

// The fingerprint of the decoding rank's hand-off to its own engine (both ends are it).
constexpr char kLocalFingerprint[] = "context-parallel";

// The group's ranks renumbered so that `decoder` is the last (PrefillContextParallel ends the
// prompt on the last rank); counts the bytes this rank sends.
class DecoderLastExchange : public model::ContextExchange {
 public:
  DecoderLastExchange(model::ContextExchange& inner, int decoder)
      : inner_(inner), shift_(decoder + 1) {}
  int rank() const override { return Group(inner_.rank()); }
  int size() const override { return inner_.size(); }
  Status Send(int to, int tag, std::string bytes) override {
    sent_ += static_cast<int64_t>(bytes.size());
    return inner_.Send(Outer(to), tag, std::move(bytes));
  }
  StatusOr<std::string> Receive(int from, int tag) override {
    return inner_.Receive(Outer(from), tag);
  }
  Status Flush() override { return inner_.Flush(); }
  int64_t sent() const { return sent_; }

 private:
  int Group(int outer) const { return ((outer - shift_) % size() + size()) % size(); }
  int Outer(int group) const { return (group + shift_) % size(); }
  model::ContextExchange& inner_;
  int shift_;
  int64_t sent_ = 0;
};

// The decoding rank's cached complete pages of `head` (the prompt's first len - 1 tokens), as
// one message: their bytes back to back.
StatusOr<std::string> CachedPrefix(const Engine& engine, std::span<const int32_t> head) {
  DI_ASSIGN_OR_RETURN(PageBundle cached, engine.ExportPromptPages(head, kLocalFingerprint));
  std::string bytes;
  for (const PageBlock& b : cached.blocks) bytes += b.bytes;
  return bytes;
}

// Writes the prefix pages of `bytes` into `state` (fresh, own store) and adopts them.
Status AdoptPrefixPages(const model::Model& model, const std::string& bytes,
                        std::span<const int32_t> head, model::SequenceState* state) {
  const model::KvPageLayout& layout = state->page_layout();
  const auto page_bytes = static_cast<size_t>(layout.page_bytes);
  if (bytes.size() % page_bytes != 0) {
    return DataLoss("context parallel: " + std::to_string(bytes.size()) +
                    " bytes of prefix pages are not a whole number of " +
                    std::to_string(page_bytes) + "-byte pages");
  }
  const auto pages = static_cast<int64_t>(bytes.size() / page_bytes);
  const int64_t tokens = pages * layout.page_tokens;
  if (tokens > static_cast<int64_t>(head.size())) {
    return DataLoss("context parallel: a prefix of " + std::to_string(pages) +
                    " pages is longer than the prompt");
  }
  if (pages == 0) return Status::Ok();
  DI_RETURN_IF_ERROR(model::EnsurePages(state, tokens));
  for (int64_t i = 0; i < pages; ++i) {
    std::memcpy(state->kv_store->page(state->pages[static_cast<size_t>(i)]),
                bytes.data() + static_cast<size_t>(i) * page_bytes, page_bytes);
  }
  return model.AdoptPrefix(state, head.first(static_cast<size_t>(tokens)));
}

// The decoding rank's hand-off to its own engine: the complete pages of `head` and the state
// (with the prompt logprobs when they were asked for).
StatusOr<ImportResult> ImportSequence(const DeepSeekRunner& runner, Engine& engine,
                                      const model::SequenceState& state,
                                      std::span<const int32_t> head, int64_t prompt_len,
                                      std::optional<int32_t> prompt_logprobs_k,
                                      std::vector<SampleResult> prompt_logprobs,
                                      std::shared_ptr<const SequenceTail>* imported) {
  PageBundle bundle;
  bundle.fingerprint = kLocalFingerprint;
  bundle.page_tokens = runner.page_tokens();
  bundle.page_bytes = runner.page_bytes();
  const auto page_bytes = static_cast<size_t>(bundle.page_bytes);
  std::vector<BlockKey> keys;
  AppendBlockKeys(head, static_cast<int64_t>(head.size()), bundle.page_tokens,
                  runner.prompt_sensitive(), &keys);
  const auto page = [&](size_t i) {
    return std::string(reinterpret_cast<const char*>(state.kv_store->page(state.pages[i])),
                       page_bytes);
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    PageBlock& b = bundle.blocks.emplace_back();
    b.key = keys[i];
    b.bytes = page(i);
    b.checksum = PageChecksum(b.bytes);
  }
  auto tail = std::make_shared<SequenceTail>();
  tail->tokens.assign(head.begin(), head.end());
  tail->prompt_len = prompt_len;
  tail->state = model::EncodeSequenceState(state);
  if (head.size() % static_cast<size_t>(bundle.page_tokens) != 0)
    tail->partial_page = page(keys.size());
  tail->checksum = TailChecksum(*tail);
  tail->prompt_logprobs_k = prompt_logprobs_k;
  tail->prompt_logprobs = std::move(prompt_logprobs);
  *imported = tail;
  bundle.tail = std::move(tail);
  return engine.ImportPages(bundle, kLocalFingerprint);
}

}  // namespace

Status CheckContextParallel(const DeepSeekRunner& runner, const Engine& engine) {
  if (!engine.kv().prefix_cache()) {
    return InvalidArgument(
        "context parallelism hands the prompt's pages to the decoding rank's prefix cache: "
        "it needs --prefix-cache on");
  }
  if (runner.options().decoder_replay_keep > 0) {
    return InvalidArgument(
        "context parallelism with decoder-side replay: its page tails are incomplete; use "
        "--decoder-replay off");
  }
  return Status::Ok();
}

Status CheckContextParallelPrompt(const Engine& engine, std::span<const int32_t> prompt) {
  if (prompt.size() < 2) {
    return InvalidArgument("context parallelism needs a prompt of at least 2 tokens");
  }
  if (static_cast<int64_t>(prompt.size()) >= engine.runner().max_positions()) {
    return InvalidArgument("a prompt of " + std::to_string(prompt.size()) +
                           " tokens leaves no room in the context");
  }
  return engine.CheckPromptTokens(prompt);
}

StatusOr<ContextParallelReport> ContextParallelPrefill(const DeepSeekRunner& runner, Engine& engine,
                                                       std::span<const int32_t> prompt,
                                                       std::optional<int32_t> prompt_logprobs,
                                                       int decoder, model::ContextExchange& ex,
                                                       const ContextParallelOptions& options) {
  DI_RETURN_IF_ERROR(CheckContextParallel(runner, engine));
  DI_RETURN_IF_ERROR(CheckContextParallelPrompt(engine, prompt));
  if (decoder < 0 || decoder >= ex.size() || options.chunks_per_rank < 1) {
    return InvalidArgument("context parallel: decoding rank " + std::to_string(decoder) + " of " +
                           std::to_string(ex.size()) + ", " +
                           std::to_string(options.chunks_per_rank) + " chunks per rank");
  }
  const auto start = std::chrono::steady_clock::now();
  const model::Model& model = runner.model();
  const auto len = static_cast<int64_t>(prompt.size());
  const std::span<const int32_t> head = prompt.first(prompt.size() - 1);
  DecoderLastExchange group(ex, decoder);
  const bool decodes = group.rank() == group.size() - 1;
  const int n_chunks = group.size() * options.chunks_per_rank;
  const int prefix_tag = n_chunks * model.config().n_layers;
  const int scored_tag = prefix_tag + 1, dspark_tag = prefix_tag + 2;

  model::SequenceState state = model.NewSequence();
  DI_ASSIGN_OR_RETURN(
      model::KvPageLayout layout,
      model::MakeKvPageLayout(model.config(), model.layers(), runner.page_tokens()));
  if (layout.page_bytes != runner.page_bytes()) {
    return Internal("context parallel: a page of " + std::to_string(layout.page_bytes) +
                    " bytes, the engine's hold " + std::to_string(runner.page_bytes()));
  }
  state.own_store = std::make_shared<model::KvPageStore>(std::move(layout), 0, /*growable=*/true);
  state.kv_store = state.own_store.get();
  state.prompt_length = len;

  // The decoding rank's cached prefix, to every rank (none when the prompt is to be scored).
  std::string prefix;
  if (decodes) {
    if (!prompt_logprobs) {
      DI_ASSIGN_OR_RETURN(prefix, CachedPrefix(engine, head));
    }
    for (int r = 0; r + 1 < group.size(); ++r) {
      DI_RETURN_IF_ERROR(group.Send(r, prefix_tag, prefix));
    }
  } else {
    DI_ASSIGN_OR_RETURN(prefix, group.Receive(group.size() - 1, prefix_tag));
  }
  DI_RETURN_IF_ERROR(AdoptPrefixPages(model, prefix, head, &state));

  ContextParallelReport report;
  report.prefix_tokens = state.length;
  if (state.length < static_cast<int64_t>(head.size())) {
    const std::vector<model::ContextChunk> chunks =
        model::PlanContextChunks(state.length, static_cast<int64_t>(head.size()),
                                 runner.page_tokens(), group.size(), options.chunks_per_rank);
    model::ForwardOptions fo;
    fo.index_key_mode = runner.options().index_key_mode;
    fo.want_taps = runner.drafts_enabled();
    report.computed_tokens = static_cast<int64_t>(head.size()) - state.length;
    // Per chunk of this rank: its prompt logprobs (row r scores prompt token r + 1) and its
    // DSpark stage rows (their page tails; the rings are rebuilt from them at the end).
    ScoredRows scored;
    model::ChunkHook hook{
        .all_logits = prompt_logprobs.has_value(),
        .fn = [&](const model::ContextChunk& c, const model::ForwardOutput& o) {
          const int64_t rows = c.end - c.begin;
          if (fo.want_taps) {
            state.dspark_length = c.begin;
            DI_RETURN_IF_ERROR(model.DSparkExtend(&state, o.taps.data(), rows));
          }
          if (!prompt_logprobs) return Status::Ok();
          const int64_t vocab = runner.vocab_size();
          std::vector<SampleResult> results(static_cast<size_t>(rows));
          DI_RETURN_IF_ERROR(ComputePromptLogprobs(
              o.logits.data(), rows, vocab, vocab,
              prompt.subspan(static_cast<size_t>(c.begin + 1), static_cast<size_t>(rows)),
              *prompt_logprobs, results, &model.pool()));
          scored.emplace_back(c.begin, std::move(results));
          return Status::Ok();
        }};
    model::ForwardOutput out;
    DI_RETURN_IF_ERROR(
        model::PrefillContextParallel(model, &state, head, chunks, group, fo, 1, &out, &hook));
    std::vector<SampleResult> all;
    if (prompt_logprobs) {
      DI_ASSIGN_OR_RETURN(
          all, GatherScored(group, scored_tag, scored, static_cast<int64_t>(head.size())));
    }
    if (fo.want_taps) DI_RETURN_IF_ERROR(GatherDSparkTails(group, dspark_tag, chunks, &state));
    DI_RETURN_IF_ERROR(group.Flush());
    if (decodes) {
      DI_ASSIGN_OR_RETURN(report.import,
                          ImportSequence(runner, engine, state, head, len, prompt_logprobs,
                                         std::move(all), &report.tail));
    }
  } else {
    DI_RETURN_IF_ERROR(group.Flush());
  }
  report.bytes_sent = group.sent();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace deepinfer::engine
