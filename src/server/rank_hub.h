// RankHub: rank 0's side of a server over MPI ranks (docs/scaleout.md "Serving over ranks").
// Attention data parallelism: every rank runs its own engine (scheduler, KV cache, prefix
// cache); rank 0 answers HTTP and places each request with the router's cache-aware policy
// (dist/cache_aware.h) over the ranks: each rank's outstanding tokens of work (prompt + the most
// output a request may still produce, times its samples; counted down as outputs arrive) and how
// much of the prompt its prefix cache holds. That is: the least loaded rank when the load is
// uneven, else the rank holding the most of the prompt when it holds at least cache_threshold of
// it, else the least work plus uncached prompt tokens. What a rank's cache holds is estimated as
// the router does it per instance (engine::BlockKeyCache): the page-block keys of the prompts
// placed there and of the KV hand-offs imported there. A request placed elsewhere is shipped in its
// RemoteForm (rank_wire.h) and stays here as a proxy: its outputs come back once per step and go
// through its own callbacks on the loop thread exactly as the engine would call them (each token
// first through stop_check, then on_output), so its detokenizer and stop strings see the same
// tokens and the answer has the bytes of a request run here. Verdicts come back the same way.
//
// A KV hand-off that reaches a decode instance over ranks (server/pd_handoff.h) is placed as a
// request for its prompt would be (PlacePages); rank 0
// imports it itself, another rank at the next exchange (ShipPages), and its keys then count for
// that rank, so the request that follows is placed where its pages are.
//
// Exchange is one collective with every other rank (RankWorker::Exchange), called once per
// engine step by EngineLoop after the step's expert exchange; the hub is busy while any shipped
// request has not finished, and EngineLoop keeps stepping (with nothing of its own to run) until
// it is not. Cancels (a flag set by a vanished client or a drain) reach the rank at the next
// exchange; the request finishes there with kAbort and frees its pages.
//
// Threads: the loop thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/cache_aware.h"
#include "engine/block_key_cache.h"
#include "engine/page_handoff.h"
#include "engine/request.h"
#include "server/rank_wire.h"

namespace deepinfer::server {

// Swaps one text with every other rank (dist::MpiWorld::ExchangeWithRoot on rank 0: one entry
// per rank in and out, rank 0's own unused).
using RankExchangeFn = std::function<std::vector<std::string>(const std::vector<std::string>&)>;

struct RankHubOptions {
  int n_ranks = 1;
  int64_t max_context = 0;  // bounds the work of a request without max_tokens
  RankExchangeFn exchange;
  std::function<RankSnapshot()> describe;  // rank 0's own snapshot
  // Prefix affinity: the engine's page length and key mode (ModelRunner::page_tokens,
  // prompt_sensitive), and how many block keys to remember per rank (its page pool's size;
  // 0: placement by work alone).
  int64_t page_tokens = 0;
  bool prompt_sensitive = false;
  int64_t cache_blocks = 0;
  dist::PolicyOptions placement;  // the cache-aware thresholds
  // Context parallelism (engine/context_parallel_prefill.h; both null: off): whether a request's
  // prompt is prefilled over every rank, and rank 0's part of such a prefill.
  std::function<bool(const engine::Request&)> splits;
  std::function<void(const ContextJob& job)> prefill;
};

class RankHub {
 public:
  explicit RankHub(RankHubOptions options);
  RankHub(const RankHub&) = delete;
  RankHub& operator=(const RankHub&) = delete;

  // The rank for `request` (0 = this one). Does not count it yet.
  int Place(const engine::Request& request);
  // The rank for a KV hand-off with these chain keys, placed as a request for their prompt
  // would be (so a chain seen before goes to its holder, a new one where the work is least).
  int PlacePages(std::span<const engine::BlockKey> keys);
  // Counts pages imported on `rank` (rank 0's own imports) in its cache estimate.
  void NotePages(int rank, std::span<const engine::BlockKey> keys);
  // Ships a page bundle (its wire form, engine::EncodeBundle) to `rank` (> 0) at the next
  // Exchange. on_imported runs once on the loop thread with that rank's Engine::ImportPages
  // result (or why it never ran: the rank failed, the hub stopped).
  using ImportDone = std::function<void(const StatusOr<engine::ImportResult>&)>;
  void ShipPages(int rank, std::string wire, std::vector<engine::BlockKey> keys,
                 ImportDone on_imported);
  // Counts a request that runs on rank 0 (before Engine::Add: wraps its on_output, which then
  // counts its work down); UntrackLocal (by the request's cancel flag) when Add refused it.
  void TrackLocal(engine::Request* request);
  void UntrackLocal(const std::atomic<bool>& cancelled);
  // Context parallelism: whether `request`'s prompt is prefilled over the ranks; if so,
  // SplitPrompt before it is shipped to (or added on) `rank`: the job reaches every rank at the
  // next Exchange, which also runs rank 0's part right after the collective, as every other
  // rank runs its own, and then `then` (rank 0's own request is added there, so that it finds
  // the sequence; a request shipped in the same exchange is added after the job by its rank).
  bool Splits(const engine::Request& request) const;
  void SplitPrompt(ContextJob job, std::function<void()> then);
  // Ships `request` to `rank` (> 0) at the next Exchange. on_verdict runs on the loop thread
  // with the rank's Engine::Add verdict, before any output of the request.
  void Ship(int rank, engine::Request request, RemoteForm form,
            std::function<void(const Status&)> on_verdict);

  // One exchange with every rank: the requests shipped and cancels since the last one out;
  // verdicts, outputs and snapshots in (each output through its proxy's callbacks). A malformed
  // reply fails its rank's requests (kError) and returns the error; the others go on.
  Status Exchange();
  // Ends every rank's serving loop (the instance without an expert exchange; with one, the
  // exchange's Stop ends them). Collective; the last call.
  void Stop();

  bool busy() const { return !proxies_.empty() || !imports_.empty() || !context_.empty(); }
  // Cancels every shipped request (server stop / drain) and fails the hand-offs not yet imported.
  void CancelAll();

  // Per rank (rank 0 first): its last snapshot, the requests it finished, its outstanding work.
  struct RankView {
    RankSnapshot snapshot;
    int64_t requests_finished = 0;
    int64_t work = 0;
  };
  std::vector<RankView> View() const;

 private:
  // The outstanding work of one request, counted down by its outputs.
  struct Work {
    int rank = 0;
    int64_t remaining = 0;
    int64_t prompt = 0;      // not yet counted down (the first output counts it)
    int64_t max_output = 0;  // per sample
    int samples_left = 1;
  };
  // A request shipped to another rank: its samples as the engine would make them.
  struct Proxy {
    int rank = 0;
    std::vector<engine::Request> samples;       // [i]: sample_index base + i
    std::vector<std::vector<int32_t>> outputs;  // per sample, the tokens so far
    std::vector<bool> done;                     // per sample, finished
    std::function<void(const Status&)> on_verdict;
    std::function<void(StatusOr<engine::PageBundle>)> on_pages;  // RemoteForm::on_pages
    bool verdict_seen = false;
    bool cancel_sent = false;
    std::shared_ptr<Work> work;
  };

  // A page bundle shipped to a rank, until its result comes back.
  struct PendingImport {
    int rank = 0;
    std::vector<engine::BlockKey> keys;
    ImportDone on_imported;
  };

  std::vector<engine::BlockKey> KeysOf(const std::vector<int32_t>& prompt) const;
  int Pick(std::span<const engine::BlockKey> keys, int64_t prompt_tokens);
  std::shared_ptr<Work> Open(int rank, const engine::Request& request);
  void CountDown(Work* work, const engine::RequestOutput& o);
  // Drops what is left of a request's work (refused, failed, or never added).
  void Forget(Work* work);
  void Deliver(const RemoteOutput& remote);
  void FailRank(int rank, const Status& why);

  RankHubOptions options_;
  dist::CacheAware policy_;
  std::vector<int64_t> load_;      // [rank] outstanding tokens of work
  std::vector<int64_t> finished_;  // [rank] requests finished
  std::vector<RankSnapshot> snapshots_;
  std::vector<engine::BlockKeyCache> caches_;  // [rank] what its prefix cache is thought to hold
  std::vector<ToRank> outbox_;                 // [rank]
  std::map<uint64_t, Proxy> proxies_;
  std::map<const void*, std::shared_ptr<Work>> local_;  // keyed by the request's cancel flag
  std::map<uint64_t, PendingImport> imports_;
  std::vector<ContextJob> context_;  // for the next Exchange
  std::vector<std::function<void()>> after_context_;
  uint64_t next_id_ = 1;
};

}  // namespace deepinfer::server
