#include "server/generation_session.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "api/structured_outputs.h"
#include "server/route_common.h"

namespace deepinfer::server {

net::awaitable<void> GenerationSession::Run(GenerationInput input) {
  // The model's default max_tokens (generation_config.json max_new_tokens) where the request gave
  // none, within what the context leaves after the prompt (the parsers left it unset).
  if (!input.params.max_tokens && ctx_.sampling_defaults.max_tokens) {
    const int64_t room = ctx_.max_context - static_cast<int64_t>(input.prompt.size());
    input.params.max_tokens =
        std::max<int64_t>(1, std::min(*ctx_.sampling_defaults.max_tokens, room));
  }
  if (!ex_.handoff_to().empty()) {
    co_return co_await RunPrefillLeg(ctx_, ex_, style_, std::move(input));
  }
  engine::Request request;
  request.prompt = std::move(input.prompt);
  request.params = std::move(input.params);
  if (Status s = api::AttachGrammar(ctx_.structured, input.constraint, input.thinking, &request);
      !s.ok()) {
    co_return co_await ex_.SendError(style_, ErrorFromStatus(s));
  }
  GenerationTotals totals;
  totals.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  const int n = request.params.n;
  auto channel = std::make_shared<GenerationChannel>(co_await net::this_coro::executor);
  RemoteForm remote{.constraint = input.constraint, .thinking = input.thinking};
  if (Status s = SubmitGeneration(ctx_.loop, *ctx_.tokenizer, ctx_.eos_id, std::move(request),
                                  channel, std::move(remote));
      !s.ok()) {
    co_return co_await ex_.SendError(style_, ErrorFromStatus(s), RetryAfter());
  }
  if (!input.stream) CancelOnClose(ctx_, ex_, channel);
  const Status verdict = co_await channel->Verdict();
  if (!verdict.ok()) {
    channel->Cancel();
    co_return co_await ex_.SendError(style_, ErrorFromStatus(verdict));
  }

  std::vector<int64_t> n_output(static_cast<size_t>(n), 0);
  std::optional<std::chrono::steady_clock::time_point> first_token;
  const auto keep_alive = renderer_.KeepAliveInterval();
  bool streaming = false;
  int n_finished = 0;
  while (n_finished < n) {
    // Two statements, not `streaming ? co_await … : co_await …`: GCC 12 destroys the
    // temporaries of a conditional with co_await in both arms twice (a double free).
    std::vector<GenEvent> events;
    if (streaming && keep_alive) {
      events = co_await channel->NextFor(*keep_alive);
    } else {
      events = co_await channel->Next();
    }
    if (events.empty() && !co_await ex_.SendEvent(renderer_.KeepAlive())) {
      CancelForDisconnect(ctx_, *channel);
      co_return;
    }
    for (GenEvent& e : events) {
      if (!e.tokens.empty() && !first_token) first_token = std::chrono::steady_clock::now();
      totals.cached_tokens = std::max(totals.cached_tokens, e.prefix_hit_tokens);
      int64_t& sample_output = n_output[static_cast<size_t>(e.index)];
      sample_output = std::max(sample_output, e.n_output);
      if (!e.prompt_logprobs.empty() && totals.prompt_logprobs.empty()) {
        totals.prompt_logprobs = e.prompt_logprobs;
      }
      if (e.finished) ++n_finished;
      std::string out;
      if (input.stream && !streaming) {
        streaming = true;
        if (!co_await ex_.StartStream()) {
          CancelForDisconnect(ctx_, *channel);
          co_return;
        }
        out = renderer_.StreamStart(e);
      }
      renderer_.OnEvent(e, input.stream ? &out : nullptr);
      if (!out.empty() && !co_await ex_.SendEvent(std::move(out))) {
        CancelForDisconnect(ctx_, *channel);  // the client went away: free its pages now
        co_return;
      }
    }
  }

  ex_.StopWatching();
  for (int64_t k : n_output) totals.completion_tokens += k;
  RecordGeneration(ctx_, ex_.arrival(), first_token, totals.prompt_tokens,
                   totals.completion_tokens);
  if (std::optional<ApiError> failure = renderer_.Failure(input.stream)) {
    co_return co_await SendFailure(ex_, style_, input.stream, *failure);
  }
  if (input.stream) {
    co_await ex_.SendEvent(renderer_.StreamEnd(totals));
    co_return co_await ex_.EndStream();
  }
  co_await ex_.SendJson(200, renderer_.Body(totals));
}

}  // namespace deepinfer::server
