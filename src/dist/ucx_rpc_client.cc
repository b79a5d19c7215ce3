// UcxRpcClient (ucx_rpc.h): callers queue calls for one progress thread, which owns the worker,
// the endpoints (one per address) and the table of calls in flight, and wait on a future.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dist/ucx_context.h"
#include "dist/ucx_rpc.h"

namespace deepinfer::dist {

struct UcxRpcClient::Impl {
  struct ClientEp;
  // One Call. The caller holds it until it returns; the progress thread while it is in flight.
  struct PendingCall {
    uint64_t id = 0;
    std::string address;
    SockAddr sockaddr;
    std::string request;                 // moved into the send
    std::atomic<bool> abandoned{false};  // the caller timed out: do not start it
    std::promise<StatusOr<std::string>> result;
    // Progress thread only.
    bool done = false;
    ClientEp* ep = nullptr;
  };
  // The endpoint to one address; its error callback points here.
  struct ClientEp {
    Impl* impl = nullptr;
    std::string address;
    ucp_ep_h ep = nullptr;
    std::unordered_set<uint64_t> calls;  // in flight on this endpoint
  };

  std::unique_ptr<UcxContext> ucx;
  std::thread thread;
  std::atomic<uint64_t> next_call_id{1};

  // Commands from callers.
  std::mutex mu;
  bool stop = false;
  std::vector<std::shared_ptr<PendingCall>> to_start;
  std::vector<uint64_t> to_forget;  // timed-out calls

  // The progress thread's own state.
  std::unordered_map<std::string, std::unique_ptr<ClientEp>> eps;    // live, by address
  std::unordered_map<uint64_t, std::shared_ptr<PendingCall>> calls;  // in flight, by id
  std::vector<std::unique_ptr<ClientEp>> failed;                     // to close

  void Finish(PendingCall& call, StatusOr<std::string> result) {
    if (call.done) return;
    call.done = true;
    call.result.set_value(std::move(result));
    const uint64_t id = call.id;
    if (call.ep != nullptr) call.ep->calls.erase(id);
    call.ep = nullptr;
    calls.erase(id);  // may drop the last reference: `call` is not used after this
  }

  void FailEp(ClientEp* cep, const Status& error) {
    const std::unordered_set<uint64_t> ids = cep->calls;
    for (uint64_t id : ids) {
      auto it = calls.find(id);
      if (it != calls.end()) Finish(*it->second, error);
    }
    auto it = eps.find(cep->address);
    if (it != eps.end() && it->second.get() == cep) {
      failed.push_back(std::move(it->second));
      eps.erase(it);
    }
  }

  static void OnEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
    auto* cep = static_cast<ClientEp*>(arg);
    cep->impl->FailEp(cep, UcxUnavailable(UcxErrorText(cep->address, status)));
  }

  static ucs_status_t OnReply(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param) {
    auto* impl = static_cast<Impl*>(arg);
    RpcHeader rpc;
    auto it = impl->calls.end();
    if (header_length == sizeof(rpc)) {
      std::memcpy(&rpc, header, sizeof(rpc));
      it = impl->calls.find(rpc.call_id);
    }
    if (it == impl->calls.end()) {  // timed out and forgotten
      impl->ucx->DropAm(data, param);
      return UCS_OK;
    }
    impl->ucx->ReceiveAm(data, length, param,
                         [impl, call = it->second](ucs_status_t s, std::string bytes) {
                           if (s == UCS_OK) {
                             impl->Finish(*call, std::move(bytes));
                           } else {
                             impl->Finish(*call, UcxUnavailable(UcxErrorText(call->address, s)));
                           }
                         });
    return UCS_OK;
  }

  StatusOr<ClientEp*> Connect(const PendingCall& call) {
    auto it = eps.find(call.address);
    if (it != eps.end()) return it->second.get();
    auto cep = std::make_unique<ClientEp>();
    cep->impl = this;
    cep->address = call.address;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = call.sockaddr.get();
    params.sockaddr.addrlen = call.sockaddr.length;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = OnEpError;
    params.err_handler.arg = cep.get();
    const ucs_status_t s = ucp_ep_create(ucx->worker(), &params, &cep->ep);
    if (s != UCS_OK) return UcxUnavailable(UcxErrorText(call.address, s));
    ClientEp* raw = cep.get();
    eps[call.address] = std::move(cep);
    return raw;
  }

  void StartCall(const std::shared_ptr<PendingCall>& call) {
    if (call->abandoned.load()) return;
    StatusOr<ClientEp*> cep = Connect(*call);
    if (!cep.ok()) {
      call->done = true;
      call->result.set_value(cep.status());
      return;
    }
    call->ep = *cep;
    (*cep)->calls.insert(call->id);
    calls[call->id] = call;
    ucx->SendAm((*cep)->ep, kRpcRequestAmId, call->id, std::move(call->request),
                UCP_AM_SEND_FLAG_REPLY, [this, call](ucs_status_t s) {
                  if (s != UCS_OK) Finish(*call, UcxUnavailable(UcxErrorText(call->address, s)));
                });
  }

  void CloseFailed() {
    for (auto& cep : std::exchange(failed, {})) {
      ucp_ep_h ep = cep->ep;
      ucx->CloseEp(ep, /*force=*/true, std::move(cep));
    }
  }

  bool HasWork() {
    std::lock_guard<std::mutex> lock(mu);
    return stop || !to_start.empty() || !to_forget.empty() || !failed.empty();
  }

  void Run() {
    for (;;) {
      ucx->ProgressAll();
      std::vector<std::shared_ptr<PendingCall>> start;
      std::vector<uint64_t> forget;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) break;
        start.swap(to_start);
        forget.swap(to_forget);
      }
      for (const auto& call : start) StartCall(call);
      for (uint64_t id : forget) {
        auto it = calls.find(id);
        if (it != calls.end()) Finish(*it->second, UcxDeadlineExceeded("ucx: forgotten"));
      }
      CloseFailed();
      ucx->ReapClosed();
      ucx->Wait(1000, [this] { return HasWork(); });
    }
    // Shut down on this thread, which owns the worker: fail what is left, close every endpoint.
    const Status gone = UcxUnavailable("ucx: the client was destroyed");
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& call : std::exchange(to_start, {})) call->result.set_value(gone);
    }
    while (!calls.empty()) Finish(*calls.begin()->second, gone);
    CloseFailed();
    for (auto& [address, cep] : eps) {
      ucp_ep_h ep = cep->ep;
      ucx->CloseEp(ep, /*force=*/false, std::move(cep));
    }
    eps.clear();
    ucx->DrainCloses(1000);
  }
};

StatusOr<std::unique_ptr<UcxRpcClient>> UcxRpcClient::Create() {
  auto impl = std::make_unique<Impl>();
  DI_ASSIGN_OR_RETURN(impl->ucx, UcxContext::Create());
  DI_RETURN_IF_ERROR(impl->ucx->SetAmHandler(kRpcReplyAmId, Impl::OnReply, impl.get()));
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<UcxRpcClient>(new UcxRpcClient(std::move(impl)));
}

UcxRpcClient::UcxRpcClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UcxRpcClient::~UcxRpcClient() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->ucx->Signal();
  impl_->thread.join();
}

StatusOr<std::string> UcxRpcClient::Call(const std::string& address, std::string_view request,
                                         double timeout_s) {
  if (!(timeout_s > 0) || !std::isfinite(timeout_s)) {
    return InvalidArgument("ucx: " + address + ": timeout must be > 0 s");
  }
  DI_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(address));
  auto call = std::make_shared<Impl::PendingCall>();
  DI_ASSIGN_OR_RETURN(call->sockaddr, ResolveSockAddr(host_port.first, host_port.second));
  call->id = impl_->next_call_id.fetch_add(1);
  call->address = address;
  call->request.assign(request);
  std::future<StatusOr<std::string>> result = call->result.get_future();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->to_start.push_back(call);
  }
  impl_->ucx->Signal();
  if (result.wait_for(std::chrono::duration<double>(timeout_s)) == std::future_status::ready) {
    return result.get();
  }
  call->abandoned.store(true);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->to_forget.push_back(call->id);
  }
  impl_->ucx->Signal();
  std::ostringstream text;
  text << "ucx: " << address << ": deadline exceeded: no reply within " << timeout_s << " s";
  return UcxDeadlineExceeded(text.str());
}

}  // namespace deepinfer::dist
