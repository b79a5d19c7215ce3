// RankHub: rank 0's side of a server over MPI ranks (docs/scaleout.md "Serving over ranks").
// Attention data parallelism: every rank runs its own engine (scheduler, KV cache, prefix
// cache); rank 0 answers HTTP and places each request on the rank with the least outstanding
// tokens of work (prompt + the most output it may still produce, times its samples; rank 0
// itself included, the lowest rank on a tie). A request placed elsewhere is shipped in its
// RemoteForm (rank_wire.h) and stays here as a proxy: its outputs come back once per step and go
// through its own callbacks on the loop thread exactly as the engine would call them (each token
// first through stop_check, then on_output), so its detokenizer and stop strings see the same
// tokens and the answer has the bytes of a request run here. Verdicts come back the same way.
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
#include <string>
#include <vector>

#include "core/status.h"
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
};

class RankHub {
 public:
  explicit RankHub(RankHubOptions options);
  RankHub(const RankHub&) = delete;
  RankHub& operator=(const RankHub&) = delete;

  // The rank with the least outstanding work (0 = this one). Does not count the request yet.
  int Place(const engine::Request& request) const;
  // Counts a request that runs on rank 0 (before Engine::Add: wraps its on_output, which then
  // counts its work down); UntrackLocal (by the request's cancel flag) when Add refused it.
  void TrackLocal(engine::Request* request);
  void UntrackLocal(const std::atomic<bool>& cancelled);
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

  bool busy() const { return !proxies_.empty(); }
  // Cancels every shipped request (server stop / drain).
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
    bool verdict_seen = false;
    bool cancel_sent = false;
    std::shared_ptr<Work> work;
  };

  std::shared_ptr<Work> Open(int rank, const engine::Request& request);
  void CountDown(Work* work, const engine::RequestOutput& o);
  // Drops what is left of a request's work (refused, failed, or never added).
  void Forget(Work* work);
  void Deliver(uint64_t id, const engine::RequestOutput& o);
  void FailRank(int rank, const Status& why);

  RankHubOptions options_;
  std::vector<int64_t> load_;      // [rank] outstanding tokens of work
  std::vector<int64_t> finished_;  // [rank] requests finished
  std::vector<RankSnapshot> snapshots_;
  std::vector<ToRank> outbox_;  // [rank]
  std::map<uint64_t, Proxy> proxies_;
  std::map<const void*, std::shared_ptr<Work>> local_;  // keyed by the request's cancel flag
  uint64_t next_id_ = 1;
};

}  // namespace deepinfer::server
