// Prefill/decode disaggregation, the instance's side (docs/disaggregation.md).
//
// A decode instance (role decode or both) listens for KV hand-offs on a UCX endpoint
// (dist/ucx_rpc.h). Each message is a page bundle (engine/page_handoff.h); it is decoded on the
// UCX thread and imported by the engine loop between steps (EngineLoop::Post), and the reply,
// sent once the pages are registered, says how many landed. So when the prefill instance has
// its reply, a request for that prompt on this instance is already a prefix hit.
// A prefill instance exports a prompt's pages on the loop thread as the prompt's request delivers
// its last output (Export), then sends them to the decode instance the router named: Send, which
// blocks and runs on the endpoint's own threads (blocking_executor), never on the I/O or the loop
// thread.
//
// Errors name the decode instance and what failed: the UCX status of a failed transfer, the page
// that failed its checksum, a fingerprint mismatch. Nothing is retried here (the router retries,
// then falls back to a colocated prefill on the decode instance).
// Test hook: DEEPINFER_FAULT=pd_corrupt_page flips one byte of the first page after its checksum
// was taken, on the prefill side (the decode side must refuse the bundle).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/page_handoff.h"
#include "server/asio.h"

namespace deepinfer::dist {
class UcxRpcServer;
class UcxRpcClient;
}  // namespace deepinfer::dist

namespace deepinfer::engine {
class Engine;
}  // namespace deepinfer::engine

namespace deepinfer::server {

class EngineLoop;

struct HandoffReport {
  int64_t prompt_tokens = 0;
  int64_t pages = 0;     // complete prompt pages sent
  int64_t imported = 0;  // of which the decode instance registered
  int64_t cached = 0;    // it already held
  int64_t dropped = 0;   // it had no page for
  bool tail = false;     // the sequence's tail went too and is held for the request
  int64_t bytes = 0;     // on the wire
  double seconds = 0;    // export + transfer + import
};

// Counters for /metrics (deepinfer_pd_*).
struct PdCounters {
  int64_t handoffs = 0;  // prefill side: bundles sent and acknowledged
  int64_t failures = 0;  // prefill side: hand-offs that failed
  int64_t bytes_sent = 0;
  double seconds = 0;
  int64_t bundles_received = 0;  // decode side
  int64_t pages_imported = 0;
  int64_t tails_held = 0;        // bundles whose sequence tail is held for its request
  int64_t receive_failures = 0;  // bundles refused (malformed, fingerprint, checksum)
};

class PdEndpoint {
 public:
  // listen_port < 0: no listener (a prefill instance); 0: any free port.
  static StatusOr<std::unique_ptr<PdEndpoint>> Create(EngineLoop* loop, std::string fingerprint,
                                                      const std::string& listen_host,
                                                      int listen_port);
  ~PdEndpoint();
  PdEndpoint(const PdEndpoint&) = delete;
  PdEndpoint& operator=(const PdEndpoint&) = delete;

  // "host:port" where bundles for this instance go; empty without a listener.
  const std::string& address() const { return address_; }
  // The cached complete pages of `prompt`. On the engine loop's thread only (a request callback
  // or a posted task): the prefill leg calls it as its request's last output is delivered, so
  // the hand-off does not wait for the end of the step in progress.
  StatusOr<engine::PageBundle> Export(const engine::Engine& engine,
                                      const std::vector<int32_t>& prompt,
                                      std::shared_ptr<const engine::SequenceTail> tail) const;
  // Hands `bundle` to the decode instance at `decode_address`. Blocking: call it on
  // blocking_executor(). `started`: when the export began (the report's seconds count from it).
  StatusOr<HandoffReport> Send(engine::PageBundle bundle, int64_t prompt_tokens,
                               const std::string& decode_address, double timeout_s,
                               std::chrono::steady_clock::time_point started);
  net::any_io_executor blocking_executor();
  PdCounters counters() const;

 private:
  PdEndpoint(EngineLoop* loop, std::string fingerprint);
  void Receive(const std::string& wire, const std::function<void(std::string)>& respond);

  EngineLoop* loop_;
  std::string fingerprint_;
  std::string address_;
  bool corrupt_fault_ = false;
  net::thread_pool blocking_{2};
  std::unique_ptr<dist::UcxRpcClient> client_;
  std::unique_ptr<dist::UcxRpcServer> server_;
  mutable std::mutex mu_;
  PdCounters counters_;
};

}  // namespace deepinfer::server
