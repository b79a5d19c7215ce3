// The text side of one engine request: per sample, a tokenizer::StreamingDetokenizer that turns
// the sample's tokens into text and finds the request's stop strings. The one adapter between
// the engine's token callbacks and the API's text, for the server and the commands alike.
//
// Wiring (RequestText::Attach): the request's stop_check feeds each appended token to sample 0's
// state, and prepare_sample gives every further sample (n > 1, engine::Request::prepare_sample)
// its own state, so stop strings are found per sample.
//
// Threads: the engine calls stop_check on its own thread; read a sample's text (Take, Finish,
// stopped) only from the request's on_output callback, which runs on that thread too, or once
// the engine has retired the request. No locks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::api {

// One sample's text.
class SampleText {
 public:
  explicit SampleText(tokenizer::StreamingDetokenizer detok) : detok_(std::move(detok)) {}

  // The stop check of one appended token: decodes it (an id the tokenizer does not have adds no
  // text) and returns whether a stop string has matched.
  bool Push(int32_t token);
  // At the sample's end: the text held back (an unfinished character, the start of a stop string
  // that never completed) joins the pending text, unless a stop string ended the sample.
  void Finish();
  // The text decoded since the last Take (complete characters, stop strings cut), and clears it.
  std::string Take();

  bool stopped() const { return detok_.stopped(); }
  // The stop string that ended the sample (precondition: stopped()).
  const std::string& matched_stop() const { return detok_.matched_stop(); }

 private:
  tokenizer::StreamingDetokenizer detok_;
  std::string pending_;
};

// Every sample's text of one request.
class RequestText {
 public:
  // Creates one SampleText per sample (request->params.n) and sets request->stop_check and
  // request->prepare_sample. With no tokenizer there is no text: returns null and leaves the
  // request alone, or InvalidArgument if the request has stop strings. Stop strings must be
  // valid UTF-8.
  static StatusOr<std::shared_ptr<RequestText>> Attach(const tokenizer::Tokenizer* tok,
                                                       bool skip_special_tokens,
                                                       engine::Request* request);

  // The state of the sample with this sample_index.
  SampleText& sample(int64_t sample_index);

 private:
  RequestText() = default;
  int64_t first_index_ = 0;  // the request's own sample_index
  std::vector<SampleText> samples_;
};

}  // namespace deepinfer::api
