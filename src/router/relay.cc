#include "router/relay.h"

#include <utility>

#include "router/retry.h"

namespace deepinfer::router {
namespace {

// The fields of a worker's whole answer that the client gets too.
server::Exchange::Headers PassedHeaders(const UpstreamCall& up) {
  server::Exchange::Headers h;
  for (const char* name : {"Retry-After", "WWW-Authenticate"}) {
    std::string v = up.Header(name);
    if (!v.empty()) h.emplace_back(name, std::move(v));
  }
  return h;
}

}  // namespace

net::awaitable<RelayResult> Relay(server::Exchange& ex, RelayCall call) {
  UpstreamCall up(co_await net::this_coro::executor, call.calls);
  bool client_gone = false;
  const auto watch = [&ex, &up, &client_gone] {
    ex.WatchClose([&up, &client_gone] {
      client_gone = true;
      up.Close();
    });
  };
  RelayResult r;
  const std::string& url = call.to->url;
  // A failure before any byte reached the client.
  const auto early_failure = [&](std::string error) -> net::awaitable<RelayResult> {
    ex.StopWatching();
    r.error = url + ": " + std::move(error);
    if (client_gone) {
      r.outcome = RelayOutcome::kClientGone;
      co_return r;
    }
    if (call.may_retry) {
      r.outcome = RelayOutcome::kRetry;
      co_return r;
    }
    if (call.resume) {  // the client's stream is open: no error response any more
      r.outcome = RelayOutcome::kBroken;
      co_return r;
    }
    server::ApiError e;
    e.http_status = 502;
    e.message = "worker " + r.error;
    co_await ex.SendError(call.style, e);
    r.outcome = RelayOutcome::kFailed;
    co_return r;
  };

  watch();
  if (!co_await up.Send(*call.to, std::move(call.request), call.timeouts)) {
    r.connect_failed = up.failure() == UpstreamCall::Failure::kConnect;
    co_return co_await early_failure(up.error());
  }
  if (!co_await up.ReadHeader()) co_return co_await early_failure(up.error());
  const int status = up.status();
  r.status = status;

  if (call.resume && (status != 200 || !up.event_stream())) {
    co_return co_await early_failure("answered " + std::to_string(status) + " to a resumed stream");
  }
  if (status == 200 && up.event_stream()) {
    bool started = call.resume;
    bool got_any = false;  // a resumed stream: this worker sent a byte
    std::string piece;
    for (;;) {
      if (!co_await up.ReadSome(&piece)) {
        if (client_gone) {
          ex.StopWatching();
          r.outcome = RelayOutcome::kClientGone;
          co_return r;
        }
        if (!started || (call.resume && !got_any)) co_return co_await early_failure(up.error());
        ex.StopWatching();
        r.error = url + ": " + up.error();
        r.outcome = RelayOutcome::kBroken;
        co_return r;
      }
      if (piece.empty()) break;  // the end of the worker's stream
      if (!got_any && call.on_first_piece) call.on_first_piece();
      if (!started) {
        started = true;
        if (!co_await ex.StartStream()) {  // (stops the watch)
          up.Close();
          r.outcome = RelayOutcome::kClientGone;
          co_return r;
        }
        watch();
      }
      got_any = true;
      if (call.resume) {
        StatusOr<std::string> rest = call.ledger->Continue(piece);
        if (!rest.ok()) {
          ex.StopWatching();
          up.Close();
          r.error = url + ": " + rest.status().message();
          r.outcome = RelayOutcome::kBroken;
          r.diverged = true;
          co_return r;
        }
        if (rest->empty()) continue;
        piece = *std::move(rest);
      } else if (call.ledger != nullptr) {
        call.ledger->Sent(piece);
      }
      r.bytes_sent += static_cast<int64_t>(piece.size());
      if (!co_await ex.SendEvent(std::move(piece))) {
        ex.StopWatching();
        up.Close();
        r.outcome = RelayOutcome::kClientGone;
        co_return r;
      }
    }
    ex.StopWatching();
    if (!started && !co_await ex.StartStream()) {
      r.outcome = RelayOutcome::kClientGone;
      co_return r;
    }
    co_await ex.EndStream();
    r.outcome = RelayOutcome::kAnswered;
    co_return r;
  }

  std::string body;
  if (!co_await up.ReadBody(&body)) co_return co_await early_failure(up.error());
  ex.StopWatching();
  if (client_gone) {
    r.outcome = RelayOutcome::kClientGone;
    co_return r;
  }
  if (RetryableStatus(status) && call.may_retry) {
    r.error = url + " answered " + std::to_string(status) + ": " + body.substr(0, 300);
    r.outcome = RelayOutcome::kRetry;
    co_return r;
  }
  std::string type = up.Header("Content-Type");
  if (type.empty()) type = "application/json";
  co_await ex.Send(status, std::move(type), std::move(body), PassedHeaders(up));
  r.outcome = RelayOutcome::kAnswered;
  co_return r;
}

net::awaitable<FetchResult> Fetch(const Endpoint& to, http::request<http::string_body> request,
                                  UpstreamTimeouts timeouts, UpstreamCalls* calls,
                                  server::Exchange* watch) {
  UpstreamCall up(co_await net::this_coro::executor, calls);
  FetchResult f;
  if (watch != nullptr) {
    watch->WatchClose([&up, &f] {
      f.client_gone = true;
      up.Close();
    });
  }
  bool ok = co_await up.Send(to, std::move(request), timeouts);
  f.connect_failed = !ok && up.failure() == UpstreamCall::Failure::kConnect;
  ok = ok && co_await up.ReadHeader();
  ok = ok && co_await up.ReadBody(&f.body);
  if (watch != nullptr) watch->StopWatching();
  if (ok) {
    f.status = up.status();
  } else {
    f.body.clear();
    f.error = to.url + ": " + up.error();
  }
  co_return f;
}

}  // namespace deepinfer::router
