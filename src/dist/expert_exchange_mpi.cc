#include "dist/expert_exchange_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "core/check.h"
#include "core/phase_timer.h"
#include "dist/eplb_planner.h"
#include "dist/mpi_wait.h"
#include "model/deepseek_v41/model.h"
#include "model/deepseek_v41/routed_experts.h"

namespace deepinfer::dist {
namespace {

constexpr int64_t kInCall = 0;     // in a MoE call
constexpr int64_t kEndedIdle = 1;  // step ended, no more work
constexpr int64_t kEndedMore = 2;  // step ended, more work
constexpr int64_t kStopped = 3;    // the instance stops (Stop)
constexpr size_t kHead = 3;        // header fields before the per-rank counts
// EPLB: a layer whose placement splits the window's rows within this imbalance keeps it, and a
// plan must lower the imbalance by this much to be worth moving experts.
constexpr double kBalancedEnough = 0.05;
constexpr double kGainNeeded = 0.05;

// Per destination: the pairs sent there and the activation rows they read (each row once).
struct Outgoing {
  std::vector<int32_t> rows;             // caller's activation rows, in shipped order
  std::vector<model::ExpertPair> pairs;  // act = index into `rows`
  std::vector<int64_t> pair_index;       // the caller's pair each one is
};

// What one source asked of this rank in a round.
struct Incoming {
  int source = 0;
  int layer = 0;
  const uint16_t* act = nullptr;
  int64_t n_act = 0;
  std::vector<model::ExpertPair> pairs;
  std::vector<uint16_t> y;  // [pairs][dim]
};

class MpiTimer {
 public:
  explicit MpiTimer(double* total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~MpiTimer() {
    *total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  MpiTimer(const MpiTimer&) = delete;
  MpiTimer& operator=(const MpiTimer&) = delete;

 private:
  double* total_;
  std::chrono::steady_clock::time_point start_;
};

int ToInt(int64_t n) {
  CHECK_LE(n, int64_t{INT32_MAX}) << "an expert exchange message of more than 2 GiB";
  return static_cast<int>(n);
}

// The counts and displacements of an Alltoallv in bytes.
struct Layout {
  std::vector<int> counts, displs;
  int64_t total = 0;
  explicit Layout(const std::vector<int64_t>& bytes) {
    for (const int64_t b : bytes) {
      counts.push_back(ToInt(b));
      displs.push_back(ToInt(total));
      total += b;
    }
  }
};

// One MPI_Alltoallv of bytes, counted in the stats (time inside MPI, bytes each way).
void TimedAlltoallv(const void* send, const Layout& sl, void* recv, const Layout& rl,
                    ExpertParallelStats* stats) {
  {
    MpiTimer timer(&stats->exchange_seconds);
    MPI_Alltoallv(send, sl.counts.data(), sl.displs.data(), MPI_BYTE, recv, rl.counts.data(),
                  rl.displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  }
  stats->bytes_sent += sl.total;
  stats->bytes_received += rl.total;
}

}  // namespace

MpiExpertExchange::MpiExpertExchange(model::Model* model, ExpertPlacement placement,
                                     ExpertParallelOptions options)
    : model_(model), placement_(std::move(placement)), options_(options) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &n_ranks_);
  CHECK_EQ(placement_.n_ranks(), n_ranks_);
  const int n_layers = placement_.n_layers();
  loads_.resize(static_cast<size_t>(n_layers));
  for (int l = 0; l < n_layers; ++l) {
    loads_[static_cast<size_t>(l)].assign(static_cast<size_t>(placement_.n_experts(l)), 0);
  }
  stats_.rows_by_layer.assign(static_cast<size_t>(n_layers), 0);
  window_rows_.assign(static_cast<size_t>(n_layers), 0);
}

void MpiExpertExchange::RunRouted(int layer, const uint16_t* act, int64_t n_act,
                                  std::span<const model::ExpertPair> pairs, uint16_t* y) {
  ++stats_.calls;
  std::vector<int64_t>& load = loads_[static_cast<size_t>(layer)];
  for (const model::ExpertPair& p : pairs) ++load[static_cast<size_t>(p.expert)];
  RunRound(kInCall, layer, act, n_act, pairs, y);
}

StatusOr<bool> MpiExpertExchange::EndStep(bool more_work) {
  const int64_t mine = more_work ? kEndedMore : kEndedIdle;
  bool more = false;
  for (;;) {
    const RoundStates r = RunRound(mine, -1, nullptr, 0, {}, nullptr);
    if (std::any_of(r.state.begin(), r.state.end(), [](int64_t s) { return s == kStopped; })) {
      stopped_ = true;
      return false;
    }
    if (std::any_of(r.state.begin(), r.state.end(), [](int64_t s) { return s == kInCall; })) {
      continue;
    }
    more = std::any_of(r.state.begin(), r.state.end(), [](int64_t s) { return s == kEndedMore; });
    // A staged placement switches in the first step end at which every rank has it loaded; a
    // rank that failed to load cancels it everywhere. Every rank sees the same flags.
    if (staging_.valid() &&
        std::all_of(r.staging.begin(), r.staging.end(), [](int64_t s) { return s != kStaging; })) {
      const bool failed = std::any_of(r.staging.begin(), r.staging.end(),
                                      [](int64_t s) { return s == kStagingFailed; });
      DI_RETURN_IF_ERROR(FinishStaging(!failed));
    }
    break;
  }
  ++steps_;
  if (options_.eplb_interval > 0 && steps_ % options_.eplb_interval == 0 && !staging_.valid()) {
    DI_RETURN_IF_ERROR(Rebalance());
  }
  return more;
}

void MpiExpertExchange::Stop() {
  if (stopped_) return;
  RunRound(kStopped, -1, nullptr, 0, {}, nullptr);
  stopped_ = true;
}

int64_t MpiExpertExchange::StagingState() const {
  if (!staging_.valid()) return kStagingNone;
  if (staging_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return kStaging;
  return staging_ok_ ? kStagingReady : kStagingFailed;
}

MpiExpertExchange::RoundStates MpiExpertExchange::RunRound(int64_t state, int layer,
                                                           const uint16_t* act, int64_t n_act,
                                                           std::span<const model::ExpertPair> pairs,
                                                           uint16_t* y) {
  ++stats_.rounds;
  const model::ModelConfig& c = model_->config();
  const int64_t dim = c.dim;
  const auto n = static_cast<size_t>(n_ranks_);
  const auto self = static_cast<size_t>(rank_);
  constexpr auto kPairBytes = static_cast<int64_t>(sizeof(model::ExpertPair));

  // Split the pairs by the rank that runs them.
  std::vector<Outgoing> out(n);
  {
    std::vector<std::vector<int32_t>> shipped(n);  // [rank][caller row] -> index + 1
    for (size_t i = 0; i < pairs.size(); ++i) {
      const model::ExpertPair& p = pairs[i];
      const auto t = static_cast<size_t>(placement_.Target(layer, p.expert, rank_, p.act));
      Outgoing& o = out[t];
      if (t == self) {
        o.pairs.push_back(p);  // local pairs keep the caller's rows
      } else {
        std::vector<int32_t>& idx = shipped[t];
        if (idx.empty()) idx.assign(static_cast<size_t>(n_act), 0);
        int32_t& slot = idx[static_cast<size_t>(p.act)];
        if (slot == 0) {
          o.rows.push_back(p.act);
          slot = static_cast<int32_t>(o.rows.size());
        }
        o.pairs.push_back({slot - 1, p.expert, p.weight});
      }
      o.pair_index.push_back(static_cast<int64_t>(i));
    }
  }
  stats_.pairs_local += static_cast<int64_t>(out[self].pairs.size());
  stats_.pairs_remote += static_cast<int64_t>(pairs.size() - out[self].pairs.size());

  // 1. Headers: [state, layer, staging, bytes to each rank, pairs to each rank].
  const size_t width = kHead + 2 * n;
  std::vector<int64_t> header(width, 0), headers(width * n);
  header[0] = state;
  header[1] = layer;
  header[2] = StagingState();
  for (size_t t = 0; t < n; ++t) {
    if (t == self) continue;
    const auto np = static_cast<int64_t>(out[t].pairs.size());
    header[kHead + t] = out[t].pairs.empty()
                            ? 0
                            : np * kPairBytes + static_cast<int64_t>(out[t].rows.size()) * dim * 2;
    header[kHead + n + t] = np;
  }
  {
    MpiTimer timer(&stats_.exchange_seconds);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallgather(header.data(), static_cast<int>(width), MPI_INT64_T, headers.data(),
                   static_cast<int>(width), MPI_INT64_T, MPI_COMM_WORLD, &request);
    WaitPolitely(&request);
  }
  RoundStates states;
  int64_t total_bytes = 0;
  for (size_t r = 0; r < n; ++r) {
    states.state.push_back(headers[r * width]);
    states.staging.push_back(headers[r * width + 2]);
    for (size_t t = 0; t < n; ++t) total_bytes += headers[r * width + kHead + t];
  }

  // 2. Payload: per destination its pairs, then its activation rows.
  std::vector<Incoming> incoming;
  std::vector<uint8_t> recv;
  if (total_bytes > 0) {
    std::vector<int64_t> send_bytes(n), recv_bytes(n);
    for (size_t t = 0; t < n; ++t) {
      send_bytes[t] = header[kHead + t];
      recv_bytes[t] = headers[t * width + kHead + self];
    }
    const Layout sl(send_bytes), rl(recv_bytes);
    std::vector<uint8_t> send(static_cast<size_t>(sl.total));
    for (size_t t = 0; t < n; ++t) {
      if (send_bytes[t] == 0) continue;
      uint8_t* p = send.data() + sl.displs[t];
      const size_t pb = out[t].pairs.size() * sizeof(model::ExpertPair);
      std::memcpy(p, out[t].pairs.data(), pb);
      auto* rows = reinterpret_cast<uint16_t*>(p + pb);
      for (size_t i = 0; i < out[t].rows.size(); ++i) {
        std::memcpy(rows + static_cast<int64_t>(i) * dim,
                    act + static_cast<int64_t>(out[t].rows[i]) * dim, static_cast<size_t>(dim) * 2);
      }
    }
    recv.resize(static_cast<size_t>(rl.total));
    TimedAlltoallv(send.data(), sl, recv.data(), rl, &stats_);
    for (size_t s = 0; s < n; ++s) {
      if (recv_bytes[s] == 0) continue;
      Incoming in;
      in.source = static_cast<int>(s);
      in.layer = static_cast<int>(headers[s * width + 1]);
      const int64_t np = headers[s * width + kHead + n + self];
      const uint8_t* p = recv.data() + rl.displs[s];
      in.pairs.resize(static_cast<size_t>(np));
      std::memcpy(in.pairs.data(), p, static_cast<size_t>(np * kPairBytes));
      in.act = reinterpret_cast<const uint16_t*>(p + np * kPairBytes);
      in.n_act = (recv_bytes[s] - np * kPairBytes) / (dim * 2);
      incoming.push_back(std::move(in));
    }
  }

  // 3. Run what this rank was given, one call per layer: its own pairs and every source's.
  std::map<int, std::vector<Incoming*>> by_layer;
  Incoming local;
  if (!out[self].pairs.empty()) {
    local.source = rank_;
    local.layer = layer;
    local.act = act;
    local.n_act = n_act;
    local.pairs = std::move(out[self].pairs);  // only pair_index is read after this
    by_layer[layer].push_back(&local);
  }
  for (Incoming& in : incoming) by_layer[in.layer].push_back(&in);
  for (auto& [l, group] : by_layer) {
    ScopedPhase phase("moe.routed.ep");
    std::vector<uint16_t> acts;
    std::vector<model::ExpertPair> all;
    for (Incoming* in : group) {
      const auto base = static_cast<int32_t>(acts.size() / static_cast<size_t>(dim));
      acts.insert(acts.end(), in->act, in->act + in->n_act * dim);
      for (model::ExpertPair p : in->pairs) {
        p.act += base;
        all.push_back(p);
      }
    }
    std::vector<uint16_t> ys(all.size() * static_cast<size_t>(dim));
    model::RunExpertPairs(c, model_->weights().layers[static_cast<size_t>(l)].moe, model_->pool(),
                          acts.data(), all, ys.data());
    stats_.rows_by_layer[static_cast<size_t>(l)] += static_cast<int64_t>(all.size());
    window_rows_[static_cast<size_t>(l)] += static_cast<int64_t>(all.size());
    size_t at = 0;
    for (Incoming* in : group) {
      const size_t len = in->pairs.size() * static_cast<size_t>(dim);
      in->y.assign(ys.begin() + static_cast<std::ptrdiff_t>(at),
                   ys.begin() + static_cast<std::ptrdiff_t>(at + len));
      at += len;
    }
  }
  for (size_t i = 0; i < local.pairs.size(); ++i) {
    std::memcpy(y + out[self].pair_index[i] * dim, local.y.data() + static_cast<int64_t>(i) * dim,
                static_cast<size_t>(dim) * 2);
  }

  // 4. Products back, in the order the pairs came.
  if (total_bytes > 0) {
    std::vector<int64_t> send_bytes(n, 0), recv_bytes(n, 0);
    for (const Incoming& in : incoming) {
      send_bytes[static_cast<size_t>(in.source)] = static_cast<int64_t>(in.y.size()) * 2;
    }
    for (size_t t = 0; t < n; ++t) {
      if (t != self) recv_bytes[t] = static_cast<int64_t>(out[t].pairs.size()) * dim * 2;
    }
    const Layout sl(send_bytes), rl(recv_bytes);
    std::vector<uint16_t> send(static_cast<size_t>(sl.total / 2));
    for (const Incoming& in : incoming) {
      std::copy(in.y.begin(), in.y.end(),
                send.begin() + sl.displs[static_cast<size_t>(in.source)] / 2);
    }
    std::vector<uint16_t> back(static_cast<size_t>(rl.total / 2));
    TimedAlltoallv(send.data(), sl, back.data(), rl, &stats_);
    for (size_t t = 0; t < n; ++t) {
      if (t == self) continue;
      const uint16_t* src = back.data() + rl.displs[t] / 2;
      for (size_t i = 0; i < out[t].pairs.size(); ++i) {
        std::memcpy(y + out[t].pair_index[i] * dim, src + static_cast<int64_t>(i) * dim,
                    static_cast<size_t>(dim) * 2);
      }
    }
  }
  return states;
}

Status MpiExpertExchange::Rebalance() {
  ScopedPhase phase("eplb.plan");
  if (stats_.imbalance_first_window < 0) {
    stats_.imbalance_first_window = WindowImbalance();
    std::fill(window_rows_.begin(), window_rows_.end(), 0);  // from here on: "after"
  }
  std::vector<Switch> switches;
  for (int l = 0; l < placement_.n_layers(); ++l) {
    std::vector<int64_t>& load = loads_[static_cast<size_t>(l)];
    std::vector<int64_t> total(load.size());
    MPI_Allreduce(load.data(), total.data(), static_cast<int>(load.size()), MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    std::fill(load.begin(), load.end(), 0);
    StatusOr<std::vector<std::vector<int>>> plan =
        PlanExpertLayer(total, n_ranks_, options_.eplb_redundant);
    if (!plan.ok()) return plan.status();
    std::vector<std::vector<int>> current(total.size());
    for (size_t e = 0; e < total.size(); ++e) {
      current[e] = placement_.holders(l, static_cast<int64_t>(e));
    }
    // Keep a placement that is balanced enough, or one the plan does not clearly beat (the
    // same decision on every rank: the loads are the all-reduced ones).
    const double now = PlacementImbalance(total, current, n_ranks_);
    if (now <= kBalancedEnough || PlacementImbalance(total, *plan, n_ranks_) > now - kGainNeeded) {
      continue;
    }
    switches.push_back({l, std::move(*plan)});
  }
  if (switches.empty()) return Status::Ok();
  // Load the experts this rank gains on a thread of its own; forwards go on meanwhile.
  std::vector<std::pair<int, std::vector<uint8_t>>> wanted;
  for (const Switch& sw : switches) {
    ExpertPlacement next = placement_;
    next.SetLayer(sw.layer, sw.holders);
    wanted.emplace_back(sw.layer, next.HeldBy(sw.layer, rank_));
  }
  pending_ = std::move(switches);
  staging_ok_ = false;
  const model::Model* model = model_;
  staging_ = std::async(std::launch::async, [this, model, wanted = std::move(wanted)] {
    std::vector<model::StagedExperts> staged;
    for (const auto& [layer, held] : wanted) {
      StatusOr<model::StagedExperts> s = model->StageExperts(layer, held);
      if (!s.ok()) {
        staging_error_ = s.status().ToString();
        return staged;  // staging_ok_ stays false
      }
      staged.push_back(std::move(*s));
    }
    staging_ok_ = true;
    return staged;
  });
  return Status::Ok();
}

Status MpiExpertExchange::FinishStaging(bool adopt) {
  ScopedPhase phase("eplb.switch");
  std::vector<model::StagedExperts> staged = staging_.get();
  std::vector<Switch> pending = std::move(pending_);
  pending_.clear();
  if (!adopt) {
    // Every rank drops the plan; the old placement stays, and so do the bits.
    stats_.failed_switches += static_cast<int64_t>(pending.size());
    if (!staging_error_.empty()) {
      std::fprintf(stderr, "EPLB: rank %d could not load its experts (%s); placement kept\n", rank_,
                   staging_error_.c_str());
    }
    return Status::Ok();
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    stats_.experts_loaded += static_cast<int64_t>(staged[i].loaded.size());
    model_->AdoptExperts(std::move(staged[i]));
    placement_.SetLayer(pending[i].layer, std::move(pending[i].holders));
    ++stats_.layer_switches;
  }
  return Status::Ok();
}

double MpiExpertExchange::WindowImbalance() const {
  const auto layers = static_cast<int>(window_rows_.size());
  std::vector<int64_t> all(window_rows_.size() * static_cast<size_t>(n_ranks_));
  MPI_Allgather(window_rows_.data(), layers, MPI_INT64_T, all.data(), layers, MPI_INT64_T,
                MPI_COMM_WORLD);
  double sum = 0.0;
  int counted = 0;
  for (int l = 0; l < layers; ++l) {
    std::vector<double> per_rank(static_cast<size_t>(n_ranks_));
    for (size_t r = 0; r < per_rank.size(); ++r) {
      per_rank[r] =
          static_cast<double>(all[r * static_cast<size_t>(layers) + static_cast<size_t>(l)]);
    }
    sum += Imbalance(per_rank);
    ++counted;
  }
  return counted ? sum / counted : 0.0;
}

std::vector<int64_t> MpiExpertExchange::AllRanksRows() const {
  int64_t mine = 0;
  for (const int64_t r : stats_.rows_by_layer) mine += r;
  std::vector<int64_t> all(static_cast<size_t>(n_ranks_));
  MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

}  // namespace deepinfer::dist
