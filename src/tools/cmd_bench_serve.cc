// `deepinfer bench-serve --base-url http://127.0.0.1:8000 [--model NAME]
//  (--request-rate R | --max-concurrency C) --num-prompts K
//  --dataset random|shared-prefix|FILE.jsonl [--input-len N --output-len M --prefix-len P]
//  [--slo-ttft-ms T --slo-tpot-ms T] [--price-per-hour USD] [--sweep 1,2,4] [--json OUT]
//  [--plot OUT.svg]`: load-tests an OpenAI-compatible server with streamed completions
// (tools/bench_serve.h). --sweep repeats the run at each value: request rates, or concurrencies
// when only --max-concurrency is given. The summary goes to stdout, a progress bar to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tools/bench_serve.h"
#include "tools/cli.h"

namespace deepinfer::tools {
namespace {

struct BenchServeArgs {
  std::string base_url = "http://127.0.0.1:8000";
  std::string model;
  std::string api_key;
  double request_rate = 0;  // 0: unset
  int64_t max_concurrency = 0;
  WorkloadOptions workload;
  std::string token_range = "1000,30000";
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // 0: unset
  double price_per_hour = 0;                // 0: unset
  std::string sweep;
  std::string json_out;
  std::string plot_out;
  bool no_progress = false;
  bool no_warmup = false;
  bool respect_eos = false;
  double temperature = 0;
  double timeout_s = 600;
};

StatusOr<std::vector<double>> ParseNumbers(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      if (used != item.size() || !(v > 0)) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      std::string msg = flag;
      msg.append(": not a positive number: '").append(item).append("'");
      return InvalidArgument(msg);
    }
  }
  if (out.empty()) return InvalidArgument(flag + " is empty");
  return out;
}

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", s * 1e3);
  return buf;
}

void PrintRun(const ServeRunResult& r) {
  const RunSummary& s = r.summary;
  std::printf("============ bench-serve ============\n");
  if (r.request_rate) std::printf("request rate (req/s):        %.3f\n", *r.request_rate);
  if (!r.request_rate) std::printf("request rate (req/s):        inf\n");
  if (r.max_concurrency) {
    std::printf("max concurrency:             %lld\n", static_cast<long long>(*r.max_concurrency));
  }
  std::printf("completed / failed:          %lld / %lld\n", static_cast<long long>(s.completed),
              static_cast<long long>(s.failed));
  std::printf("duration (s):                %.2f\n", s.duration_s);
  std::printf(
      "input / output tokens:       %lld / %lld (%lld input tokens from the prefix cache)\n",
      static_cast<long long>(s.input_tokens), static_cast<long long>(s.output_tokens),
      static_cast<long long>(s.cached_input_tokens));
  std::printf("request throughput (req/s):  %.3f\n", s.request_throughput);
  std::printf("output throughput (tok/s):   %.2f\n", s.output_throughput);
  std::printf("total throughput (tok/s):    %.2f\n", s.total_token_throughput);
  std::printf("goodput (req/s, tok/s):      %.3f, %.2f (%lld requests within the SLO)\n",
              s.request_goodput, s.output_goodput, static_cast<long long>(s.good_requests));
  if (s.cost_per_million_tokens) {
    char good[32] = "-";
    if (s.cost_per_million_good_tokens) {
      std::snprintf(good, sizeof(good), "$%.4f", *s.cost_per_million_good_tokens);
    }
    std::printf("cost per 1M output tokens:   $%.4f (within the SLO: %s)\n",
                *s.cost_per_million_tokens, good);
  }
  std::printf("%-8s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99");
  for (const auto& [name, d] : {std::pair<const char*, const Distribution&>{"TTFT", s.ttft_s},
                                {"TPOT", s.tpot_s},
                                {"ITL", s.itl_s},
                                {"E2E", s.e2e_s}}) {
    std::printf("%-8s %10s %10s %10s %10s\n", name, Ms(d.mean).c_str(), Ms(d.p50).c_str(),
                Ms(d.p90).c_str(), Ms(d.p99).c_str());
  }
  if (r.server_before && r.server_after) {
    const auto j = ServerOverheadJson(*r.server_before, *r.server_after, s.duration_s);
    std::printf(
        "server: forward %.1f%% of the run; scheduling %.2f%% of step time; HTTP thread %.2f%% "
        "of the process CPU\n",
        100 * j["forward_busy_fraction"].get<double>(),
        100 * j["scheduling_fraction"].get<double>(), 100 * j["http_cpu_fraction"].get<double>());
  }
  for (const std::string& e : r.errors) std::printf("error: %s\n", e.c_str());
  std::fflush(stdout);
}

Status RunBenchServe(BenchServeArgs& a) {
  ClientOptions client;
  DI_ASSIGN_OR_RETURN(client.endpoint, ParseBaseUrl(a.base_url));
  client.api_key = a.api_key;
  if (client.api_key.empty()) {
    if (const char* env = std::getenv("DEEPINFER_API_KEY")) client.api_key = env;
  }
  client.ignore_eos = !a.respect_eos;
  client.temperature = a.temperature;
  {
    DI_ASSIGN_OR_RETURN(std::vector<double> range, ParseNumbers("--token-range", a.token_range));
    if (range.size() != 2) return InvalidArgument("--token-range takes MIN,MAX");
    a.workload.token_min = static_cast<int32_t>(range[0]);
    a.workload.token_max = static_cast<int32_t>(range[1]);
  }
  client.model = a.model;
  if (client.model.empty()) {  // the server's first model, as clients discover it
    StatusOr<std::string> models = HttpGet(client.endpoint, "/v1/models", client.api_key, 30);
    if (!models.ok()) return models.status();
    const nlohmann::json j = nlohmann::json::parse(*models, nullptr, false);
    if (!j.is_discarded() && j.contains("data") && j["data"].is_array() && !j["data"].empty()) {
      client.model = j["data"][0].value("id", "");
    }
  }
  // Prompts of its own for the warm-up and for every point of the sweep (WorkloadSeed).
  auto workload = [&a](int64_t point) {
    WorkloadOptions w = a.workload;
    w.seed = WorkloadSeed(a.workload.seed, point);
    return MakeWorkload(w);
  };
  DI_ASSIGN_OR_RETURN(const std::vector<BenchPrompt> warmup_prompts, workload(-1));
  Slo slo;
  if (a.slo_ttft_ms > 0) slo.ttft_s = a.slo_ttft_ms * 1e-3;
  if (a.slo_tpot_ms > 0) slo.tpot_s = a.slo_tpot_ms * 1e-3;
  std::optional<double> price;
  if (a.price_per_hour > 0) price = a.price_per_hour;

  if (!a.no_warmup) {  // one short request: the server answers and the prompt shape is accepted
    BenchPrompt p = warmup_prompts.front();
    p.max_tokens = std::min<int64_t>(p.max_tokens, 2);
    HttpStreamResult r =
        PostStreaming(client.endpoint, "/v1/completions", CompletionBody(p, client).dump(),
                      client.api_key, a.timeout_s);
    std::string why;
    TimingFromCompletionStream(r, &why);
    if (!why.empty()) return Internal("the warm-up request failed: " + why);
  }

  // The sweep's points: rates, or concurrencies when only --max-concurrency is given.
  const bool sweep_concurrency = a.request_rate <= 0 && a.max_concurrency > 0;
  std::vector<double> points = {0};
  if (!a.sweep.empty()) {
    DI_ASSIGN_OR_RETURN(points, ParseNumbers("--sweep", a.sweep));
  }
  std::vector<ServeRunResult> runs;
  for (size_t i = 0; i < points.size(); ++i) {
    const double point = points[i];
    DI_ASSIGN_OR_RETURN(const std::vector<BenchPrompt> prompts, workload(static_cast<int64_t>(i)));
    ServeLoadOptions load;
    load.seed = a.workload.seed;
    load.progress = !a.no_progress;
    load.timeout_s = a.timeout_s;
    if (a.request_rate > 0) load.request_rate = a.request_rate;
    if (a.max_concurrency > 0) load.max_concurrency = a.max_concurrency;
    if (!a.sweep.empty()) {
      if (sweep_concurrency) {
        load.max_concurrency = static_cast<int64_t>(point);
      } else {
        load.request_rate = point;
      }
    }
    runs.push_back(RunServeLoad(prompts, client, load, slo, price));
    PrintRun(runs.back());
  }

  std::vector<RunSummary> summaries;
  summaries.reserve(runs.size());
  for (const auto& r : runs) summaries.push_back(r.summary);
  const std::optional<size_t> best = BestUnderSlo(summaries, slo);
  nlohmann::ordered_json best_json;
  if (best) {
    const ServeRunResult& r = runs[*best];
    best_json = {{"run_index", *best},
                 {"request_rate", r.request_rate ? nlohmann::ordered_json(*r.request_rate)
                                                 : nlohmann::ordered_json()},
                 {"max_concurrency", r.max_concurrency ? nlohmann::ordered_json(*r.max_concurrency)
                                                       : nlohmann::ordered_json()},
                 {"output_throughput", r.summary.output_throughput},
                 {"request_throughput", r.summary.request_throughput}};
    std::printf("throughput under the SLO (p90 TTFT/TPOT): %.2f output tok/s (run %zu)\n",
                r.summary.output_throughput, *best);
  } else if (slo.ttft_s || slo.tpot_s) {
    std::printf("throughput under the SLO: no run met the SLO at p90\n");
  }
  if (!a.json_out.empty()) {
    nlohmann::ordered_json j;
    j["base_url"] = a.base_url;
    j["model"] = client.model;
    j["dataset"] = a.workload.dataset;
    j["num_prompts"] = a.workload.num_prompts;
    j["input_len"] = a.workload.input_len;
    j["output_len"] = a.workload.output_len;
    j["prefix_len"] = a.workload.dataset == "shared-prefix"
                          ? nlohmann::ordered_json(a.workload.prefix_len)
                          : nlohmann::ordered_json();
    j["slo_ttft_ms"] = slo.ttft_s ? nlohmann::ordered_json(a.slo_ttft_ms) : nullptr;
    j["slo_tpot_ms"] = slo.tpot_s ? nlohmann::ordered_json(a.slo_tpot_ms) : nullptr;
    j["price_per_hour"] = price ? nlohmann::ordered_json(*price) : nullptr;
    j["sweep_over"] = a.sweep.empty()     ? nlohmann::ordered_json()
                      : sweep_concurrency ? nlohmann::ordered_json("max_concurrency")
                                          : nlohmann::ordered_json("request_rate");
    j["runs"] = nlohmann::ordered_json::array();
    for (const auto& r : runs) j["runs"].push_back(RunJson(r));
    j["throughput_under_slo"] = best_json;
    std::ofstream out(a.json_out);
    if (!out) return InvalidArgument("--json: cannot write " + a.json_out);
    out << j.dump(2) << "\n";
  }
  if (!a.plot_out.empty()) {
    DI_RETURN_IF_ERROR(PlotSweep(runs, a.plot_out,
                                 "deepinfer bench-serve: " + client.model + ", " +
                                     a.workload.dataset + " " +
                                     std::to_string(a.workload.input_len) + " in / " +
                                     std::to_string(a.workload.output_len) + " out"));
    std::fprintf(stderr, "bench-serve: plot written to %s\n", a.plot_out.c_str());
  }
  int64_t failed = 0;
  for (const auto& r : runs) failed += r.summary.failed;
  if (failed > 0) return Internal(std::to_string(failed) + " request(s) failed");
  return Status::Ok();
}

}  // namespace

void RegisterBenchServe(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "bench-serve", "Load-test an OpenAI-compatible server (TTFT/TPOT/ITL/E2E, goodput, cost)");
  auto a = std::make_shared<BenchServeArgs>();
  WorkloadOptions& w = a->workload;
  cmd->add_option("--base-url", a->base_url, "server URL (http://host:port)");
  cmd->add_option("--model", a->model, "model name (default: the server's first /v1/models)");
  cmd->add_option("--api-key", a->api_key, "Bearer key (or DEEPINFER_API_KEY)");
  cmd->add_option("--request-rate", a->request_rate,
                  "requests per second, Poisson arrivals (default: all at once)");
  cmd->add_option("--max-concurrency", a->max_concurrency, "most requests in flight");
  cmd->add_option("--num-prompts", w.num_prompts, "requests per run")->check(CLI::PositiveNumber);
  cmd->add_option("--dataset", w.dataset,
                  "random, shared-prefix, or a .jsonl file ({\"prompt\": text|[ids], "
                  "\"max_tokens\"?})");
  cmd->add_option("--input-len", w.input_len, "random prompt tokens (after a shared prefix)");
  cmd->add_option("--output-len", w.output_len, "max_tokens per request (ignore_eos)");
  cmd->add_option("--prefix-len", w.prefix_len, "shared-prefix: tokens of the shared prefix");
  cmd->add_option("--num-prefixes", w.num_prefixes, "shared-prefix: distinct prefixes");
  cmd->add_option("--token-range", a->token_range, "random ids from MIN,MAX (MAX excluded)");
  cmd->add_option("--seed", w.seed,
                  "seed of prompts and arrivals (each sweep point and the warm-up draw their own "
                  "prompts from it; another invocation with the same seed re-sends them)");
  cmd->add_option("--slo-ttft-ms", a->slo_ttft_ms, "goodput: TTFT bound (ms)");
  cmd->add_option("--slo-tpot-ms", a->slo_tpot_ms, "goodput: TPOT bound (ms)");
  cmd->add_option("--price-per-hour", a->price_per_hour, "machine price (USD/h) for the cost");
  cmd->add_option("--sweep", a->sweep,
                  "comma list: request rates (or concurrencies with --max-concurrency only)");
  cmd->add_option("--json", a->json_out, "write the results as JSON to this file");
  cmd->add_option("--plot", a->plot_out, "write a throughput-latency SVG (gnuplot) of the runs");
  cmd->add_option("--timeout", a->timeout_s, "seconds per request");
  cmd->add_flag("--no-progress", a->no_progress, "no progress bar on stderr");
  cmd->add_flag("--no-warmup", a->no_warmup, "skip the warm-up request");
  cmd->add_flag("--respect-eos", a->respect_eos, "do not send ignore_eos");
  cmd->add_option("--temperature", a->temperature,
                  "sampling temperature of every request (default 0)")
      ->check(CLI::Range(0.0, 2.0));
  cmd->callback([a, exit_code] {
    const Status s = RunBenchServe(*a);
    if (!s.ok()) {
      std::fprintf(stderr, "bench-serve: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
