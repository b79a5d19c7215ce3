#include "router/health_checker.h"

#include <cstdio>
#include <utility>

#include "router/relay.h"

namespace deepinfer::router {

HealthChecker::HealthChecker(std::vector<Worker*> workers, HealthCheckOptions options)
    : workers_(std::move(workers)), options_(std::move(options)) {}

net::awaitable<HealthChecker::Probe> HealthChecker::ProbeOnce(Worker& w) {
  Probe p;
  const FetchResult health =
      co_await Fetch(w.endpoint(), MakeRouterRequest(http::verb::get, "/health", w.endpoint(), {}),
                     options_.timeouts, &calls_);
  if (health.status != 200) co_return p;
  const FetchResult info = co_await Fetch(
      w.endpoint(),
      MakeRouterRequest(http::verb::get, "/internal/info", w.endpoint(), options_.worker_api_key),
      options_.timeouts, &calls_);
  if (info.status == 404) {  // a worker without the route: healthy, its info unknown
    p.pass = true;
    co_return p;
  }
  if (info.status != 200) {
    if ((info.status == 401 || info.status == 403) && warned_auth_.insert(&w).second) {
      std::fprintf(
          stderr, "deepinfer route: worker %s refuses /internal/info (%d): give --worker-api-key\n",
          w.url().c_str(), info.status);
    }
    co_return p;
  }
  const nlohmann::json body = nlohmann::json::parse(info.body, nullptr, /*allow_exceptions=*/false);
  StatusOr<WorkerInfo> parsed = ParseWorkerInfo(body);
  if (!parsed.ok()) {
    std::fprintf(stderr, "deepinfer route: worker %s: %s\n", w.url().c_str(),
                 parsed.status().message().c_str());
    co_return p;
  }
  p.pass = true;
  p.info = *std::move(parsed);
  co_return p;
}

void HealthChecker::Judge(Worker& w) {
  if (!w.info()) return;
  if (!reference_) {
    reference_ = *w.info();
    std::fprintf(stderr, "deepinfer route: model \"%s\", fingerprint %s (from %s)\n",
                 reference_->model.c_str(), reference_->fingerprint.c_str(), w.url().c_str());
  }
  const Status s = CheckCompatible(*reference_, *w.info());
  if (!s.ok() && !w.refused()) {
    std::fprintf(stderr, "deepinfer route: refusing worker %s: %s\n", w.url().c_str(),
                 s.message().c_str());
  } else if (s.ok() && w.refused()) {
    std::fprintf(stderr, "deepinfer route: worker %s now matches; no longer refused\n",
                 w.url().c_str());
  }
  w.SetRefused(!s.ok());
}

void HealthChecker::Record(Worker& w, bool pass) {
  switch (w.RecordProbe(pass)) {
    case HealthTracker::Change::kUp:
      std::fprintf(stderr, "deepinfer route: worker %s is up\n", w.url().c_str());
      break;
    case HealthTracker::Change::kDown:
      std::fprintf(stderr, "deepinfer route: worker %s is down\n", w.url().c_str());
      break;
    case HealthTracker::Change::kNone:
      break;
  }
}

void HealthChecker::Apply(Worker& w, const Probe& p) {
  if (p.info) {
    w.SetInfo(*p.info);
    if (first_round_done_) Judge(w);
  } else if (p.pass && first_round_done_) {
    WarnNoInfo(w);
  }
  Record(w, p.pass);
}

void HealthChecker::WarnNoInfo(const Worker& w) {
  if (!warned_no_info_.insert(&w).second) return;
  std::fprintf(stderr,
               "deepinfer route: worker %s has no /internal/info: its model is not checked, "
               "and cache-aware routing falls back to power of two choices\n",
               w.url().c_str());
}

void HealthChecker::NoteUnreachable(Worker& w) { Record(w, false); }

net::awaitable<void> HealthChecker::ProbeAll() {
  const auto executor = co_await net::this_coro::executor;
  auto left = std::make_shared<size_t>(workers_.size());
  auto all_done = std::make_shared<net::steady_timer>(executor);
  all_done->expires_at(std::chrono::steady_clock::time_point::max());
  for (Worker* w : workers_) {
    net::co_spawn(
        executor,
        [](HealthChecker* self, Worker* w, std::shared_ptr<size_t> left,
           std::shared_ptr<net::steady_timer> all_done) -> net::awaitable<void> {
          const Probe p = co_await self->ProbeOnce(*w);
          self->Apply(*w, p);
          if (--*left == 0) all_done->cancel();
        }(this, w, left, all_done),
        net::detached);
  }
  if (*left > 0) {
    beast::error_code ec;
    co_await all_done->async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  if (!first_round_done_) {
    first_round_done_ = true;
    for (Worker* w : workers_) {
      Judge(*w);
      if (w->up() && !w->info()) WarnNoInfo(*w);
    }
  }
}

net::awaitable<void> HealthChecker::Loop(size_t i) {
  Worker& w = *workers_[i];
  // The timer lives in this coroutine's frame, so it goes before the I/O context's services
  // do (a frame still waiting when the context is destroyed is destroyed with its handlers);
  // timers_ lists it for Stop while the frame lives.
  net::steady_timer timer(co_await net::this_coro::executor);
  struct Listed {
    std::vector<net::steady_timer*>* list;
    size_t i;
    ~Listed() { (*list)[i] = nullptr; }
  } listed{&timers_, i};
  timers_[i] = &timer;
  while (!stopped_) {
    timer.expires_after(options_.interval);
    beast::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (stopped_) break;
    const Probe p = co_await ProbeOnce(w);
    if (stopped_) break;
    Apply(w, p);
  }
}

void HealthChecker::Start(const net::any_io_executor& executor) {
  timers_.assign(workers_.size(), nullptr);
  for (size_t i = 0; i < workers_.size(); ++i) net::co_spawn(executor, Loop(i), net::detached);
}

void HealthChecker::Stop() {
  stopped_ = true;
  for (net::steady_timer* t : timers_) {
    if (t != nullptr) t->cancel();
  }
  calls_.CloseAll();
}

}  // namespace deepinfer::router
