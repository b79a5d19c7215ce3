// `deepinfer generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3 | --batch FILE.jsonl)`:
// runs requests through the engine (continuous batching, chunked prefill, prefix cache).
//   single prompt: streams the text (or ids) and prints prefill / decode speed;
//   --batch FILE:  each line {"prompt": …} or {"prompt_ids": […]} plus sampling fields, an
//                  optional "priority", structured outputs ("response_format", "regex" or
//                  "grammar"; "thinking": true starts the constraint after </think>); one
//                  output line per input line, in input order:
//                  {"index", "ids", "text", "finish_reason", "seed", "prompt_tokens",
//                   "cached_tokens"} (+ "logprobs" with "logprobs": true, "prompt_logprobs"
//                  with "prompt_logprobs": k, null for the first prompt token); with "n" > 1
//                  the per-sample fields (ids, text, finish_reason, logprobs) move into
//                  "samples": [...]; {"index", "error"} for a line that was refused.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/request_text.h"
#include "dist/mpi_world.h"
#include "tools/cli.h"
#include "tools/engine_setup.h"
#include "tools/generate_batch.h"

namespace deepinfer::tools {
namespace {

struct GenerateArgs {
  std::string model_dir;
  std::string tokenizer_dir;
  std::string prompt;
  std::string prompt_ids;
  std::string batch_file;
  int max_tokens = 32;
  double temperature = 0.0;
  uint64_t seed = 0;
  bool ignore_eos = false;
  EngineFlags engine;
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

Status GenerateOne(const GenerateArgs& a) {
  // Over MPI ranks, rank 0 runs the request; the others serve their experts (expert parallel).
  const bool lead = dist::MpiWorld::Instance().rank() == 0;
  const auto t_load = std::chrono::steady_clock::now();
  DI_ASSIGN_OR_RETURN(LoadedEngine e, LoadEngine(a.model_dir, a.tokenizer_dir, a.engine));
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  engine::Request r;
  if (!a.prompt_ids.empty()) {
    DI_ASSIGN_OR_RETURN(r.prompt, ParseIds(a.prompt_ids));
  } else {
    if (!e.tokenizer) return InvalidArgument("--prompt needs a tokenizer (--tokenizer DIR)");
    DI_ASSIGN_OR_RETURN(r.prompt, e.tokenizer->Encode(a.prompt, /*add_special_tokens=*/true));
  }
  r.params.max_tokens = a.max_tokens;
  r.params.temperature = static_cast<float>(a.temperature);
  r.params.seed = a.seed;
  r.params.ignore_eos = a.ignore_eos;
  // Null without a tokenizer: the ids are printed instead.
  DI_ASSIGN_OR_RETURN(std::shared_ptr<api::RequestText> text,
                      api::RequestText::Attach(e.tokenizer.get(), true, &r));
  const size_t prompt_len = r.prompt.size();
  int64_t n_out = 0;
  std::chrono::steady_clock::time_point t_first;
  Status error;
  r.on_output = [&](const engine::RequestOutput& o) {
    if (n_out == 0 && !o.new_tokens.empty()) t_first = std::chrono::steady_clock::now();
    n_out = o.n_output;
    if (text) {
      if (o.finished) text->sample(0).Finish();
      std::fputs(text->sample(0).Take().c_str(), stdout);
    } else {
      for (int32_t t : o.new_tokens) std::printf("%d ", t);
    }
    std::fflush(stdout);
    if (o.finished && *o.finished == engine::FinishReason::kError) error = o.error;
  };
  const auto t0 = std::chrono::steady_clock::now();
  if (lead) DI_RETURN_IF_ERROR(e.engine->Add(std::move(r)).status());
  DI_RETURN_IF_ERROR(e.RunUntilIdle());
  const auto t1 = std::chrono::steady_clock::now();
  if (!lead) return Status::Ok();
  std::printf("\n");
  DI_RETURN_IF_ERROR(error);
  const double prefill_s = std::chrono::duration<double>(t_first - t0).count();
  const double decode_s = std::chrono::duration<double>(t1 - t_first).count();
  const int64_t decode_steps = std::max<int64_t>(0, n_out - 1);  // forwards after the prefill
  std::fprintf(stderr,
               "load %.2f s | prefill %zu tokens in %.3f s (%.1f tok/s) | decode %lld tokens in "
               "%.3f s (%.2f tok/s)\n",
               load_s, prompt_len, prefill_s, prompt_len / std::max(prefill_s, 1e-9),
               static_cast<long long>(decode_steps), decode_s,
               decode_steps / std::max(decode_s, 1e-9));
  return Status::Ok();
}

}  // namespace

void RegisterGenerate(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate from a prompt or a batch file");
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("--model", a->model_dir, "model folder")->required();
  cmd->add_option("--tokenizer", a->tokenizer_dir,
                  "tokenizer folder (default: the model folder when it has tokenizer.json)");
  auto* p = cmd->add_option("--prompt", a->prompt, "prompt text");
  auto* pi = cmd->add_option("--prompt-ids", a->prompt_ids, "prompt token ids, comma separated");
  auto* b = cmd->add_option("--batch", a->batch_file,
                            "JSON Lines file of requests ('-' = stdin); results on stdout");
  p->excludes(pi);
  p->excludes(b);
  pi->excludes(b);
  cmd->add_option("--max-tokens", a->max_tokens, "tokens to generate (single prompt)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", a->temperature, "0 = greedy (single prompt)");
  cmd->add_option("--seed", a->seed, "sampling seed (single prompt)");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "keep generating after eos (single prompt)");
  cmd->add_option("--chunk", a->engine.prefill_chunk, "alias of --prefill-chunk");
  AddEngineFlags(cmd, &a->engine);
  cmd->callback([a, exit_code] {
    if (a->prompt.empty() && a->prompt_ids.empty() && a->batch_file.empty()) {
      std::fprintf(stderr, "generate: give --prompt, --prompt-ids or --batch\n");
      *exit_code = 2;
      return;
    }
    const Status s = a->batch_file.empty()
                         ? GenerateOne(*a)
                         : GenerateBatch(a->model_dir, a->tokenizer_dir, a->engine, a->batch_file);
    if (!s.ok()) {
      std::fprintf(stderr, "generate: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
