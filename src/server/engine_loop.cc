#include "server/engine_loop.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

namespace deepinfer::server {

EngineLoop::EngineLoop(engine::Engine* engine, EngineLoopOptions options)
    : engine_(engine), options_(std::move(options)) {}

EngineLoop::~EngineLoop() { Stop(); }

void EngineLoop::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  snapshot_.stats = engine_->stats();  // the loop thread does not exist yet
  thread_ = std::thread([this] { Run(); });
}

void EngineLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::deque<std::function<void(engine::Engine*)>> left;  // a loop that never started
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(tasks_);
  }
  for (auto& task : left) task(nullptr);
}

Status EngineLoop::Submit(engine::Request request, std::function<void(const Status&)> on_verdict,
                          std::optional<RemoteForm> remote) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Internal("the server is shutting down");
    if (pending_ >= options_.max_pending) {
      return ResourceExhausted("too many requests in the server (" +
                               std::to_string(options_.max_pending) + "); retry later");
    }
    ++pending_;
    // The pending count drops when the last sample's last output has been delivered.
    auto user = std::move(request.on_output);
    auto samples_left = std::make_shared<int>(std::max(request.params.n, 1));
    request.on_output = [this, samples_left,
                         user = std::move(user)](const engine::RequestOutput& o) {
      if (user) user(o);
      if (o.finished && --*samples_left == 0) {
        std::lock_guard<std::mutex> l(mu_);
        --pending_;
      }
    };
    inbox_.push_back({std::move(request), std::move(on_verdict), std::move(remote)});
  }
  cv_.notify_one();
  return Status::Ok();
}

Status EngineLoop::Post(std::function<void(engine::Engine*)> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Internal("the server is shutting down");
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return Status::Ok();
}

void EngineLoop::CancelAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_all_ = true;
  }
  cv_.notify_all();
}

EngineSnapshot EngineLoop::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineSnapshot s = snapshot_;
  s.pending = pending_;
  return s;
}

int64_t EngineLoop::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void EngineLoop::AddLocal(Item* item) {
  auto cancelled = item->request.cancelled;
  if (options_.hub) options_.hub->TrackLocal(&item->request);
  StatusOr<uint64_t> id = engine_->Add(std::move(item->request));
  if (id.ok()) {
    // Forget the flags of retired requests (no one else holds them any more).
    if (live_.size() >= prune_at_) {
      std::erase_if(live_, [](const auto& flag) { return flag.use_count() == 1; });
      prune_at_ = std::max<size_t>(64, 2 * live_.size());
    }
    live_.push_back(std::move(cancelled));
    if (item->on_verdict) item->on_verdict(Status::Ok());
    return;
  }
  if (options_.hub) options_.hub->UntrackLocal(*cancelled);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --pending_;
  }
  if (item->on_verdict) item->on_verdict(id.status());
}

void EngineLoop::Refuse(Item* item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --pending_;
  }
  if (item->on_verdict) item->on_verdict(Internal("the server is shutting down"));
}

void EngineLoop::AddInbox(std::deque<Item>* items) {
  for (Item& item : *items) {
    const int rank = options_.hub && item.remote ? options_.hub->Place(item.request) : 0;
    if (options_.hub && options_.hub->Splits(item.request)) {
      ContextJob job{.prompt = item.request.prompt,
                     .decoder = rank,
                     .prompt_logprobs = item.request.params.prompt_logprobs};
      if (rank == 0) {
        // Added after the exchange that runs the prefill over the ranks.
        auto held = std::make_shared<Item>(std::move(item));
        options_.hub->SplitPrompt(std::move(job), [this, held] {
          if (stopped_) {
            Refuse(held.get());
          } else {
            AddLocal(held.get());
          }
        });
        continue;
      }
      options_.hub->SplitPrompt(std::move(job), nullptr);
    }
    if (rank == 0) {
      AddLocal(&item);
      continue;
    }
    // Refused there: the pending count drops here, as for a local refusal.
    auto on_verdict = [this, user = std::move(item.on_verdict)](const Status& verdict) {
      if (!verdict.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        --pending_;
      }
      if (user) user(verdict);
    };
    options_.hub->Ship(rank, std::move(item.request), std::move(*item.remote),
                       std::move(on_verdict));
  }
  items->clear();
}

void EngineLoop::CancelEverything() {
  for (const auto& flag : live_) flag->store(true);
  if (options_.hub) options_.hub->CancelAll();
}

void EngineLoop::AfterStep() {
  if (options_.after_step) {
    const Status s = options_.after_step();
    if (!s.ok()) std::fprintf(stderr, "engine: after the step: %s\n", s.ToString().c_str());
  }
  if (options_.hub) {
    const Status s = options_.hub->Exchange();
    if (!s.ok())
      std::fprintf(stderr, "engine: exchange with the ranks: %s\n", s.ToString().c_str());
    hub_busy_ = options_.hub->busy();
  }
}

void EngineLoop::Run() {
  std::deque<Item> items;
  std::deque<std::function<void(engine::Engine*)>> tasks;
  bool stop_seen = false;
  for (;;) {
    bool cancel_all = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || cancel_all_ || !inbox_.empty() || !tasks_.empty() || !engine_->idle() ||
               hub_busy_;
      });
      items.swap(inbox_);
      tasks.swap(tasks_);
      stop_seen = stopping_;
      cancel_all = cancel_all_;
      cancel_all_ = false;
    }
    for (auto& task : tasks) task(stop_seen ? nullptr : engine_);
    tasks.clear();
    if (stop_seen) {
      // Refuse what has not started and cancel the rest; step until every request is retired.
      stopped_ = true;
      for (Item& item : items) Refuse(&item);
      items.clear();
      CancelEverything();
      while (!engine_->idle() || hub_busy_) {
        if (!engine_->idle()) {
          const Status s = engine_->Step();
          if (!s.ok()) {
            std::fprintf(stderr, "engine: %s\n", s.ToString().c_str());
            break;
          }
        }
        AfterStep();
      }
      if (options_.on_exit) options_.on_exit();
      return;
    }
    AddInbox(&items);
    if (options_.hub) hub_busy_ = options_.hub->busy();
    if (cancel_all) CancelEverything();
    if (engine_->idle() && !hub_busy_) continue;
    if (!engine_->idle()) {
      const Status s = engine_->Step();
      if (!s.ok()) std::fprintf(stderr, "engine step failed: %s\n", s.ToString().c_str());
    }
    AfterStep();
    const engine::EngineStats stats = engine_->stats();
    std::vector<RankHub::RankView> ranks;
    if (options_.hub) ranks = options_.hub->View();
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_.stats = stats;
    snapshot_.ranks = std::move(ranks);
  }
}

}  // namespace deepinfer::server
