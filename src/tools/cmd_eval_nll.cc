// `deepinfer eval-nll --model DIR (--tokens FILE.bin | --text FILE) [--seq T] [--windows N]`:
// the model's mean negative log-likelihood per token (nats, natural log, over the full vocabulary)
// on held-out text, computed by the engine's own prefill.
//
// The text is cut into N evenly spaced windows of T+1 ids (window i starts at i *
// floor((n-T-1)/N)), exactly as train/train.py's evaluation cuts them, so the trainer's and the
// engine's numbers are over the same tokens: each window is prefilled from position 0 and its T
// next-token predictions are scored. --tokens reads little-endian uint32 ids (train/data/*.bin);
// --text reads UTF-8 and encodes it with the model folder's tokenizer, BOS first. Prints one JSON
// object on stdout.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "model/deepseek_v41/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace deepinfer::tools {
namespace {

using Json = nlohmann::ordered_json;

struct EvalNllOptions {
  std::string model_dir;
  std::string tokens_path;
  std::string text_path;
  int64_t seq = 256;
  int64_t windows = 32;
  std::string mode = "official";
};

StatusOr<std::vector<int32_t>> ReadTokens(const EvalNllOptions& o, int32_t vocab) {
  std::vector<int32_t> ids;
  if (!o.tokens_path.empty()) {
    std::ifstream f(o.tokens_path, std::ios::binary);
    if (!f) return NotFound("cannot open " + o.tokens_path);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() % 4 != 0) {
      return InvalidArgument(o.tokens_path + ": size is not a multiple of 4 (uint32 ids)");
    }
    ids.resize(bytes.size() / 4);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * i);
      const uint32_t v = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
      if (v >= static_cast<uint32_t>(vocab)) {
        return InvalidArgument(o.tokens_path + ": id " + std::to_string(v) + " at " +
                               std::to_string(i) + " is outside the vocabulary");
      }
      ids[i] = static_cast<int32_t>(v);
    }
    return ids;
  }
  std::ifstream f(o.text_path, std::ios::binary);
  if (!f) return NotFound("cannot open " + o.text_path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  DI_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::Load(o.model_dir));
  DI_ASSIGN_OR_RETURN(ids, tok->Encode(text, /*add_special_tokens=*/true));
  return ids;
}

Status Run(const EvalNllOptions& o) {
  DI_ASSIGN_OR_RETURN(auto m, model::Model::Load(o.model_dir));
  const int64_t vocab = m->config().vocab_size;
  DI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, ReadTokens(o, static_cast<int32_t>(vocab)));
  const int64_t t = o.seq, n = static_cast<int64_t>(ids.size());
  if (t < 1 || o.windows < 1) return InvalidArgument("--seq and --windows must be positive");
  if (n < t + 1) {
    return InvalidArgument("the text has " + std::to_string(n) + " ids, fewer than --seq + 1");
  }
  const int64_t step = std::max<int64_t>(1, (n - t - 1) / o.windows);
  model::ForwardOptions opt;
  opt.all_logits = true;
  opt.index_key_mode =
      o.mode == "owner" ? model::IndexKeyMode::kOwner : model::IndexKeyMode::kOfficial;
  double total = 0;
  int64_t count = 0, used = 0;
  for (int64_t w = 0; w < o.windows && w * step + t + 1 <= n; ++w, ++used) {
    const int32_t* win = ids.data() + w * step;
    model::SequenceState seq = m->NewSequence();
    model::ForwardInput in{&seq, std::span<const int32_t>(win, static_cast<size_t>(t))};
    model::ForwardOutput out;
    DI_RETURN_IF_ERROR(m->Forward(std::span<const model::ForwardInput>(&in, 1), opt, &out));
    for (int64_t r = 0; r < t; ++r) {
      const float* row = out.logits.data() + r * vocab;
      double mx = row[0];
      for (int64_t v = 1; v < vocab; ++v) mx = std::max<double>(mx, row[v]);
      double sum = 0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
      total += mx + std::log(sum) - row[win[r + 1]];
      ++count;
    }
  }
  const Json result{{"model", o.model_dir},
                    {"source", o.tokens_path.empty() ? o.text_path : o.tokens_path},
                    {"ids", n},
                    {"seq", t},
                    {"windows", used},
                    {"tokens_scored", count},
                    {"nll", total / static_cast<double>(count)}};
  std::printf("%s\n", result.dump().c_str());
  return Status::Ok();
}

}  // namespace

void RegisterEvalNll(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "eval-nll", "Mean NLL per token (nats) of the model on held-out text, by its own prefill");
  auto o = std::make_shared<EvalNllOptions>();
  cmd->add_option("--model", o->model_dir, "model folder")->required();
  auto* tokens = cmd->add_option("--tokens", o->tokens_path, "uint32 little-endian token ids");
  auto* text = cmd->add_option("--text", o->text_path, "UTF-8 text (encoded with BOS)");
  tokens->excludes(text);
  cmd->add_option("--seq", o->seq, "tokens predicted per window (default 256)");
  cmd->add_option("--windows", o->windows, "evenly spaced windows (default 32)");
  cmd->add_option("--mode", o->mode, "index-key mode: official or owner")
      ->check(CLI::IsMember({"official", "owner"}));
  cmd->callback([=] {
    if (o->tokens_path.empty() == o->text_path.empty()) {
      std::fprintf(stderr, "eval-nll: give one of --tokens or --text\n");
      *exit_code = 2;
      return;
    }
    const Status s = Run(*o);
    if (!s.ok()) std::fprintf(stderr, "eval-nll: %s\n", s.ToString().c_str());
    *exit_code = s.ok() ? 0 : 1;
  });
}

}  // namespace deepinfer::tools
