#include "dist/context_exchange_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <numeric>

#include "core/check.h"
#include "dist/mpi_world.h"

namespace deepinfer::dist {

struct MpiContextExchange::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<MPI_Request> requests;
};

MpiContextExchange::MpiContextExchange(std::vector<int> order)
    : impl_(new Impl), order_(std::move(order)) {
  const MpiWorld& world = MpiWorld::Instance();
  if (order_.empty()) {
    order_.resize(static_cast<size_t>(world.size()));
    std::iota(order_.begin(), order_.end(), 0);
  }
  std::vector<int> sorted = order_;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    CHECK_EQ(sorted[i], static_cast<int>(i)) << "the CP order must be a permutation of the ranks";
  }
  CHECK_EQ(static_cast<int>(order_.size()), world.size());
  rank_ = static_cast<int>(std::find(order_.begin(), order_.end(), world.rank()) - order_.begin());
  if (world.distributed()) MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm);
}

MpiContextExchange::~MpiContextExchange() {
  (void)Flush();
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  delete impl_;
}

Status MpiContextExchange::Send(int to, int tag, std::string bytes) {
  if (to <= rank_ || to >= size()) {
    return InvalidArgument("context exchange: rank " + std::to_string(rank_) +
                           " cannot send to rank " + std::to_string(to));
  }
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument("context exchange: a message of " + std::to_string(bytes.size()) +
                           " bytes (the limit is 2 GiB)");
  }
  bytes_sent_ += static_cast<int64_t>(bytes.size());
  in_flight_.push_back(std::move(bytes));
  const std::string& b = in_flight_.back();
  MPI_Request request;
  MPI_Isend(b.data(), static_cast<int>(b.size()), MPI_BYTE, order_[static_cast<size_t>(to)], tag,
            impl_->comm, &request);
  impl_->requests.push_back(request);
  return Status::Ok();
}

StatusOr<std::string> MpiContextExchange::Receive(int from, int tag) {
  if (from < 0 || from >= rank_) {
    return InvalidArgument("context exchange: rank " + std::to_string(rank_) +
                           " cannot receive from rank " + std::to_string(from));
  }
  const auto start = std::chrono::steady_clock::now();
  const int source = order_[static_cast<size_t>(from)];
  MPI_Status status;
  MPI_Probe(source, tag, impl_->comm, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<size_t>(count), '\0');
  MPI_Recv(bytes.data(), count, MPI_BYTE, source, tag, impl_->comm, MPI_STATUS_IGNORE);
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bytes;
}

Status MpiContextExchange::Flush() {
  if (!impl_->requests.empty()) {
    const auto start = std::chrono::steady_clock::now();
    MPI_Waitall(static_cast<int>(impl_->requests.size()), impl_->requests.data(),
                MPI_STATUSES_IGNORE);
    wait_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  impl_->requests.clear();
  in_flight_.clear();
  return Status::Ok();
}

}  // namespace deepinfer::dist
