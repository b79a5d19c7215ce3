// `deepinfer bench --model DIR [--batch 1,8,32] [--prompt-len 512] [--decode-len 32] [--runs N]
//  [--json] [--shared-prefix N [--suffix-len S] [--repeat R]] [engine flags]`: offline throughput
// through the engine against the read bandwidth and compute peak measured in the same run
// (tools/bench_offline.h). Lists sweep the cartesian product; --runs measures each configuration
// N times and adds the distribution of the ratios (tools/bench_runs.h). --json prints one object
// per run and summary (one line each) on stdout; progress goes to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dist/mpi_world.h"
#include "tools/bench_offline.h"
#include "tools/bench_runs.h"
#include "tools/cli.h"
#include "tools/engine_setup.h"
#include "tools/json_lines.h"

namespace deepinfer::tools {
namespace {

struct BenchArgs {
  std::string model_dir;
  std::string tokenizer_dir;
  std::string batch = "1";
  std::string prompt_len = "128";
  std::string decode_len = "32";
  int64_t shared_prefix = 0;
  int64_t suffix_len = 32;
  int repeat = 1;
  int runs = 1;
  bool json = false;
  bool no_warmup = false;
  BenchOptions options;
  EngineFlags engine;
  bool throughput_given = false;  // --batch / --prompt-len / --decode-len on the command line
};

StatusOr<std::vector<int64_t>> ParseList(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      std::string msg = flag;
      msg.append(": not a positive integer: '").append(item).append("'");
      return InvalidArgument(msg);
    }
  }
  if (out.empty()) return InvalidArgument(flag + " is empty");
  return out;
}

std::string Opt(const nlohmann::ordered_json& v, const char* fmt, double scale = 1.0) {
  if (v.is_null()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v.get<double>() * scale);
  return buf;
}

// "median (min-max)" of a distribution object of RunsSummary::ToJson, times `scale`.
std::string Range(const nlohmann::ordered_json& d, const char* unit, double scale) {
  if (d["count"].get<int64_t>() == 0) return "-";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.1f%s (%.1f-%.1f)", d["p50"].get<double>() * scale, unit,
                d["min"].get<double>() * scale, d["max"].get<double>() * scale);
  return buf;
}

void PrintHuman(const nlohmann::ordered_json& j) {
  if (j["mode"] == "runs") {
    std::printf(
        "          over %lld runs, median (min-max): prefill %s of peak | decode step %s, %s of "
        "the best read (best read %s), %s of the bound\n",
        static_cast<long long>(j["runs"].get<int64_t>()),
        Range(j["compute_fraction"], "%", 100).c_str(),
        Range(j["decode_step_ms"], " ms", 1).c_str(),
        Range(j["bandwidth_fraction_of_best"], "%", 100).c_str(),
        Range(j["measured_bandwidth_max_gbs"], " GB/s", 1).c_str(),
        Range(j["decode_bound_fraction"], "%", 100).c_str());
    return;
  }
  if (j["mode"] == "shared_prefix") {
    std::printf(
        "shared prefix %lld + %lld: cold TTFT %.1f ms, prefix-hit TTFT %.1f ms (%.1f%% of "
        "cold, %lld cached tokens), load %.2f\n",
        static_cast<long long>(j["shared_prefix"].get<int64_t>()),
        static_cast<long long>(j["suffix_len"].get<int64_t>()), j["cold_ttft_ms"].get<double>(),
        j["hit_ttft_ms"].get<double>(), 100.0 * j["hit_over_cold"].get<double>(),
        static_cast<long long>(j["prefix_hit_tokens"].get<int64_t>()),
        j["load_avg_1m"].get<double>());
    return;
  }
  std::printf(
      "batch %3lld prompt %5lld decode %4lld | prefill %9.1f tok/s %7.1f GFLOP/s (%s of "
      "peak %.0f) | decode %8.2f tok/s, step %s ms, %s GB/s (%s of read %.1f GB/s, %s of the best "
      "read %.1f, %.0f MB/step) | load %.2f\n",
      static_cast<long long>(j["batch"].get<int64_t>()),
      static_cast<long long>(j["prompt_len"].get<int64_t>()),
      static_cast<long long>(j["decode_len"].get<int64_t>()),
      j["prefill_tokens_per_s"].get<double>(), j["prefill_gflops"].get<double>(),
      Opt(j["compute_fraction"], "%.1f%%", 100).c_str(), j["measured_peak_gflops"].get<double>(),
      j["decode_tokens_per_s"].is_null() ? 0.0 : j["decode_tokens_per_s"].get<double>(),
      Opt(j["decode_step_ms"], "%.1f").c_str(), Opt(j["decode_gbs"], "%.1f").c_str(),
      Opt(j["bandwidth_fraction"], "%.1f%%", 100).c_str(),
      j["measured_bandwidth_gbs"].get<double>(),
      Opt(j["bandwidth_fraction_of_best"], "%.1f%%", 100).c_str(),
      j["measured_bandwidth_max_gbs"].get<double>(),
      static_cast<double>(j["weight_bytes_per_decode_step"].get<int64_t>()) * 1e-6,
      j["load_avg_1m"].get<double>());
  if (j["ranks"].get<int>() > 1) {
    std::printf(
        "          %d ranks x %d threads; expert exchange %s MB and %s ms in MPI per step\n",
        j["ranks"].get<int>(), j["threads"].get<int>(), Opt(j["ep_mb_per_step"], "%.2f").c_str(),
        Opt(j["ep_mpi_ms_per_step"], "%.2f").c_str());
  }
  if (!j["decode_bound_step_ms"].is_null()) {
    std::printf(
        "          decode step bound (bytes at the read rate, flops at the peak) %.1f ms: "
        "%s of it reached\n",
        j["decode_bound_step_ms"].get<double>(),
        Opt(j["decode_bound_fraction"], "%.1f%%", 100).c_str());
  }
  if (!j["decode_phases"].is_null()) {
    std::printf("          decode window by phase (DEEPINFER_PROFILE), per forward call of %lld:\n",
                static_cast<long long>(j["decode_phase_forwards"].get<int64_t>()));
    for (const auto& p : j["decode_phases"]) {
      std::printf("            %-30s %9.3f ms %7.2f calls\n", p["phase"].get<std::string>().c_str(),
                  p["ms_per_forward"].get<double>(), p["calls_per_forward"].get<double>());
    }
  }
  if (!j["spec"].is_null()) {
    const nlohmann::ordered_json& s = j["spec"];
    std::printf(
        "          spec: %lld drafted, %lld verified, %lld accepted (%.2f drafted and %.2f "
        "accepted per step, mean acceptance length %.2f), histogram %s\n",
        static_cast<long long>(s["drafted"].get<int64_t>()),
        static_cast<long long>(s["verified"].get<int64_t>()),
        static_cast<long long>(s["accepted"].get<int64_t>()), s["drafted_per_step"].get<double>(),
        s["accepted_per_step"].get<double>(), s["mean_acceptance_length"].get<double>(),
        s["accept_histogram"].dump().c_str());
  }
}

void Emit(const BenchArgs& a, const nlohmann::ordered_json& j) {
  if (dist::MpiWorld::Instance().rank() != 0) return;  // one instance, one report
  if (a.json) {
    std::printf("%s\n", JsonLine(j).c_str());
  } else {
    PrintHuman(j);
  }
  std::fflush(stdout);
}

Status RunBench(BenchArgs& a) {
  const bool distributed = dist::MpiWorld::Instance().distributed();
  if (distributed && a.shared_prefix > 0) {
    return Unimplemented("bench --shared-prefix does not run over MPI ranks yet");
  }
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> batches, ParseList("--batch", a.batch));
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> prompts, ParseList("--prompt-len", a.prompt_len));
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> decodes, ParseList("--decode-len", a.decode_len));
  std::fprintf(stderr, "bench: loading %s\n", a.model_dir.c_str());
  DI_ASSIGN_OR_RETURN(LoadedEngine e, LoadEngine(a.model_dir, a.tokenizer_dir, a.engine));
  a.options.report_spec = a.engine.spec != "off";
  if (!a.no_warmup) DI_RETURN_IF_ERROR(Warmup(e));
  const bool throughput = a.shared_prefix == 0 || a.throughput_given;
  if (throughput) {
    for (int64_t b : batches) {
      for (int64_t p : prompts) {
        for (int64_t d : decodes) {
          if (dist::MpiWorld::Instance().rank() == 0) {
            std::fprintf(stderr, "bench: batch %lld, prompt %lld, decode %lld ...\n",
                         static_cast<long long>(b), static_cast<long long>(p),
                         static_cast<long long>(d));
          }
          std::vector<OfflineResult> runs;
          for (int i = 0; i < a.runs; ++i) {
            DI_ASSIGN_OR_RETURN(OfflineResult r, RunOfflineConfig(e, {b, p, d, i}, a.options));
            Emit(a, r.ToJson());
            runs.push_back(std::move(r));
          }
          if (a.runs > 1) Emit(a, SummarizeRuns(runs).ToJson());
        }
      }
    }
  }
  if (a.shared_prefix > 0) {
    if (a.engine.prefix_cache != "on") {
      return InvalidArgument("--shared-prefix needs --prefix-cache on");
    }
    std::fprintf(stderr, "bench: shared prefix %lld + %lld, %d repeat(s) ...\n",
                 static_cast<long long>(a.shared_prefix), static_cast<long long>(a.suffix_len),
                 a.repeat);
    DI_ASSIGN_OR_RETURN(PrefixHitResult r,
                        RunPrefixHit(e, a.shared_prefix, a.suffix_len, a.repeat, a.options));
    Emit(a, r.ToJson());
  }
  return Status::Ok();
}

}  // namespace

void RegisterBench(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "bench", "Offline prefill/decode throughput against measured bandwidth and compute peaks");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--model", a->model_dir, "model folder")->required();
  cmd->add_option("--tokenizer", a->tokenizer_dir, "tokenizer folder (not needed: random ids)");
  auto* b = cmd->add_option("--batch", a->batch, "prompts per run; a list sweeps (1,8,32)");
  auto* p = cmd->add_option("--prompt-len", a->prompt_len, "prompt tokens (random ids); list ok");
  auto* d = cmd->add_option("--decode-len", a->decode_len,
                            "tokens generated per prompt (ignore_eos); list ok");
  cmd->add_option("--shared-prefix", a->shared_prefix,
                  "also measure the TTFT of a prompt whose first N tokens are cached vs cold");
  cmd->add_option("--suffix-len", a->suffix_len, "uncached tokens after the shared prefix")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeat", a->repeat, "cold/hit pairs for --shared-prefix (median)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--runs", a->runs,
                  "measure each configuration this many times, each against its own probes, and "
                  "report the median and range of the ratios")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a->options.seed, "seed of the random prompts");
  cmd->add_option("--limit-samples", a->options.limit_samples,
                  "paired bandwidth reads before and after each configuration")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", a->json, "one JSON object per configuration on stdout");
  cmd->add_flag("--no-warmup", a->no_warmup, "skip the short warm-up request");
  AddEngineFlags(cmd, &a->engine);
  cmd->callback([a, exit_code, b, p, d] {
    a->throughput_given = b->count() + p->count() + d->count() > 0;
    const Status s = RunBench(*a);
    if (!s.ok()) {
      std::fprintf(stderr, "bench: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
