// `deepinfer generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [options]`: one sequence,
// prefill then token-by-token decode, printing the text (or ids) and the prefill / decode speed.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/deepseek_v41/model.h"
#include "tokenizer/engram_token_map.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace deepinfer::tools {
namespace {

struct GenerateArgs {
  std::string model_dir;
  std::string tokenizer_dir;
  std::string prompt;
  std::string prompt_ids;
  int max_tokens = 32;
  double temperature = 0.0;
  uint64_t seed = 0;
  std::string mode = "official";
  int chunk = 0;
  bool ignore_eos = false;
};

StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      return InvalidArgument("--prompt-ids: not an integer: '" + item + "'");
    }
  }
  if (ids.empty()) return InvalidArgument("--prompt-ids is empty");
  return ids;
}

// Greedy (ties to the lower id) at temperature 0, else Gumbel-max sampling of softmax(l / T).
int32_t Pick(const std::vector<float>& logits, double temperature, std::mt19937_64& rng) {
  int64_t best = 0;
  if (temperature <= 0) {
    for (size_t i = 1; i < logits.size(); ++i) {
      if (logits[i] > logits[best]) best = static_cast<int64_t>(i);
    }
    return static_cast<int32_t>(best);
  }
  std::exponential_distribution<double> exp1(1.0);
  double best_v = -1;
  const double m = *std::max_element(logits.begin(), logits.end());
  for (size_t i = 0; i < logits.size(); ++i) {
    const double p = std::exp((logits[i] - m) / temperature);
    const double v = p / exp1(rng);
    if (v > best_v) {
      best_v = v;
      best = static_cast<int64_t>(i);
    }
  }
  return static_cast<int32_t>(best);
}

Status Generate(const GenerateArgs& a) {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::string tok_dir = a.tokenizer_dir;
  if (tok_dir.empty() && std::filesystem::exists(a.model_dir + "/tokenizer.json")) {
    tok_dir = a.model_dir;
  }
  if (!tok_dir.empty()) {
    DI_ASSIGN_OR_RETURN(tok, tokenizer::Tokenizer::Load(tok_dir));
  }
  model::LoadOptions lo;
  if (tok && !std::filesystem::exists(a.model_dir + "/engram_token_map.json")) {
    DI_ASSIGN_OR_RETURN(tokenizer::EngramTokenMap m, tokenizer::BuildEngramTokenMap(*tok));
    lo.engram_token_map = model::EngramTokenMap{m.compressed_vocab_size, m.map};
  }
  const auto t_load = std::chrono::steady_clock::now();
  DI_ASSIGN_OR_RETURN(auto model, model::Model::Load(a.model_dir, lo));
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  std::vector<int32_t> prompt;
  if (!a.prompt_ids.empty()) {
    DI_ASSIGN_OR_RETURN(prompt, ParseIds(a.prompt_ids));
  } else {
    if (!tok) return InvalidArgument("--prompt needs a tokenizer (--tokenizer DIR)");
    DI_ASSIGN_OR_RETURN(prompt, tok->Encode(a.prompt, /*add_special_tokens=*/true));
  }
  model::ForwardOptions opt;
  opt.index_key_mode =
      a.mode == "owner" ? model::IndexKeyMode::kOwner : model::IndexKeyMode::kOfficial;
  model::SequenceState seq = model->NewSequence();
  model::ForwardOutput out;
  auto t0 = std::chrono::steady_clock::now();
  const size_t chunk = a.chunk > 0 ? static_cast<size_t>(a.chunk) : prompt.size();
  for (size_t pos = 0; pos < prompt.size(); pos += chunk) {
    const size_t n = std::min(chunk, prompt.size() - pos);
    model::ForwardInput in{&seq, std::span<const int32_t>(prompt).subspan(pos, n)};
    DI_RETURN_IF_ERROR(model->Forward(std::span(&in, 1), opt, &out));
  }
  auto t1 = std::chrono::steady_clock::now();
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();

  std::optional<tokenizer::StreamingDetokenizer> detok;
  if (tok) {
    DI_ASSIGN_OR_RETURN(auto d, tokenizer::StreamingDetokenizer::Create(*tok, {}));
    detok.emplace(std::move(d));
  }
  std::mt19937_64 rng(a.seed);
  const int32_t eos = model->config().eos_token_id;
  int generated = 0;
  std::vector<float> logits(out.logits.end() - model->config().vocab_size, out.logits.end());
  for (; generated < a.max_tokens; ++generated) {
    int32_t t = Pick(logits, a.temperature, rng);
    if (detok) {
      DI_ASSIGN_OR_RETURN(std::string piece, detok->Push(t));
      std::fputs(piece.c_str(), stdout);
    } else {
      std::printf("%d ", t);
    }
    std::fflush(stdout);
    if (t == eos && !a.ignore_eos) {
      ++generated;
      break;
    }
    if (generated + 1 == a.max_tokens) {
      ++generated;
      break;
    }
    model::ForwardInput in{&seq, std::span<const int32_t>(&t, 1)};
    DI_RETURN_IF_ERROR(model->Forward(std::span(&in, 1), opt, &out));
    logits.assign(out.logits.begin(), out.logits.end());
  }
  if (detok) std::fputs(detok->Finish().c_str(), stdout);
  std::printf("\n");
  auto t2 = std::chrono::steady_clock::now();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  const int decode_steps = std::max(0, generated - 1);  // forwards after the prefill
  std::fprintf(stderr,
               "load %.2f s | prefill %zu tokens in %.3f s (%.1f tok/s) | decode %d tokens in "
               "%.3f s (%.2f tok/s)\n",
               load_s, prompt.size(), prefill_s, prompt.size() / std::max(prefill_s, 1e-9),
               decode_steps, decode_s, decode_steps / std::max(decode_s, 1e-9));
  return Status::Ok();
}

}  // namespace

void RegisterGenerate(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate from a prompt (one sequence)");
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("--model", a->model_dir, "model folder")->required();
  cmd->add_option("--tokenizer", a->tokenizer_dir,
                  "tokenizer folder (default: the model folder when it has tokenizer.json)");
  auto* p = cmd->add_option("--prompt", a->prompt, "prompt text");
  auto* pi = cmd->add_option("--prompt-ids", a->prompt_ids, "prompt token ids, comma separated");
  p->excludes(pi);
  cmd->add_option("--max-tokens", a->max_tokens, "tokens to generate")->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", a->temperature, "0 = greedy");
  cmd->add_option("--seed", a->seed, "sampling seed");
  cmd->add_option("--mode", a->mode, "index-key mode: official or owner")
      ->check(CLI::IsMember({"official", "owner"}));
  cmd->add_option("--chunk", a->chunk, "prefill chunk size (0 = whole prompt)");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "keep generating after eos");
  cmd->callback([a, exit_code] {
    if (a->prompt.empty() && a->prompt_ids.empty()) {
      std::fprintf(stderr, "generate: give --prompt or --prompt-ids\n");
      *exit_code = 2;
      return;
    }
    Status s = Generate(*a);
    if (!s.ok()) {
      std::fprintf(stderr, "generate: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
