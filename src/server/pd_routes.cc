// The internal routes of prefill/decode disaggregation and the router (docs/disaggregation.md):
//   GET  /internal/info        what a router checks before it sends work here
//   POST /internal/pd/prefill  {"path": a generation route, "request": its body,
//                               "decode": "host:port"}: the prefill leg (RunPrefillLeg)
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "server/chat_request.h"
#include "server/generation_session.h"
#include "server/route_common.h"
#include "server/routes.h"

namespace deepinfer::server {

using nlohmann::json;

// The inner request of /internal/pd/prefill as the route handler sees it: its own request line
// and body, the outer connection's answers.
class ForwardedExchange : public Exchange {
 public:
  ForwardedExchange(Exchange& outer, http::request<http::string_body> request,
                    std::string handoff_to)
      : outer_(outer), request_(std::move(request)) {
    handoff_to_ = std::move(handoff_to);
    arrival_ = outer.arrival();
  }
  const http::request<http::string_body>& request() const override { return request_; }
  net::awaitable<void> Send(int status, std::string content_type, std::string body,
                            Headers headers) override {
    status_ = status;
    co_await outer_.Send(status, std::move(content_type), std::move(body), std::move(headers));
  }
  net::awaitable<bool> StartStream() override { co_return co_await outer_.StartStream(); }
  net::awaitable<bool> SendEvent(std::string data) override {
    co_return co_await outer_.SendEvent(std::move(data));
  }
  net::awaitable<void> EndStream() override { co_await outer_.EndStream(); }
  void WatchClose(const std::function<void()>& on_close) override { outer_.WatchClose(on_close); }
  void StopWatching() override { outer_.StopWatching(); }

 private:
  Exchange& outer_;
  http::request<http::string_body> request_;
};

namespace {

using Handler = net::awaitable<void> (*)(ServerContext&, Exchange&);

Handler GenerationRoute(const std::string& path) {
  if (path == "/v1/chat/completions") return HandleChatCompletions;
  if (path == "/v1/completions") return HandleCompletions;
  if (path == "/v1/messages") return HandleMessages;
  return nullptr;
}

// What co_spawn hands back from the blocking pool (default-constructible).
struct HandoffOutcome {
  Status status;
  HandoffReport report;
};

// What the prefill leg's request leaves for the connection: its pages, exported on the loop
// thread as its last output was delivered (written before that event is pushed, read after it is
// taken: the channel's mutex orders them), and when the export began.
struct LegExport {
  std::optional<StatusOr<engine::PageBundle>> bundle;
  std::chrono::steady_clock::time_point started;
};

// Send on the endpoint's blocking threads; the result comes back on the caller's executor.
net::awaitable<HandoffOutcome> SendAsync(PdEndpoint* pd, engine::PageBundle* bundle,
                                         int64_t prompt_tokens, const std::string* target,
                                         std::chrono::steady_clock::time_point started) {
  auto work = [=]() -> net::awaitable<HandoffOutcome> {
    StatusOr<HandoffReport> r =
        pd->Send(std::move(*bundle), prompt_tokens, *target, /*timeout_s=*/60, started);
    HandoffOutcome out;
    if (r.ok()) {
      out.report = *r;
    } else {
      out.status = r.status();
    }
    co_return out;
  };
  return net::co_spawn(pd->blocking_executor(), work, net::use_awaitable);
}

json ReportJson(const HandoffReport& r, int64_t cached_here) {
  return json{{"prompt_tokens", r.prompt_tokens},
              {"prefill_cached_tokens", cached_here},
              {"pages", r.pages},
              {"imported", r.imported},
              {"cached_on_decode", r.cached},
              {"dropped", r.dropped},
              {"bytes", r.bytes},
              {"tail", r.tail},
              {"seconds", r.seconds}};
}

}  // namespace

net::awaitable<void> HandleInternalInfo(ServerContext& ctx, Exchange& ex) {
  json info = {{"model", ctx.model_name},
               {"fingerprint", ctx.fingerprint},
               {"role", ctx.role},
               {"page_tokens", ctx.page_tokens},
               {"prompt_sensitive", ctx.prompt_sensitive},
               {"max_model_len", ctx.max_context}};
  info["pd_address"] =
      ctx.pd != nullptr && !ctx.pd->address().empty() ? json(ctx.pd->address()) : json(nullptr);
  co_await ex.SendJson(200, info);
}

net::awaitable<void> HandlePdPrefill(ServerContext& ctx, Exchange& ex) {
  const ApiStyle style = ApiStyle::kOpenAi;
  if (ctx.role == "decode" || ctx.pd == nullptr) {
    co_return co_await ex.SendError(
        style, BadRequest("this instance does not prefill for others (role " + ctx.role + ")", ""));
  }
  StatusOr<nlohmann::ordered_json> body = ParseBody(ex.request().body());
  if (!body.ok()) co_return co_await ex.SendError(style, ErrorFromStatus(body.status()));
  const auto path = body->find("path");
  const auto request = body->find("request");
  const auto decode = body->find("decode");
  if (path == body->end() || !path->is_string() || request == body->end() ||
      !request->is_object() || decode == body->end() || !decode->is_string() ||
      decode->get<std::string>().empty()) {
    co_return co_await ex.SendError(
        style, BadRequest("expected {\"path\": route, \"request\": body, \"decode\": "
                          "\"host:port\"}",
                          ""));
  }
  const Handler handler = GenerationRoute(path->get<std::string>());
  if (handler == nullptr) {
    co_return co_await ex.SendError(
        style,
        BadRequest("path must be a generation route, not " + path->get<std::string>(), "path"));
  }
  http::request<http::string_body> inner = ex.request();
  inner.target(path->get<std::string>());
  inner.body() = request->dump();
  inner.prepare_payload();
  ForwardedExchange fwd(ex, std::move(inner), decode->get<std::string>());
  co_await handler(ctx, fwd);
}

net::awaitable<void> RunPrefillLeg(ServerContext& ctx, Exchange& ex, ApiStyle style,
                                   GenerationInput input) {
  // Only the prompt's state matters to the decode instance: all of it but the last token (which
  // the decode instance computes, sampling the first token with the request's own parameters),
  // then one greedy token nobody reads, no grammar. A one-token prompt hands nothing over.
  engine::Request request;
  request.prompt = input.prompt;
  if (request.prompt.size() > 1) {
    request.prompt.pop_back();
    request.leg_of_prompt_len = static_cast<int64_t>(input.prompt.size());
  }
  request.params.max_tokens = 1;
  auto channel = std::make_shared<GenerationChannel>(co_await net::this_coro::executor);
  auto leg = std::make_shared<LegExport>();
  request.on_output = [channel, leg, pd = ctx.pd, engine = ctx.loop->engine_on_loop_thread(),
                       prompt = request.prompt](const engine::RequestOutput& o) {
    GenEvent e;
    e.tokens = o.new_tokens;
    e.finished = o.finished;
    e.error = o.error;
    e.prefix_hit_tokens = o.prefix_hit_tokens;
    // Run here: export now. Run on another rank of this instance: its pages came just before
    // this output (RemoteForm::on_pages).
    if (engine::EndedAsAsked(o) && !leg->bundle) {
      leg->started = std::chrono::steady_clock::now();
      leg->bundle = pd->Export(*engine, prompt, o.tail);
    }
    channel->Push(std::move(e));
  };
  channel->cancel_flags.push_back(request.cancelled);
  // Over MPI ranks the leg runs on whichever rank has the least work, as any request does.
  RemoteForm form;
  form.export_pages = true;
  form.on_pages = [leg](StatusOr<engine::PageBundle> pages) {
    leg->started = std::chrono::steady_clock::now();
    leg->bundle = std::move(pages);
  };
  if (Status s = ctx.loop->Submit(
          std::move(request), [channel](const Status& verdict) { channel->SetVerdict(verdict); },
          std::move(form));
      !s.ok()) {
    co_return co_await ex.SendError(style, ErrorFromStatus(s), RetryAfter());
  }
  CancelOnClose(ctx, ex, channel);
  const Status verdict = co_await channel->Verdict();
  if (!verdict.ok()) {
    channel->Cancel();
    co_return co_await ex.SendError(style, ErrorFromStatus(verdict));
  }
  int64_t cached_here = 0;
  for (bool finished = false; !finished;) {
    for (const GenEvent& e : co_await channel->Next()) {
      cached_here = std::max(cached_here, e.prefix_hit_tokens);
      if (!e.finished) continue;
      finished = true;
      if (!engine::EndedAsAsked(e.finished)) {
        ex.StopWatching();
        const Status why = e.error.ok() ? Internal("the prefill was cancelled") : e.error;
        co_return co_await ex.SendError(style, ErrorFromStatus(Internal(why.message())));
      }
    }
  }
  ex.StopWatching();
  if (!leg->bundle || !leg->bundle->ok()) {
    const Status why = leg->bundle ? leg->bundle->status() : Internal("no pages were exported");
    ApiError error = ErrorFromStatus(why);
    error.http_status = 502;
    co_return co_await ex.SendError(style, error);
  }
  const std::string target = ex.handoff_to();
  const HandoffOutcome outcome = co_await SendAsync(
      ctx.pd, &**leg->bundle, static_cast<int64_t>(input.prompt.size()), &target, leg->started);
  if (!outcome.status.ok()) {
    ApiError error = ErrorFromStatus(outcome.status);
    error.http_status = 502;
    co_return co_await ex.SendError(style, error);
  }
  const json report = ReportJson(outcome.report, cached_here);
  co_await ex.SendJson(200, report);
}

}  // namespace deepinfer::server
