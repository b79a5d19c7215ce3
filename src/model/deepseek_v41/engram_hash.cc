#include "model/deepseek_v41/engram_hash.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_set>

#include "core/check.h"
#include "core/numpy_random.h"

namespace deepinfer::model {
namespace {

// The official prime search starts from engram_vocab_size (release 16e6). Far larger values
// would make the table absurd and the offsets overflow; refuse them up front.
constexpr int64_t kMaxEngramVocabSize = int64_t{1} << 48;
// engram.py seeds each layer's generator with 10007 * layer_id.
constexpr uint64_t kSeedPerLayer = 10007;

uint64_t MulMod(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<Uint128>(a) * b % m);
}

uint64_t PowMod(uint64_t base, uint64_t exp, uint64_t m) {
  uint64_t result = 1;
  base %= m;
  while (exp > 0) {
    if (exp & 1) result = MulMod(result, base, m);
    base = MulMod(base, base, m);
    exp >>= 1;
  }
  return result;
}

// Deterministic Miller-Rabin: the first 12 prime bases decide every n < 2^64.
bool IsPrime(uint64_t n) {
  constexpr uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return false;
  for (uint64_t p : kBases) {
    if (n % p == 0) return n == p;
  }
  uint64_t d = n - 1;
  int r = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++r;
  }
  for (uint64_t a : kBases) {
    uint64_t x = PowMod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < r && composite; ++i) {
      x = MulMod(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

// engram.py find_next_prime: the smallest prime > start not handed out yet.
int64_t FindNextUnusedPrime(int64_t start, const std::unordered_set<int64_t>& used) {
  int64_t candidate = start + 1;
  while (!IsPrime(static_cast<uint64_t>(candidate)) || used.contains(candidate)) ++candidate;
  return candidate;
}

}  // namespace

StatusOr<EngramHashPlan> BuildEngramHashPlan(const ModelConfig& config) {
  EngramHashPlan plan;
  plan.max_ngram = config.engram_max_ngram_size;
  plan.n_heads = config.engram_n_heads;
  plan.pad_token_id = config.engram_pad_id;
  if (config.engram_layer_ids.empty()) return plan;
  if (plan.max_ngram < 2 || plan.max_ngram > kEngramMaxNgram) {
    return InvalidArgument("engram_max_ngram_size " + std::to_string(plan.max_ngram) +
                           " is outside the supported [2, " + std::to_string(kEngramMaxNgram) +
                           "]");
  }
  if (plan.n_heads <= 0) return InvalidArgument("engram_n_heads must be > 0");
  if (config.engram_vocab_size <= 0 || config.engram_vocab_size > kMaxEngramVocabSize) {
    return InvalidArgument("engram_vocab_size " + std::to_string(config.engram_vocab_size) +
                           " is outside (0, 2^48]");
  }
  if (config.engram_compressed_vocab_size <= 0) {
    return InvalidArgument("engram_compressed_vocab_size must be > 0");
  }

  // Bounded so that (compressed id < V) * multiplier cannot overflow int64.
  const int64_t multiplier_bound = std::max<int64_t>(
      1, (std::numeric_limits<int64_t>::max() / config.engram_compressed_vocab_size) / 2);

  std::unordered_set<int64_t> used;
  for (int layer_id : config.engram_layer_ids) {
    if (layer_id < 0) return InvalidArgument("engram_layer_ids has a negative entry");
    EngramLayerHash layer;
    layer.layer_id = layer_id;
    for (int n = 1; n < plan.max_ngram; ++n) {
      int64_t current = config.engram_vocab_size - 1;  // restarts for every order
      for (int k = 0; k < plan.n_heads; ++k) {
        current = FindNextUnusedPrime(current, used);
        used.insert(current);
        layer.offsets.push_back(layer.num_rows);
        layer.primes.push_back(current);
        layer.num_rows += current;
      }
    }
    NumpyGenerator rng(kSeedPerLayer * static_cast<uint64_t>(layer_id));
    for (int64_t v : rng.Integers(0, multiplier_bound, plan.max_ngram)) {
      layer.multipliers.push_back(v * 2 + 1);
    }
    plan.layers.push_back(std::move(layer));
  }
  return plan;
}

Status CheckEngramNumEmbeddings(const EngramHashPlan& plan, const ModelConfig& config) {
  if (config.engram_num_embeddings.size() != plan.layers.size()) {
    return InvalidArgument(
        "engram_num_embeddings has " + std::to_string(config.engram_num_embeddings.size()) +
        " entries but the hash plan has " + std::to_string(plan.layers.size()) + " Engram layers");
  }
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const EngramLayerHash& layer = plan.layers[i];
    if (layer.num_rows != config.engram_num_embeddings[i]) {
      return InvalidArgument(
          "Engram layer " + std::to_string(layer.layer_id) + ": the hash buckets (primes from " +
          std::to_string(layer.primes.front()) + ", sum " + std::to_string(layer.num_rows) +
          ") do not match engram_num_embeddings[" + std::to_string(i) +
          "] = " + std::to_string(config.engram_num_embeddings[i]) +
          "; engram_vocab_size, engram_n_heads or engram_max_ngram_size disagree with the table");
    }
  }
  return Status::Ok();
}

void HashTokens(const EngramHashPlan& plan, const EngramTokenMap& token_map,
                std::span<const int32_t> ids, EngramHistory* history, int64_t* out,
                std::span<const uint8_t> live) {
  CHECK(history != nullptr);
  CHECK(live.empty() || live.size() == ids.size())
      << "live has " << live.size() << " entries for " << ids.size() << " ids";
  if (plan.layers.empty() || ids.empty()) return;
  const int n_gram = plan.max_ngram;
  const int n_heads = plan.n_heads;
  const int n_cols = plan.n_cols();
  const int64_t vocab = static_cast<int64_t>(token_map.map.size());
  CHECK(plan.pad_token_id >= 0 && plan.pad_token_id < vocab) << "pad id " << plan.pad_token_id;
  const int64_t pad = token_map.map[plan.pad_token_id];

  std::array<int32_t, kEngramMaxNgram - 1>& hist = history->ids;
  for (size_t t = 0; t < ids.size(); ++t) {
    const int32_t id = ids[t];
    CHECK(id >= 0 && id < vocab) << "token id " << id << " outside the Engram token map";
    const int32_t current =
        (live.empty() || live[t] != 0) ? token_map.map[id] : EngramHistory::kDead;
    // tok[s]: look-back s; the first dead slot and everything older become the pad.
    std::array<uint64_t, kEngramMaxNgram> tok;
    bool blocked = false;
    for (int s = 0; s < n_gram; ++s) {
      const int32_t src = s == 0 ? current : hist[s - 1];
      blocked = blocked || src == EngramHistory::kDead;
      tok[s] = static_cast<uint64_t>(blocked ? pad : src);
    }
    for (const EngramLayerHash& layer : plan.layers) {
      // Unsigned arithmetic: identical bits to int64 (products stay below 2^63 by construction).
      uint64_t rolling = tok[0] * static_cast<uint64_t>(layer.multipliers[0]);
      for (int n = 1; n < n_gram; ++n) {
        rolling ^= tok[n] * static_cast<uint64_t>(layer.multipliers[n]);
        const int base = (n - 1) * n_heads;
        for (int k = 0; k < n_heads; ++k) {
          out[base + k] =
              static_cast<int64_t>(rolling % static_cast<uint64_t>(layer.primes[base + k])) +
              layer.offsets[base + k];
        }
      }
      out += n_cols;
    }
    for (int s = n_gram - 2; s > 0; --s) hist[s] = hist[s - 1];
    if (n_gram > 1) hist[0] = current;
  }
}

}  // namespace deepinfer::model
