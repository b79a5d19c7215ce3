#include "server/generation.h"

#include <utility>

#include "api/request_text.h"

namespace deepinfer::server {

void GenerationChannel::SetVerdict(Status verdict) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    verdict_ = std::move(verdict);
  }
  net::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

net::awaitable<Status> GenerationChannel::Verdict() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (verdict_) co_return *verdict_;
    }
    // As in Next(): the wake-up is posted after the verdict is stored.
    timer_.expires_at(net::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

void GenerationChannel::Push(GenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  net::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

std::vector<GenEvent> GenerationChannel::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GenEvent> out;
  out.swap(events_);
  return out;
}

net::awaitable<std::vector<GenEvent>> GenerationChannel::Next() {
  for (;;) {
    if (std::vector<GenEvent> out = Take(); !out.empty()) co_return out;
    // Wake-ups are posted to this executor after the event is stored, so one cannot slip in
    // between the check above and the wait below.
    timer_.expires_at(net::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

net::awaitable<std::vector<GenEvent>> GenerationChannel::NextFor(
    std::chrono::steady_clock::duration max_wait) {
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  for (;;) {
    if (std::vector<GenEvent> out = Take(); !out.empty()) co_return out;
    if (std::chrono::steady_clock::now() >= deadline) co_return std::vector<GenEvent>();
    timer_.expires_at(deadline);
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

void GenerationChannel::Cancel() {
  for (const auto& flag : cancel_flags) flag->store(true);
}

Status SubmitGeneration(EngineLoop* loop, const tokenizer::Tokenizer& tok, int32_t eos_id,
                        engine::Request request, const std::shared_ptr<GenerationChannel>& channel,
                        std::optional<RemoteForm> remote) {
  // One engine request with n samples: the engine forks samples 1..n-1 from sample 0's prompt
  // state (shared prompt pages); each sample has its own detokenizer and stop-string state.
  DI_ASSIGN_OR_RETURN(std::shared_ptr<api::RequestText> text,
                      api::RequestText::Attach(&tok, /*skip_special_tokens=*/true, &request));
  request.on_output = [text, channel, eos_id](const engine::RequestOutput& o) {
    api::SampleText& sample = text->sample(o.sample_index);
    GenEvent e;
    e.index = static_cast<int>(o.sample_index);
    e.tokens = o.new_tokens;
    e.samples = o.samples;
    e.prompt_logprobs = o.prompt_logprobs;
    e.finished = o.finished;
    e.error = o.error;
    e.n_output = o.n_output;
    e.prefix_hit_tokens = o.prefix_hit_tokens;
    e.seed = o.seed;
    if (o.finished) {
      if (sample.stopped()) {
        e.matched_stop = sample.matched_stop();
      } else {
        sample.Finish();
        e.ended_by_eos = *o.finished == engine::FinishReason::kStop && !o.new_tokens.empty() &&
                         o.new_tokens.back() == eos_id;
      }
    }
    e.text = sample.Take();
    channel->Push(std::move(e));
  };
  channel->cancel_flags.push_back(request.cancelled);  // shared by every sample
  Status s = loop->Submit(
      std::move(request), [channel](const Status& verdict) { channel->SetVerdict(verdict); },
      std::move(remote));
  if (!s.ok()) channel->Cancel();
  return s;
}

}  // namespace deepinfer::server
