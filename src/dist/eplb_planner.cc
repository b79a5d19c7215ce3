#include "dist/eplb_planner.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace deepinfer::dist {
namespace {

struct Copy {
  int64_t expert = 0;
  double load = 0.0;  // the expert's load per copy
};

}  // namespace

StatusOr<std::vector<std::vector<int>>> PlanExpertLayer(std::span<const int64_t> loads, int n_ranks,
                                                        int redundant) {
  const auto n_exp = static_cast<int64_t>(loads.size());
  if (n_ranks < 1 || redundant < 0 || n_exp < 1) {
    return InvalidArgument("EPLB: need >= 1 rank and expert and >= 0 redundant copies");
  }
  if (redundant > n_exp * (n_ranks - 1)) {
    return InvalidArgument("EPLB: " + std::to_string(redundant) +
                           " redundant copies exceed one copy of each expert per rank");
  }
  // 1. Replicate the hottest experts.
  std::vector<int64_t> copies(static_cast<size_t>(n_exp), 1);
  for (int i = 0; i < redundant; ++i) {
    int64_t best = -1;
    for (int64_t e = 0; e < n_exp; ++e) {
      if (copies[e] >= n_ranks) continue;
      if (best < 0 || static_cast<double>(loads[e]) / static_cast<double>(copies[e]) >
                          static_cast<double>(loads[best]) / static_cast<double>(copies[best])) {
        best = e;
      }
    }
    ++copies[best];
  }
  // 2. Pack the copies, heaviest first.
  std::vector<Copy> items;
  for (int64_t e = 0; e < n_exp; ++e) {
    for (int64_t c = 0; c < copies[e]; ++c) {
      items.push_back({e, static_cast<double>(loads[e]) / static_cast<double>(copies[e])});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Copy& a, const Copy& b) { return a.load > b.load; });
  const int64_t slots = (n_exp + redundant + n_ranks - 1) / n_ranks;
  std::vector<double> rank_load(static_cast<size_t>(n_ranks), 0.0);
  std::vector<std::vector<int64_t>> on_rank(static_cast<size_t>(n_ranks));  // experts per rank
  std::vector<std::vector<int>> holders(static_cast<size_t>(n_exp));
  auto has = [&](int r, int64_t e) {
    const std::vector<int64_t>& v = on_rank[static_cast<size_t>(r)];
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  auto place = [&](int r, const Copy& c) {
    on_rank[static_cast<size_t>(r)].push_back(c.expert);
    rank_load[static_cast<size_t>(r)] += c.load;
    holders[static_cast<size_t>(c.expert)].push_back(r);
  };
  for (const Copy& c : items) {
    int best = -1;
    for (int r = 0; r < n_ranks; ++r) {
      if (static_cast<int64_t>(on_rank[static_cast<size_t>(r)].size()) >= slots ||
          has(r, c.expert)) {
        continue;
      }
      if (best < 0 || rank_load[static_cast<size_t>(r)] < rank_load[static_cast<size_t>(best)]) {
        best = r;
      }
    }
    if (best < 0) {
      // Every rank with a free slot (q) already holds this expert: move some expert f from a
      // rank p without this one to q (q lacks f), and put this one on p.
      for (int q = 0; q < n_ranks && best < 0; ++q) {
        if (static_cast<int64_t>(on_rank[static_cast<size_t>(q)].size()) >= slots) continue;
        for (int p = 0; p < n_ranks && best < 0; ++p) {
          if (has(p, c.expert)) continue;
          std::vector<int64_t>& pv = on_rank[static_cast<size_t>(p)];
          for (size_t i = 0; i < pv.size(); ++i) {
            const int64_t f = pv[i];
            if (has(q, f)) continue;
            const double fl = static_cast<double>(loads[f]) / static_cast<double>(copies[f]);
            pv.erase(pv.begin() + static_cast<std::ptrdiff_t>(i));
            rank_load[static_cast<size_t>(p)] -= fl;
            std::vector<int>& hf = holders[static_cast<size_t>(f)];
            std::replace(hf.begin(), hf.end(), p, q);
            on_rank[static_cast<size_t>(q)].push_back(f);
            rank_load[static_cast<size_t>(q)] += fl;
            best = p;
            break;
          }
        }
      }
      if (best < 0) return Internal("EPLB: no feasible placement found");
    }
    place(best, c);
  }
  for (std::vector<int>& h : holders) std::sort(h.begin(), h.end());
  return holders;
}

double Imbalance(std::span<const double> per_rank) {
  if (per_rank.empty()) return 0.0;
  const double sum = std::accumulate(per_rank.begin(), per_rank.end(), 0.0);
  if (sum <= 0.0) return 0.0;
  const double mean = sum / static_cast<double>(per_rank.size());
  return (*std::max_element(per_rank.begin(), per_rank.end()) - mean) / mean;
}

double PlacementImbalance(std::span<const int64_t> loads,
                          const std::vector<std::vector<int>>& holders, int n_ranks) {
  std::vector<double> per_rank(static_cast<size_t>(n_ranks), 0.0);
  for (size_t e = 0; e < loads.size() && e < holders.size(); ++e) {
    for (int r : holders[e]) {
      per_rank[static_cast<size_t>(r)] +=
          static_cast<double>(loads[e]) / static_cast<double>(holders[e].size());
    }
  }
  return Imbalance(per_rank);
}

}  // namespace deepinfer::dist
