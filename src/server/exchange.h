// One HTTP request/response as the route handlers see it: the parsed request, and the ways to
// answer (one JSON response, or a server-sent-event stream in chunked transfer encoding).
// Implemented by the connection (http_server.cc); handlers are coroutines on its executor.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/asio.h"

namespace deepinfer::server {

class Exchange {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  virtual ~Exchange() = default;
  virtual const http::request<http::string_body>& request() const = 0;
  std::chrono::steady_clock::time_point arrival() const { return arrival_; }

  virtual net::awaitable<void> Send(int status, std::string content_type, std::string body,
                                    Headers headers = {}) = 0;
  net::awaitable<void> SendJson(int status, const nlohmann::json& body, Headers headers = {}) {
    co_await Send(status, "application/json", DumpJson(body), std::move(headers));
  }
  net::awaitable<void> SendError(ApiStyle style, const ApiError& error, Headers headers = {}) {
    co_await SendJson(error.http_status, ErrorBody(style, error), std::move(headers));
  }

  // Starts a 200 text/event-stream response. Each SendEvent is one chunk; false = the client
  // is gone (the caller cancels its work). EndStream sends the last chunk.
  virtual net::awaitable<bool> StartStream() = 0;
  virtual net::awaitable<bool> SendEvent(std::string data) = 0;
  virtual net::awaitable<void> EndStream() = 0;

  // Non-streaming answers: calls on_close (on this executor) if the client closes its connection
  // before StopWatching (or the end of the exchange), so that its work can be cancelled while
  // nothing is being written. At most one watch at a time; a pipelined next request on the
  // connection ends the watch without calling on_close.
  virtual void WatchClose(const std::function<void()>& /*on_close*/) {}
  virtual void StopWatching() {}

  // The status sent (for metrics); 0 before a response started.
  int status() const { return status_; }

  // Set by POST /internal/pd/prefill (pd_routes.cc): the generation only computes its prompt
  // and hands the pages to the decode instance at this address (server/pd_handoff.h); empty
  // for every ordinary request.
  const std::string& handoff_to() const { return handoff_to_; }

 protected:
  std::string handoff_to_;
  std::chrono::steady_clock::time_point arrival_ = std::chrono::steady_clock::now();
  int status_ = 0;
};

// "data: JSON\n\n" (OpenAI) and "event: TYPE\ndata: JSON\n\n" (Anthropic).
inline std::string SseData(const nlohmann::json& j) { return "data: " + DumpJson(j) + "\n\n"; }
inline std::string SseEvent(const std::string& type, const nlohmann::json& j) {
  return "event: " + type + "\ndata: " + DumpJson(j) + "\n\n";
}

}  // namespace deepinfer::server
