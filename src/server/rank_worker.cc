#include "server/rank_worker.h"

#include <utility>

#include "api/request_text.h"

namespace deepinfer::server {

void RankWorker::Add(RemoteRequest remote) {
  const uint64_t id = remote.id;
  engine::Request r;
  r.prompt = std::move(remote.prompt);
  r.params = std::move(remote.params);
  r.sample_index = remote.sample_index;
  r.priority = remote.priority;
  r.speculative = remote.speculative;
  Status s =
      api::AttachGrammar(options_.structured, remote.form.constraint, remote.form.thinking, &r);
  // The stop strings, as rank 0 checks them (RequestText feeds its own detokenizers).
  if (s.ok()) {
    s = api::RequestText::Attach(options_.tokenizer, /*skip_special_tokens=*/true, &r).status();
  }
  if (!s.ok()) {
    outbox_.verdicts.push_back({.id = id, .status = std::move(s)});
    return;
  }
  r.on_output = [this, id](const engine::RequestOutput& o) {
    outbox_.outputs.push_back({.id = id, .output = o});
    if (o.finished && --samples_left_[id] == 0) {
      samples_left_.erase(id);
      live_.erase(id);
    }
  };
  auto cancelled = r.cancelled;
  const int n = std::max(r.params.n, 1);
  StatusOr<uint64_t> added = options_.engine->Add(std::move(r));
  if (added.ok()) {
    live_[id] = std::move(cancelled);
    samples_left_[id] = n;
  }
  outbox_.verdicts.push_back({.id = id, .status = added.status()});
}

StatusOr<bool> RankWorker::Exchange() {
  if (options_.describe) outbox_.snapshot = options_.describe();
  const std::vector<std::string> in = options_.exchange({EncodeFromRank(outbox_)});
  outbox_ = FromRank();
  DI_ASSIGN_OR_RETURN(ToRank m, DecodeToRank(in.at(0)));
  if (m.stop) return false;
  for (RemoteRequest& r : m.requests) Add(std::move(r));
  for (const uint64_t id : m.cancels) {
    if (const auto it = live_.find(id); it != live_.end()) it->second->store(true);
  }
  return true;
}

}  // namespace deepinfer::server
