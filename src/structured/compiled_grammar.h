// A grammar compiled against a vocabulary, and the compiler that caches compiled grammars.
//
// The token mask cache (the idea of xgrammar's adaptive token mask cache): for a matcher stack,
// most tokens are accepted or rejected by the top few frames alone, whatever lies below. For a
// key = the top frame plus the next K-1 frames of a stack (K = 1 first), the vocabulary is walked
// once from that cut-off stack and every usable token is classified: accepted (consumed without
// leaving the key's frames), rejected (dies inside them) or uncertain (pops below the cut, so it
// depends on the rest of the stack). A matcher ORs the accepted set into its mask and checks only
// the uncertain tokens against its real stack. When a key leaves too many tokens uncertain the
// entry says so and the matcher asks again with K+1 frames (bounded repetitions, small rules).
// Entries are built on first use and shared by every matcher of the compiled grammar.
//
// Bounded repetitions: x{m,n} leaves a chain opt_k ::= x opt_{k-1} | "" (grammar.h
// repeat_chains), and a frame in opt_k can still take k copies of x. When every copy costs at
// least one byte, no token (at most max_token_bytes of them) can tell opt_k from opt_j once both
// k and j are at least T = max_token_bytes + 2: every token stays inside the chain or leaves it the
// same way. Keys therefore name such elements by their twin in opt_T (CanonicalElement), and one
// entry serves every position of, say, a string of maxLength 256 until fewer than T characters
// are left (a position per character before: a vocabulary walk each on first use).
// The last positions (opt_j, 2 <= j < T) keep entries of their own, derived from their twin
// key's entry E (the same key with every chain element moved to opt_T) without walking the whole
// vocabulary: opt_j's strings are a subset of opt_T's, so a token E rejects is rejected, and a
// token E accepts whose bytes are at most m (the fewest copies any of the key's chain frames still
// has after the current one) is accepted (no token starts more copies than it has bytes). Only
// E's longer accepted tokens and its uncertain ones are walked: the entry equals a full walk's.
//
// Deeper keys. An entry with too many uncertain tokens asks for a key with one more parent frame
// (refine). The deeper key's entry is derived from the shallower one the same way (m unbounded):
// a token accepted or rejected without looking past the shallower key's frames keeps its verdict
// whatever lies below them, so only the shallower entry's uncertain tokens (over a thousand, not
// the whole vocabulary) are walked. A key with both bases walks only what both leave open. The
// derivations give exactly a full walk's entry.
//
// Precomputed entries. Built lazily, an entry costs its first matcher a vocabulary walk (a few
// milliseconds; a new schema's first request pays one per distinct key). Precompute() builds
// ahead of time the entries a matcher can ask for: every top position (each byte of a literal,
// each class with each partial UTF-8 state), cut at each parent a frame there can have (a
// non-tail reference to a rule that reaches the position's rule through tail references, or the
// root), then, where an entry asks to refine, one parent deeper, and so on; shallow keys first,
// within a time budget (the rest stay lazy). Entries are exact whoever builds them, so masks
// never depend on the budget.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "structured/grammar.h"
#include "structured/json_schema_converter.h"
#include "structured/state_space.h"
#include "structured/vocabulary.h"

namespace deepinfer::structured {

class CompiledGrammar {
 public:
  struct MaskEntry {
    bool refine = false;  // too many uncertain tokens: use a deeper key (the verdicts stay, for
                          // deriving the deeper entries)
    std::vector<uint32_t> accepted_bits;  // a full bitmask, or empty when accepted_ids is used
    std::vector<int32_t> accepted_ids;
    std::vector<int32_t> uncertain_ranks;  // ranks in the vocabulary's byte order, ascending
    std::vector<uint16_t> uncertain_lcp;
  };
  // More uncertain tokens than this make an entry ask for a deeper key (up to kMaxKeyDepth); the
  // default, a constructor argument for tests.
  static constexpr size_t kRefineThreshold = 1024;
  static constexpr int kMaxKeyDepth = 8;

  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                  size_t refine_threshold = kRefineThreshold);

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const Vocabulary& vocabulary() const { return *vocab_; }

  // key: (elem, sub) of the top frame, then the elem of each parent frame, then -1 when the
  // stack ended at the root (exact) or -2 when it was cut. Thread-safe; the entry lives as long
  // as this object.
  const MaskEntry& Lookup(const std::vector<int32_t>& key) const;
  size_t n_entries() const;
  // Bytes held by the mask entries and the state space (an estimate, for cache bounds).
  size_t memory_bytes() const;
  // Builds the entries a matcher can ask for (see "Precomputed entries") until they are all
  // built or `budget_seconds` have passed. Thread-safe.
  struct PrecomputeStats {
    size_t entries = 0;     // entries built by this call
    bool complete = false;  // every key enumerated has its entry
    double seconds = 0.0;
  };
  PrecomputeStats Precompute(double budget_seconds) const;
  // Of which derived from another entry (a bounded repetition's twin, or the key one parent
  // shallower: no whole-vocabulary walk).
  size_t n_derived_entries() const;
  // The element a key names for `elem` (itself, or its twin in opt_T of a bounded repetition).
  int32_t CanonicalElement(int32_t elem) const { return canonical_[static_cast<size_t>(elem)]; }

 private:
  std::unique_ptr<MaskEntry> Compute(const std::vector<int32_t>& key) const;
  // Lookup with mu_ held.
  const MaskEntry& LookupLocked(const std::vector<int32_t>& key) const;
  // The verdicts of `ranks` (ascending ranks of the vocabulary's byte order, lcp as WalkTokens
  // wants) from the key's single top state into `entry`: accepted ids set in the bitmask
  // `accepted` (which holds the tokens decided accepted before), then the entry finished
  // (refine, lcp of the uncertain ones, bitmask or id list).
  void Walk(const std::vector<int32_t>& key, std::span<const int32_t> ranks,
            std::span<const uint16_t> lcp, std::vector<uint32_t>* accepted, MaskEntry* entry) const;
  // lcp[i]: the common prefix of the tokens of ranks[i-1] and ranks[i] (0 at i = 0).
  static std::vector<uint16_t> CommonPrefixes(const Vocabulary& v, std::span<const int32_t> ranks);
  // Bits of the ids of at most max_bytes bytes (built once per length, with mu_ held).
  const std::vector<uint32_t>& ShortTokenBits(int64_t max_bytes) const;
  void MapRepeatChains();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  size_t refine_threshold_;
  std::vector<int32_t> canonical_;  // per element: CanonicalElement
  // Per element of a chain rule opt_j with 2 <= j < T laid out as opt_T: its twin in opt_T and
  // j (twin -1 otherwise).
  std::vector<int32_t> derive_twin_, derive_copies_;
  mutable size_t derived_ = 0;
  mutable std::mutex mu_;
  mutable StateSpace space_;
  mutable std::unordered_map<std::string, std::unique_ptr<MaskEntry>> cache_;
  mutable std::unordered_map<int64_t, std::vector<uint32_t>> short_token_bits_;
  mutable std::vector<int32_t> walk_states_;
  mutable std::vector<uint8_t> walk_context_;
};

// Compiles grammars for one vocabulary, caching them by their source text (kind + content).
// Thread-safe. Compilation itself is cheap (parse + lower); mask entries are built lazily, or
// ahead of use within a time budget (set_precompute_seconds).
class GrammarCompiler {
 public:
  // Keeps at most max_cached grammars and about max_cached_bytes of them (memory_bytes() at
  // insertion), dropping the oldest first; a dropped grammar lives on with its requests.
  explicit GrammarCompiler(std::shared_ptr<const Vocabulary> vocab, size_t max_cached = 512,
                           size_t refine_threshold = CompiledGrammar::kRefineThreshold,
                           size_t max_cached_bytes = size_t{1} << 30);

  StatusOr<std::shared_ptr<const CompiledGrammar>> CompileEbnf(std::string_view text,
                                                               const std::string& root = "root");
  StatusOr<std::shared_ptr<const CompiledGrammar>> CompileRegex(std::string_view pattern);
  StatusOr<std::shared_ptr<const CompiledGrammar>> CompileJsonSchema(
      std::string_view schema, const JsonSchemaOptions& options = {});
  // Any JSON object (OpenAI's response_format {"type": "json_object"}).
  StatusOr<std::shared_ptr<const CompiledGrammar>> CompileJsonObject();

  const std::shared_ptr<const Vocabulary>& vocabulary() const { return vocab_; }
  // Each newly compiled grammar builds its mask entries ahead of use for up to this long
  // (CompiledGrammar::Precompute; 0, the default: every entry is built on first use).
  void set_precompute_seconds(double seconds);
  size_t cache_hits() const;
  size_t cache_size() const;

 private:
  // The cached grammar for `key`, or to_ebnf() compiled with start rule `root` and cached.
  StatusOr<std::shared_ptr<const CompiledGrammar>> Cached(
      const std::string& key, const std::string& root,
      const std::function<StatusOr<std::string>()>& to_ebnf);

  std::shared_ptr<const Vocabulary> vocab_;
  size_t max_cached_, max_cached_bytes_;
  size_t refine_threshold_;
  mutable std::mutex mu_;
  double precompute_seconds_ = 0.0;
  std::unordered_map<std::string, std::shared_ptr<const CompiledGrammar>> cache_;
  std::deque<std::string> order_;  // cache_ keys, oldest first
  size_t hits_ = 0;
};

}  // namespace deepinfer::structured
