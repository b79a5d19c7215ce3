// UcxRpcServer / UcxRpcClient: request/reply messages between processes over UCX (the ucp API),
// built for the KV-page hand-off of prefill/decode disaggregation: a prefill server sends a
// multi-MiB message of pages (engine/page_handoff.h) to a decode server, which answers with a
// small reply.
//
// Protocol. UCP Active Messages over a connection the client opens to the server's listener
// (ucp_listener, client-server sockaddr endpoints). A request is AM id 1 and a reply AM id 2,
// each with an 8-byte header holding the client's call id; the payload is the message bytes.
// UCX picks eager or rendezvous per message (rendezvous: the receiver pulls the bytes into a
// buffer of the message's size). Messages are opaque bytes; there is no framing or versioning
// beyond that: the payload carries its own (page_handoff.h's "DIKV").
//
// Threads. Each server and each client owns one UCP worker and one progress thread, which sleeps
// on the worker's event descriptor when there is nothing to do (an idle server or client costs
// no CPU). The server calls the Handler on its progress thread, one request at a time: a handler
// must return quickly and do real work elsewhere; it answers with `respond`, exactly once, from
// any thread, at any later time (a second call is a CHECK failure; a call after the server or
// the connection is gone is dropped). A client is thread-safe: any number of threads may Call
// at once; it keeps one endpoint per address, shared by concurrent calls.
//
// Errors. A Call returns an error, never hangs. Every transport error names the address and
// UCX's status text and is a kInternal Status (core/status.h has no Unavailable code yet:
// UcxUnavailable in ucx_context.cc is the one place to change), e.g. with UCX 1.13 over tcp:
//   nothing listens          "ucx: 127.0.0.1:4000: Endpoint is not connected"
//   server closed or killed  "ucx: 127.0.0.1:4000: Connection reset by remote peer"
//   port taken (Start)       "ucx: listening on 0.0.0.0:4000: Device is busy (the port is in use)"
// Endpoints use UCP_ERR_HANDLING_MODE_PEER: a peer that dies or closes fails every call in
// flight on that endpoint at once (tested with a peer process killed by SIGKILL); the client
// then drops the endpoint and the next Call to that address connects again. timeout_s bounds
// the whole call (connecting, sending, the handler, the reply); past it Call returns
// kResourceExhausted with "deadline exceeded" in the message (no DeadlineExceeded code yet:
// UcxDeadlineExceeded) and a late reply is discarded. A server destroyed with requests
// unanswered closes their endpoints (flush + disconnect, 1 s at most): those calls fail at once.
// UCX itself also logs some failures to stderr (e.g. "UCX ERROR bind(...) failed").
//
// Limits and costs. Any message size that fits in memory (tested to 256 MiB). Call copies the
// request once (a timed-out call returns while UCX may still read the bytes); the receiving side
// allocates one buffer per message. The client does not resend: a failed call may or may not
// have reached the server's handler. An idle server or client wakes once a second.
//
// Configuration: the UCX_* environment, read when a server or client starts; nothing is forced.
// One machine (our tests and CI: a 2-core container with lo and eth0 only): UCX_TLS=tcp,self,
// UCX_NET_DEVICES unset. With UCX 1.13, client-server (sockaddr) endpoints need a network
// transport on the interface of the address they connect to (UCX_TLS=sm,self fails every call
// with "Destination is unreachable": "device lo is not enabled" in UCX's debug log; so would
// UCX_NET_DEVICES=eth0 for 127.0.0.1), and they never carry data over shared memory: with
// UCX_TLS unset ("all") they pick tcp here too, after ~50 ms more of probing per server or
// client. tcp to 127.0.0.1 also spreads rendezvous data over eth0 (UCX_MAX_RNDV_RAILS=2); that
// works, and UCX_NET_DEVICES=lo barely changes throughput. A cluster leaves UCX_TLS unset (UCX
// picks rc/dc on InfiniBand) or names it, e.g. UCX_TLS=rc,tcp,self UCX_NET_DEVICES=mlx5_0:1,eth0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace deepinfer::dist {

class UcxRpcServer {
 public:
  // Called on the server's progress thread with each request; see the threading contract above.
  using Handler =
      std::function<void(std::string request, std::function<void(std::string reply)> respond)>;

  // Listens on host:port ("0.0.0.0" or "" for every interface; port 0: any free port) and starts
  // the progress thread. Errors: a bad host, a port in use, UCX failing to start.
  static StatusOr<std::unique_ptr<UcxRpcServer>> Start(const std::string& host, uint16_t port,
                                                       Handler handler);
  // Stops the thread and closes the listener and every endpoint; the clients of unanswered
  // requests see an error. Replies responded after this are dropped.
  ~UcxRpcServer();
  UcxRpcServer(const UcxRpcServer&) = delete;
  UcxRpcServer& operator=(const UcxRpcServer&) = delete;

  uint16_t port() const;        // the port listened on (the real one when started with 0)
  std::string address() const;  // "host:port" as given to Start, with the real port

 private:
  struct Impl;
  explicit UcxRpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class UcxRpcClient {
 public:
  static StatusOr<std::unique_ptr<UcxRpcClient>> Create();
  // Fails the calls still waiting (their Call returns an error) and closes every endpoint.
  ~UcxRpcClient();
  UcxRpcClient(const UcxRpcClient&) = delete;
  UcxRpcClient& operator=(const UcxRpcClient&) = delete;

  // Sends `request` to the server at `address` ("host:port", "[v6]:port") and waits for its
  // reply, at most timeout_s seconds (> 0). Thread-safe. Errors: see the contract above; a
  // malformed address or timeout is kInvalidArgument.
  StatusOr<std::string> Call(const std::string& address, std::string_view request,
                             double timeout_s);

 private:
  struct Impl;
  explicit UcxRpcClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepinfer::dist
