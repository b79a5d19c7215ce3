#include "router/upstream.h"

#include <limits>
#include <utility>
#include <vector>

namespace deepinfer::router {

using tcp = net::ip::tcp;

void UpstreamCalls::CloseAll() {
  closing_ = true;
  const std::vector<UpstreamCall*> calls(calls_.begin(), calls_.end());
  for (UpstreamCall* c : calls) c->Close();
}

UpstreamCall::UpstreamCall(net::any_io_executor executor, UpstreamCalls* registry)
    : stream_(std::move(executor)), registry_(registry) {
  // No body limit of the parser's own (Boost 1.74 compares `length > none`, so not none):
  // a long stream is relayed piece by piece; ReadBody applies its own limit.
  parser_.body_limit(std::numeric_limits<uint64_t>::max());
  if (registry_ != nullptr) registry_->calls_.insert(this);
}

UpstreamCall::~UpstreamCall() {
  if (registry_ != nullptr) registry_->calls_.erase(this);
  beast::error_code ec;
  stream_.socket().close(ec);
}

void UpstreamCall::Close() {
  closed_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);  // the pending operation completes with operation_aborted
}

bool UpstreamCall::Fail(const beast::error_code& ec, Failure kind) {
  if (closed_) {
    failure_ = Failure::kClosed;
    error_ = "closed";
  } else if (ec == beast::error::timeout) {
    failure_ = kind == Failure::kConnect ? Failure::kConnect : Failure::kTimeout;
    error_ = kind == Failure::kConnect ? "connect timeout" : "no answer within the read timeout";
  } else {
    failure_ = kind;
    error_ = ec.message();
  }
  return false;
}

net::awaitable<bool> UpstreamCall::Send(const Endpoint& to,
                                        http::request<http::string_body> request,
                                        const UpstreamTimeouts& timeouts) {
  timeouts_ = timeouts;
  if (registry_ != nullptr && registry_->closing()) closed_ = true;
  if (closed_) co_return Fail({}, Failure::kClosed);
  beast::error_code ec;
  tcp::resolver resolver(stream_.get_executor());
  const auto endpoints = co_await resolver.async_resolve(
      to.host, std::to_string(to.port), net::redirect_error(net::use_awaitable, ec));
  if (ec || closed_) co_return Fail(ec, Failure::kConnect);
  stream_.expires_after(timeouts_.connect);
  co_await stream_.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec || closed_) co_return Fail(ec, Failure::kConnect);
  stream_.socket().set_option(tcp::no_delay(true), ec);
  stream_.expires_after(timeouts_.read);
  co_await http::async_write(stream_, request, net::redirect_error(net::use_awaitable, ec));
  if (ec || closed_) co_return Fail(ec, Failure::kConnection);
  co_return true;
}

net::awaitable<bool> UpstreamCall::ReadHeader() {
  beast::error_code ec;
  stream_.expires_after(timeouts_.read);
  co_await http::async_read_header(stream_, buffer_, parser_,
                                   net::redirect_error(net::use_awaitable, ec));
  if (ec || closed_) co_return Fail(ec, Failure::kConnection);
  co_return true;
}

std::string UpstreamCall::Header(std::string_view name) const {
  const auto v = parser_.get()[beast::string_view(name.data(), name.size())];
  return std::string(v.data(), v.size());
}

bool UpstreamCall::event_stream() const {
  const std::string type = Header("Content-Type");
  return type.rfind("text/event-stream", 0) == 0;
}

net::awaitable<bool> UpstreamCall::ReadSome(std::string* piece) {
  piece->clear();
  while (!parser_.is_done()) {
    parser_.get().body().data = chunk_.data();
    parser_.get().body().size = chunk_.size();
    beast::error_code ec;
    stream_.expires_after(timeouts_.read);
    co_await http::async_read_some(stream_, buffer_, parser_,
                                   net::redirect_error(net::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec || closed_) co_return Fail(ec, Failure::kConnection);
    const size_t n = chunk_.size() - parser_.get().body().size;
    if (n > 0) {
      piece->assign(chunk_.data(), n);
      co_return true;
    }
  }
  co_return true;
}

net::awaitable<bool> UpstreamCall::ReadBody(std::string* body, size_t limit) {
  body->clear();
  std::string piece;
  for (;;) {
    if (!co_await ReadSome(&piece)) co_return false;
    if (piece.empty()) co_return true;
    if (body->size() + piece.size() > limit) {
      failure_ = Failure::kConnection;
      error_ = "answer larger than " + std::to_string(limit) + " bytes";
      co_return false;
    }
    *body += piece;
  }
}

namespace {

bool HopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::transfer_encoding:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
    case http::field::host:
    case http::field::content_length:
    case http::field::expect:
      return true;
    default:
      return false;
  }
}

std::string HostField(const Endpoint& to) {
  const bool v6 = to.host.find(':') != std::string::npos;
  return (v6 ? "[" + to.host + "]" : to.host) + ":" + std::to_string(to.port);
}

}  // namespace

http::request<http::string_body> MakeUpstreamRequest(const http::request<http::string_body>& client,
                                                     const Endpoint& to,
                                                     const std::string& worker_api_key) {
  http::request<http::string_body> req{client.method(), client.target(), 11};
  for (const auto& f : client) {
    if (HopByHop(f.name())) continue;
    if (!worker_api_key.empty() &&
        (f.name() == http::field::authorization || beast::iequals(f.name_string(), "x-api-key"))) {
      continue;
    }
    req.insert(f.name_string(), f.value());
  }
  req.set(http::field::host, HostField(to));
  if (!worker_api_key.empty()) req.set(http::field::authorization, "Bearer " + worker_api_key);
  req.keep_alive(false);
  req.body() = client.body();
  req.prepare_payload();
  return req;
}

http::request<http::string_body> MakeRouterRequest(http::verb method, std::string_view target,
                                                   const Endpoint& to,
                                                   const std::string& worker_api_key,
                                                   std::string json_body) {
  http::request<http::string_body> req{method, beast::string_view(target.data(), target.size()),
                                       11};
  req.set(http::field::host, HostField(to));
  req.set(http::field::user_agent, "deepinfer-route");
  if (!worker_api_key.empty()) req.set(http::field::authorization, "Bearer " + worker_api_key);
  if (method == http::verb::post) req.set(http::field::content_type, "application/json");
  req.keep_alive(false);
  req.body() = std::move(json_body);
  req.prepare_payload();
  return req;
}

}  // namespace deepinfer::router
