#include "dist/mpi_world.h"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "core/check.h"
#include "dist/mpi_wait.h"

namespace deepinfer::dist {

void WaitPolitely(MPI_Request* request) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(200)) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

MpiWorld& MpiWorld::Instance() {
  static MpiWorld world;
  return world;
}

MpiWorld::MpiWorld() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) return;  // not started by mpirun
  int provided = 0;
  CHECK_EQ(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), MPI_SUCCESS);
  CHECK_GE(provided, MPI_THREAD_SERIALIZED)
      << "this MPI library does not support MPI_THREAD_SERIALIZED";
  initialized_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  if (initialized_) MPI_Finalize();
}

std::string MpiWorld::Broadcast(std::string text) const {
  if (!distributed()) return text;
  auto n = static_cast<int64_t>(text.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  CHECK_LE(n, int64_t{INT32_MAX}) << "broadcast of more than 2 GiB";
  text.resize(static_cast<size_t>(n));
  MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

std::vector<std::string> MpiWorld::GatherToRoot(const std::string& text) const {
  if (!distributed()) return {text};
  const int n = static_cast<int>(text.size());
  CHECK_EQ(static_cast<size_t>(n), text.size()) << "gather of more than 2 GiB";
  std::vector<int> counts(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(counts.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displs[r] = static_cast<int>(total);
    total += counts[r];
  }
  CHECK_LE(total, int64_t{INT32_MAX}) << "gather of more than 2 GiB";
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Gatherv(text.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r) {
    out.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(counts[r])));
  }
  return out;
}

double MpiWorld::SumAll(double v) const {
  if (!distributed()) return v;
  double out = 0.0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

double MpiWorld::MaxAll(double v) const {
  if (!distributed()) return v;
  double out = 0.0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

std::vector<std::string> MpiWorld::AllGather(const std::string& text) const {
  std::vector<std::string> all = GatherToRoot(text);
  std::string packed;
  for (const std::string& t : all) packed += std::to_string(t.size()) + ":" + t;
  packed = Broadcast(std::move(packed));
  std::vector<std::string> out;
  size_t at = 0;
  while (at < packed.size()) {
    const size_t colon = packed.find(':', at);
    const size_t len = std::stoull(packed.substr(at, colon - at));
    out.push_back(packed.substr(colon + 1, len));
    at = colon + 1 + len;
  }
  return out;
}

std::vector<std::string> MpiWorld::ExchangeWithRoot(const std::vector<std::string>& out) const {
  const auto n = static_cast<size_t>(size_);
  CHECK_EQ(out.size(), rank_ == 0 ? n : size_t{1}) << "ExchangeWithRoot: one text per peer";
  if (!distributed()) return {std::string()};
  // Sizes first (non-blocking, waited for politely: the others may be idle for long), then the
  // texts in one Alltoallv.
  std::vector<int64_t> send_sizes(n, 0), recv_sizes(n, 0);
  for (size_t r = 0; r < n; ++r) {
    if (rank_ == 0 && r != 0) send_sizes[r] = static_cast<int64_t>(out[r].size());
    if (rank_ != 0 && r == 0) send_sizes[r] = static_cast<int64_t>(out[0].size());
  }
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ialltoall(send_sizes.data(), 1, MPI_INT64_T, recv_sizes.data(), 1, MPI_INT64_T,
                MPI_COMM_WORLD, &request);
  WaitPolitely(&request);
  std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  std::string send, recv;
  for (size_t r = 0; r < n; ++r) {
    CHECK_LE(static_cast<int64_t>(send.size()) + send_sizes[r], int64_t{INT32_MAX})
        << "an exchange with rank 0 of more than 2 GiB";
    CHECK_LE(static_cast<int64_t>(recv.size()) + recv_sizes[r], int64_t{INT32_MAX})
        << "an exchange with rank 0 of more than 2 GiB";
    send_displs[r] = static_cast<int>(send.size());
    send_counts[r] = static_cast<int>(send_sizes[r]);
    if (send_sizes[r] > 0) send += rank_ == 0 ? out[r] : out[0];
    recv_displs[r] = static_cast<int>(recv.size());
    recv_counts[r] = static_cast<int>(recv_sizes[r]);
    recv.resize(recv.size() + static_cast<size_t>(recv_sizes[r]));
  }
  MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_CHAR, recv.data(),
                recv_counts.data(), recv_displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> in;
  for (size_t r = 0; r < n; ++r) {
    if (rank_ == 0 || r == 0) {
      in.push_back(
          recv.substr(static_cast<size_t>(recv_displs[r]), static_cast<size_t>(recv_counts[r])));
    }
  }
  return in;
}

}  // namespace deepinfer::dist
