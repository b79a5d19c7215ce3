#include "dist/ucx_context.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/parse_port.h"

namespace deepinfer::dist {

std::string UcxErrorText(std::string_view where, ucs_status_t status) {
  return "ucx: " + std::string(where) + ": " + ucs_status_string(status);
}

Status UcxUnavailable(std::string message) { return Internal(std::move(message)); }

Status UcxDeadlineExceeded(std::string message) { return ResourceExhausted(std::move(message)); }

StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgument("ucx: '" + std::string(address) + "' is not host:port");
  }
  std::string_view host = address.substr(0, colon);
  const std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::optional<uint16_t> port = ParsePort(port_text);
  if (!port) return InvalidArgument("ucx: '" + std::string(address) + "': bad port");
  return std::make_pair(std::string(host), *port);
}

StatusOr<SockAddr> ResolveSockAddr(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = host.empty() ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return InvalidArgument("ucx: " + host + ":" + service + ": " + gai_strerror(rc));
  }
  const addrinfo* pick = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  SockAddr out;
  CHECK_LE(pick->ai_addrlen, sizeof(out.storage));
  std::memcpy(&out.storage, pick->ai_addr, pick->ai_addrlen);
  out.length = pick->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

uint16_t SockAddrPort(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  }
  return 0;
}

StatusOr<std::unique_ptr<UcxContext>> UcxContext::Create() {
  std::unique_ptr<UcxContext> ctx(new UcxContext());
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("reading the UCX_* configuration", s));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  s = ucp_init(&params, config, &ctx->context_);
  ucp_config_release(config);
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("ucp_init", s));

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  s = ucp_worker_create(ctx->context_, &worker_params, &ctx->worker_);
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("ucp_worker_create", s));
  s = ucp_worker_get_efd(ctx->worker_, &ctx->efd_);
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("ucp_worker_get_efd", s));
  return ctx;
}

UcxContext::~UcxContext() {
  for (auto& closing : closing_) ucp_request_free(closing.first);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxContext::ProgressAll() {
  while (ucp_worker_progress(worker_) != 0) {
  }
}

void UcxContext::Wait(int timeout_ms, const std::function<bool()>& has_work) {
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) return;  // events arrived since the last progress
  CHECK(s == UCS_OK) << UcxErrorText("ucp_worker_arm", s);
  if (has_work()) return;
  pollfd fd{};
  fd.fd = efd_;
  fd.events = POLLIN;
  const int rc = poll(&fd, 1, timeout_ms);
  CHECK(rc >= 0 || errno == EINTR) << "poll on the UCX worker: " << ErrnoMessage(errno);
}

void UcxContext::Signal() {
  const ucs_status_t s = ucp_worker_signal(worker_);
  CHECK(s == UCS_OK) << UcxErrorText("ucp_worker_signal", s);
}

Status UcxContext::SetAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                     UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;
  param.cb = cb;
  param.arg = arg;
  const ucs_status_t s = ucp_worker_set_am_recv_handler(worker_, &param);
  if (s != UCS_OK) return UcxUnavailable(UcxErrorText("ucp_worker_set_am_recv_handler", s));
  return Status::Ok();
}

namespace {

// A send in flight: what UCX reads until the completion callback.
struct SendState {
  RpcHeader header;
  std::string bytes;
  std::function<void(ucs_status_t)> done;
};

void OnSendDone(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<SendState> state(static_cast<SendState*>(user_data));
  ucp_request_free(request);
  state->done(status);
}

// A rendezvous receive in flight: the buffer UCX writes into.
struct RecvState {
  std::string bytes;
  std::function<void(ucs_status_t, std::string)> done;
};

void OnRecvDone(void* request, ucs_status_t status, size_t /*length*/, void* user_data) {
  std::unique_ptr<RecvState> state(static_cast<RecvState*>(user_data));
  ucp_request_free(request);
  state->done(status, status == UCS_OK ? std::move(state->bytes) : std::string());
}

}  // namespace

void UcxContext::SendAm(ucp_ep_h ep, unsigned id, uint64_t call_id, std::string bytes,
                        uint32_t flags, std::function<void(ucs_status_t)> done) {
  auto state = std::make_unique<SendState>();
  state->header.call_id = call_id;
  state->bytes = std::move(bytes);
  state->done = std::move(done);
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = flags;
  param.cb.send = OnSendDone;
  param.user_data = state.get();
  void* request = ucp_am_send_nbx(ep, id, &state->header, sizeof(state->header),
                                  state->bytes.data(), state->bytes.size(), &param);
  if (UCS_PTR_IS_PTR(request)) {
    (void)state.release();  // OnSendDone owns it now
    return;
  }
  state->done(UCS_PTR_STATUS(request));  // finished at once: UCS_OK or the error
}

void UcxContext::ReceiveAm(void* data, size_t length, const ucp_am_recv_param_t* param,
                           std::function<void(ucs_status_t, std::string)> done) {
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
    done(UCS_OK, std::string(static_cast<const char*>(data), length));
    return;
  }
  auto state = std::make_unique<RecvState>();
  state->bytes.resize(length);
  state->done = std::move(done);
  ucp_request_param_t rparam{};
  rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rparam.cb.recv_am = OnRecvDone;
  rparam.user_data = state.get();
  void* request = ucp_am_recv_data_nbx(worker_, data, state->bytes.data(), length, &rparam);
  if (UCS_PTR_IS_PTR(request)) {
    (void)state.release();  // OnRecvDone owns it now
    return;
  }
  const ucs_status_t s = UCS_PTR_STATUS(request);
  state->done(s, s == UCS_OK ? std::move(state->bytes) : std::string());
}

void UcxContext::DropAm(void* data, const ucp_am_recv_param_t* param) {
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) ucp_am_data_release(worker_, data);
}

void UcxContext::CloseEp(ucp_ep_h ep, bool force, std::shared_ptr<void> keep) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  void* request = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(request)) closing_.emplace_back(request, std::move(keep));
}

bool UcxContext::ReapClosed() {
  std::erase_if(closing_, [](const std::pair<void*, std::shared_ptr<void>>& closing) {
    if (ucp_request_check_status(closing.first) == UCS_INPROGRESS) return false;
    ucp_request_free(closing.first);
    return true;
  });
  return closing_.empty();
}

void UcxContext::DrainCloses(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!ReapClosed() && std::chrono::steady_clock::now() < deadline) {
    ProgressAll();
    Wait(1, [] { return false; });
  }
}

}  // namespace deepinfer::dist
