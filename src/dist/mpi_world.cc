#include "dist/mpi_world.h"

#include <mpi.h>

#include <cstdint>
#include <cstdlib>

#include "core/check.h"

namespace deepinfer::dist {

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

}  // namespace deepinfer::dist
