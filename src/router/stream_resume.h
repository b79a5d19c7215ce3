// StreamLedger: mid-stream resume of a generation (docs/disaggregation.md, "Faults").
//
// A worker that dies in the middle of a streamed answer leaves the client with part of it. The
// router sends the same request to another worker: by the engine contract its answer has the same
// content (text, reasoning, tool calls, logprobs, finish reasons; a request's output depends on
// the request alone), though not the same event boundaries, ids or timestamps. The ledger keeps
// what of the answer reached the client and turns the new worker's answer into the rest of it:
// per choice (OpenAI) or content block (Anthropic) the text already sent is cut off the new
// answer, and so are logprob entries, tool calls, role and finish chunks, message and block
// starts and stops already sent; the OpenAI envelope keeps the first answer's id and created.
// The part cut off is compared with what was sent: a difference is an error (the client then gets
// an error event, never a spliced answer).
//
// Event shapes: OpenAI `data: {…}` chunks of /v1/completions and /v1/chat/completions (and
// `data: [DONE]`), Anthropic `event: …\ndata: {…}` of /v1/messages. Bytes may be split anywhere
// across calls; events end with a blank line. Not thread-safe (one request's coroutine).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "server/api_error.h"

namespace deepinfer::router {

class StreamLedger {
 public:
  explicit StreamLedger(server::ApiStyle style) : style_(style) {}

  // Bytes of the answer as they reached the client.
  void Sent(std::string_view bytes);
  // The next Continue calls read another worker's answer to the same request.
  void BeginResume();
  // Bytes of that answer -> what the client has not had yet (maybe nothing). An error when the
  // answer contradicts what was sent.
  StatusOr<std::string> Continue(std::string_view bytes);

 private:
  // A text or list field of one choice / block: what reached the client, and how much of it the
  // resumed answer has produced so far.
  struct Field {
    std::string text;     // text fields
    int64_t entries = 0;  // list fields (logprob entries, tool calls)
    int64_t resumed = 0;  // bytes or entries of the resumed answer so far
  };
  struct Unit {  // an OpenAI choice or an Anthropic content block
    std::map<std::string, Field> fields;
    bool started = false;  // role chunk / content_block_start
    bool ended = false;    // finish_reason / content_block_stop
  };

  // One complete event: records it (Sent), or returns its continuation.
  void Record(const std::string& event);
  StatusOr<std::string> Resume(const std::string& event);
  // The part of `piece` (field `name` of `unit`) past what was sent; records the rest as sent.
  StatusOr<std::string> TakeText(Unit* unit, const std::string& name, const std::string& piece);
  // The entries of `list` past those sent; records them.
  nlohmann::ordered_json TakeEntries(Unit* unit, const std::string& name,
                                     const nlohmann::ordered_json& list);
  StatusOr<std::optional<nlohmann::ordered_json>> ResumeOpenAi(nlohmann::ordered_json chunk);
  StatusOr<std::optional<nlohmann::ordered_json>> ResumeAnthropic(const std::string& type,
                                                                  nlohmann::ordered_json event);

  server::ApiStyle style_;
  bool resuming_ = false;
  std::string pending_;  // bytes of an event not yet complete
  std::map<int64_t, Unit> units_;
  std::map<std::string, bool> once_;     // Anthropic message_start / message_delta / message_stop,
                                         // OpenAI [DONE] and the usage chunk: sent already
  nlohmann::ordered_json id_, created_;  // the first OpenAI chunk's
};

}  // namespace deepinfer::router
