#include "server/generation.h"

#include <functional>
#include <span>
#include <utility>

#include "tokenizer/streaming_detokenizer.h"

namespace deepinfer::server {

void GenerationChannel::Push(GenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  net::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

net::awaitable<std::vector<GenEvent>> GenerationChannel::Next() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!events_.empty()) {
        std::vector<GenEvent> out;
        out.swap(events_);
        co_return out;
      }
    }
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!events_.empty()) {
        std::vector<GenEvent> out;
        out.swap(events_);
        co_return out;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) co_return std::vector<GenEvent>();
    timer_.expires_at(deadline);
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

void GenerationChannel::Cancel() {
  for (const auto& flag : cancel_flags) flag->store(true);
}

namespace {

// The text side of one engine request, used on the engine thread only.
struct TextState {
  explicit TextState(tokenizer::StreamingDetokenizer d) : detok(std::move(d)) {}
  tokenizer::StreamingDetokenizer detok;
  std::string text;  // decoded since the last delivery
};

std::function<bool(std::span<const int32_t>)> StopCheck(const std::shared_ptr<TextState>& state) {
  return [state](std::span<const int32_t> output) {
    auto piece = state->detok.Push(output.back());
    if (piece.ok()) state->text += *piece;
    return state->detok.stopped();
  };
}

}  // namespace

Status SubmitGeneration(EngineLoop* loop, const tokenizer::Tokenizer& tok, int32_t eos_id,
                        GenerationSpec spec, const std::shared_ptr<GenerationChannel>& channel) {
  // One engine request with n samples: the engine forks samples 1..n-1 from sample 0's prompt
  // state (shared prompt pages); each sample has its own detokenizer and stop-string state.
  std::vector<std::shared_ptr<TextState>> states;
  for (int i = 0; i < spec.n; ++i) {
    DI_ASSIGN_OR_RETURN(auto detok, tokenizer::StreamingDetokenizer::Create(
                                        tok, spec.params.stop, spec.skip_special_tokens));
    states.push_back(std::make_shared<TextState>(std::move(detok)));
  }
  engine::Request r;
  r.prompt = std::move(spec.prompt);
  r.params = std::move(spec.params);
  r.params.n = spec.n;
  r.grammar = std::move(spec.grammar);
  r.grammar_start_token = spec.grammar_start_token;
  r.stop_check = StopCheck(states[0]);
  r.prepare_sample = [states](engine::Request* sample) {
    sample->stop_check = StopCheck(states[static_cast<size_t>(sample->sample_index)]);
  };
  r.on_output = [states, channel, eos_id](const engine::RequestOutput& o) {
    const auto i = static_cast<int>(o.sample_index);
    TextState& state = *states[static_cast<size_t>(i)];
    GenEvent e;
    e.index = i;
    e.tokens = o.new_tokens;
    e.samples = o.samples;
    e.prompt_logprobs = o.prompt_logprobs;
    e.finished = o.finished;
    e.error = o.error;
    e.n_output = o.n_output;
    e.prefix_hit_tokens = o.prefix_hit_tokens;
    e.seed = o.seed;
    if (o.finished) {
      if (state.detok.stopped()) {
        e.matched_stop = state.detok.matched_stop();
      } else {
        state.text += state.detok.Finish();
        e.ended_by_eos = *o.finished == engine::FinishReason::kStop && !o.new_tokens.empty() &&
                         o.new_tokens.back() == eos_id;
      }
    }
    e.text = std::move(state.text);
    state.text.clear();
    channel->Push(std::move(e));
  };
  channel->cancel_flags.push_back(r.cancelled);  // shared by every sample
  const int n = spec.n;
  Status s = loop->Submit(std::move(r), [channel, n](const Status& error) {
    for (int i = 0; i < n; ++i) {
      GenEvent e;
      e.index = i;
      e.rejected = true;
      e.error = error;
      channel->Push(std::move(e));
    }
  });
  if (!s.ok()) channel->Cancel();
  return s;
}

}  // namespace deepinfer::server
