// The DSpark draft vocabulary: the token ids the drafter may propose (frequency-ranked
// speculation: FR-Spec, Zhao et al. 2025; SGLang's --speculative-token-map).
//
// A draft's cost at batch 1 is mostly its head: the backbone head over the whole vocabulary
// ([V, dim] bf16, 1.3 GB at the released shapes) plus the Markov head ([V, rank]) once per
// drafted position. Restricted to a subset S of frequent ids, the drafter reads |S| rows of each
// and proposes argmax over S of (head logit + Markov bias), the first maximum in ascending id
// order (the whole vocabulary's tie rule). Verification is unchanged, so outputs never depend on
// S (verify.h: drafts are greedy point masses and every emitted token is the sampler's own
// draw); S only moves the acceptance rate and the draft's cost.
//
// Contract: with S containing the whole-vocabulary draft's ids, the drafts, confidences and the
// logits at S's ids are bit-identical to the whole-vocabulary draft's (GemmBf16's reduction
// order depends only on K, never on which rows are computed).
//
// File form (`dspark_draft_vocab.json` in a model folder, `--spec-draft-vocab FILE`): a JSON
// array of distinct token ids, or an object {"ids": [...], ...} whose other keys are notes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::model {

class Model;

inline constexpr const char* kDraftVocabFile = "dspark_draft_vocab.json";

class DraftVocabulary {
 public:
  // `ids`: distinct ids in [0, vocab) of a model with DSpark stages; any order (kept sorted).
  // Copies the head and Markov-head rows of those ids (|S| x (dim + rank) bf16).
  static StatusOr<DraftVocabulary> Build(const Model& model, std::vector<int32_t> ids);

  std::span<const int32_t> ids() const { return ids_; }  // ascending
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  const uint16_t* head() const { return head_.data(); }           // [size][dim]
  const uint16_t* markov_head() const { return markov_.data(); }  // [size][rank]

 private:
  std::vector<int32_t> ids_;
  std::vector<uint16_t> head_, markov_;
};

// Reads a draft vocabulary file (format above); errors name the file and the bad entry
// (not an integer, outside [0, vocab), repeated, or an empty list).
StatusOr<std::vector<int32_t>> ReadDraftVocabularyFile(const std::string& path, int64_t vocab);

// Writes `ids` as {"ids": [...], "source": source} (one line, ascending).
Status WriteDraftVocabularyFile(const std::string& path, std::span<const int32_t> ids,
                                const std::string& source);

}  // namespace deepinfer::model
