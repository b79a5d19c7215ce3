// Random DeepSeek-V4.1 checkpoints in the released format (`deepinfer make-checkpoint`): every
// tensor of ExpectedWeights(config), with the release's names, dtypes and block layouts, filled
// with values drawn like the v41-tiny-a fixture's (its README, "How the weights were made"):
//   * projections (kFp8Tile32 / kBf16 / kF32): N(0, (gain * fan_in^-1/2)^2); FP8 ones are rounded
//     to e4m3 under a power-of-two scale per 32x32 tile, 2^ceil(log2(amax / 448)), so every
//     non-zero tile's largest |code| decodes into (224, 448];
//   * routed experts (kMxfp4): uniformly random e2m1 nibbles; per 32 inputs a power-of-two scale
//     2^(b + j), b = round(log2(gain / (rms_e2m1 * sqrt(1.75) * sqrt(fan_in)))) and a jitter j
//     uniform in {-1, 0, +1} (rms_e2m1 = sqrt(8.5625), the RMS of a uniform code; 1.75 = the mean
//     square of the jitter factor), so that W x has about gain * rms(x) per output. Expert 0 of
//     every MoE gets +4 binades on w1/w3 and -9 on w2 (as the fixture) so that the SwiGLU clamps
//     are reached;
//   * Engram table (kFp8Row32): N(0, 0.3^2) rounded to e4m3 under a power-of-two scale per 32
//     columns of a row (same rule as the tiles);
//   * RMSNorm weights: mean * (1 + 0.1 N(0,1)); embeddings N(0, 0.12^2); hc base/scale, attention
//     sinks N(0, 0.5^2); MoE gate bias N(0.33, 0.43^2). Per-tensor gains and means: see
//     weight_manifest.cc.
// Gaussian draws come from a 65536-point quantile grid (4 per 64-bit xoshiro256** output), which
// is finer than the bf16/e4m3 rounding that follows and ~10x cheaper than Box-Muller.
// Values are a pure function of (seed, tensor name, shape): each tensor is cut into fixed chunks of
// rows, each with its own random stream, so neither the thread count nor sharding changes a bit.
// Memory: one batch of chunks (<= ~64 MiB) plus the scale tensor of the weight being written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

struct RandomCheckpointOptions {
  uint64_t seed = 0;
  uint64_t max_shard_bytes = 0;  // 0: one model.safetensors; else shards + index
  bool show_progress = true;     // progress bar on stderr (TTY only)
  ThreadPool* pool = nullptr;    // nullptr: ThreadPool::Default()
  // Added to every router bias: expert e gets router_skew * (1 - e / (E - 1)), so low experts are
  // chosen more (a reproducible skewed expert load for EPLB; 0 = the plain draw).
  float router_skew = 0.0f;
};

// Writes DIR/model.safetensors (or DIR/model-0000i-of-0000n.safetensors + the index) and, when the
// config has Engram layers, DIR/engram_token_map.json (StandInEngramTokenMap). The caller writes
// DIR/config.json. `config` must be valid (every parser validates).
Status WriteRandomCheckpoint(const ModelConfig& config, const std::string& dir,
                             const RandomCheckpointOptions& options);

// The stand-in compressed-token map for a checkpoint without a tokenizer:
// map[i] = floor(i * compressed / vocab). For compressed <= vocab every id in [0, compressed) is
// hit (consecutive values differ by at most 1), so the map has exactly `compressed` distinct ids;
// for the fixture (512 -> 256) it is its `i // 2`. InvalidArgument if compressed > vocab or < 1.
StatusOr<std::vector<int32_t>> StandInEngramTokenMap(int64_t vocab, int64_t compressed);
// {"compressed_vocab_size": N, "map": [...]} as the fixture's engram_token_map.json.
Status WriteEngramTokenMap(const std::string& path, const std::vector<int32_t>& map,
                           int64_t compressed);

}  // namespace deepinfer::model
