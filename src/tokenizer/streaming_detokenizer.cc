#include "tokenizer/streaming_detokenizer.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace deepinfer::tokenizer {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer,
                                           std::vector<std::string> stop_strings,
                                           bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StatusOr<StreamingDetokenizer> StreamingDetokenizer::Create(const Tokenizer& tokenizer,
                                                            std::vector<std::string> stop_strings,
                                                            bool skip_special_tokens) {
  for (size_t i = 0; i < stop_strings.size(); ++i) {
    const Status valid = ValidateUtf8(stop_strings[i]);
    if (!valid.ok()) {
      return InvalidArgument("stop string " + std::to_string(i) + ": " + valid.message());
    }
  }
  return StreamingDetokenizer(tokenizer, std::move(stop_strings), skip_special_tokens);
}

StatusOr<std::string> StreamingDetokenizer::Push(int32_t id) {
  if (!tokenizer_.HasId(id)) {
    return OutOfRange("token id " + std::to_string(id) + " is not in the vocabulary");
  }
  if (stopped()) return std::string();
  if (skip_special_ && tokenizer_.IsSpecial(id)) return std::string();
  pending_bytes_ += tokenizer_.TokenBytes(id);
  DecodePending(/*final=*/false);
  return Release(/*final=*/false);
}

std::string StreamingDetokenizer::Finish() {
  if (stopped()) return std::string();
  DecodePending(/*final=*/true);
  return Release(/*final=*/true);
}

void StreamingDetokenizer::DecodePending(bool final) {
  std::string_view bytes = pending_bytes_;
  size_t pos = 0;
  while (pos < bytes.size()) {
    bool incomplete = false;
    const size_t bad = InvalidUtf8PrefixLength(bytes.substr(pos), &incomplete);
    if (bad == 0) {
      size_t len;
      DecodeUtf8(bytes.substr(pos), &len);
      held_.append(bytes.substr(pos, len));
      pos += len;
    } else if (incomplete && !final) {
      break;  // may still be completed by the next token
    } else {
      held_ += "\xEF\xBF\xBD";
      pos += bad;
    }
  }
  pending_bytes_.erase(0, pos);
}

std::string StreamingDetokenizer::Release(bool final) {
  // The earliest complete stop string (the first listed wins a tie at the same position).
  size_t best_pos = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t p = held_.find(stops_[i]);
    if (p < best_pos) {
      best_pos = p;
      stop_index_ = static_cast<int>(i);
    }
  }
  std::string out;
  if (best_pos != std::string::npos) {
    out = held_.substr(0, best_pos);
    held_.clear();
    pending_bytes_.clear();
    return out;
  }
  size_t keep = 0;
  if (!final) {
    // Longest suffix of held_ that is a proper prefix of a stop string.
    for (const std::string& stop : stops_) {
      for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
        if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
          keep = n;
          break;
        }
      }
    }
  }
  out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace deepinfer::tokenizer
