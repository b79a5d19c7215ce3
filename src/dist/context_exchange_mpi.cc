#include "dist/context_exchange_mpi.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "dist/mpi_world.h"

namespace deepinfer::dist {
namespace {

constexpr auto kPoll = std::chrono::microseconds(50);       // a waiting receiver
constexpr auto kProgress = std::chrono::microseconds(500);  // pending sends

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct MpiContextExchange::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  // Every MPI call of the exchange holds `mu` (MPI_THREAD_SERIALIZED: one thread at a time).
  std::mutex mu;
  std::vector<MPI_Request> requests;  // sends not yet known to be complete
  // Open MPI moves a large message only while its sender is inside an MPI call, so a rank that
  // computes its next layer would hold back the layer it just sent: this thread tests the
  // pending sends every kProgress while there are any, and sleeps on `wake` otherwise.
  std::thread progress;
  std::condition_variable wake;
  bool stop = false;  // under mu

  void Progress() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      if (requests.empty()) {
        wake.wait(lock, [&] { return stop || !requests.empty(); });
        continue;
      }
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) requests.clear();
      lock.unlock();
      std::this_thread::sleep_for(kProgress);
      lock.lock();
    }
  }
};

MpiContextExchange::MpiContextExchange() : impl_(new Impl) {
  const MpiWorld& world = MpiWorld::Instance();
  rank_ = world.rank();
  size_ = world.size();
  if (world.distributed()) {
    MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm);
    impl_->progress = std::thread([this] { impl_->Progress(); });
  }
}

MpiContextExchange::~MpiContextExchange() {
  (void)Flush();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->progress.joinable()) impl_->progress.join();
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  delete impl_;
}

Status MpiContextExchange::Send(int to, int tag, std::string bytes) {
  if (to == rank_ || to < 0 || to >= size()) {
    return InvalidArgument("context exchange: rank " + std::to_string(rank_) +
                           " cannot send to rank " + std::to_string(to));
  }
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument("context exchange: a message of " + std::to_string(bytes.size()) +
                           " bytes (the limit is 2 GiB)");
  }
  bytes_sent_ += static_cast<int64_t>(bytes.size());
  in_flight_.push_back(std::move(bytes));  // a deque: earlier buffers never move
  const std::string& b = in_flight_.back();
  std::lock_guard<std::mutex> lock(impl_->mu);
  MPI_Request request;
  MPI_Isend(b.data(), static_cast<int>(b.size()), MPI_BYTE, to, tag, impl_->comm, &request);
  impl_->requests.push_back(request);
  impl_->wake.notify_all();
  return Status::Ok();
}

StatusOr<std::string> MpiContextExchange::Receive(int from, int tag) {
  if (from == rank_ || from < 0 || from >= size()) {
    return InvalidArgument("context exchange: rank " + std::to_string(rank_) +
                           " cannot receive from rank " + std::to_string(from));
  }
  const auto start = std::chrono::steady_clock::now();
  const int source = from;
  std::string bytes;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      int found = 0;
      MPI_Status status;
      MPI_Iprobe(source, tag, impl_->comm, &found, &status);
      if (found) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        bytes.resize(static_cast<size_t>(count));
        MPI_Recv(bytes.data(), count, MPI_BYTE, source, tag, impl_->comm, MPI_STATUS_IGNORE);
        break;
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  wait_seconds_ += Since(start);
  return bytes;
}

Status MpiContextExchange::Flush() {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->requests.empty()) break;
      int done = 0;
      MPI_Testall(static_cast<int>(impl_->requests.size()), impl_->requests.data(), &done,
                  MPI_STATUSES_IGNORE);
      if (done) {
        impl_->requests.clear();
        break;
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  in_flight_.clear();
  wait_seconds_ += Since(start);
  return Status::Ok();
}

}  // namespace deepinfer::dist
