// UcxContext: one UCP context and one worker, owned by one progress thread, with the pieces the
// RPC (dist/ucx_rpc.h) shares on both sides: its wire form, Active Message send and receive
// (eager or rendezvous), endpoint close. Features: Active Messages and the wake-up descriptor.
//
// Threads: everything but Signal() belongs to the thread that progresses the worker (the worker
// is created UCS_THREAD_MODE_SINGLE). Signal() may be called from any thread while the context
// lives (UCX documents ucp_worker_signal as safe from any thread).
//
// Configuration: the UCX_* environment, as ucp_config_read reads it (ucx_rpc.h: which settings).
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer::dist {

// "ucx: <where>: <ucs_status_string(status)>", the form of every transport error.
std::string UcxErrorText(std::string_view where, ucs_status_t status);
// A peer that is dead, absent or unreachable (core/status.h has no Unavailable code yet).
Status UcxUnavailable(std::string message);
// A call that got no reply in time (core/status.h has no DeadlineExceeded code yet).
Status UcxDeadlineExceeded(std::string message);

// "host:port" or "[v6-host]:port" -> (host, port); port 1..65535.
StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view address);

// A resolved socket address (the first getaddrinfo answer; IPv4 preferred as UCX's tcp does).
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};
StatusOr<SockAddr> ResolveSockAddr(const std::string& host, uint16_t port);
// The port of a socket address, host byte order.
uint16_t SockAddrPort(const sockaddr_storage& addr);

// The RPC's wire form: a request is AM kRpcRequestAmId, a reply kRpcReplyAmId; both carry an
// RpcHeader as the AM header and the message bytes as the AM data.
inline constexpr unsigned kRpcRequestAmId = 1;
inline constexpr unsigned kRpcReplyAmId = 2;
struct RpcHeader {
  uint64_t call_id = 0;
};

class UcxContext {
 public:
  static StatusOr<std::unique_ptr<UcxContext>> Create();
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_worker_h worker() const { return worker_; }

  // Progresses the worker until it has nothing left to do right now.
  void ProgressAll();
  // Sleeps until the worker has an event, Signal() is called or timeout_ms passes (-1: no
  // limit). `has_work` is asked after the worker is armed: a caller that queues work and then
  // calls Signal() from another thread is never missed. Progress the worker after it returns.
  void Wait(int timeout_ms, const std::function<bool()>& has_work);
  // Wakes Wait() from any thread.
  void Signal();

  // Registers `cb(arg, ...)` for Active Messages `id` (whole messages only).
  Status SetAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg);
  // Sends AM `id` with RpcHeader{call_id} and `bytes` (kept alive here until UCX is done with
  // them); `done` runs once on the progress thread, possibly before SendAm returns, with UCS_OK
  // or the error (UCS_ERR_CANCELED when the endpoint is closed first). flags: ucp_send_am_flags.
  void SendAm(ucp_ep_h ep, unsigned id, uint64_t call_id, std::string bytes, uint32_t flags,
              std::function<void(ucs_status_t)> done);
  // From inside an AM receive callback: the message's bytes, copied (eager) or pulled into a new
  // buffer (rendezvous). `done` runs once on the progress thread, possibly before ReceiveAm
  // returns. The callback then returns UCS_OK.
  void ReceiveAm(void* data, size_t length, const ucp_am_recv_param_t* param,
                 std::function<void(ucs_status_t, std::string)> done);
  // Drops an unwanted message from inside its AM receive callback (releases rendezvous data).
  void DropAm(void* data, const ucp_am_recv_param_t* param);

  // Closes `ep` (force: without a word to the peer, as required after an error; otherwise a
  // flush and a disconnect the peer sees). `keep` (the object the endpoint's error callback
  // points to) is held until the close has finished: ReapClosed().
  void CloseEp(ucp_ep_h ep, bool force, std::shared_ptr<void> keep);
  // Frees finished close requests; true when none is left.
  bool ReapClosed();
  // Progresses until every close finished or timeout_ms passed.
  void DrainCloses(int timeout_ms);

 private:
  UcxContext() = default;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  // ucp_ep_close_nbx requests in flight, with what they keep alive.
  std::vector<std::pair<void*, std::shared_ptr<void>>> closing_;
};

}  // namespace deepinfer::dist
