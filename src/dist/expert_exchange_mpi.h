// MpiExpertExchange: MoE expert parallelism over the ranks of one instance (docs/scaleout.md
// "Expert parallelism"). Each rank holds the routed experts its ExpertPlacement gives it; a MoE
// call sends each (row, expert) pair to a holder of that expert and gets its bf16 product back,
// and RunMoe sums the products on the home rank as one process would (expert_exchange.h), so
// the bytes are those of one process.
//
// Rounds. Ranks run different batches (attention data parallelism), so their MoE calls do not
// line up by layer. Every MoE call on any rank is one *round* that every rank joins:
//   1. MPI_Allgather of each rank's header: its state (in a MoE call of layer L / step ended,
//      with or without more work) and the bytes and pairs it sends to each rank;
//   2. MPI_Alltoallv of the payload: per destination, the pairs (activation index, expert,
//      weight) and the activation rows they read, each row once (bf16, the quantized values
//      as the experts read them: lossless);
//   3. every rank runs what it received, grouped by layer, with its own pairs of that round;
//   4. MPI_Alltoallv of the products back, in the order the pairs came.
// A rank whose step has ended (EndStep) joins rounds with nothing to send until every rank's
// step has ended; a round in which no rank sends anything stops after step 1. So ranks step in
// lockstep, a rank with no work still serves its experts, and no rank needs to know the shape of
// another's step (prefill, decode, verify or DSpark draft calls).
//
// EPLB. Each rank counts the pairs its rows route to each expert (home counts). Every
// `eplb_interval` ended steps, all ranks all-reduce the counts and compute the same plan
// (eplb_planner.h) per layer. Each rank loads the experts it gains on a thread of its own while
// steps go on (Model::StageExperts), and says so in every round header; at the first step end
// where every rank has them, all ranks switch together (Model::AdoptExperts: swap in, drop the
// lost ones). A rank that fails to load cancels the switch everywhere. The bytes do not change,
// since any copy of an expert gives the same product.
//
// Threads: RunRouted and EndStep are called by one thread at a time (MPI_THREAD_SERIALIZED):
// the engine's forward thread, then its loop thread after the step.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/expert_placement.h"
#include "model/deepseek_v41/expert_exchange.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::dist {

struct ExpertParallelOptions {
  int64_t eplb_interval = 0;  // ended steps between rebalances; 0 = EPLB off
  int eplb_redundant = 0;     // extra expert copies per layer (EPLB)
};

struct ExpertParallelStats {
  int64_t rounds = 0;                  // all rounds this rank joined
  int64_t calls = 0;                   // this rank's own MoE calls
  int64_t bytes_sent = 0;              // activations out and products back, over MPI
  int64_t bytes_received = 0;          // the same, in
  int64_t pairs_local = 0;             // this rank's pairs run on its own experts
  int64_t pairs_remote = 0;            // this rank's pairs sent to other ranks
  double exchange_seconds = 0.0;       // inside MPI calls
  std::vector<int64_t> rows_by_layer;  // (row, expert) pairs this rank ran, per layer
  int64_t layer_switches = 0;          // layers whose placement EPLB changed
  int64_t failed_switches = 0;         // planned switches dropped (a rank failed to load)
  int64_t experts_loaded = 0;          // experts loaded by rebalances
  // Mean over layers of (max - mean) / mean of the rows each rank ran, over the steps before
  // the first rebalance (-1 until then).
  double imbalance_first_window = -1.0;
};

class MpiExpertExchange final : public model::ExpertExchange {
 public:
  // `model` holds exactly placement's experts for this rank (model::LoadOptions::hold_expert).
  MpiExpertExchange(model::Model* model, ExpertPlacement placement, ExpertParallelOptions options);

  void RunRouted(int layer, const uint16_t* act, int64_t n_act,
                 std::span<const model::ExpertPair> pairs, uint16_t* y) override;

  // This rank's engine step has ended: serves other ranks' MoE calls until every rank's step
  // has ended (then rebalances when due). Returns whether any rank has more work. Every rank
  // calls it once per step, a rank without work too.
  StatusOr<bool> EndStep(bool more_work);

  // Ends the instance's rounds: every rank's current or next EndStep returns false with
  // stopped() set (a server's rank 0 calls it when it stops; the other ranks loop on EndStep until
  // stopped()). Collective with those EndStep calls.
  void Stop();
  bool stopped() const { return stopped_; }

  const ExpertPlacement& placement() const { return placement_; }
  const ExpertParallelStats& stats() const { return stats_; }
  // Rows run per rank, summed over layers, since the start (every rank gets all ranks').
  std::vector<int64_t> AllRanksRows() const;
  // The same imbalance over the steps since the first rebalance (or the start). Collective.
  double WindowImbalance() const;

 private:
  // Every rank's state and EPLB staging state in one round.
  struct RoundStates {
    std::vector<int64_t> state, staging;
  };
  // A layer's planned placement.
  struct Switch {
    int layer = 0;
    std::vector<std::vector<int>> holders;
  };
  static constexpr int64_t kStagingNone = 0, kStaging = 1, kStagingReady = 2, kStagingFailed = 3;

  // One round; this rank in state `state` with `pairs` of `layer` (none when the step ended).
  RoundStates RunRound(int64_t state, int layer, const uint16_t* act, int64_t n_act,
                       std::span<const model::ExpertPair> pairs, uint16_t* y);
  // Plans every layer from the all-reduced loads and starts staging the switches. Collective.
  Status Rebalance();
  int64_t StagingState() const;
  // Switches the staged layers (adopt) or drops them; the same on every rank.
  Status FinishStaging(bool adopt);

  model::Model* model_;
  ExpertPlacement placement_;
  ExpertParallelOptions options_;
  int rank_ = 0;
  int n_ranks_ = 1;
  int64_t steps_ = 0;
  bool stopped_ = false;
  std::vector<std::vector<int64_t>> loads_;  // [layer][expert]: home counts since the last plan
  std::vector<int64_t> window_rows_;         // [layer]: rows run here before / since the first plan
  ExpertParallelStats stats_;
  // EPLB switches being staged: the plan, the loading thread's result, whether it succeeded.
  std::vector<Switch> pending_;
  std::future<std::vector<model::StagedExperts>> staging_;
  std::atomic<bool> staging_ok_{false};
  std::string staging_error_;  // written by the loading thread before staging_ is ready
};

}  // namespace deepinfer::dist
