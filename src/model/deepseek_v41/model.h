// Model: a loaded DeepSeek-V4.1 checkpoint and its forward pass.
//
// Forward() runs one mixed batch: each input is (sequence state, the next tokens of that
// sequence). The tokens of an input continue the sequence at state->length; an input may be a
// prefill chunk of any size, one decode token or k verify tokens. The result of every row is
// independent of which other sequences share the call (batch invariance: every kernel's
// reduction order depends only on its own row), and chunked prefill equals one-shot prefill.
//
// Teacher forcing: hooks see (and may replace) the stream and pre-mix entering every backbone
// block, after its Engram, and see the stream leaving it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint.h"
#include "model/deepseek_v41/batch_context.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/engram_hash.h"
#include "model/deepseek_v41/engram_token_map.h"
#include "model/deepseek_v41/expert_exchange.h"
#include "model/deepseek_v41/index_key_schedule.h"
#include "model/deepseek_v41/layer_descriptor.h"
#include "model/deepseek_v41/sequence_state.h"
#include "model/deepseek_v41/weights.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

struct ForwardInput {
  SequenceState* state = nullptr;
  std::span<const int32_t> tokens;
  // Logits of the input's last `logits_rows` rows (1: the next token; k+1 to verify k drafts;
  // every prompt row for prompt logprobs); none when !want_logits (a prefill chunk before the
  // last).
  bool want_logits = true;
  int64_t logits_rows = 1;
  // Decoder-side bounded replay (decoder_replay.h): this input belongs to a prefill that ends at
  // position prefill_end (exclusive); 0 = not a prefill.
  int64_t prefill_end = 0;
};

struct ForwardHooks {
  // Before backbone block `layer` (after its Engram): stream [rows][hc][dim] bf16 and pre-mix
  // [rows][hc] of the whole batch; may overwrite both.
  std::function<void(int layer, uint16_t* stream, float* pre_mix, int64_t rows)> before_block;
  // After backbone block `layer`: the stream and the pre-mix it hands on.
  std::function<void(int layer, const uint16_t* stream, const float* pre_mix, int64_t rows)>
      after_block;
};

struct ForwardOptions {
  IndexKeyMode index_key_mode = IndexKeyMode::kOfficial;
  bool all_logits = false;  // logits of every row; else each input's last logits_rows rows
  bool want_taps = false;   // DSpark main hidden of every row
  // Decoder-side bounded replay (decoder_replay.h, an approximation; 0 = off): the layers after
  // the last KV source run only on the last `decoder_replay_keep` rows of each input's prefill.
  // The logits asked for must lie in those rows, and all_logits cannot be combined with it.
  int64_t decoder_replay_keep = 0;
  const ForwardHooks* hooks = nullptr;
};

struct ForwardOutput {
  std::vector<int64_t> logit_rows;     // batch rows that have logits, ascending
  std::vector<float> logits;           // [logit_rows][vocab]; may hold a buffer to reuse
  std::vector<uint16_t> taps;          // [rows][n_taps * dim] bf16 (want_taps)
  std::vector<uint16_t> final_hidden;  // [rows][dim] bf16: after the last collapse, before norm
};

// DSpark drafting result for one sequence (v41_model.md §3.10).
class DraftVocabulary;

struct DraftOutput {
  std::vector<int32_t> ids;       // [block + 1]: the given token, then the drafts
  std::vector<float> logits;      // [block][n]: stage head + Markov bias over the ranked ids
                                  // (the vocabulary, or a DraftVocabulary's ids in order)
  std::vector<float> confidence;  // [block] raw confidence logits
  std::vector<uint16_t> hidden;   // [block][dim] last stage hidden after its collapse
};

// How Model::DSparkDraft picks draft i's token: `logits` are the ranked ids' (the vocabulary, or
// a DraftVocabulary's ids, ascending) after the Markov bias; returns an index into them. Null:
// the first maximum (greedy). The engine samples with the request's own uniform at the drafted
// position (engine/spec/spec_decoder.h, "Coupled drafts").
using DraftChooser = std::function<StatusOr<int64_t>(int64_t draft, std::span<const float> logits)>;

// One sequence's rows for Model::DSparkExtend: taps [rows][n_taps*dim].
struct DSparkExtendItem {
  SequenceState* state = nullptr;
  const uint16_t* taps = nullptr;
  int64_t rows = 0;
};

// Experts loaded for a layer's next placement (Model::StageExperts).
struct StagedExperts {
  int layer = 0;
  std::vector<uint8_t> held;                             // the placement: 1 = hold
  std::vector<std::pair<size_t, ExpertWeights>> loaded;  // experts it adds
};

struct LoadOptions {
  ThreadPool* pool = nullptr;  // null = ThreadPool::Default()
  // engram_token_map.json in the model folder is used when present; else this map (e.g. built
  // from the tokenizer) must be given for a model with Engram layers.
  std::optional<EngramTokenMap> engram_token_map;
  WeightResidency residency = WeightResidency::kAuto;
  // Expert parallelism: the routed experts this process holds (empty: all).
  ExpertFilter hold_expert;
};

class Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& dir,
                                               const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const std::vector<LayerDescriptor>& layers() const { return layers_; }
  const ModelWeights& weights() const { return weights_; }
  const EngramHashPlan& engram_plan() const { return engram_plan_; }
  const EngramTokenMap& engram_token_map() const { return token_map_; }
  ThreadPool& pool() const { return *pool_; }

  SequenceState NewSequence() const { return NewSequenceState(config_, layers_); }

  // Expert parallelism (expert_exchange.h): where the routed products of every later forward
  // and draft run (null: here, on the held experts). Set before any forward; not owned.
  void set_expert_exchange(ExpertExchange* exchange) { experts_ = exchange; }
  // Makes layer `layer` hold exactly the experts with held[e] != 0: loads the missing ones
  // from the checkpoint (as Load would), then drops the others. Not during a forward. On error
  // the layer is unchanged. = StageExperts, then AdoptExperts.
  Status HoldExperts(int layer, std::span<const uint8_t> held);
  // The two halves, for a switch without a pause: StageExperts loads the missing experts and
  // may run on another thread while forwards go on (it only reads the checkpoint); AdoptExperts
  // swaps them in and drops the others, between forwards, on the forward's side.
  StatusOr<StagedExperts> StageExperts(int layer, std::span<const uint8_t> held) const;
  void AdoptExperts(StagedExperts staged);

  // Runs the backbone over `inputs` (one per sequence, no sequence twice). In official
  // index-key mode, rows that read index keys a later layer writes for earlier rows of the same
  // input (IndexKeySchedule::MaxRowsPerCall: generated rows recomputed after a preemption, verify
  // rows at short contexts) run in further passes; the result is the same as one call.
  Status Forward(std::span<const ForwardInput> inputs, const ForwardOptions& options,
                 ForwardOutput* out) const;

  // Engram of backbone layer `layer` on a stream [rows][hc][dim] in place, with hash ids
  // [rows][n_cols] for that layer (teacher-forcing checks call it directly).
  void ApplyEngramLayer(int layer, const int64_t* hash_ids, int64_t rows, uint16_t* stream) const;

  // Prefix reuse: `state` is fresh and its page table already holds the complete pages of
  // `tokens` (their count a multiple of the page length), written by another sequence with the
  // same tokens and, in official index-key mode, the same prompt rows among them (its
  // prompt_length, clipped to the prefix, equal to this state's). Restores everything else the
  // sequence carries at that position (window rings from the page tails, Engram history; not the
  // DSpark rings) so that continuing from here equals having run the tokens, bit for bit
  // (model_prefix.cc).
  Status AdoptPrefix(SequenceState* state, std::span<const int32_t> tokens) const;
  // AdoptPrefix's two halves, for pages whose contents arrive layer by layer (context
  // parallelism, context_parallel.h). AdoptPositions: `state` has consumed `tokens` (a multiple
  // of the page length and of every ratio; any earlier length): length, tokens, entry counts,
  // Engram history; not the window rings (DSpark rings restart). RestoreRing: backbone layer
  // `layer`'s window ring from the page tails of the positions before state->length.
  void AdoptPositions(SequenceState* state, std::span<const int32_t> tokens) const;
  Status RestoreRing(SequenceState* state, int layer) const;

  // DSpark: writes the stage rings for the next rows of a sequence from their taps
  // [rows][n_taps*dim] (the main hidden of those positions).
  Status DSparkExtend(SequenceState* state, const uint16_t* taps, int64_t rows) const;
  // The same for several sequences in one pass over the weights (one item per sequence, each
  // with its own rows; a sequence appears at most once). Same bits as one call per item.
  Status DSparkExtend(std::span<const DSparkExtendItem> items) const;
  // Drafts a block after position `state->dspark_length - 1`, starting from `token` (the
  // backbone's choice for the next position), over the whole vocabulary or, given
  // `draft_vocab` (built from this model), over its ids only (draft_vocab.h); each draft is the
  // first maximum, or what `choose` picks (it sees the logits only, not the Markov input of the
  // next draft, which is the chosen id's).
  StatusOr<DraftOutput> DSparkDraft(const SequenceState& state, int32_t token,
                                    const DraftVocabulary* draft_vocab = nullptr,
                                    const DraftChooser* choose = nullptr) const;

 private:
  Model() = default;
  // One pass of Forward: every input's rows in one batch (model.cc).
  Status ForwardPass(std::span<const ForwardInput> inputs, const ForwardOptions& options,
                     ForwardOutput* out) const;

  std::unique_ptr<io::Checkpoint> checkpoint_;  // owns the mapping the weight views point into
  ModelConfig config_;
  std::vector<LayerDescriptor> layers_;
  IndexKeySchedule index_keys_;  // over layers_
  ModelWeights weights_;
  EngramHashPlan engram_plan_;
  EngramTokenMap token_map_;
  std::vector<std::vector<float>> rope_freqs_;  // per layer
  ThreadPool* pool_ = nullptr;
  WeightResidency residency_ = WeightResidency::kAuto;
  ExpertExchange* experts_ = nullptr;
};

}  // namespace deepinfer::model
