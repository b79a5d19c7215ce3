// Relay: one attempt at answering a client's request through a worker. The worker's answer
// goes to the client as it arrives: an SSE answer piece by piece (each piece one chunk of the
// client's stream, sent when it arrives), any other answer whole, with its status, content type
// and Retry-After / WWW-Authenticate fields.
//
// Before a byte of the answer has reached the client, a failure (no connection, a broken one,
// a 502 / 503 answer) is retryable: with may_retry the relay answers nothing and says kRetry;
// without it the client gets the worker's 502 / 503 as it is, or a 502 error of its own in the
// route's format. The client's stream starts only with the worker's first piece of body, so a
// worker that dies while it computes the prompt is still retried.
// The client going away (a failed write, or Exchange::WatchClose while waiting) closes the
// worker's connection: the worker cancels the request.
// Mid-stream resume (router/stream_resume.h): with a ledger, every piece of a stream that reaches
// the client is recorded in it. With `resume` as well, the client's stream is already open (an
// earlier worker broke it): this worker's stream goes through the ledger, which passes on only
// what the client has not had; any failure is then kBroken (or kRetry before this worker sent
// a byte, with may_retry), never an error response, and an answer that contradicts the ledger
// is kBroken with the ledger's error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "router/stream_resume.h"
#include "router/upstream.h"
#include "router/worker.h"
#include "server/api_error.h"
#include "server/exchange.h"

namespace deepinfer::router {

enum class RelayOutcome {
  kAnswered,    // the worker's answer (whatever its status) reached the client in full
  kRetry,       // failed before any byte reached the client; nothing was sent (may_retry only)
  kFailed,      // failed before any byte; the client got the failure (a 502 / 503)
  kBroken,      // failed after the stream started: the client's stream is open, not ended
  kClientGone,  // the client went away; the worker's connection was closed
};

struct RelayResult {
  RelayOutcome outcome = RelayOutcome::kFailed;
  bool connect_failed = false;  // the worker could not be reached at all
  std::string error;            // what failed, naming the worker
  int status = 0;               // the worker's status (0: no answer)
  int64_t bytes_sent = 0;       // body bytes of the stream that reached the client
  bool diverged = false;        // a resumed answer contradicted what the client had
};

struct RelayCall {
  const Endpoint* to = nullptr;
  http::request<http::string_body> request;  // what the worker gets
  server::ApiStyle style = server::ApiStyle::kOpenAi;
  bool may_retry = false;
  UpstreamTimeouts timeouts;
  UpstreamCalls* calls = nullptr;
  StreamLedger* ledger = nullptr;
  bool resume = false;
  std::function<void()> on_first_piece;  // the worker's first answer bytes arrived
};

net::awaitable<RelayResult> Relay(server::Exchange& ex, RelayCall call);

// A whole answer the router asked for itself (a probe, a prefill leg): status and body; status
// 0 when the call failed (error() of the call in `error`). The client of `watch`, if given,
// going away closes the call (status 0, client_gone).
struct FetchResult {
  int status = 0;
  std::string body;
  std::string error;
  bool connect_failed = false;
  bool client_gone = false;
};
net::awaitable<FetchResult> Fetch(const Endpoint& to, http::request<http::string_body> request,
                                  UpstreamTimeouts timeouts, UpstreamCalls* calls,
                                  server::Exchange* watch = nullptr);

}  // namespace deepinfer::router
