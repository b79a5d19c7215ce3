// The HTTP/1.1 front end (Boost.Beast, one I/O thread, one coroutine per connection):
// keep-alive, a body size limit (413), Bearer auth, routing to the handlers of routes.h, SSE
// streaming in chunked transfer encoding, and graceful shutdown.
//
// Shutdown (SIGINT / SIGTERM): stop accepting, close idle keep-alive
// connections, let in-flight requests finish; past drain_timeout_s, cancel what is still
// running (streams end with finish_reason "abort"). Serve returns once every connection has
// closed, after stopping the engine loop (ctx.loop must be started; it is stopped on return).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
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

// Runs until SIGINT / SIGTERM and the drain; OK after a clean shutdown.
Status Serve(ServerContext& ctx, const ServerOptions& options);

}  // namespace deepinfer::server
