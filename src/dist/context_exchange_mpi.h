// MpiContextExchange: the ranks of a context-parallel prefill over MPI
// (model/deepseek_v41/context_parallel.h; docs/scaleout.md "Context parallelism").
//
// Point-to-point on a communicator of its own (MPI_Comm_dup of MPI_COMM_WORLD, so its tags never
// meet the expert exchange's or the rank hub's traffic): Send is MPI_Isend of a copy kept until
// Flush, Receive polls MPI_Iprobe and receives the message's size. Open MPI moves a large
// message only while its sender is inside an MPI call, so a thread of the exchange tests the
// pending sends every 500 us while the rank computes its next layer (measured without it: the
// receiver got each layer one layer late, 39 s against 25 s for 2,048 tokens at 2 ranks). All
// of the exchange's MPI calls hold one mutex (MPI_THREAD_SERIALIZED); no other MPI traffic may
// run on another thread during a CP prefill. CP rank i is world rank i
// (engine/context_parallel_prefill.h renumbers them so that the decoding rank is the last).
// Construction and destruction are collective over MPI_COMM_WORLD.
//
// Counters for the measurement (`deepinfer cp-prefill`): bytes sent and seconds spent waiting in
// Receive and Flush (a rank's busy time is its wall time minus that).
#pragma once

#include <deque>
#include <string>

#include "model/deepseek_v41/context_parallel.h"

namespace deepinfer::dist {

class MpiContextExchange : public model::ContextExchange {
 public:
  MpiContextExchange();
  ~MpiContextExchange() override;
  MpiContextExchange(const MpiContextExchange&) = delete;
  MpiContextExchange& operator=(const MpiContextExchange&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int to, int tag, std::string bytes) override;
  StatusOr<std::string> Receive(int from, int tag) override;
  Status Flush() override;

  int64_t bytes_sent() const { return bytes_sent_; }
  double wait_seconds() const { return wait_seconds_; }

 private:
  struct Impl;
  Impl* impl_;
  int rank_ = 0;
  int size_ = 1;
  std::deque<std::string> in_flight_;
  int64_t bytes_sent_ = 0;
  double wait_seconds_ = 0.0;
};

}  // namespace deepinfer::dist
