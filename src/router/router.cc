#include "router/router.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <utility>

#include "router/pd_plan.h"
#include "server/chat_request.h"

namespace deepinfer::router {

using server::ApiError;
using server::ApiStyle;
using server::Exchange;

Router::Router(RouterOptions options)
    : options_(std::move(options)), backoff_(options_.retry, std::random_device{}()) {}

StatusOr<std::unique_ptr<Router>> Router::Create(RouterOptions options) {
  const bool pd = !options.prefill.empty() || !options.decode.empty();
  if (pd && (options.prefill.empty() || options.decode.empty())) {
    return InvalidArgument("prefill/decode mode needs both --prefill and --decode workers");
  }
  if (pd && !options.workers.empty()) {
    return InvalidArgument("give either --worker or --prefill + --decode, not both");
  }
  if (!pd && options.workers.empty()) {
    return InvalidArgument("no workers: give --worker URL... (or --prefill and --decode)");
  }
  if (options.policy_options.seed == 0) options.policy_options.seed = std::random_device{}();
  std::unique_ptr<Router> r(new Router(std::move(options)));
  const RouterOptions& o = r->options_;
  r->pd_mode_ = pd;
  if (!o.tokenizer_dir.empty()) {
    DI_ASSIGN_OR_RETURN(r->tokenizer_, tokenizer::Tokenizer::Load(o.tokenizer_dir));
  }
  std::set<std::string> seen;
  const auto add = [&](const std::vector<std::string>& urls) -> StatusOr<std::vector<Worker*>> {
    std::vector<Worker*> pool;
    for (const std::string& url : urls) {
      DI_ASSIGN_OR_RETURN(Endpoint e, ParseWorkerUrl(url));
      if (!seen.insert(e.url).second) return InvalidArgument("worker " + e.url + " given twice");
      r->workers_.push_back(std::make_unique<Worker>(std::move(e), o.cache_blocks, o.health));
      pool.push_back(r->workers_.back().get());
    }
    return pool;
  };
  dist::PolicyOptions decode_options = o.policy_options;
  decode_options.seed = o.policy_options.seed + 1;
  if (pd) {
    DI_ASSIGN_OR_RETURN(std::vector<Worker*> prefill, add(o.prefill));
    DI_ASSIGN_OR_RETURN(std::vector<Worker*> decode, add(o.decode));
    r->prefill_ = std::make_unique<WorkerPool>(std::move(prefill), o.policy, o.policy_options);
    r->decode_ = std::make_unique<WorkerPool>(std::move(decode), dist::PolicyKind::kPowerOfTwo,
                                              decode_options);
  } else {
    DI_ASSIGN_OR_RETURN(std::vector<Worker*> main, add(o.workers));
    r->main_ = std::make_unique<WorkerPool>(std::move(main), o.policy, o.policy_options);
  }
  std::vector<Worker*> all;
  for (const auto& w : r->workers_) all.push_back(w.get());
  r->any_ = std::make_unique<WorkerPool>(all, dist::PolicyKind::kRoundRobin, o.policy_options);
  HealthCheckOptions hc = o.health_check;
  hc.worker_api_key = o.worker_api_key;
  r->health_ = std::make_unique<HealthChecker>(std::move(all), std::move(hc));
  if (o.policy == dist::PolicyKind::kCacheAware && !r->tokenizer_) {
    std::fprintf(stderr,
                 "deepinfer route: no --tokenizer: cache-aware routing applies to token-id "
                 "prompts only; the others go by power of two choices\n");
  }
  return r;
}

server::HttpApp Router::App() {
  server::HttpApp app;
  app.name = "route";
  const auto generation = [this](GenerationApi api, ApiStyle style) {
    return [this, api, style](Exchange& ex) { return Generation(ex, api, style); };
  };
  const auto any = [this](ApiStyle style) {
    return [this, style](Exchange& ex) { return AnyWorker(ex, style); };
  };
  using http::verb;
  app.routes = {
      {verb::post, "/v1/chat/completions", generation(GenerationApi::kChat, ApiStyle::kOpenAi)},
      {verb::post, "/v1/completions", generation(GenerationApi::kCompletion, ApiStyle::kOpenAi)},
      {verb::post, "/v1/messages", generation(GenerationApi::kMessages, ApiStyle::kAnthropic)},
      {verb::post, "/v1/messages/count_tokens", any(ApiStyle::kAnthropic)},
      {verb::get, "/v1/models", any(ApiStyle::kOpenAi)},
      {verb::post, "/tokenize", any(ApiStyle::kOpenAi)},
      {verb::post, "/detokenize", any(ApiStyle::kOpenAi)},
      {verb::get, "/health", [this](Exchange& ex) { return Health(ex); }, /*needs_key=*/false},
      {verb::get, "/metrics", [this](Exchange& ex) { return Metrics(ex); }},
  };
  app.start = [this] { return Start(); };
  app.on_drain = [this] { health_->Stop(); };
  app.cancel_all = [this] { calls_.CloseAll(); };
  app.count_request = [this](const std::string& route, int status) {
    ++counters_.http_requests[{route, status}];
  };
  return app;
}

net::awaitable<void> Router::Start() {
  co_await health_->ProbeAll();
  int64_t up = 0;
  for (const auto& w : workers_) up += w->routable() ? 1 : 0;
  std::fprintf(stderr, "deepinfer route: %lld of %zu workers routable\n",
               static_cast<long long>(up), workers_.size());
  health_->Start(co_await net::this_coro::executor);
}

net::awaitable<void> Router::Generation(Exchange& ex, GenerationApi api, ApiStyle style) {
  const RequestFacts facts = ReadRequestFacts(api, ex.request().body(), tokenizer_.get());
  if (pd_mode_) co_return co_await PdGeneration(ex, style, facts);
  co_await Forward(ex, style, *main_, facts, std::nullopt, facts.prompt_tokens);
}

net::awaitable<void> Router::AnyWorker(Exchange& ex, ApiStyle style) {
  co_await Forward(ex, style, *any_, RequestFacts{}, std::nullopt, 0);
}

net::awaitable<void> Router::Health(Exchange& ex) {
  int64_t up = 0;
  for (const auto& w : workers_) up += w->routable() ? 1 : 0;
  nlohmann::json body = {{"status", "ok"}, {"workers_routable", up}, {"workers", workers_.size()}};
  int status = 200;
  if (up == 0) {
    body["status"] = "no worker up";
    status = 503;
  }
  co_await ex.SendJson(status, body);
}

net::awaitable<void> Router::Metrics(Exchange& ex) {
  std::vector<const Worker*> workers;
  for (const auto& w : workers_) workers.push_back(w.get());
  co_await ex.Send(200, "text/plain; version=0.0.4", RenderRouterMetrics(workers, counters_));
}

net::awaitable<void> Router::Forward(Exchange& ex, ApiStyle style, WorkerPool& pool,
                                     const RequestFacts& facts, std::optional<Choice> first,
                                     int64_t first_prompt_tokens) {
  std::vector<Worker*> tried;
  std::string last_error;
  // What of a streamed answer reached the client: a worker that breaks the stream is replaced
  // by another whose answer continues it (stream_resume.h).
  StreamLedger ledger(style);
  bool resuming = false;
  for (int attempt = 0;; ++attempt) {
    std::optional<Choice> choice;
    if (attempt == 0 && first) {
      choice = std::exchange(first, std::nullopt);
    } else {
      choice = pool.Choose(facts, tried);
    }
    if (!choice && resuming) {
      RelayResult broken;
      broken.error = "no worker left to resume on: " + last_error;
      co_return co_await StreamBroke(ex, style, broken);
    }
    if (!choice) {
      ApiError e;
      e.http_status = 503;
      e.message = "no worker is up";
      if (!last_error.empty()) e.message = "no worker could answer: " + last_error;
      co_return co_await ex.SendError(style, e);
    }
    Worker& w = *choice->worker;
    tried.push_back(&w);
    const bool may_retry =
        backoff_.MayRetry(attempt + 1) && pool.CountRoutable(tried) > 0 && !calls_.closing();
    Lease lease = WorkerPool::Dispatch(
        *choice, attempt == 0 ? first_prompt_tokens : facts.prompt_tokens, facts.work_tokens);
    RelayCall call;
    call.to = &w.endpoint();
    call.request = MakeUpstreamRequest(ex.request(), w.endpoint(), options_.worker_api_key);
    call.style = style;
    call.may_retry = may_retry;
    call.timeouts = options_.timeouts;
    call.calls = &calls_;
    call.ledger = &ledger;
    call.resume = resuming;
    call.on_first_piece = [&lease] { lease.PrefillDone(); };
    const RelayResult r = co_await Relay(ex, std::move(call));
    lease.End();
    if (r.connect_failed) health_->NoteUnreachable(w);
    switch (r.outcome) {
      case RelayOutcome::kAnswered:
        if (RetryableStatus(r.status)) ++w.counters().failures;
        co_return;
      case RelayOutcome::kClientGone:
        co_return;
      case RelayOutcome::kFailed:
        ++w.counters().failures;
        std::fprintf(stderr, "deepinfer route: %s\n", r.error.c_str());
        co_return;
      case RelayOutcome::kBroken:
        ++w.counters().failures;
        std::fprintf(stderr, "deepinfer route: %s (after %lld bytes of the answer)\n",
                     r.error.c_str(), static_cast<long long>(r.bytes_sent));
        if (r.diverged || !backoff_.MayRetry(attempt + 1) || calls_.closing()) {
          co_return co_await StreamBroke(ex, style, r);
        }
        // Resume: the same request on another worker, continued where the client is.
        std::fprintf(stderr, "deepinfer route: resuming the stream on another worker\n");
        resuming = true;
        ledger.BeginResume();
        ++w.counters().retries;
        ++counters_.resumes;
        last_error = r.error;
        continue;
      case RelayOutcome::kRetry:
        break;
    }
    ++w.counters().failures;
    ++w.counters().retries;
    last_error = r.error;
    std::fprintf(stderr, "deepinfer route: %s; retrying on another worker\n", r.error.c_str());
    if (calls_.closing()) {
      ApiError e;
      e.http_status = 503;
      e.message = "the router is shutting down";
      co_return co_await ex.SendError(style, e);
    }
    net::steady_timer timer(co_await net::this_coro::executor);
    timer.expires_after(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(backoff_.Delay(attempt)));
    beast::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

net::awaitable<void> Router::StreamBroke(Exchange& ex, ApiStyle style, const RelayResult& r) {
  // A stream no worker could continue (none left, the retries spent, or an answer that
  // contradicted what the client had): it ends with an error event in the route's format.
  ApiError e;
  e.http_status = 502;
  e.message = "worker failed mid-stream: " + r.error;
  const nlohmann::json body = server::ErrorBody(style, e);
  // (The event is built before the co_await: GCC 12 destroys a ?: temporary inside a co_await
  // expression twice.)
  std::string event;
  if (style == ApiStyle::kAnthropic) {
    event = server::SseEvent("error", body);
  } else {
    event = server::SseData(body);
  }
  co_await ex.SendEvent(std::move(event));
  co_await ex.EndStream();
}

net::awaitable<void> Router::PdGeneration(Exchange& ex, ApiStyle style, const RequestFacts& facts) {
  std::optional<Choice> d = decode_->Choose(facts);
  if (!d) {
    ApiError e;
    e.http_status = 503;
    e.message = "no decode worker is up";
    co_return co_await ex.SendError(style, e);
  }
  StatusOr<nlohmann::ordered_json> request = server::ParseBody(ex.request().body());
  if (!request.ok()) {  // the decode worker answers the client's 400
    co_return co_await Forward(ex, style, *decode_, facts, std::move(d), facts.prompt_tokens);
  }
  std::string decode_address;
  if (d->worker->info()) decode_address = d->worker->info()->pd_address;
  if (facts.prompt_tokens < options_.pd_min_prompt_tokens) {  // not worth a hand-off
    co_return co_await Forward(ex, style, *decode_, facts, std::move(d), facts.prompt_tokens);
  }
  PdPlan plan;
  PdNext next = plan.Start(!decode_address.empty(), prefill_->CountRoutable());
  std::vector<Worker*> tried;
  while (next == PdNext::kPrefill) {
    std::optional<Choice> p = prefill_->Choose(facts, tried);
    if (!p) {
      next = plan.AfterPrefill(PrefillOutcome::kFailed, 0);
      break;
    }
    tried.push_back(p->worker);
    bool client_gone = false;
    const PrefillOutcome outcome =
        co_await PrefillLeg(ex, *p, facts, *request, decode_address, &client_gone);
    if (client_gone) co_return;
    next = plan.AfterPrefill(outcome, prefill_->CountRoutable(tried));
  }
  if (plan.fallback()) {
    ++counters_.pd_fallbacks;
    std::fprintf(stderr, "deepinfer route: PD fallback: %s computes the prompt itself\n",
                 d->worker->url().c_str());
  }
  const int64_t d_prompt = next == PdNext::kDecode ? 0 : facts.prompt_tokens;
  co_await Forward(ex, style, *decode_, facts, std::move(d), d_prompt);
}

net::awaitable<PrefillOutcome> Router::PrefillLeg(Exchange& ex, const Choice& p,
                                                  const RequestFacts& facts,
                                                  const nlohmann::ordered_json& request,
                                                  const std::string& decode_address,
                                                  bool* client_gone) {
  Worker& w = *p.worker;
  Lease lease = WorkerPool::Dispatch(p, facts.prompt_tokens, facts.prompt_tokens);
  const std::string_view target(ex.request().target().data(), ex.request().target().size());
  const nlohmann::ordered_json body = {{"path", std::string(target.substr(0, target.find('?')))},
                                       {"request", request},
                                       {"decode", decode_address}};
  http::request<http::string_body> req =
      MakeUpstreamRequest(ex.request(), w.endpoint(), options_.worker_api_key);
  req.method(http::verb::post);
  req.target("/internal/pd/prefill");
  req.set(http::field::content_type, "application/json");
  req.body() = server::DumpJson(body);
  req.prepare_payload();
  const FetchResult f =
      co_await Fetch(w.endpoint(), std::move(req), options_.timeouts, &calls_, &ex);
  lease.End();
  if (f.client_gone) {
    *client_gone = true;
    co_return PrefillOutcome::kFailed;
  }
  if (f.status == 200) co_return PrefillOutcome::kOk;
  if (f.connect_failed) health_->NoteUnreachable(w);
  std::string why = f.error;
  if (f.status != 0) why = "status " + std::to_string(f.status) + ": " + f.body.substr(0, 300);
  std::fprintf(stderr, "deepinfer route: prefill leg on %s failed: %s\n", w.url().c_str(),
               why.c_str());
  if (f.status >= 400 && f.status < 500 && f.status != 429) co_return PrefillOutcome::kRejected;
  ++w.counters().failures;
  co_return PrefillOutcome::kFailed;
}

Status RunRouter(RouterOptions options) {
  const server::ServerOptions http = options.http;
  DI_ASSIGN_OR_RETURN(std::unique_ptr<Router> router, Router::Create(std::move(options)));
  const server::HttpApp app = router->App();
  return server::ServeHttp(app, http);
}

}  // namespace deepinfer::router
