// Turns a stream of generated token ids into text increments that are safe to send: only
// complete UTF-8 characters are emitted (a character split over several byte tokens waits for
// its last byte), and stop strings are caught even when they span token boundaries, without ever
// emitting their beginning: the longest suffix of the pending text that is a prefix of some stop
// string is held back until it either completes a stop string or can no longer become one.
//
// With no stop string hit, the concatenation of every Push result and Finish() equals
// Tokenizer::Decode(all ids, skip_special_tokens) exactly (the same lossy UTF-8 rule: a byte
// sequence that can no longer become valid is emitted as U+FFFD at once).
//
// One object per sequence; not thread-safe. The tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::tokenizer {

class StreamingDetokenizer {
 public:
  // Stop strings must be valid UTF-8 (else InvalidArgument); empty ones are ignored.
  static StatusOr<StreamingDetokenizer> Create(const Tokenizer& tokenizer,
                                               std::vector<std::string> stop_strings = {},
                                               bool skip_special_tokens = true);

  // Feeds one id and returns the text that became final (often empty). After a stop string
  // matched, returns the text before it, then stopped() is true and further ids are ignored.
  // Errors on an id the tokenizer does not have (the state is unchanged).
  StatusOr<std::string> Push(int32_t id);

  // End of stream: releases what was held back (an unfinished character becomes U+FFFD; a
  // partial stop string is ordinary text after all). Idempotent.
  std::string Finish();

  bool stopped() const { return stop_index_ >= 0; }
  // The stop string that matched (precondition: stopped()).
  const std::string& matched_stop() const { return stops_[stop_index_]; }

 private:
  StreamingDetokenizer(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                       bool skip_special_tokens);
  // Moves complete characters of pending_bytes_ into held_ (all of them when `final`).
  void DecodePending(bool final);
  // Emits from held_ what can no longer be part of a stop string, or the text before a stop.
  std::string Release(bool final);

  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  bool skip_special_;
  std::string pending_bytes_;  // an unfinished UTF-8 sequence (at most 3 bytes)
  std::string held_;           // decoded text that may still begin a stop string
  int stop_index_ = -1;
};

}  // namespace deepinfer::tokenizer
