#include "structured/compiled_grammar.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "structured/regex_converter.h"

namespace deepinfer::structured {

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocab, size_t refine_threshold)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      refine_threshold_(refine_threshold),
      space_(grammar_) {
  MapRepeatChains();
}

namespace {

// The elements of rule `r`: from its first alternative to the kEnd of its last one.
std::pair<int32_t, int32_t> RuleSpan(const Grammar& g, int32_t r) {
  const Grammar::Rule& rule = g.rules()[static_cast<size_t>(r)];
  int32_t end = rule.alternatives.back();
  while (g.elements()[static_cast<size_t>(end)].kind != Grammar::ElementKind::kEnd) ++end;
  return {rule.alternatives.front(), end + 1};
}

// Whether rules a and b have their alternatives at the same offsets over spans of one length.
bool SameLayout(const Grammar& g, int32_t a, int32_t b) {
  const auto& ra = g.rules()[static_cast<size_t>(a)].alternatives;
  const auto& rb = g.rules()[static_cast<size_t>(b)].alternatives;
  if (ra.empty() || ra.size() != rb.size()) return false;
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i] - ra[0] != rb[i] - rb[0]) return false;
  }
  const auto [a0, a1] = RuleSpan(g, a);
  const auto [b0, b1] = RuleSpan(g, b);
  return a1 - a0 == b1 - b0;
}

}  // namespace

void CompiledGrammar::MapRepeatChains() {
  const Grammar& g = *grammar_;
  canonical_.resize(g.elements().size());
  for (size_t e = 0; e < canonical_.size(); ++e) canonical_[e] = static_cast<int32_t>(e);
  derive_twin_.assign(g.elements().size(), -1);
  derive_copies_.assign(g.elements().size(), 0);
  const auto twin_at = static_cast<size_t>(vocab_->max_token_bytes()) + 2;  // T
  for (const std::vector<int32_t>& chain : g.repeat_chains()) {
    if (chain.size() <= twin_at) continue;
    // opt_1 ::= x | "": its first alternative's fewest bytes are x's.
    const Grammar::Rule& first = g.rules()[static_cast<size_t>(chain[0])];
    if (first.alternatives.size() != 2 || g.SuffixMinBytes(first.alternatives[0]) < 1) continue;
    const int32_t twin = chain[twin_at - 1];
    const int32_t twin_begin = RuleSpan(g, twin).first;
    for (size_t j = 2; j < twin_at; ++j) {
      const int32_t rule = chain[j - 1];
      if (!SameLayout(g, rule, twin)) continue;
      const auto [begin, end] = RuleSpan(g, rule);
      for (int32_t e = begin; e < end; ++e) {
        derive_twin_[static_cast<size_t>(e)] = twin_begin + (e - begin);
        derive_copies_[static_cast<size_t>(e)] = static_cast<int32_t>(j);
      }
    }
    for (size_t k = twin_at + 1; k <= chain.size(); ++k) {
      const int32_t rule = chain[k - 1];
      if (!SameLayout(g, rule, twin)) continue;
      const auto [begin, end] = RuleSpan(g, rule);
      for (int32_t e = begin; e < end; ++e) {
        canonical_[static_cast<size_t>(e)] = twin_begin + (e - begin);
      }
    }
  }
}

size_t CompiledGrammar::n_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

size_t CompiledGrammar::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = space_.memory_bytes();
  for (const auto& [key, e] : cache_) {
    bytes += key.capacity() + sizeof(MaskEntry) + 4 * e->accepted_bits.capacity() +
             4 * e->accepted_ids.capacity() + 4 * e->uncertain_ranks.capacity() +
             2 * e->uncertain_lcp.capacity();
  }
  for (const auto& [m, bits] : short_token_bits_) bytes += 4 * bits.capacity();
  return bytes;
}

size_t CompiledGrammar::n_derived_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return derived_;
}

const CompiledGrammar::MaskEntry& CompiledGrammar::Lookup(const std::vector<int32_t>& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return LookupLocked(key);
}

const CompiledGrammar::MaskEntry& CompiledGrammar::LookupLocked(
    const std::vector<int32_t>& key) const {
  std::string k(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int32_t));
  auto it = cache_.find(k);
  if (it != cache_.end()) return *it->second;
  auto entry = Compute(key);
  return *cache_.emplace(std::move(k), std::move(entry)).first->second;
}

std::unique_ptr<CompiledGrammar::MaskEntry> CompiledGrammar::Compute(
    const std::vector<int32_t>& key) const {
  CHECK(key.size() >= 3) << "mask key too short";
  const Vocabulary& v = *vocab_;
  auto entry = std::make_unique<MaskEntry>();
  // Entries whose verdicts bound this key's (compiled_grammar.h): the twin key of a frame in the
  // last positions of a bounded repetition, and the key one parent shallower.
  std::vector<int32_t> twin_key = key;
  int64_t m = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    if (i == 1) continue;  // the top frame's sub-position, not an element
    const auto e = static_cast<size_t>(key[i]);
    if (derive_twin_[e] < 0) continue;
    twin_key[i] = derive_twin_[e];
    m = std::min<int64_t>(m, derive_copies_[e] - 1);
  }
  std::vector<int32_t> shallow_key;
  if (key.size() > 3) {
    shallow_key = key;
    shallow_key.erase(shallow_key.end() - 2);
    shallow_key.back() = -2;
  }
  const auto n_words = static_cast<size_t>(v.n_words());
  std::vector<uint32_t> accepted(n_words, 0);
  if (twin_key == key && shallow_key.empty()) {
    Walk(key, v.all_ranks(), v.sorted_lcp(), &accepted, entry.get());
    return entry;
  }
  // Per token, as bits: still open (walked) or decided; decided tokens are accepted or
  // rejected. A base decides what it does not leave uncertain, except that it accepts only its
  // accepted tokens of at most `max_bytes` bytes (the longer ones stay open); a token one base
  // leaves open takes the other's verdict (they never disagree: both are exact).
  std::vector<uint32_t> open(n_words, ~0u), base_acc(n_words), base_open(n_words);
  auto apply = [&](const MaskEntry& base, int64_t max_bytes) {
    if (!base.accepted_bits.empty()) {
      base_acc = base.accepted_bits;
    } else {
      std::fill(base_acc.begin(), base_acc.end(), 0u);
      for (int32_t id : base.accepted_ids) base_acc[id >> 5] |= 1u << (id & 31);
    }
    std::fill(base_open.begin(), base_open.end(), 0u);
    for (int32_t r : base.uncertain_ranks) {
      const int32_t id = v.sorted_ids()[static_cast<size_t>(r)];
      base_open[id >> 5] |= 1u << (id & 31);
    }
    if (max_bytes < static_cast<int64_t>(v.max_token_bytes())) {
      const std::vector<uint32_t>& shorter = ShortTokenBits(max_bytes);
      for (size_t w = 0; w < n_words; ++w) {
        base_open[w] |= base_acc[w] & ~shorter[w];
        base_acc[w] &= shorter[w];
      }
    }
    for (size_t w = 0; w < n_words; ++w) {
      accepted[w] |= open[w] & base_acc[w];
      open[w] &= base_open[w];
    }
  };
  if (twin_key != key) apply(LookupLocked(twin_key), m);
  if (!shallow_key.empty()) apply(LookupLocked(shallow_key), std::numeric_limits<int64_t>::max());
  // The open tokens to walk in byte order, each with its common prefix with the one before:
  // few, from the bits (sorted by rank, prefixes compared); many, by a pass over the ranks.
  size_t n_open = 0;
  for (uint32_t w : open) n_open += static_cast<size_t>(std::popcount(w));
  std::vector<int32_t> ranks;
  std::vector<uint16_t> lcp;
  if (n_open * 64 < v.sorted_ids().size()) {
    for (size_t w = 0; w < n_words; ++w) {
      for (uint32_t b = open[w]; b != 0; b &= b - 1) {
        const int32_t rank = v.rank_of(static_cast<int32_t>(w * 32 + std::countr_zero(b)));
        if (rank >= 0) ranks.push_back(rank);
      }
    }
    std::sort(ranks.begin(), ranks.end());
    lcp = CommonPrefixes(v, ranks);
  } else {
    uint16_t run = 0;
    for (size_t i = 0; i < v.sorted_ids().size(); ++i) {
      if (i > 0) run = std::min(run, v.sorted_lcp()[i]);
      const int32_t id = v.sorted_ids()[i];
      if (((open[static_cast<size_t>(id >> 5)] >> (id & 31)) & 1) == 0) continue;
      ranks.push_back(static_cast<int32_t>(i));
      lcp.push_back(ranks.size() == 1 ? 0 : run);
      run = std::numeric_limits<uint16_t>::max();
    }
  }
  Walk(key, ranks, lcp, &accepted, entry.get());
  ++derived_;
  return entry;
}

std::vector<uint16_t> CompiledGrammar::CommonPrefixes(const Vocabulary& v,
                                                      std::span<const int32_t> ranks) {
  std::vector<uint16_t> lcp(ranks.size(), 0);
  for (size_t i = 1; i < ranks.size(); ++i)
    lcp[i] = static_cast<uint16_t>(
        CommonPrefixLength(v.sorted_view(ranks[i - 1]), v.sorted_view(ranks[i])));
  return lcp;
}

const std::vector<uint32_t>& CompiledGrammar::ShortTokenBits(int64_t max_bytes) const {
  std::vector<uint32_t>& bits = short_token_bits_[max_bytes];
  if (bits.empty()) {
    const Vocabulary& v = *vocab_;
    bits.assign(static_cast<size_t>(v.n_words()), 0u);
    for (int32_t id = 0; id < v.size(); ++id) {
      if (static_cast<int64_t>(v.view(id).size()) <= max_bytes) bits[id >> 5] |= 1u << (id & 31);
    }
  }
  return bits;
}

void CompiledGrammar::Walk(const std::vector<int32_t>& key, std::span<const int32_t> ranks,
                           std::span<const uint16_t> lcp, std::vector<uint32_t>* accepted,
                           MaskEntry* entry) const {
  // Rebuild the cut-off stack in our own space, bottom first.
  const bool exact = key.back() == -1;
  int32_t parent = exact ? StateSpace::kRootParent : StateSpace::kContextParent;
  for (size_t i = key.size() - 2; i >= 2; --i) parent = space_.InternNode(key[i], 0, parent);
  const int32_t top = space_.InternNode(key[0], key[1], parent);
  const int32_t start = space_.SingleTopState(top);

  const Vocabulary& v = *vocab_;
  std::vector<int32_t>& uncertain = entry->uncertain_ranks;
  uint32_t* acc = accepted->data();
  WalkTokens(space_, start, ranks, lcp, v, walk_states_, walk_context_,
             [&](int32_t rank, TokenVerdict verdict) {
               if (verdict == TokenVerdict::kAccepted) {
                 const int32_t id = v.sorted_ids()[static_cast<size_t>(rank)];
                 acc[id >> 5] |= 1u << (id & 31);
               } else if (verdict == TokenVerdict::kUncertain) {
                 uncertain.push_back(rank);
               }
             });
  const int depth = static_cast<int>(key.size()) - 2;
  // A refined entry keeps its verdicts: deeper keys are derived from them.
  entry->refine = uncertain.size() > refine_threshold_ && !exact && depth < kMaxKeyDepth;
  entry->uncertain_lcp = CommonPrefixes(v, uncertain);
  size_t n_accepted = 0;
  for (uint32_t w : *accepted) n_accepted += static_cast<size_t>(std::popcount(w));
  if (n_accepted * 32 > static_cast<size_t>(v.size())) {
    entry->accepted_bits = std::move(*accepted);
  } else {
    entry->accepted_ids.reserve(n_accepted);
    for (size_t w = 0; w < accepted->size(); ++w) {
      for (uint32_t b = (*accepted)[w]; b != 0; b &= b - 1) {
        entry->accepted_ids.push_back(static_cast<int32_t>(w * 32 + std::countr_zero(b)));
      }
    }
  }
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const Vocabulary> vocab, size_t max_cached,
                                 size_t refine_threshold, size_t max_cached_bytes)
    : vocab_(std::move(vocab)),
      max_cached_(max_cached),
      max_cached_bytes_(max_cached_bytes),
      refine_threshold_(refine_threshold) {}

void GrammarCompiler::set_precompute_seconds(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  precompute_seconds_ = seconds;
}

size_t GrammarCompiler::cache_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

size_t GrammarCompiler::cache_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::Cached(
    const std::string& key, const std::string& root,
    const std::function<StatusOr<std::string>()>& to_ebnf) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++hits_;
      return it->second;
    }
  }
  DI_ASSIGN_OR_RETURN(std::string ebnf, to_ebnf());
  DI_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, BuildEbnfGrammar(ebnf, root));
  auto compiled =
      std::make_shared<const CompiledGrammar>(std::move(grammar), vocab_, refine_threshold_);
  double budget = 0.0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    budget = precompute_seconds_;
  }
  if (budget > 0.0) compiled->Precompute(budget);
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.contains(key)) return cache_[key];  // another thread compiled it meanwhile
  size_t bytes = compiled->memory_bytes();
  for (const auto& [k, g] : cache_) bytes += g->memory_bytes();
  while (!order_.empty() && (cache_.size() >= max_cached_ || bytes > max_cached_bytes_)) {
    auto it = cache_.find(order_.front());
    bytes -= it->second->memory_bytes();
    cache_.erase(it);
    order_.pop_front();
  }
  cache_.emplace(key, compiled);
  order_.push_back(key);
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::CompileEbnf(
    std::string_view text, const std::string& root) {
  std::string src(text);
  return Cached("ebnf\n" + root + "\n" + src, root, [&]() -> StatusOr<std::string> { return src; });
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::CompileRegex(
    std::string_view pattern) {
  std::string src(pattern);
  return Cached("regex\n" + src, "root", [&] { return RegexToEbnf(src); });
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::CompileJsonSchema(
    std::string_view schema, const JsonSchemaOptions& options) {
  std::string src(schema);
  return Cached((options.strict ? "schema\n" : "schema-not-strict\n") + src, "root",
                [&] { return JsonSchemaToEbnf(src, options); });
}

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::CompileJsonObject() {
  return Cached("json_object", "root", [] { return StatusOr<std::string>(JsonObjectEbnf()); });
}

}  // namespace deepinfer::structured
