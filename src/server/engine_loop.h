// EngineLoop: the engine on its own thread, fed from any thread.
//
// The engine is single-threaded (engine.h): only this loop calls Add and Step. Submit puts a
// request in an inbox under a mutex and wakes the loop (condition variable); the loop adds the
// inbox requests, then steps while work exists, and sleeps when idle. Requests' on_output
// callbacks run on the loop thread: they must only hand results over (server/generation.h posts
// them to the connection's executor). Cancel through Request::cancelled from anywhere.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "engine/request.h"
#include "server/rank_hub.h"
#include "server/rank_wire.h"

namespace deepinfer::server {

struct EngineLoopOptions {
  // Most requests in the server at once (queued in the inbox, waiting or running in the engine);
  // Submit beyond it answers ResourceExhausted (HTTP 429).
  int64_t max_pending = 256;
  // Called on the loop thread after every engine step, and once as the loop ends (after the
  // last step); e.g. the expert exchange of an instance over MPI ranks (tools/cmd_serve.cc).
  std::function<Status()> after_step;
  std::function<void()> on_exit;
  // Rank 0 of a server over MPI ranks: places requests on the ranks (attention data parallel);
  // its Exchange runs after after_step. Outlives the loop.
  RankHub* hub = nullptr;
};

// What /metrics shows of the engine; refreshed by the loop after every step.
struct EngineSnapshot {
  engine::EngineStats stats;
  int64_t pending = 0;                   // submitted and not finished
  std::vector<RankHub::RankView> ranks;  // over MPI ranks: per rank (empty otherwise)
};

class EngineLoop {
 public:
  EngineLoop(engine::Engine* engine, EngineLoopOptions options);
  ~EngineLoop();  // Stop()
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  void Start();
  // Cancels every request, runs the engine until it has retired them (so that every output
  // callback has been destroyed), and joins the thread. Idempotent.
  void Stop();

  // Queues a request. on_verdict runs once on the loop thread with Engine::Add's verdict: Ok when
  // the engine took the request (before any of its outputs reaches on_output), else why not
  // (InvalidArgument from Add's validation, Internal when the loop stopped first; nothing of it
  // then reaches on_output). Returns ResourceExhausted when max_pending requests are in the
  // server, Internal after Stop; on_verdict then never runs. With `remote` (what another rank
  // needs to rebuild the request) the request may run on another rank of the instance.
  Status Submit(engine::Request request, std::function<void(const Status&)> on_verdict,
                std::optional<RemoteForm> remote = std::nullopt);

  // Cancels every request in the engine (any thread); they finish with kAbort.
  void CancelAll();

  // Runs `task` once on the loop thread, between engine steps, with the engine (e.g. the KV
  // hand-off of server/pd_handoff.h); with nullptr instead when the loop stops first. Internal
  // (the task never runs) after Stop.
  Status Post(std::function<void(engine::Engine*)> task);

  // The engine, for code that runs on the loop thread only: request callbacks (e.g. the prefill
  // leg exports its pages as its last output is delivered) and posted tasks.
  engine::Engine* engine_on_loop_thread() const { return engine_; }
  // Rank 0 of an instance over MPI ranks: its hub (null otherwise), likewise for the loop thread.
  RankHub* hub_on_loop_thread() const { return options_.hub; }

  EngineSnapshot Snapshot() const;
  int64_t pending() const;

 private:
  struct Item {
    engine::Request request;
    std::function<void(const Status&)> on_verdict;
    std::optional<RemoteForm> remote;
  };
  void Run();
  void AfterStep();
  void AddInbox(std::deque<Item>* items);
  void AddLocal(Item* item);
  // A request never added: the server stops.
  void Refuse(Item* item);
  void CancelEverything();

  engine::Engine* engine_;
  EngineLoopOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> inbox_;
  std::deque<std::function<void(engine::Engine*)>> tasks_;
  bool stopping_ = false;
  bool cancel_all_ = false;
  bool started_ = false;
  // Cancel flags of the requests added to the engine (loop thread only; pruned as they retire).
  std::vector<std::shared_ptr<std::atomic<bool>>> live_;
  size_t prune_at_ = 64;
  int64_t pending_ = 0;  // guarded by mu_
  EngineSnapshot snapshot_;
  bool hub_busy_ = false;  // loop thread: hub->busy() after the last exchange
  bool stopped_ = false;   // loop thread: the stop was seen
  std::thread thread_;
};

}  // namespace deepinfer::server
