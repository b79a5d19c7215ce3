#include "server/http_server.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "server/asio.h"
#include "server/exchange.h"
#include "server/routes.h"

namespace deepinfer::server {
namespace {

using tcp = net::ip::tcp;
using namespace std::chrono_literals;

constexpr auto kWriteTimeout = 60s;
constexpr auto kBodyTimeout = 60s;

// A response on one connection (the Exchange the handlers answer through).
class ConnectionExchange : public Exchange {
 public:
  ConnectionExchange(beast::tcp_stream& stream, const http::request<http::string_body>& request)
      : stream_(stream), request_(request), keep_alive_(request.keep_alive()) {}
  ~ConnectionExchange() override { StopWatching(); }
  ConnectionExchange(const ConnectionExchange&) = delete;
  ConnectionExchange& operator=(const ConnectionExchange&) = delete;

  // A wait for readability on the idle socket: the client sends nothing while it waits for a
  // non-streaming answer, so readable means closed (a peek reads 0 bytes or fails) or a
  // pipelined request (bytes: the watch just ends). The completion only touches the socket
  // while the watch is active, i.e. while this exchange (and so the stream) is alive.
  void WatchClose(const std::function<void()>& on_close) override {
    StopWatching();
    auto watch = std::make_shared<Watch>();
    watch->on_close = on_close;
    watch_ = watch;
    tcp::socket& socket = stream_.socket();
    socket.async_wait(tcp::socket::wait_read, [watch, &socket](const beast::error_code& ec) {
      if (!watch->active) return;
      watch->active = false;
      if (!ec) {
        char c = 0;
        beast::error_code peek_ec;
        const size_t n = socket.receive(net::buffer(&c, 1), tcp::socket::message_peek, peek_ec);
        if (!peek_ec && n > 0) return;  // data, not a close
      }
      watch->on_close();
    });
  }
  void StopWatching() override {
    if (!watch_ || !watch_->active) return;
    watch_->active = false;
    beast::error_code ec;
    stream_.socket().cancel(ec);  // the only pending operation on the socket is the wait
  }

  const http::request<http::string_body>& request() const override { return request_; }
  bool usable() const { return !broken_ && keep_alive_; }

  net::awaitable<void> Send(int status, std::string content_type, std::string body,
                            Headers headers) override {
    StopWatching();
    http::response<http::string_body> res{static_cast<http::status>(status), request_.version()};
    res.set(http::field::server, "deepinfer");
    res.set(http::field::content_type, content_type);
    for (auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(keep_alive_);
    res.body() = std::move(body);
    res.prepare_payload();
    status_ = status;
    stream_.expires_after(kWriteTimeout);
    beast::error_code ec;
    co_await http::async_write(stream_, res, net::redirect_error(net::use_awaitable, ec));
    if (ec) broken_ = true;
  }

  net::awaitable<bool> StartStream() override {
    StopWatching();
    http::response<http::empty_body> res{http::status::ok, request_.version()};
    res.set(http::field::server, "deepinfer");
    res.set(http::field::content_type, "text/event-stream");
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(keep_alive_);
    res.chunked(true);
    status_ = 200;
    http::response_serializer<http::empty_body> sr{res};
    stream_.expires_after(kWriteTimeout);
    beast::error_code ec;
    co_await http::async_write_header(stream_, sr, net::redirect_error(net::use_awaitable, ec));
    if (ec) broken_ = true;
    co_return !broken_;
  }

  net::awaitable<bool> SendEvent(std::string data) override {
    if (broken_) co_return false;
    stream_.expires_after(kWriteTimeout);
    beast::error_code ec;
    co_await net::async_write(stream_, http::make_chunk(net::buffer(data)),
                              net::redirect_error(net::use_awaitable, ec));
    if (ec) broken_ = true;
    co_return !broken_;
  }

  net::awaitable<void> EndStream() override {
    if (broken_) co_return;
    stream_.expires_after(kWriteTimeout);
    beast::error_code ec;
    co_await net::async_write(stream_, http::make_chunk_last(),
                              net::redirect_error(net::use_awaitable, ec));
    if (ec) broken_ = true;
  }

 private:
  struct Watch {
    bool active = true;
    std::function<void()> on_close;
  };

  beast::tcp_stream& stream_;
  const http::request<http::string_body>& request_;
  bool keep_alive_;
  bool broken_ = false;
  std::shared_ptr<Watch> watch_;
};

using Handler = net::awaitable<void> (*)(ServerContext&, Exchange&);

struct Route {
  http::verb method;
  std::string_view path;
  Handler handler;
  ApiStyle style;
};

const Route kRoutes[] = {
    {http::verb::post, "/v1/chat/completions", HandleChatCompletions, ApiStyle::kOpenAi},
    {http::verb::post, "/v1/completions", HandleCompletions, ApiStyle::kOpenAi},
    {http::verb::post, "/v1/messages", HandleMessages, ApiStyle::kAnthropic},
    {http::verb::post, "/v1/messages/count_tokens", HandleCountTokens, ApiStyle::kAnthropic},
    {http::verb::get, "/v1/models", HandleModels, ApiStyle::kOpenAi},
    {http::verb::post, "/tokenize", HandleTokenize, ApiStyle::kOpenAi},
    {http::verb::post, "/detokenize", HandleDetokenize, ApiStyle::kOpenAi},
    {http::verb::get, "/health", HandleHealth, ApiStyle::kOpenAi},
    {http::verb::get, "/metrics", HandleMetrics, ApiStyle::kOpenAi},
    {http::verb::get, "/internal/info", HandleInternalInfo, ApiStyle::kOpenAi},
    {http::verb::post, "/internal/pd/prefill", HandlePdPrefill, ApiStyle::kOpenAi},
};

std::string_view PathOf(std::string_view target) {
  const size_t q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

ApiStyle StyleOf(std::string_view path) {
  return path.starts_with("/v1/messages") ? ApiStyle::kAnthropic : ApiStyle::kOpenAi;
}

// Constant-time comparison (the key must not leak through timing).
bool SameKey(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool Authorized(const std::string& key, const http::request<http::string_body>& req) {
  if (key.empty()) return true;
  const std::string_view auth(req[http::field::authorization].data(),
                              req[http::field::authorization].size());
  if (auth.starts_with("Bearer ") && SameKey(auth.substr(7), key)) return true;
  const auto x = req["x-api-key"];
  return !x.empty() && SameKey(std::string_view(x.data(), x.size()), key);
}

class Server {
 public:
  Server(const HttpApp& app, const ServerOptions& options)
      : app_(app), options_(options), acceptor_(io_), signals_(io_, SIGINT, SIGTERM) {}

  Status Run() {
    beast::error_code ec;
    const auto address = net::ip::make_address(options_.host, ec);
    if (ec) return InvalidArgument("--host: not an IP address: " + options_.host);
    const tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return InvalidArgument("cannot listen on " + options_.host + ":" +
                             std::to_string(options_.port) + ": " + ec.message());
    }
    signals_.async_wait([this](const beast::error_code& e, int) {
      if (!e) BeginDrain();
    });
    net::co_spawn(io_, Start(acceptor_.local_endpoint().port()), net::detached);
    io_.run();
    // Every connection has closed. Stop what still posts work (serve: the engine retires what
    // is left, so no output callback survives) and run what it posted meanwhile before io_
    // goes away.
    if (app_.on_closed) app_.on_closed();
    io_.restart();
    io_.poll();
    return Status::Ok();
  }

 private:
  net::awaitable<void> Start(uint16_t port) {
    if (app_.start) co_await app_.start();
    if (options_.on_listening) options_.on_listening(options_.host, port);
    co_await Accept();
  }

  net::awaitable<void> Accept() {
    for (;;) {
      beast::error_code ec;
      tcp::socket socket =
          co_await acceptor_.async_accept(net::redirect_error(net::use_awaitable, ec));
      if (draining_) co_return;
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
        continue;
      }
      net::co_spawn(io_, Session(std::move(socket)), net::detached);
    }
  }

  void BeginDrain() {
    if (draining_) return;
    draining_ = true;
    std::fprintf(stderr, "deepinfer %s: draining (%d connections)\n", app_.name.c_str(), sessions_);
    if (app_.on_drain) app_.on_drain();
    beast::error_code ec;
    acceptor_.close(ec);
    for (beast::tcp_stream* s : idle_) s->socket().close(ec);
    net::co_spawn(io_, Drain(), net::detached);
  }

  net::awaitable<void> Drain() {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(options_.drain_timeout_s));
    net::steady_timer timer(io_);
    bool cancelled = false;
    while (sessions_ > 0) {
      if (!cancelled && std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr, "deepinfer %s: drain timeout, cancelling %d requests\n",
                     app_.name.c_str(), active_);
        if (app_.cancel_all) app_.cancel_all();
        cancelled = true;
      }
      timer.expires_after(20ms);
      beast::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    signals_.cancel();
  }

  // Answers 413 and closes. A body of known length (up to 256 MiB) is read and dropped first,
  // so that a client that sends its whole body before reading gets the answer, not a reset.
  net::awaitable<void> RejectTooLarge(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                      std::optional<uint64_t> length, unsigned version,
                                      ApiStyle style) {
    beast::error_code ec;
    if (length && *length <= (uint64_t{256} << 20)) {
      uint64_t left = *length;
      const uint64_t buffered = std::min<uint64_t>(left, buffer.size());
      buffer.consume(buffered);
      left -= buffered;
      std::array<char, 65536> sink;
      stream.expires_after(kBodyTimeout);
      while (left > 0 && !ec) {
        const size_t n = co_await stream.async_read_some(
            net::buffer(sink.data(), std::min<uint64_t>(left, sink.size())),
            net::redirect_error(net::use_awaitable, ec));
        left -= std::min<uint64_t>(left, n);
      }
      if (ec) co_return;
    }
    ApiError e;
    e.http_status = 413;
    e.message = "request body larger than " + std::to_string(options_.max_body_bytes) + " bytes";
    http::response<http::string_body> res{http::status::payload_too_large, version};
    res.set(http::field::server, "deepinfer");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(false);
    res.body() = DumpJson(ErrorBody(style, e));
    res.prepare_payload();
    stream.expires_after(kWriteTimeout);
    co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
  }

  net::awaitable<void> Session(tcp::socket socket) {
    ++sessions_;
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    beast::error_code ec;
    for (;;) {
      if (draining_) break;
      http::request_parser<http::string_body> parser;
      parser.header_limit(64 * 1024);
      // Beast would refuse a too large Content-Length while reading the header; the limit is set
      // after it, so that the client gets a 413 (RejectTooLarge) instead of a closed connection.
      // (Not boost::none: Boost 1.74 compares `length > none`, which is always true.)
      parser.body_limit(std::numeric_limits<uint64_t>::max());
      stream.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options_.idle_timeout_s)));
      idle_.insert(&stream);
      co_await http::async_read_header(stream, buffer, parser,
                                       net::redirect_error(net::use_awaitable, ec));
      idle_.erase(&stream);
      if (ec) break;
      const std::string path(
          PathOf(std::string_view(parser.get().target().data(), parser.get().target().size())));
      const ApiStyle style = StyleOf(path);
      const auto length = parser.content_length();
      if (length && *length > static_cast<uint64_t>(options_.max_body_bytes)) {
        Count(path, 413);
        co_await RejectTooLarge(stream, buffer, std::optional<uint64_t>(*length),
                                parser.get().version(), style);
        break;
      }
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
        co_await http::async_write(stream, cont, net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
      }
      parser.body_limit(static_cast<uint64_t>(options_.max_body_bytes));
      stream.expires_after(kBodyTimeout);
      co_await http::async_read(stream, buffer, parser,
                                net::redirect_error(net::use_awaitable, ec));
      if (ec == http::error::body_limit) {
        Count(path, 413);
        co_await RejectTooLarge(stream, buffer, std::nullopt, parser.get().version(), style);
        break;
      }
      if (ec) break;
      stream.expires_never();
      http::request<http::string_body> request = parser.release();
      ConnectionExchange ex(stream, request);
      ++active_;
      co_await Dispatch(path, style, ex);
      --active_;
      if (!ex.usable()) break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    --sessions_;
  }

  void Count(const std::string& route, int status) {
    if (app_.count_request) app_.count_request(route, status);
  }

  net::awaitable<void> Dispatch(const std::string& path, ApiStyle style, ConnectionExchange& ex) {
    const HttpRoute* route = nullptr;
    bool path_known = false;
    for (const HttpRoute& r : app_.routes) {
      if (r.path != path) continue;
      path_known = true;
      if (r.method == ex.request().method()) route = &r;
    }
    const std::string metric_route = path_known ? path : "other";
    if (!route) {
      ApiError e;
      e.http_status = path_known ? 405 : 404;
      e.message = path_known ? "method not allowed" : "no route " + path;
      co_await ex.SendError(style, e);
    } else if (route->needs_key && !Authorized(options_.api_key, ex.request())) {
      ApiError e;
      e.http_status = 401;
      e.message = "missing or invalid API key (Authorization: Bearer KEY)";
      Exchange::Headers headers;
      headers.emplace_back("WWW-Authenticate", "Bearer");
      co_await ex.SendError(style, e, std::move(headers));
    } else {
      std::string failure;
      try {
        co_await route->handler(ex);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      if (!failure.empty()) {
        // A handler bug must not take the server down; the request gets a 500 if it can.
        std::fprintf(stderr, "deepinfer %s: %s: %s\n", app_.name.c_str(), path.c_str(),
                     failure.c_str());
        if (ex.status() == 0) {
          ApiError err;
          err.http_status = 500;
          err.message = "internal error: " + failure;
          co_await ex.SendError(style, err);
        }
      }
    }
    Count(metric_route, ex.status());
  }

  const HttpApp& app_;
  ServerOptions options_;
  net::io_context io_{1};
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  std::set<beast::tcp_stream*> idle_;  // connections waiting for a request
  bool draining_ = false;
  int sessions_ = 0;
  int active_ = 0;
};

}  // namespace

Status ServeHttp(const HttpApp& app, const ServerOptions& options) {
  Server server(app, options);
  return server.Run();
}

Status Serve(ServerContext& ctx, const ServerOptions& options) {
  HttpApp app;
  app.name = "serve";
  for (const Route& r : kRoutes) {
    const Handler handler = r.handler;
    app.routes.push_back({.method = r.method,
                          .path = std::string(r.path),
                          .handler = [&ctx, handler](Exchange& ex) { return handler(ctx, ex); },
                          .needs_key = r.path != "/health"});
  }
  app.cancel_all = [&ctx] { ctx.loop->CancelAll(); };
  app.on_closed = [&ctx] { ctx.loop->Stop(); };
  app.count_request = [&ctx](const std::string& route, int status) {
    ctx.metrics->CountRequest(route, status);
  };
  return ServeHttp(app, options);
}

}  // namespace deepinfer::server
