#include "tokenizer/tokenizer.h"

#include <unordered_set>

#include "tokenizer/utf8.h"

namespace deepinfer::tokenizer {

Tokenizer::Tokenizer(ByteLevelAlphabet alphabet, BpeModel bpe, PreTokenizer pre,
                     AddedTokenMatcher raw_matcher, AddedTokenMatcher normalized_matcher)
    : alphabet_(std::move(alphabet)),
      bpe_(std::move(bpe)),
      pre_(std::move(pre)),
      raw_matcher_(std::move(raw_matcher)),
      normalized_matcher_(std::move(normalized_matcher)) {}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& dir) {
  DI_ASSIGN_OR_RETURN(TokenizerSpec spec, LoadTokenizerSpec(dir));
  return FromSpec(spec);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromSpec(const TokenizerSpec& spec) {
  ByteLevelAlphabet alphabet;
  DI_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Build(spec.vocab, spec.merges, alphabet));
  DI_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::Build(spec.splits));
  std::vector<std::pair<std::string, int32_t>> raw, normalized;
  for (const AddedTokenSpec& t : spec.added_tokens) {
    (t.normalized ? normalized : raw).emplace_back(t.content, t.id);
  }
  auto tok = std::unique_ptr<Tokenizer>(new Tokenizer(std::move(alphabet), std::move(bpe),
                                                      std::move(pre), AddedTokenMatcher(raw),
                                                      AddedTokenMatcher(normalized)));

  int32_t max_id = -1;
  for (const auto& [text, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const AddedTokenSpec& t : spec.added_tokens) max_id = std::max(max_id, t.id);
  tok->tokens_.resize(static_cast<size_t>(max_id) + 1);
  for (const auto& [text, id] : spec.vocab) {
    Token& t = tok->tokens_[id];
    if (t.present) {
      return InvalidArgument("tokenizer.json: model.vocab gives id " + std::to_string(id) +
                             " to both \"" + t.text + "\" and \"" + text + "\"");
    }
    t.text = text;
    t.present = true;
  }
  // Added tokens override the vocab's string for their id (the Hugging Face lookup order).
  std::unordered_set<std::string> special_contents;
  for (const AddedTokenSpec& a : spec.added_tokens) {
    Token& t = tok->tokens_[a.id];
    t.text = a.content;
    t.present = true;
    tok->added_ids_.try_emplace(a.content, a.id);
    if (a.special) special_contents.insert(a.content);
  }
  for (Token& t : tok->tokens_) {
    if (!t.present) continue;
    // Skipping is by content: any id whose string is a special token's content is special.
    t.special = special_contents.count(t.text) != 0;
    t.bytes = tok->alphabet_.Decode(t.text);
  }

  tok->add_bos_ = spec.add_bos_token;
  tok->add_eos_ = spec.add_eos_token;
  if (!spec.bos_token.empty()) {
    auto id = tok->AddedTokenId(spec.bos_token);
    if (!id.ok())
      return InvalidArgument("tokenizer_config.json: bos_token: " + id.status().message());
    tok->bos_id_ = *id;
  }
  if (!spec.eos_token.empty()) {
    auto id = tok->AddedTokenId(spec.eos_token);
    if (!id.ok())
      return InvalidArgument("tokenizer_config.json: eos_token: " + id.status().message());
    tok->eos_id_ = *id;
  }
  if (tok->add_bos_ && !tok->bos_id_) {
    return InvalidArgument(
        "tokenizer_config.json: add_bos_token is true but no bos_token is named");
  }
  if (tok->add_eos_ && !tok->eos_id_) {
    return InvalidArgument(
        "tokenizer_config.json: add_eos_token is true but no eos_token is named");
  }
  return tok;
}

StatusOr<int32_t> Tokenizer::AddedTokenId(std::string_view content) const {
  const auto it = added_ids_.find(std::string(content));
  if (it == added_ids_.end()) {
    return NotFound("unknown special token \"" + std::string(content) + "\"");
  }
  return it->second;
}

Status Tokenizer::EncodeOrdinary(std::string_view text, std::vector<int32_t>* ids) const {
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  DI_RETURN_IF_ERROR(pre_.Split(text, &pieces));
  for (std::string_view piece : pieces) bpe_.EncodeWord(piece, ids);
  return Status::Ok();
}

Status Tokenizer::EncodeAppend(std::string_view text, std::vector<int32_t>* ids) const {
  DI_RETURN_IF_ERROR(ValidateUtf8(text));
  std::vector<AddedTokenMatcher::Segment> raw_segments, segments;
  raw_matcher_.Split(text, 0, text.size(), &raw_segments);
  for (const auto& s : raw_segments) {
    if (s.id >= 0) {
      ids->push_back(s.id);
      continue;
    }
    segments.clear();
    normalized_matcher_.Split(text, s.begin, s.end, &segments);
    for (const auto& g : segments) {
      if (g.id >= 0) {
        ids->push_back(g.id);
      } else {
        DI_RETURN_IF_ERROR(EncodeOrdinary(text.substr(g.begin, g.end - g.begin), ids));
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                 bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special_tokens && add_bos_) ids.push_back(*bos_id_);
  DI_RETURN_IF_ERROR(EncodeAppend(text, &ids));
  if (add_special_tokens && add_eos_) ids.push_back(*eos_id_);
  return ids;
}

StatusOr<std::string> Tokenizer::Decode(std::span<const int32_t> ids,
                                        bool skip_special_tokens) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (!HasId(id)) {
      return OutOfRange("token id " + std::to_string(id) + " at position " + std::to_string(i) +
                        " is not in the vocabulary (0.." + std::to_string(n_ids() - 1) + ")");
    }
    if (skip_special_tokens && tokens_[id].special) continue;
    bytes += tokens_[id].bytes;
  }
  std::string text;
  text.reserve(bytes.size());
  AppendLossyUtf8(bytes, &text);
  return text;
}

}  // namespace deepinfer::tokenizer
