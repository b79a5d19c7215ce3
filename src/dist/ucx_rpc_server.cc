// UcxRpcServer (ucx_rpc.h): a listener, one endpoint per connected client, one progress thread.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/check.h"
#include "dist/ucx_context.h"
#include "dist/ucx_rpc.h"

namespace deepinfer::dist {

struct UcxRpcServer::Impl {
  // A connected client. Connections are named by a serial number, never reused, so a late reply
  // cannot reach a newer client that got a freed endpoint's address.
  struct Conn {
    Impl* impl = nullptr;
    uint64_t id = 0;
    ucp_ep_h ep = nullptr;
  };
  // A reply waiting for the progress thread.
  struct Reply {
    uint64_t conn_id = 0;
    uint64_t call_id = 0;
    std::string bytes;
  };
  // Where respond() leaves replies; shared with every respond function, which may outlive the
  // server (then `ucx` is null and the reply is dropped).
  struct ReplyBox {
    std::mutex mu;
    UcxContext* ucx = nullptr;
    std::vector<Reply> queue;
  };

  std::string host;
  uint16_t port = 0;
  Handler handler;
  std::unique_ptr<UcxContext> ucx;
  ucp_listener_h listener = nullptr;
  std::shared_ptr<ReplyBox> replies = std::make_shared<ReplyBox>();
  std::atomic<bool> stop{false};
  std::thread thread;

  // The progress thread's own state.
  uint64_t next_conn_id = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;  // by id
  std::unordered_map<ucp_ep_h, uint64_t> conn_of_ep;          // live endpoints only
  std::vector<ucp_conn_request_h> incoming;                   // from the listener callback
  std::vector<uint64_t> failed;                               // from endpoint error callbacks

  static void OnConnRequest(ucp_conn_request_h request, void* arg) {
    static_cast<Impl*>(arg)->incoming.push_back(request);
  }

  static void OnEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t /*status*/) {
    auto* conn = static_cast<Conn*>(arg);
    conn->impl->failed.push_back(conn->id);
  }

  static ucs_status_t OnRequest(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param) {
    static_cast<Impl*>(arg)->Receive(header, header_length, data, length, param);
    return UCS_OK;
  }

  void Receive(const void* header, size_t header_length, void* data, size_t length,
               const ucp_am_recv_param_t* param) {
    auto it = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0
                  ? conn_of_ep.find(param->reply_ep)
                  : conn_of_ep.end();
    if (it == conn_of_ep.end() || header_length != sizeof(RpcHeader)) {
      ucx->DropAm(data, param);  // not from a client of ours: nobody to answer
      return;
    }
    RpcHeader rpc;
    std::memcpy(&rpc, header, sizeof(rpc));
    const uint64_t conn_id = it->second;
    ucx->ReceiveAm(data, length, param,
                   [this, conn_id, call_id = rpc.call_id](ucs_status_t s, std::string bytes) {
                     if (s == UCS_OK) Deliver(conn_id, call_id, std::move(bytes));
                   });
  }

  void Deliver(uint64_t conn_id, uint64_t call_id, std::string request) {
    auto responded = std::make_shared<std::atomic<bool>>(false);
    handler(std::move(request), [box = replies, conn_id, call_id, responded](std::string reply) {
      CHECK(!responded->exchange(true)) << "ucx rpc: respond called twice for one request";
      std::lock_guard<std::mutex> lock(box->mu);
      if (box->ucx == nullptr) return;  // the server is gone
      box->queue.push_back({conn_id, call_id, std::move(reply)});
      box->ucx->Signal();
    });
  }

  void Accept() {
    for (ucp_conn_request_h request : std::exchange(incoming, {})) {
      auto conn = std::make_unique<Conn>();
      conn->impl = this;
      conn->id = next_conn_id++;
      ucp_ep_params_t params{};
      params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.conn_request = request;
      params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      params.err_handler.cb = OnEpError;
      params.err_handler.arg = conn.get();
      if (ucp_ep_create(ucx->worker(), &params, &conn->ep) != UCS_OK) continue;  // client sees it
      conn_of_ep[conn->ep] = conn->id;
      conns[conn->id] = std::move(conn);
    }
  }

  void DropFailed() {
    for (uint64_t id : std::exchange(failed, {})) {
      auto it = conns.find(id);
      if (it == conns.end()) continue;
      conn_of_ep.erase(it->second->ep);
      ucp_ep_h ep = it->second->ep;
      ucx->CloseEp(ep, /*force=*/true, std::move(it->second));
      conns.erase(it);
    }
  }

  void SendReplies() {
    std::vector<Reply> batch;
    {
      std::lock_guard<std::mutex> lock(replies->mu);
      batch.swap(replies->queue);
    }
    for (Reply& r : batch) {
      auto it = conns.find(r.conn_id);
      if (it == conns.end()) continue;  // that client is gone
      ucx->SendAm(it->second->ep, kRpcReplyAmId, r.call_id, std::move(r.bytes), 0,
                  [](ucs_status_t) {});  // a failed send shows as the endpoint's error
    }
  }

  bool HasWork() {
    if (stop.load() || !incoming.empty() || !failed.empty()) return true;
    std::lock_guard<std::mutex> lock(replies->mu);
    return !replies->queue.empty();
  }

  void Run() {
    while (!stop.load()) {
      ucx->ProgressAll();
      Accept();
      DropFailed();
      SendReplies();
      ucx->ReapClosed();
      ucx->Wait(1000, [this] { return HasWork(); });
    }
    // Shut down on this thread, which owns the worker: no more connections, then a flush and a
    // disconnect on every endpoint (their clients' calls fail at once), bounded in time.
    ucx->ProgressAll();
    for (ucp_conn_request_h request : std::exchange(incoming, {})) {
      ucp_listener_reject(listener, request);
    }
    ucp_listener_destroy(listener);
    listener = nullptr;
    conn_of_ep.clear();
    for (auto& [id, conn] : conns) {
      ucp_ep_h ep = conn->ep;
      ucx->CloseEp(ep, /*force=*/false, std::move(conn));
    }
    conns.clear();
    ucx->DrainCloses(1000);
  }
};

StatusOr<std::unique_ptr<UcxRpcServer>> UcxRpcServer::Start(const std::string& host, uint16_t port,
                                                            Handler handler) {
  auto impl = std::make_unique<Impl>();
  impl->host = host.empty() ? "0.0.0.0" : host;
  impl->handler = std::move(handler);
  DI_ASSIGN_OR_RETURN(impl->ucx, UcxContext::Create());
  DI_RETURN_IF_ERROR(impl->ucx->SetAmHandler(kRpcRequestAmId, Impl::OnRequest, impl.get()));
  const std::string where = impl->host + ":" + std::to_string(port);
  DI_ASSIGN_OR_RETURN(SockAddr addr,
                      ResolveSockAddr(impl->host == "0.0.0.0" ? "" : impl->host, port));

  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = addr.get();
  params.sockaddr.addrlen = addr.length;
  params.conn_handler.cb = Impl::OnConnRequest;
  params.conn_handler.arg = impl.get();
  ucs_status_t s = ucp_listener_create(impl->ucx->worker(), &params, &impl->listener);
  if (s == UCS_ERR_BUSY) {
    return UcxUnavailable(UcxErrorText("listening on " + where, s) + " (the port is in use)");
  }
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("listening on " + where, s));
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  s = ucp_listener_query(impl->listener, &attr);
  if (s != UCS_OK) {
    ucp_listener_destroy(impl->listener);
    return UcxUnavailable(UcxErrorText("ucp_listener_query on " + where, s));
  }
  impl->port = SockAddrPort(attr.sockaddr);

  impl->replies->ucx = impl->ucx.get();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<UcxRpcServer>(new UcxRpcServer(std::move(impl)));
}

UcxRpcServer::UcxRpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UcxRpcServer::~UcxRpcServer() {
  {
    // No respond() may touch the worker from here on.
    std::lock_guard<std::mutex> lock(impl_->replies->mu);
    impl_->replies->ucx = nullptr;
    impl_->replies->queue.clear();
  }
  impl_->stop.store(true);
  impl_->ucx->Signal();
  impl_->thread.join();
}

uint16_t UcxRpcServer::port() const { return impl_->port; }

std::string UcxRpcServer::address() const {
  return impl_->host + ":" + std::to_string(impl_->port);
}

}  // namespace deepinfer::dist
