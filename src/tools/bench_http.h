// The HTTP side of `deepinfer bench-serve`: one streamed POST (Server-Sent Events over HTTP/1.1,
// Boost.Beast, one blocking connection per request) timed event by event, and the parse of an
// OpenAI-style completions stream into a RequestTiming (tools/bench_stats.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/bench_stats.h"

namespace deepinfer::tools {

struct HttpEndpoint {
  std::string host;
  std::string port;
  std::string base_path;  // without a trailing '/', e.g. "" or "/proxy"
};

// "http://host[:port][/path]" (https is not supported).
StatusOr<HttpEndpoint> ParseBaseUrl(const std::string& url);

// One SSE "data:" payload and when its last byte arrived, in seconds from the request's send.
struct SseEvent {
  double t_s = 0;
  std::string data;
};

struct HttpStreamResult {
  int status = 0;     // HTTP status (0: no response)
  std::string error;  // transport error, empty when the exchange completed
  std::string body;   // the whole body when the response was not an event stream
  std::vector<SseEvent> events;
  double end_s = 0;  // last byte of the response
};

// POSTs `json_body` to base_path + path and reads the response, splitting an event-stream body
// into its data payloads as the bytes arrive. `timeout_s` bounds the whole exchange.
HttpStreamResult PostStreaming(const HttpEndpoint& ep, const std::string& path,
                               const std::string& json_body, const std::string& api_key,
                               double timeout_s);

// GET base_path + path; the body, or an error Status.
StatusOr<std::string> HttpGet(const HttpEndpoint& ep, const std::string& path,
                              const std::string& api_key, double timeout_s);

// Splits complete SSE events off the front of `pending` (events end with a blank line; CRLF or
// LF), appending their data payloads (multi-line data joined with '\n') to `out`.
void TakeSseEvents(std::string* pending, double t_s, std::vector<SseEvent>* out);

// An OpenAI completions stream -> timing: TTFT = the first event with non-empty text, ITL = the
// gaps between such events, output tokens from the final usage (stream_options.include_usage)
// or else the count of text events. Fails (ok = false, *why set) on an HTTP error, an error event,
// or a stream without [DONE].
RequestTiming TimingFromCompletionStream(const HttpStreamResult& r, std::string* why);

}  // namespace deepinfer::tools
