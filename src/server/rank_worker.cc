#include "server/rank_worker.h"

#include <utility>

#include "api/request_text.h"
#include "engine/page_handoff.h"

namespace deepinfer::server {

void RankWorker::Add(RemoteRequest remote) {
  const uint64_t id = remote.id;
  engine::Request r;
  r.prompt = std::move(remote.prompt);
  r.params = std::move(remote.params);
  r.sample_index = remote.sample_index;
  r.priority = remote.priority;
  r.speculative = remote.speculative;
  r.leg_of_prompt_len = remote.leg_of_prompt_len;
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
  const bool export_pages = remote.form.export_pages;
  r.on_output = [this, id, export_pages, prompt = export_pages ? r.prompt : std::vector<int32_t>()](
                    const engine::RequestOutput& o) {
    RemoteOutput out{.id = id, .output = o};
    if (export_pages && engine::EndedAsAsked(o)) {
      // As rank 0's prefill leg does it: during the delivery, from the prefix cache.
      StatusOr<engine::PageBundle> pages =
          options_.engine->ExportPromptPages(prompt, options_.fingerprint, o.tail);
      out.has_pages = true;
      if (pages.ok()) {
        out.pages = engine::EncodeBundle(*pages);
      } else {
        out.pages_status = pages.status();
      }
    }
    outbox_.outputs.push_back(std::move(out));
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

void RankWorker::Import(const RemotePages& pages) {
  RemoteImport out{.id = pages.id};
  StatusOr<engine::PageBundle> bundle = engine::DecodeBundle(pages.wire);
  StatusOr<engine::ImportResult> r =
      bundle.ok() ? options_.engine->ImportPages(*bundle, options_.fingerprint)
                  : StatusOr<engine::ImportResult>(bundle.status());
  if (r.ok()) {
    out.result = *r;
  } else {
    out.status = r.status();
  }
  outbox_.imports.push_back(std::move(out));
}

StatusOr<bool> RankWorker::Exchange() {
  if (options_.describe) outbox_.snapshot = options_.describe();
  const std::vector<std::string> in = options_.exchange({EncodeFromRank(outbox_)});
  outbox_ = FromRank();
  DI_ASSIGN_OR_RETURN(ToRank m, DecodeToRank(in.at(0)));
  if (m.stop) return false;
  // Context-parallel prefills first, in rank 0's order: a request of the same exchange then
  // continues its sequence.
  for (const ContextJob& job : m.context) {
    if (!options_.prefill) return Internal("a context-parallel prefill on a rank without it");
    options_.prefill(job);
  }
  // Pages first: a request of the same exchange for their prompt then finds them.
  for (const RemotePages& p : m.pages) Import(p);
  for (RemoteRequest& r : m.requests) Add(std::move(r));
  for (const uint64_t id : m.cancels) {
    if (const auto it = live_.find(id); it != live_.end()) it->second->store(true);
  }
  return true;
}

}  // namespace deepinfer::server
