#include "tools/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace deepinfer::tools {

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Distribution Summarize(const std::vector<double>& values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = Percentile(values, 50);
  d.p90 = Percentile(values, 90);
  d.p99 = Percentile(values, 99);
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  d.min = *mn;
  d.max = *mx;
  return d;
}

nlohmann::ordered_json DistributionJson(const Distribution& d, double scale) {
  return nlohmann::ordered_json{{"mean", d.mean * scale}, {"p50", d.p50 * scale},
                                {"p90", d.p90 * scale},   {"p99", d.p99 * scale},
                                {"min", d.min * scale},   {"max", d.max * scale},
                                {"count", d.count}};
}

std::optional<double> Tpot(const RequestTiming& r) {
  if (r.output_tokens < 2) return std::nullopt;
  return (r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
}

bool MeetsSlo(const RequestTiming& r, const Slo& slo) {
  if (!r.ok) return false;
  if (slo.ttft_s && r.ttft_s > *slo.ttft_s) return false;
  if (slo.tpot_s) {
    const std::optional<double> t = Tpot(r);
    if (t && *t > *slo.tpot_s) return false;
  }
  return true;
}

RunSummary Summarize(const std::vector<RequestTiming>& requests, double duration_s, const Slo& slo,
                     std::optional<double> price_per_hour) {
  RunSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t good_tokens = 0;
  for (const RequestTiming& r : requests) {
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    s.input_tokens += r.prompt_tokens;
    s.cached_input_tokens += r.cached_tokens;
    s.output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    if (const auto t = Tpot(r)) tpot.push_back(*t);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (MeetsSlo(r, slo)) {
      ++s.good_requests;
      good_tokens += r.output_tokens;
    }
  }
  s.ttft_s = Summarize(ttft);
  s.tpot_s = Summarize(tpot);
  s.itl_s = Summarize(itl);
  s.e2e_s = Summarize(e2e);
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.output_throughput = static_cast<double>(s.output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.input_tokens + s.output_tokens) / duration_s;
    s.request_goodput = static_cast<double>(s.good_requests) / duration_s;
    s.output_goodput = static_cast<double>(good_tokens) / duration_s;
  }
  if (price_per_hour) {
    const double cost = *price_per_hour * duration_s / 3600.0;
    if (s.output_tokens > 0) {
      s.cost_per_million_tokens = cost / (static_cast<double>(s.output_tokens) * 1e-6);
    }
    if (good_tokens > 0) {
      s.cost_per_million_good_tokens = cost / (static_cast<double>(good_tokens) * 1e-6);
    }
  }
  return s;
}

std::optional<size_t> BestUnderSlo(const std::vector<RunSummary>& runs, const Slo& slo) {
  std::optional<size_t> best;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunSummary& r = runs[i];
    if (r.completed == 0) continue;
    if (slo.ttft_s && r.ttft_s.p90 > *slo.ttft_s) continue;
    if (slo.tpot_s && r.tpot_s.count > 0 && r.tpot_s.p90 > *slo.tpot_s) continue;
    if (!best || r.output_throughput > runs[*best].output_throughput) best = i;
  }
  return best;
}

}  // namespace deepinfer::tools
