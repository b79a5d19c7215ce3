// The compact form of a trained model (`models/<name>/compact.safetensors`) and its expansion into
// the released checkpoint (`deepinfer unpack-model`).
//
// A model trained with a tied tail vocabulary (train/DEV_PLAN.md) keeps K token ids as their own
// rows of embed.weight, head.weight and the last DSpark stage's markov_head.{embed,head}.weight and
// shares one more row (row K) among all other ids. The released checkpoint repeats that row for
// every tail id; the compact file stores each such table with its K + 1 rows only. Everything else
// is stored exactly as in the released model.safetensors (same dtype, shape and bytes), so the
// expansion is a copy plus a row gather. File layout (written by train/v41/compact.py):
//   * metadata: "format" = "deepinfer-compact", "version" = "1", "vocab_size" = V (decimal),
//     "tied_tables" = comma-separated names of the [K + 1, cols] tables;
//   * every tensor of ExpectedTensors(config) under its release name (any order), the tied tables
//     BF16 [K + 1, cols] where the manifest has [V, cols];
//   * "kept_ids": I32 [K], strictly increasing token ids in [0, V); token kept_ids[r] is row r.
// UnpackCompactModel writes DIR/model.safetensors with the tensors in manifest order (the layout
// `deepinfer make-checkpoint` and train/v41/ckpt_io.py's export_released write): token t of a tied
// table gets row r when kept_ids[r] == t, else row K. Byte-identical to export_released of the
// expanded state. The kept ids are also the model's natural DSpark draft vocabulary
// (model/deepseek_v41/draft_vocab.h): the training data's most frequent tokens, the only ids
// its head tells apart; unpack-model writes them to DIR/dspark_draft_vocab.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer::tools {

inline constexpr const char* kCompactFormat = "deepinfer-compact";
inline constexpr const char* kCompactVersion = "1";

struct UnpackSummary {
  int64_t kept = 0;               // K
  std::vector<int32_t> kept_ids;  // the ids with their own rows, ascending
  int64_t vocab = 0;              // V
  uint64_t bytes_in = 0;          // tensor bytes of the compact file
  uint64_t bytes_out = 0;         // tensor bytes written
  std::vector<std::string> tied_tables;
};

// Reads `compact_path`, checks it against `config` (every manifest tensor present with the
// manifest's dtype and shape, the tied tables' rows = K + 1, kept_ids valid, nothing else) and
// writes out_dir/model.safetensors (created; an earlier checkpoint there is replaced). Errors
// (kDataLoss for a malformed file, kInvalidArgument for a mismatch with the config) name the file
// and the tensor.
StatusOr<UnpackSummary> UnpackCompactModel(const std::string& compact_path,
                                           const model::ModelConfig& config,
                                           const std::string& out_dir);

// A config file as make-checkpoint reads it: a Hugging Face config.json, or an official
// inference/config.json (recognised by "dim" without "text_config").
StatusOr<model::ModelConfig> LoadConfigFile(const std::string& path);

}  // namespace deepinfer::tools
