#include "tools/bench_serve.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <semaphore>
#include <thread>

#include "core/splitmix64.h"
#include "tools/bench_offline.h"

namespace deepinfer::tools {
namespace {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

std::vector<int32_t> RandomIds(std::mt19937_64& rng, int64_t n, const WorkloadOptions& o) {
  std::uniform_int_distribution<int32_t> dist(o.token_min, o.token_max - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& v : ids) v = dist(rng);
  return ids;
}

StatusOr<std::vector<BenchPrompt>> ReadJsonl(const WorkloadOptions& o) {
  std::ifstream in(o.dataset);
  if (!in) return NotFound("--dataset: cannot open " + o.dataset);
  std::vector<BenchPrompt> lines;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = o.dataset + ":" + std::to_string(line_no) + ": ";
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + "not a JSON object");
    BenchPrompt p;
    p.max_tokens = o.output_len;
    const auto prompt = j.find("prompt");
    if (prompt == j.end()) return InvalidArgument(where + "no \"prompt\"");
    if (prompt->is_string()) {
      p.text = prompt->get<std::string>();
    } else if (prompt->is_array() && !prompt->empty()) {
      for (const auto& v : *prompt) {
        if (!v.is_number_integer()) return InvalidArgument(where + "prompt ids must be integers");
        p.ids.push_back(v.get<int32_t>());
      }
    } else {
      return InvalidArgument(where + "\"prompt\" must be a string or a non-empty id array");
    }
    for (const char* key : {"max_tokens", "output_len"}) {
      const auto it = j.find(key);
      if (it == j.end()) continue;
      if (!it->is_number_integer() || it->get<int64_t>() < 1) {
        return InvalidArgument(where + "\"" + key + "\" must be a positive integer");
      }
      p.max_tokens = it->get<int64_t>();
    }
    lines.push_back(std::move(p));
  }
  if (lines.empty()) return InvalidArgument("--dataset " + o.dataset + " has no prompts");
  std::vector<BenchPrompt> out;
  for (int64_t i = 0; i < o.num_prompts; ++i) out.push_back(lines[i % lines.size()]);
  return out;
}

void ProgressBar(int64_t done, int64_t failed, int64_t total, double elapsed_s) {
  constexpr int kWidth = 40;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r[%s] %lld/%lld done, %lld failed, %.1f s", bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total),
               static_cast<long long>(failed), elapsed_s);
  std::fflush(stderr);
}

ordered_json OptJson(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json();
}

}  // namespace

uint64_t WorkloadSeed(uint64_t seed, int64_t point) { return MixSeed(seed, {point}); }

StatusOr<std::vector<BenchPrompt>> MakeWorkload(const WorkloadOptions& o) {
  if (o.num_prompts < 1) return InvalidArgument("--num-prompts must be positive");
  if (o.output_len < 1) return InvalidArgument("--output-len must be positive");
  if (o.token_min < 0 || o.token_max <= o.token_min) {
    return InvalidArgument("--token-range: need 0 <= min < max");
  }
  std::mt19937_64 rng(o.seed * 2654435761u + 17);
  std::vector<BenchPrompt> out;
  if (o.dataset == "random") {
    if (o.input_len < 1) return InvalidArgument("--input-len must be positive");
    for (int64_t i = 0; i < o.num_prompts; ++i) {
      out.push_back({RandomIds(rng, o.input_len, o), "", o.output_len});
    }
    return out;
  }
  if (o.dataset == "shared-prefix") {
    if (o.input_len < 1 || o.prefix_len < 1 || o.num_prefixes < 1) {
      return InvalidArgument("shared-prefix needs positive --input-len, --prefix-len and groups");
    }
    std::vector<std::vector<int32_t>> prefixes;
    for (int64_t g = 0; g < o.num_prefixes; ++g)
      prefixes.push_back(RandomIds(rng, o.prefix_len, o));
    for (int64_t i = 0; i < o.num_prompts; ++i) {
      std::vector<int32_t> ids = prefixes[static_cast<size_t>(i % o.num_prefixes)];
      const std::vector<int32_t> suffix = RandomIds(rng, o.input_len, o);
      ids.insert(ids.end(), suffix.begin(), suffix.end());
      out.push_back({std::move(ids), "", o.output_len});
    }
    return out;
  }
  return ReadJsonl(o);
}

nlohmann::json CompletionBody(const BenchPrompt& p, const ClientOptions& c) {
  nlohmann::json body;
  if (!c.model.empty()) body["model"] = c.model;
  if (!p.ids.empty()) {
    body["prompt"] = p.ids;
  } else {
    body["prompt"] = p.text;
  }
  body["max_tokens"] = p.max_tokens;
  body["temperature"] = c.temperature;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (c.ignore_eos) body["ignore_eos"] = true;
  return body;
}

ServeRunResult RunServeLoad(const std::vector<BenchPrompt>& prompts, const ClientOptions& client,
                            const ServeLoadOptions& load, const Slo& slo,
                            std::optional<double> price_per_hour) {
  ServeRunResult result;
  result.request_rate = load.request_rate;
  result.max_concurrency = load.max_concurrency;
  result.load_avg_1m = LoadAverage1m();
  const int64_t n = static_cast<int64_t>(prompts.size());
  result.requests.resize(static_cast<size_t>(n));
  // Arrival offsets: exponential gaps at the rate (a Poisson process), or all at time 0.
  std::vector<double> arrival(static_cast<size_t>(n), 0.0);
  if (load.request_rate && *load.request_rate > 0) {
    std::mt19937_64 rng(load.seed * 0x9E3779B97F4A7C15ull + 1);
    std::exponential_distribution<double> gap(*load.request_rate);
    double t = 0;
    for (auto& a : arrival) {
      a = t;
      t += gap(rng);
    }
  }
  const int64_t slots =
      load.max_concurrency ? std::max<int64_t>(1, *load.max_concurrency) : std::max<int64_t>(n, 1);
  std::counting_semaphore<> free_slots(static_cast<std::ptrdiff_t>(slots));
  std::atomic<int64_t> done{0}, failed{0};
  std::mutex errors_mu;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(n));
  result.server_before = ScrapeServerCounters(client.endpoint, client.api_key);
  const Clock::time_point t0 = Clock::now();
  std::thread progress;
  if (load.progress) {
    progress = std::thread([&] {
      while (done.load() < n) {
        ProgressBar(done.load(), failed.load(), n,
                    std::chrono::duration<double>(Clock::now() - t0).count());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  std::vector<Clock::time_point> finished_at(static_cast<size_t>(n), t0);
  for (int64_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(arrival[i])));
    free_slots.acquire();  // a request waits for a slot; its clock starts when it is sent
    const std::string body = CompletionBody(prompts[static_cast<size_t>(i)], client).dump();
    workers.emplace_back([&, i, body] {
      HttpStreamResult r =
          PostStreaming(client.endpoint, "/v1/completions", body, client.api_key, load.timeout_s);
      std::string why;
      RequestTiming t = TimingFromCompletionStream(r, &why);
      finished_at[static_cast<size_t>(i)] = Clock::now();
      result.requests[static_cast<size_t>(i)] = std::move(t);
      if (!why.empty()) {
        failed.fetch_add(1);
        std::lock_guard<std::mutex> lock(errors_mu);
        if (result.errors.size() < 5) result.errors.push_back(why);
      }
      free_slots.release();
      done.fetch_add(1);
    });
  }
  for (std::thread& w : workers) w.join();
  if (result.server_before) {
    result.server_after = ScrapeServerCounters(client.endpoint, client.api_key);
  }
  Clock::time_point t_last = t0;
  for (const auto& t : finished_at) t_last = std::max(t_last, t);
  const double duration = std::chrono::duration<double>(t_last - t0).count();
  if (progress.joinable()) {
    progress.join();
    ProgressBar(done.load(), failed.load(), n, duration);
    std::fprintf(stderr, "\n");
  }
  result.summary = Summarize(result.requests, duration, slo, price_per_hour);
  return result;
}

ordered_json RunJson(const ServeRunResult& r) {
  const RunSummary& s = r.summary;
  ordered_json j;
  j["request_rate"] = OptJson(r.request_rate);
  j["max_concurrency"] = r.max_concurrency ? ordered_json(*r.max_concurrency) : ordered_json();
  j["num_prompts"] = r.requests.size();
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration_s"] = s.duration_s;
  j["input_tokens"] = s.input_tokens;
  j["cached_input_tokens"] = s.cached_input_tokens;
  j["output_tokens"] = s.output_tokens;
  j["request_throughput"] = s.request_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  j["good_requests"] = s.good_requests;
  j["request_goodput"] = s.request_goodput;
  j["output_goodput"] = s.output_goodput;
  j["cost_per_million_tokens"] = OptJson(s.cost_per_million_tokens);
  j["cost_per_million_good_tokens"] = OptJson(s.cost_per_million_good_tokens);
  j["ttft_ms"] = DistributionJson(s.ttft_s, 1e3);
  j["tpot_ms"] = DistributionJson(s.tpot_s, 1e3);
  j["itl_ms"] = DistributionJson(s.itl_s, 1e3);
  j["e2e_ms"] = DistributionJson(s.e2e_s, 1e3);
  j["load_avg_1m"] = r.load_avg_1m;
  j["server"] = r.server_before && r.server_after
                    ? ServerOverheadJson(*r.server_before, *r.server_after, s.duration_s)
                    : ordered_json();
  j["errors"] = r.errors;
  return j;
}

Status PlotSweep(const std::vector<ServeRunResult>& runs, const std::string& svg_path,
                 const std::string& title) {
  if (runs.empty()) return InvalidArgument("--plot: no runs to plot");
  char tmpl[] = "/tmp/deepinfer-bench-plot-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Internal("--plot: cannot make a temporary folder");
  const std::string dir = tmpl;
  {
    std::ofstream data(dir + "/sweep.dat");
    data << "# output_tok_s ttft_p50_ms ttft_p90_ms tpot_p50_ms tpot_p90_ms label\n";
    for (const ServeRunResult& r : runs) {
      const RunSummary& s = r.summary;
      std::string label = r.request_rate ? "rate " + std::to_string(*r.request_rate)
                                         : "c " + std::to_string(r.max_concurrency.value_or(0));
      if (r.request_rate) label = label.substr(0, label.find('.') + 3);
      data << s.output_throughput << ' ' << s.ttft_s.p50 * 1e3 << ' ' << s.ttft_s.p90 * 1e3 << ' '
           << s.tpot_s.p50 * 1e3 << ' ' << s.tpot_s.p90 * 1e3 << " \"" << label << "\"\n";
    }
    std::ofstream gp(dir + "/plot.gp");
    gp << "set terminal svg size 900,540 dynamic enhanced font 'sans,12'\n"
       << "set output '" << svg_path << "'\n"
       << "set title '" << title << "' noenhanced\n"
       << "set xlabel 'output throughput (tokens/s)'\n"
       << "set ylabel 'TTFT (ms)'\nset y2label 'TPOT (ms)'\n"
       << "set ytics nomirror\nset y2tics\nset grid\nset key top left\n"
       << "plot '" << dir << "/sweep.dat' using 1:2 with linespoints title 'TTFT p50', "
       << "'' using 1:3 with linespoints title 'TTFT p90', "
       << "'' using 1:4 axes x1y2 with linespoints title 'TPOT p50', "
       << "'' using 1:5 axes x1y2 with linespoints title 'TPOT p90', "
       << "'' using 1:3:6 with labels offset 0,1 notitle\n";
  }
  const std::string cmd = "gnuplot '" + dir + "/plot.gp' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove_all(dir);
  if (rc != 0) {
    return Internal("--plot: gnuplot failed (exit " + std::to_string(rc) +
                    "); install gnuplot-nox (scripts/install-deps.sh)");
  }
  return Status::Ok();
}

}  // namespace deepinfer::tools
