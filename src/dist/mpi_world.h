// MpiWorld: the Open MPI job this process belongs to (docs/scaleout.md).
//
// A process started by `mpirun` (OMPI_COMM_WORLD_SIZE in its environment) initializes MPI on the
// first call to Instance() and finalizes it at exit; a process started alone is rank 0 of 1 and
// makes no MPI call at all. Any thread may call the collectives, one at a time
// (MPI_THREAD_SERIALIZED: the engine's forward thread runs the expert exchange, its loop thread
// the rest). Every collective must be called by every rank, in the same order.
#pragma once

#include <string>
#include <vector>

namespace deepinfer::dist {

class MpiWorld {
 public:
  static MpiWorld& Instance();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // Rank 0's `text` on every rank.
  std::string Broadcast(std::string text) const;
  // On rank 0: every rank's `text`, in rank order; elsewhere: empty.
  std::vector<std::string> GatherToRoot(const std::string& text) const;
  // The sum / the maximum of every rank's `v`, on every rank.
  double SumAll(double v) const;
  double MaxAll(double v) const;
  // Every rank's `text`, in rank order, on every rank.
  std::vector<std::string> AllGather(const std::string& text) const;
  // Rank 0 and every other rank swap one text each: on rank 0, `out` holds one text per rank
  // (its own is ignored) and the result every rank's text (its own empty); on another rank, `out`
  // holds its one text for rank 0 and the result rank 0's text for it. Waits politely for the
  // others (mpi_wait.h), so a rank that waits for an idle rank 0 costs no core. Alone: {""}.
  std::vector<std::string> ExchangeWithRoot(const std::vector<std::string>& out) const;

  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  ~MpiWorld();

 private:
  MpiWorld();
  bool initialized_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace deepinfer::dist
