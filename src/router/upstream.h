// UpstreamCall: one HTTP/1.1 request to a worker over its own connection (Boost.Beast, a
// coroutine on the caller's executor — the router's one I/O thread): connect, send, read the
// response header, then the body as it arrives (ReadSome) or whole (ReadBody).
//
// Close(), from any coroutine or handler on the same executor, ends the call: the pending
// operation fails with failure() == kClosed and the socket closes, so the worker sees its
// client go away and cancels the request. UpstreamCalls tracks the calls in flight so that a
// draining router can close them all.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <set>
#include <string>

#include "router/worker.h"
#include "server/asio.h"

namespace deepinfer::router {

namespace net = server::net;
namespace beast = server::beast;
namespace http = server::http;

class UpstreamCall;

// The calls in flight; CloseAll closes them and every later one (the router is stopping).
class UpstreamCalls {
 public:
  void CloseAll();
  bool closing() const { return closing_; }

 private:
  friend class UpstreamCall;
  std::set<UpstreamCall*> calls_;
  bool closing_ = false;
};

struct UpstreamTimeouts {
  std::chrono::steady_clock::duration connect = std::chrono::seconds(5);
  // The longest the worker may stay silent (a whole non-streaming answer is computed in one
  // such silence).
  std::chrono::steady_clock::duration read = std::chrono::seconds(600);
};

class UpstreamCall {
 public:
  enum class Failure {
    kNone,
    kConnect,     // no connection (refused, unreachable, connect timeout)
    kConnection,  // the connection broke, or the worker's answer is not valid HTTP
    kTimeout,     // the worker stayed silent past the read timeout
    kClosed,      // Close() was called
  };

  UpstreamCall(net::any_io_executor executor, UpstreamCalls* registry = nullptr);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Connects to `to` and writes `request`. false: failure() and error() say why.
  net::awaitable<bool> Send(const Endpoint& to, http::request<http::string_body> request,
                            const UpstreamTimeouts& timeouts);
  // Reads the status line and the header fields.
  net::awaitable<bool> ReadHeader();
  int status() const { return static_cast<int>(parser_.get().result_int()); }
  std::string Header(std::string_view name) const;
  // text/event-stream (an SSE answer, relayed piece by piece).
  bool event_stream() const;

  // The next non-empty piece of the body as it arrives, or an empty one at its end (done()).
  net::awaitable<bool> ReadSome(std::string* piece);
  bool done() const { return parser_.is_done(); }
  // The rest of the body (at most `limit` bytes, else a kConnection failure).
  net::awaitable<bool> ReadBody(std::string* body, size_t limit = size_t{64} << 20);

  void Close();
  Failure failure() const { return failure_; }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const beast::error_code& ec, Failure kind);

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
  std::array<char, 16384> chunk_{};
  UpstreamTimeouts timeouts_;
  UpstreamCalls* registry_;
  bool closed_ = false;
  Failure failure_ = Failure::kNone;
  std::string error_;
};

// The worker's copy of a client's request: method, target and body as given (or replaced),
// the client's header fields but hop-by-hop ones and Host; with a worker_api_key, its Bearer
// key instead of the client's credentials. The connection closes after the answer.
http::request<http::string_body> MakeUpstreamRequest(const http::request<http::string_body>& client,
                                                     const Endpoint& to,
                                                     const std::string& worker_api_key);
// A GET / POST of the router's own (probes, prefill legs).
http::request<http::string_body> MakeRouterRequest(http::verb method, std::string_view target,
                                                   const Endpoint& to,
                                                   const std::string& worker_api_key,
                                                   std::string json_body = {});

}  // namespace deepinfer::router
