// `[mpirun -n N] deepinfer cp-prefill --model DIR --prompt-len L[,L...] [--repeat R] [--seed S]
// [--mode official|owner] [--page-tokens P] [--chunks-per-rank K] [--check]`: the
// context-parallel prefill of random prompts over the ranks of the job
// (model/deepseek_v41/context_parallel.h, MPI point-to-point: dist/context_exchange_mpi.h),
// measured. Every rank loads the whole model; the prompt is cut into K chunks per rank dealt
// round-robin (PlanContextChunks, K = 4 by default); the last rank ends with the sequence.
//
// Rank 0 prints one JSON object per prompt length: ttft_s (the median over --repeat of the
// last rank's wall time from a common start to its logits; one rank alone = a plain prefill, the
// baseline), per-rank busy seconds (wall minus time waiting for a peer) and their max/mean, the
// bytes sent per prompt token, the chunks, and an XXH3 of the logits. --check: the last rank
// also prefills the prompt alone in one shot and decodes 4 greedy tokens from both sequences;
// "check": "same" when every logit of all five steps has the same bits, else "DIFFERENT" (and
// the exit status is 1).
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "dist/context_exchange_mpi.h"
#include "dist/mpi_world.h"
#include "model/deepseek_v41/context_parallel.h"
#include "model/deepseek_v41/model.h"
#include "tools/cli.h"

namespace deepinfer::tools {
namespace {

using Json = nlohmann::ordered_json;

struct CpPrefillOptions {
  std::string model_dir;
  std::vector<int64_t> prompt_lens;
  int repeat = 1;
  uint32_t seed = 1;
  std::string mode = "official";
  int64_t page_tokens = 0;
  int chunks_per_rank = 4;
  bool check = false;
};

std::vector<int32_t> RandomPrompt(int64_t n, uint32_t seed, int64_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(
      0, static_cast<int32_t>(std::min<int64_t>(vocab, 100000) - 1));
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (auto& t : p) t = id(rng);
  return p;
}

StatusOr<model::SequenceState> Fresh(const model::Model& m, int64_t page_tokens) {
  model::SequenceState s = m.NewSequence();
  if (page_tokens > 0) {
    DI_ASSIGN_OR_RETURN(model::KvPageLayout layout,
                        model::MakeKvPageLayout(m.config(), m.layers(), page_tokens));
    s.own_store = std::make_shared<model::KvPageStore>(std::move(layout), 0, /*growable=*/true);
    s.kv_store = s.own_store.get();
  }
  return s;
}

// The logits of 4 greedy decode steps after `first`, one row each, as raw bits.
StatusOr<std::vector<uint32_t>> DecodeBits(const model::Model& m, model::SequenceState* s,
                                           std::vector<float> first,
                                           const model::ForwardOptions& fo) {
  std::vector<uint32_t> bits(first.size());
  std::memcpy(bits.data(), first.data(), first.size() * 4);
  for (int i = 0; i < 4; ++i) {
    const std::vector<int32_t> tok = {
        static_cast<int32_t>(std::max_element(first.begin(), first.end()) - first.begin())};
    const model::ForwardInput in{s, tok, true, 1, 0};
    model::ForwardOutput o;
    DI_RETURN_IF_ERROR(m.Forward(std::span<const model::ForwardInput>(&in, 1), fo, &o));
    const size_t at = bits.size();
    bits.resize(at + o.logits.size());
    std::memcpy(bits.data() + at, o.logits.data(), o.logits.size() * 4);
    first = std::move(o.logits);
  }
  return bits;
}

Status Run(const CpPrefillOptions& o, bool* all_same) {
  dist::MpiWorld& world = dist::MpiWorld::Instance();
  DI_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> m, model::Model::Load(o.model_dir));
  model::ForwardOptions fo;
  fo.index_key_mode =
      o.mode == "owner" ? model::IndexKeyMode::kOwner : model::IndexKeyMode::kOfficial;
  dist::MpiContextExchange ex;
  const bool last = ex.rank() + 1 == ex.size();
  *all_same = true;
  for (const int64_t n : o.prompt_lens) {
    if (n < 1) return InvalidArgument("--prompt-len must be >= 1");
    const std::vector<int32_t> prompt =
        RandomPrompt(n, o.seed + static_cast<uint32_t>(n), m->config().vocab_size);
    std::vector<double> ttft;
    double busy = 0.0;
    int64_t sent = 0;
    std::vector<model::ContextChunk> chunks;
    std::string check = "not run";
    uint64_t logits_hash = 0;
    for (int rep = 0; rep < o.repeat; ++rep) {
      DI_ASSIGN_OR_RETURN(model::SequenceState s, Fresh(*m, o.page_tokens));
      chunks =
          model::PlanContextChunks(n, s.page_layout().page_tokens, ex.size(), o.chunks_per_rank);
      const double waited0 = ex.wait_seconds();
      const int64_t sent0 = ex.bytes_sent();
      world.MaxAll(0.0);  // a common start
      const auto start = std::chrono::steady_clock::now();
      model::ForwardOutput out;
      DI_RETURN_IF_ERROR(model::PrefillContextParallel(*m, &s, prompt, chunks, ex, fo, 1, &out));
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ttft.push_back(world.MaxAll(last ? wall : 0.0));
      busy += wall - (ex.wait_seconds() - waited0);
      sent += ex.bytes_sent() - sent0;
      if (last) {
        logits_hash = XXH3_64bits(out.logits.data(), out.logits.size() * 4);
        if (o.check && rep == 0) {
          DI_ASSIGN_OR_RETURN(model::SequenceState alone, Fresh(*m, o.page_tokens));
          const model::ForwardInput in{&alone, prompt, true, 1, 0};
          model::ForwardOutput ref;
          DI_RETURN_IF_ERROR(m->Forward(std::span<const model::ForwardInput>(&in, 1), fo, &ref));
          DI_ASSIGN_OR_RETURN(std::vector<uint32_t> a, DecodeBits(*m, &s, out.logits, fo));
          DI_ASSIGN_OR_RETURN(std::vector<uint32_t> b, DecodeBits(*m, &alone, ref.logits, fo));
          check = a == b ? "same" : "DIFFERENT";
        }
      }
    }
    // Everything rank 0 prints, from every rank.
    Json mine = {{"busy_s", busy / o.repeat},
                 {"sent", sent / o.repeat},
                 {"check", check},
                 {"logits_xxh3", logits_hash}};
    const std::vector<std::string> all = world.AllGather(mine.dump());
    std::sort(ttft.begin(), ttft.end());
    Json line = {{"prompt_len", n},
                 {"ranks", ex.size()},
                 {"mode", o.mode},
                 {"ttft_s", ttft[ttft.size() / 2]}};
    Json busy_all = Json::array();
    double max_busy = 0.0, sum_busy = 0.0;
    int64_t bytes = 0;
    for (const std::string& text : all) {
      const Json r = Json::parse(text);
      busy_all.push_back(r["busy_s"]);
      max_busy = std::max(max_busy, r["busy_s"].get<double>());
      sum_busy += r["busy_s"].get<double>();
      bytes += r["sent"].get<int64_t>();
    }
    const Json tail = Json::parse(all.back());
    line["busy_s"] = busy_all;
    line["busy_max_over_mean"] = sum_busy > 0 ? max_busy * ex.size() / sum_busy : 0.0;
    line["bytes_sent_per_token"] = static_cast<double>(bytes) / static_cast<double>(n);
    Json cj = Json::array();
    for (const model::ContextChunk& c : chunks) cj.push_back({c.begin, c.end, c.rank});
    line["chunks"] = cj;
    line["logits_xxh3"] = tail["logits_xxh3"];
    line["check"] = tail["check"];
    if (tail["check"] == "DIFFERENT") *all_same = false;
    if (world.rank() == 0) std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace

void RegisterCpPrefill(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "cp-prefill",
      "Context-parallel prefill of random prompts over the ranks of an mpirun job, measured");
  auto o = std::make_shared<CpPrefillOptions>();
  cmd->add_option("--model", o->model_dir, "model folder")->required();
  cmd->add_option("--prompt-len", o->prompt_lens, "prompt lengths (comma-separated)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--repeat", o->repeat, "runs per length (the median TTFT is printed)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "seed of the random prompts");
  cmd->add_option("--mode", o->mode, "index-key mode: official or owner")
      ->check(CLI::IsMember({"official", "owner"}));
  cmd->add_option("--page-tokens", o->page_tokens, "positions per KV page (0 = default)");
  cmd->add_option("--chunks-per-rank", o->chunks_per_rank,
                  "chunks dealt round-robin to each rank (more: a shorter pipeline fill)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--check", o->check,
                "the last rank compares with a one-process prefill and 4 decode steps, bit for "
                "bit");
  cmd->callback([=] {
    bool same = true;
    const Status s = Run(*o, &same);
    if (!s.ok()) {
      std::fprintf(stderr, "cp-prefill: %s\n", s.ToString().c_str());
      // The other ranks may be waiting for this one: leave without MPI_Finalize, so that
      // mpirun ends the job instead of letting it hang.
      if (dist::MpiWorld::Instance().distributed()) std::_Exit(1);
    }
    *exit_code = !s.ok() ? 1 : same ? 0 : 1;
  });
}

}  // namespace deepinfer::tools
