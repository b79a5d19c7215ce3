#include "server/rank_hub.h"

#include <algorithm>
#include <span>
#include <utility>

namespace deepinfer::server {
namespace {

// The most output tokens one sample of `request` may produce.
int64_t MaxOutput(const engine::Request& request, int64_t max_context) {
  const int64_t room =
      std::max<int64_t>(max_context - static_cast<int64_t>(request.prompt.size()), 0);
  return request.params.max_tokens ? std::min(*request.params.max_tokens, room) : room;
}

}  // namespace

RankHub::RankHub(RankHubOptions options)
    : options_(std::move(options)),
      policy_(options_.placement),
      load_(static_cast<size_t>(options_.n_ranks), 0),
      finished_(static_cast<size_t>(options_.n_ranks), 0),
      snapshots_(static_cast<size_t>(options_.n_ranks)),
      caches_(static_cast<size_t>(options_.n_ranks),
              engine::BlockKeyCache(options_.page_tokens > 0 ? options_.cache_blocks : 0)),
      outbox_(static_cast<size_t>(options_.n_ranks)) {}

std::vector<engine::BlockKey> RankHub::KeysOf(const std::vector<int32_t>& prompt) const {
  std::vector<engine::BlockKey> keys;
  if (options_.page_tokens <= 0 || options_.cache_blocks <= 0) return keys;
  engine::AppendBlockKeys(prompt, static_cast<int64_t>(prompt.size()), options_.page_tokens,
                          options_.prompt_sensitive, &keys);
  return keys;
}

int RankHub::Pick(std::span<const engine::BlockKey> keys, int64_t prompt_tokens) {
  std::vector<dist::Candidate> ranks(static_cast<size_t>(options_.n_ranks));
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int64_t cached = caches_[r].MatchedBlocks(keys) * options_.page_tokens;
    ranks[r] = {.in_flight_tokens = load_[r],
                .cached_tokens = std::min(prompt_tokens, cached),
                .cache_blocks = caches_[r].size()};
  }
  return static_cast<int>(policy_.Pick(ranks, prompt_tokens));
}

int RankHub::Place(const engine::Request& request) {
  return Pick(KeysOf(request.prompt), static_cast<int64_t>(request.prompt.size()));
}

int RankHub::PlacePages(std::span<const engine::BlockKey> keys) {
  return Pick(keys, static_cast<int64_t>(keys.size()) * options_.page_tokens);
}

void RankHub::NotePages(int rank, std::span<const engine::BlockKey> keys) {
  caches_[static_cast<size_t>(rank)].Insert(keys);
}

void RankHub::ShipPages(int rank, std::string wire, std::vector<engine::BlockKey> keys,
                        ImportDone on_imported) {
  const uint64_t id = next_id_++;
  outbox_[static_cast<size_t>(rank)].pages.push_back({.id = id, .wire = std::move(wire)});
  imports_.emplace(
      id,
      PendingImport{.rank = rank, .keys = std::move(keys), .on_imported = std::move(on_imported)});
}

std::shared_ptr<RankHub::Work> RankHub::Open(int rank, const engine::Request& request) {
  NotePages(rank, KeysOf(request.prompt));
  auto work = std::make_shared<Work>();
  work->rank = rank;
  work->prompt = static_cast<int64_t>(request.prompt.size());
  work->max_output = MaxOutput(request, options_.max_context);
  work->samples_left = std::max(request.params.n, 1);
  work->remaining = work->prompt + work->samples_left * work->max_output;
  load_[static_cast<size_t>(rank)] += work->remaining;
  return work;
}

void RankHub::CountDown(Work* work, const engine::RequestOutput& o) {
  int64_t done = static_cast<int64_t>(o.new_tokens.size()) + work->prompt;
  work->prompt = 0;
  if (o.finished) {
    // The sample's unused output budget is no longer work.
    done += std::max<int64_t>(work->max_output - o.n_output, 0);
    if (--work->samples_left == 0) {
      done = work->remaining;  // whatever is left over
      ++finished_[static_cast<size_t>(work->rank)];
    }
  }
  done = std::min(done, work->remaining);
  work->remaining -= done;
  load_[static_cast<size_t>(work->rank)] -= done;
}

void RankHub::Forget(Work* work) {
  load_[static_cast<size_t>(work->rank)] -= work->remaining;
  work->remaining = 0;
}

void RankHub::TrackLocal(engine::Request* request) {
  std::shared_ptr<Work> work = Open(0, *request);
  local_[request->cancelled.get()] = work;
  auto user = std::move(request->on_output);
  const void* key = request->cancelled.get();
  request->on_output = [this, work, key, user = std::move(user)](const engine::RequestOutput& o) {
    CountDown(work.get(), o);
    if (o.finished && work->samples_left == 0) local_.erase(key);
    if (user) user(o);
  };
}

void RankHub::UntrackLocal(const std::atomic<bool>& cancelled) {
  const auto it = local_.find(&cancelled);
  if (it == local_.end()) return;
  Forget(it->second.get());
  local_.erase(it);
}

void RankHub::Ship(int rank, engine::Request request, RemoteForm form,
                   std::function<void(const Status&)> on_verdict) {
  const uint64_t id = next_id_++;
  RemoteRequest remote{.id = id,
                       .prompt = request.prompt,
                       .params = request.params,
                       .sample_index = request.sample_index,
                       .priority = request.priority,
                       .speculative = request.speculative,
                       .leg_of_prompt_len = request.leg_of_prompt_len,
                       .form = std::move(form)};
  outbox_[static_cast<size_t>(rank)].requests.push_back(std::move(remote));
  Proxy p;
  p.rank = rank;
  p.on_pages = std::move(outbox_[static_cast<size_t>(rank)].requests.back().form.on_pages);
  p.work = Open(rank, request);
  p.on_verdict = std::move(on_verdict);
  // The samples as Engine::Add makes them: copies with their own index, prepared by the caller.
  const int n = std::max(request.params.n, 1);
  p.samples.push_back(std::move(request));
  for (int i = 1; i < n; ++i) {
    engine::Request copy = p.samples.front();
    copy.sample_index += i;
    if (p.samples.front().prepare_sample) p.samples.front().prepare_sample(&copy);
    p.samples.push_back(std::move(copy));
  }
  p.outputs.resize(p.samples.size());
  p.done.assign(p.samples.size(), false);
  proxies_.emplace(id, std::move(p));
}

void RankHub::Deliver(const RemoteOutput& remote) {
  const auto it = proxies_.find(remote.id);
  if (it == proxies_.end()) return;
  Proxy& p = it->second;
  const engine::RequestOutput& o = remote.output;
  if (remote.has_pages && p.on_pages) {
    StatusOr<engine::PageBundle> pages = remote.pages_status.ok()
                                             ? engine::DecodeBundle(remote.pages)
                                             : StatusOr<engine::PageBundle>(remote.pages_status);
    std::exchange(p.on_pages, nullptr)(std::move(pages));
  }
  const int64_t i = o.sample_index - p.samples.front().sample_index;
  if (i < 0 || i >= static_cast<int64_t>(p.samples.size()) || p.done[static_cast<size_t>(i)]) {
    return;
  }
  engine::Request& sample = p.samples[static_cast<size_t>(i)];
  std::vector<int32_t>& output = p.outputs[static_cast<size_t>(i)];
  // As the engine's delivery: every token through the stop check first (it feeds this side's
  // detokenizer; the rank's own check already ended the output where it matched).
  for (const int32_t t : o.new_tokens) {
    output.push_back(t);
    if (sample.stop_check) (void)sample.stop_check(std::span<const int32_t>(output));
  }
  CountDown(p.work.get(), o);
  if (o.finished) p.done[static_cast<size_t>(i)] = true;
  if (sample.on_output) sample.on_output(o);
  if (std::all_of(p.done.begin(), p.done.end(), [](bool d) { return d; })) proxies_.erase(it);
}

void RankHub::FailRank(int rank, const Status& why) {
  for (auto it = imports_.begin(); it != imports_.end();) {
    if (it->second.rank != rank) {
      ++it;
      continue;
    }
    if (it->second.on_imported) it->second.on_imported(why);
    it = imports_.erase(it);
  }
  for (auto it = proxies_.begin(); it != proxies_.end();) {
    Proxy& p = it->second;
    if (p.rank != rank) {
      ++it;
      continue;
    }
    if (!p.verdict_seen) {
      if (p.on_verdict) p.on_verdict(why);
    } else {
      for (size_t i = 0; i < p.samples.size(); ++i) {
        if (p.done[i] || !p.samples[i].on_output) continue;
        engine::RequestOutput o;
        o.sample_index = p.samples[i].sample_index;
        o.n_output = static_cast<int64_t>(p.outputs[i].size());
        o.finished = engine::FinishReason::kError;
        o.error = why;
        p.samples[i].on_output(o);
      }
    }
    Forget(p.work.get());
    it = proxies_.erase(it);
  }
}

bool RankHub::Splits(const engine::Request& request) const {
  return options_.splits && options_.splits(request);
}

void RankHub::SplitPrompt(ContextJob job, std::function<void()> then) {
  context_.push_back(std::move(job));
  if (then) after_context_.push_back(std::move(then));
}

Status RankHub::Exchange() {
  const auto n = static_cast<size_t>(options_.n_ranks);
  std::vector<ContextJob> context;
  context.swap(context_);
  std::vector<std::function<void()>> after_context;
  after_context.swap(after_context_);
  for (size_t r = 1; r < n; ++r) outbox_[r].context = context;
  for (auto& [id, p] : proxies_) {
    if (!p.cancel_sent && p.samples.front().cancelled->load()) {
      outbox_[static_cast<size_t>(p.rank)].cancels.push_back(id);
      p.cancel_sent = true;
    }
  }
  std::vector<std::string> out(n);
  for (size_t r = 1; r < n; ++r) {
    out[r] = EncodeToRank(outbox_[r]);
    outbox_[r] = ToRank();
  }
  const std::vector<std::string> in = options_.exchange(out);
  for (const ContextJob& job : context) options_.prefill(job);
  for (const auto& then : after_context) then();
  if (options_.describe) snapshots_[0] = options_.describe();
  Status first = Status::Ok();
  for (size_t r = 1; r < n && r < in.size(); ++r) {
    StatusOr<FromRank> m = DecodeFromRank(in[r]);
    if (!m.ok()) {
      FailRank(static_cast<int>(r), m.status());
      if (first.ok()) first = m.status();
      continue;
    }
    snapshots_[r] = std::move(m->snapshot);
    for (RemoteVerdict& v : m->verdicts) {
      const auto it = proxies_.find(v.id);
      if (it == proxies_.end() || it->second.verdict_seen) continue;
      it->second.verdict_seen = true;
      if (it->second.on_verdict) it->second.on_verdict(v.status);
      if (!v.status.ok()) {
        Forget(it->second.work.get());
        proxies_.erase(it);
      }
    }
    for (const RemoteOutput& o : m->outputs) Deliver(o);
    for (const RemoteImport& i : m->imports) {
      const auto it = imports_.find(i.id);
      if (it == imports_.end()) continue;
      if (i.status.ok()) NotePages(it->second.rank, it->second.keys);
      if (it->second.on_imported) {
        it->second.on_imported(i.status.ok() ? StatusOr<engine::ImportResult>(i.result)
                                             : StatusOr<engine::ImportResult>(i.status));
      }
      imports_.erase(it);
    }
  }
  return first;
}

void RankHub::Stop() {
  const auto n = static_cast<size_t>(options_.n_ranks);
  std::vector<std::string> out(n);
  ToRank stop;
  stop.stop = true;
  for (size_t r = 1; r < n; ++r) out[r] = EncodeToRank(stop);
  (void)options_.exchange(out);
}

void RankHub::CancelAll() {
  for (auto& [id, p] : proxies_) p.samples.front().cancelled->store(true);
  for (auto& [id, i] : imports_) {
    if (i.on_imported) i.on_imported(Internal("the instance is shutting down"));
  }
  imports_.clear();
}

std::vector<RankHub::RankView> RankHub::View() const {
  std::vector<RankView> v;
  for (size_t r = 0; r < load_.size(); ++r) {
    v.push_back({.snapshot = snapshots_[r], .requests_finished = finished_[r], .work = load_[r]});
  }
  return v;
}

}  // namespace deepinfer::server
