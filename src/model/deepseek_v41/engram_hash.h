// The Engram n-gram hash of DeepSeek-V4.1: token ids -> Engram table row ids, bit-exact to the
// official engram.py (NgramHashState / EngramLayout / compute_hash_multipliers).
//
// Per position p and Engram layer l, with N = engram_max_ngram_size and H = engram_n_heads:
//   tok[s], s = 0..N-1: the compressed id at p-s; once p-s < 0 or a dead (image) token is met,
//                       that look-back and every older one is the pad (token_map[engram_pad_id]).
//   prod[s] = tok[s] * M[l][s]                     (int64, cannot overflow: see multipliers)
//   r = prod[0]; for n = 1..N-1: r ^= prod[n];
//     for k = 0..H-1: id[(n-1)*H + k] = r % P[l][n-1][k] + offset[l][(n-1)*H + k]
// P: primes drawn in order, never reused across heads, orders or layers: for each layer and
// order, the search restarts at engram_vocab_size and takes the next H primes not yet used.
// offset: exclusive prefix sum of the layer's (N-1)*H primes (column order), so each
// (order, head) owns a disjoint row range and the layer's table has sum(P[l]) rows.
// M[l] = default_rng(10007 * layer_id).integers(0, max(1, (INT64_MAX // V) // 2), N) * 2 + 1
// with V = engram_compressed_vocab_size (numpy PCG64; core/numpy_random.h).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/engram_token_map.h"

namespace deepinfer::model {

// Largest engram_max_ngram_size the hasher supports (the release uses 4); bounds the history.
inline constexpr int kEngramMaxNgram = 8;

// Hash constants of one Engram layer.
struct EngramLayerHash {
  int layer_id = 0;
  std::vector<int64_t> primes;       // [(N-1)*H] bucket modulus per column (n-1)*H + k
  std::vector<int64_t> offsets;      // [(N-1)*H] first table row of each column's range
  std::vector<int64_t> multipliers;  // [N] one per look-back s (odd)
  int64_t num_rows = 0;              // sum(primes): the table's row count

  bool operator==(const EngramLayerHash&) const = default;
};

// Hash constants of every Engram layer, in engram_layer_ids order. Derived from the config
// alone (the token map only supplies the pad's compressed id at hash time).
struct EngramHashPlan {
  int max_ngram = 0;     // N
  int n_heads = 0;       // H
  int pad_token_id = 0;  // engram_pad_id (an uncompressed token id)
  std::vector<EngramLayerHash> layers;

  int n_layers() const { return static_cast<int>(layers.size()); }
  int n_cols() const { return (max_ngram - 1) * n_heads; }  // ids per layer per position
};

// Computes the primes, offsets and multipliers. An empty engram_layer_ids gives a plan without
// layers. Errors: engram_max_ngram_size outside [2, kEngramMaxNgram]. Does not compare against
// engram_num_embeddings: that is CheckEngramNumEmbeddings.
StatusOr<EngramHashPlan> BuildEngramHashPlan(const ModelConfig& config);

// OK iff every layer's num_rows equals the config's engram_num_embeddings entry (what the
// released checkpoint's table shapes follow). The loader calls this before trusting the table.
Status CheckEngramNumEmbeddings(const EngramHashPlan& plan, const ModelConfig& config);

// Look-back state of one sequence: the compressed ids of its last N-1 positions, most recent
// first (ids[0] = position p-1). kDead marks "no token" (before the start) and dead (image)
// tokens alike: both stop the look-back. A default-constructed history is a fresh sequence.
struct EngramHistory {
  static constexpr int32_t kDead = -1;
  std::array<int32_t, kEngramMaxNgram - 1> ids = FreshIds();

  bool operator==(const EngramHistory&) const = default;

 private:
  static constexpr std::array<int32_t, kEngramMaxNgram - 1> FreshIds() {
    std::array<int32_t, kEngramMaxNgram - 1> a{};
    a.fill(kDead);
    return a;
  }
};

// Hashes `ids` (the next ids.size() tokens of one sequence) into
// out[ids.size()][plan.n_layers()][plan.n_cols()] row ids (offsets included) and advances
// `history` past them, so hashing a sequence in any chunking gives the one-shot result.
// `live` is empty (all tokens take part) or has one entry per id: 0 marks a dead token (an
// image-span placeholder), which takes part in no n-gram; its own ids are those of an all-pad
// n-gram, as in the official code (callers zero its gate anyway).
// Preconditions (CHECK): token_map passed ValidateEngramTokenMap for the plan's config; every id
// in [0, token_map.map.size()); live.size() is 0 or ids.size().
void HashTokens(const EngramHashPlan& plan, const EngramTokenMap& token_map,
                std::span<const int32_t> ids, EngramHistory* history, int64_t* out,
                std::span<const uint8_t> live = {});

}  // namespace deepinfer::model
