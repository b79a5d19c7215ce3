// The HTTP/1.1 front end (Boost.Beast, one I/O thread, one coroutine per connection):
// keep-alive, a body size limit (413), Bearer auth, routing to the handlers of a route table,
// SSE streaming in chunked transfer encoding, and graceful shutdown. `deepinfer serve` runs it
// over the handlers of routes.h (Serve); `deepinfer route` over the router's (router/).
//
// Shutdown (SIGINT / SIGTERM): stop accepting, close idle keep-alive
// connections, let in-flight requests finish; past drain_timeout_s, cancel what is still
// running (HttpApp::cancel_all; serve: streams end with finish_reason "abort"). ServeHttp
// returns once every connection has closed; Serve stops the engine loop before it returns
// (ctx.loop must be started).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/asio.h"
#include "server/exchange.h"
#include "server/server_context.h"

namespace deepinfer::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0 = any free port (on_listening gets the real one)
  std::string api_key;   // non-empty: every route but /health needs it
  int64_t max_body_bytes = int64_t{8} << 20;
  double drain_timeout_s = 30;
  double idle_timeout_s = 120;  // keep-alive connections with no request
  std::function<void(const std::string& host, uint16_t port)> on_listening;
};

// One route: requests with this method and path (the target without its query) go to
// `handler`, a coroutine on the connection's executor that answers exactly once on its Exchange.
// A path listed with other methods only gets 405; an unlisted one 404.
struct HttpRoute {
  http::verb method;
  std::string path;
  std::function<net::awaitable<void>(Exchange&)> handler;
  bool needs_key = true;  // false: answered without the API key (/health)
};

// What a front end serves and its hooks into the server's life; every hook runs on the I/O
// thread. Errors the front end itself answers (401, 404, 405, 413, a handler's exception: 500)
// take the Anthropic format on /v1/messages*, the OpenAI one elsewhere.
struct HttpApp {
  std::string name = "serve";  // in log lines: "deepinfer NAME: draining ..."
  std::vector<HttpRoute> routes;
  // Runs once the port is bound, before on_listening and before the first connection is
  // accepted (clients wait in the listen backlog), e.g. a first round of health checks.
  std::function<net::awaitable<void>()> start;
  std::function<void()> on_drain;    // SIGINT / SIGTERM: the drain begins
  std::function<void()> cancel_all;  // the drain timed out: cancel what still runs
  // Every connection has closed: stop whatever still posts work to the I/O context (ServeHttp
  // runs what was posted meanwhile, then returns).
  std::function<void()> on_closed;
  // Each answered request: its route (the path, or "other" for an unknown one) and status.
  std::function<void(const std::string& route, int status)> count_request;
};

// Runs until SIGINT / SIGTERM and the drain; OK after a clean shutdown.
Status ServeHttp(const HttpApp& app, const ServerOptions& options);

// `deepinfer serve`: ServeHttp over the engine's routes (routes.h); stops ctx.loop on return.
Status Serve(ServerContext& ctx, const ServerOptions& options);

}  // namespace deepinfer::server
