// Engram hash: constants against the fixture's golden.json and the released numbers
// (v41_model.md §3.9), row ids against the official forward's debug.engram_hash_ids, chunked
// and masked hashing against a one-shot reference written the way engram.py computes it.
#include "model/deepseek_v41/engram_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/engram_token_map.h"

namespace deepinfer::model {
namespace {

using nlohmann::json;

using test::kFixtureDir;
using test::kTestData;
const std::string kGolden = kFixtureDir + "/golden.safetensors";

template <typename T>
T Must(StatusOr<T> v) {
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? std::move(v).value() : T();
}

struct Fixture {
  ModelConfig config;
  EngramTokenMap token_map;
  EngramHashPlan plan;
};

Fixture LoadFixture() {
  Fixture f;
  f.config = Must(LoadModelConfig(kFixtureDir));
  f.token_map = Must(LoadEngramTokenMap(kFixtureDir + "/engram_token_map.json", f.config));
  f.plan = Must(BuildEngramHashPlan(f.config));
  return f;
}

std::vector<int64_t> ParseDecimals(const json& strings) {
  std::vector<int64_t> v;
  for (const json& s : strings) v.push_back(std::stoll(s.get<std::string>()));
  return v;
}

// engram.py NgramHashState.forward for one sequence in one call: a cache of compressed ids
// (kDead for dead tokens), look-back s blocked once p < s or a dead slot is crossed.
std::vector<int64_t> ReferenceHash(const EngramHashPlan& plan, const EngramTokenMap& token_map,
                                   const std::vector<int32_t>& ids,
                                   const std::vector<uint8_t>& live) {
  const int64_t pad = token_map.map[plan.pad_token_id];
  std::vector<int64_t> cache(ids.size());
  for (size_t p = 0; p < ids.size(); ++p) {
    cache[p] = (live.empty() || live[p]) ? token_map.map[ids[p]] : EngramHistory::kDead;
  }
  std::vector<int64_t> out;
  for (size_t p = 0; p < ids.size(); ++p) {
    std::vector<int64_t> tok;
    bool blocked = false;
    for (int s = 0; s < plan.max_ngram; ++s) {
      const int64_t src = p >= static_cast<size_t>(s) ? cache[p - s] : 0;
      blocked = blocked || p < static_cast<size_t>(s) || src == EngramHistory::kDead;
      tok.push_back(blocked ? pad : src);
    }
    for (const EngramLayerHash& layer : plan.layers) {
      int64_t rolling = tok[0] * layer.multipliers[0];
      for (int n = 1; n < plan.max_ngram; ++n) {
        rolling ^= tok[n] * layer.multipliers[n];
        for (int k = 0; k < plan.n_heads; ++k) {
          const int col = (n - 1) * plan.n_heads + k;
          const int64_t prime = layer.primes[col];
          out.push_back(((rolling % prime) + prime) % prime + layer.offsets[col]);
        }
      }
    }
  }
  return out;
}

// Hashes `ids` in chunks of `chunk` tokens through one history.
std::vector<int64_t> ChunkedHash(const EngramHashPlan& plan, const EngramTokenMap& token_map,
                                 const std::vector<int32_t>& ids, const std::vector<uint8_t>& live,
                                 size_t chunk) {
  const size_t per_token = static_cast<size_t>(plan.n_layers() * plan.n_cols());
  std::vector<int64_t> out(ids.size() * per_token, -7);
  EngramHistory history;
  for (size_t begin = 0; begin < ids.size(); begin += chunk) {
    const size_t n = std::min(chunk, ids.size() - begin);
    std::span<const uint8_t> live_chunk =
        live.empty() ? std::span<const uint8_t>() : std::span(live).subspan(begin, n);
    HashTokens(plan, token_map, std::span(ids).subspan(begin, n), &history,
               out.data() + begin * per_token, live_chunk);
  }
  return out;
}

TEST(EngramHash, FixtureConstantsMatchGolden) {
  Fixture f = LoadFixture();
  const json golden = Must(io::LoadJsonFile(kFixtureDir + "/golden.json"));
  const json& e = golden.at("engram");
  ASSERT_EQ(f.plan.n_layers(), 2);
  EXPECT_EQ(f.plan.n_cols(), 6);
  EXPECT_EQ(f.token_map.map[f.plan.pad_token_id], e.at("pad_compressed_id").get<int>());
  for (int l = 0; l < 2; ++l) {
    const EngramLayerHash& layer = f.plan.layers[l];
    EXPECT_EQ(layer.layer_id, f.config.engram_layer_ids[l]);
    std::vector<int64_t> primes;
    for (const json& per_order : e.at("primes")[l]) {
      for (const json& p : per_order) primes.push_back(p.get<int64_t>());
    }
    EXPECT_EQ(layer.primes, primes) << "layer " << l;
    EXPECT_EQ(layer.offsets, e.at("offsets")[l].get<std::vector<int64_t>>()) << "layer " << l;
    EXPECT_EQ(layer.multipliers, ParseDecimals(e.at("multipliers_decimal")[l])) << "layer " << l;
    EXPECT_EQ(layer.num_rows, e.at("num_embeddings")[l].get<int64_t>()) << "layer " << l;
  }
  EXPECT_TRUE(CheckEngramNumEmbeddings(f.plan, f.config).ok());
}

TEST(EngramHash, FixtureIdsMatchOfficialForward) {
  Fixture f = LoadFixture();
  StatusOr<io::SafetensorsFile> golden = io::SafetensorsFile::Open(kGolden);
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  const TensorView input = Must(golden->Get("input_ids"));
  const TensorView want = Must(golden->Get("debug.engram_hash_ids"));
  ASSERT_EQ(input.dtype, DType::kI64);
  ASSERT_EQ(want.dtype, DType::kI64);
  ASSERT_EQ(input.shape, (std::vector<int64_t>{71}));
  ASSERT_EQ(want.shape, (std::vector<int64_t>{71, 2, 6}));
  std::vector<int32_t> ids;
  for (int64_t id : input.As<int64_t>()) ids.push_back(static_cast<int32_t>(id));
  const std::span<const int64_t> want_ids = want.As<int64_t>();

  std::vector<int64_t> got(want_ids.size(), -1);
  EngramHistory history;
  HashTokens(f.plan, f.token_map, ids, &history, got.data());
  EXPECT_EQ(got, std::vector<int64_t>(want_ids.begin(), want_ids.end()));
  // Every id lies in its layer's table.
  for (size_t i = 0; i < got.size(); ++i) {
    const int layer = static_cast<int>((i / 6) % 2);
    EXPECT_GE(got[i], 0);
    EXPECT_LT(got[i], f.plan.layers[layer].num_rows);
  }
  // The prompt/decode split of the golden run (47 + 24 single steps) gives the same ids.
  std::vector<int64_t> split(got.size(), -1);
  EngramHistory h2;
  HashTokens(f.plan, f.token_map, std::span(ids).first(47), &h2, split.data());
  for (size_t t = 47; t < ids.size(); ++t) {
    HashTokens(f.plan, f.token_map, std::span(ids).subspan(t, 1), &h2, split.data() + t * 12);
  }
  EXPECT_EQ(split, got);
  EXPECT_EQ(h2, history);
}

TEST(EngramHash, ChunkedEqualsOneShotAndReference) {
  Fixture f = LoadFixture();
  StatusOr<io::SafetensorsFile> golden = io::SafetensorsFile::Open(kGolden);
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  std::vector<int32_t> ids;
  for (int64_t id : Must(golden->Get("input_ids")).As<int64_t>()) {
    ids.push_back(static_cast<int32_t>(id));
  }
  const std::vector<int64_t> one_shot = ChunkedHash(f.plan, f.token_map, ids, {}, ids.size());
  EXPECT_EQ(one_shot, ReferenceHash(f.plan, f.token_map, ids, {}));
  for (size_t chunk : {1, 3, 7}) {
    EXPECT_EQ(ChunkedHash(f.plan, f.token_map, ids, {}, chunk), one_shot) << "chunk " << chunk;
  }
}

TEST(EngramHash, DeadTokensStopTheLookBack) {
  Fixture f = LoadFixture();
  std::vector<int32_t> ids;
  std::vector<uint8_t> live;
  for (int i = 0; i < 40; ++i) {
    ids.push_back((i * 37 + 11) % f.config.vocab_size);
    live.push_back((i >= 9 && i < 14) || i == 25 ? 0 : 1);  // an image span and a lone dead token
  }
  const std::vector<int64_t> want = ReferenceHash(f.plan, f.token_map, ids, live);
  for (size_t chunk : {1, 3, 7, 40}) {
    EXPECT_EQ(ChunkedHash(f.plan, f.token_map, ids, live, chunk), want) << "chunk " << chunk;
  }
  // Right after a dead token the look-back restarts: position 14 hashes like position 0 of a
  // fresh sequence starting with the same token.
  const std::vector<int64_t> fresh = ReferenceHash(f.plan, f.token_map, {ids[14]}, {});
  const size_t per_token = 12;
  EXPECT_EQ(std::vector<int64_t>(want.begin() + 14 * per_token, want.begin() + 15 * per_token),
            fresh);
  // The mask matters: without it the ids differ there.
  EXPECT_NE(ReferenceHash(f.plan, f.token_map, ids, {}), want);
}

// Trial division, independent of the library's Miller-Rabin.
bool IsPrimeByTrialDivision(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(EngramHash, ReleaseConstants) {
  for (const char* file : {"/release_inference_config.json", "/release_hf_config.json"}) {
    SCOPED_TRACE(file);
    const json j = Must(io::LoadJsonFile(kTestData + file));
    const ModelConfig config =
        Must(std::string(file).find("hf") != std::string::npos ? ParseHfConfig(j)
                                                               : ParseInferenceConfig(j));
    const EngramHashPlan plan = Must(BuildEngramHashPlan(config));
    ASSERT_EQ(plan.n_layers(), 2);
    ASSERT_EQ(plan.n_cols(), 24);
    EXPECT_EQ(plan.layers[0].layer_id, 1);
    EXPECT_EQ(plan.layers[1].layer_id, 14);
    EXPECT_EQ(
        std::vector<int64_t>(plan.layers[0].primes.begin(), plan.layers[0].primes.begin() + 8),
        (std::vector<int64_t>{16000057, 16000079, 16000081, 16000097, 16000121, 16000129, 16000133,
                              16000183}));
    EXPECT_EQ(
        std::vector<int64_t>(plan.layers[1].primes.begin(), plan.layers[1].primes.begin() + 8),
        (std::vector<int64_t>{16000477, 16000487, 16000499, 16000507, 16000511, 16000573, 16000609,
                              16000627}));
    EXPECT_EQ(plan.layers[0].num_rows, 384006168);
    EXPECT_EQ(plan.layers[1].num_rows, 384016682);
    EXPECT_EQ(plan.layers[0].multipliers, (std::vector<int64_t>{76632096046245, 4839876093313,
                                                                35959672319349, 73987337458391}));
    EXPECT_EQ(plan.layers[1].multipliers, (std::vector<int64_t>{67716810739261, 51510806800915,
                                                                30921347202721, 82619226485591}));
    EXPECT_EQ(config.engram_num_embeddings, (std::vector<int64_t>{384006168, 384016682}));
    EXPECT_TRUE(CheckEngramNumEmbeddings(plan, config).ok());

    // Both layers together use the 48 consecutive primes above 15,999,999, in order.
    std::vector<int64_t> all = plan.layers[0].primes;
    all.insert(all.end(), plan.layers[1].primes.begin(), plan.layers[1].primes.end());
    int64_t next = 16000000;
    for (int64_t p : all) {
      while (!IsPrimeByTrialDivision(next)) ++next;
      EXPECT_EQ(p, next);
      ++next;
    }
    // Offsets are the exclusive prefix sums; multipliers odd and overflow-safe.
    for (const EngramLayerHash& layer : plan.layers) {
      int64_t sum = 0;
      for (size_t c = 0; c < layer.primes.size(); ++c) {
        EXPECT_EQ(layer.offsets[c], sum);
        sum += layer.primes[c];
      }
      for (int64_t m : layer.multipliers) {
        EXPECT_EQ(m % 2, 1);
        EXPECT_LT(m, INT64_MAX / config.engram_compressed_vocab_size);
      }
    }
  }
}

TEST(EngramHash, NumEmbeddingsMismatchIsAClearError) {
  Fixture f = LoadFixture();
  ModelConfig wrong = f.config;
  wrong.engram_num_embeddings[1] += 1;
  Status s = CheckEngramNumEmbeddings(f.plan, wrong);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("engram_num_embeddings[1] = 865"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("sum 864"), std::string::npos) << s.message();
  // A changed bucket search start moves the primes and is caught the same way.
  ModelConfig moved = f.config;
  moved.engram_vocab_size = 200;
  const EngramHashPlan plan = Must(BuildEngramHashPlan(moved));
  EXPECT_FALSE(CheckEngramNumEmbeddings(plan, moved).ok());
}

TEST(EngramHash, UnsupportedNgramSizeIsAnError) {
  Fixture f = LoadFixture();
  ModelConfig c = f.config;
  c.engram_max_ngram_size = kEngramMaxNgram + 1;
  StatusOr<EngramHashPlan> plan = BuildEngramHashPlan(c);
  EXPECT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("engram_max_ngram_size"), std::string::npos);
  c.engram_layer_ids.clear();
  c.engram_num_embeddings.clear();
  EXPECT_EQ(Must(BuildEngramHashPlan(c)).n_layers(), 0);
}

TEST(EngramTokenMap, ValidationErrors) {
  Fixture f = LoadFixture();
  EXPECT_EQ(f.token_map.compressed_vocab_size, 256);
  ASSERT_EQ(f.token_map.map.size(), 512u);
  EXPECT_EQ(f.token_map.map[511], 255);  // the fixture's stub map is id // 2

  EngramTokenMap m = f.token_map;
  m.compressed_vocab_size = 255;
  Status s = ValidateEngramTokenMap(m, f.config);
  EXPECT_NE(s.message().find("compressed_vocab_size 255"), std::string::npos) << s.message();

  m = f.token_map;
  m.map.pop_back();
  s = ValidateEngramTokenMap(m, f.config);
  EXPECT_NE(s.message().find("511 entries but vocab_size is 512"), std::string::npos)
      << s.message();

  m = f.token_map;
  m.map[300] = 256;
  s = ValidateEngramTokenMap(m, f.config);
  EXPECT_NE(s.message().find("map[300] = 256"), std::string::npos) << s.message();

  const json bad = json::parse(R"({"compressed_vocab_size": 256, "map": [0, "x"]})");
  StatusOr<EngramTokenMap> parsed = ParseEngramTokenMap(bad, f.config, "t.json");
  EXPECT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("t.json: map[1]"), std::string::npos)
      << parsed.status().message();
  EXPECT_FALSE(ParseEngramTokenMap(json::parse(R"({"map": []})"), f.config, "t.json").ok());
  EXPECT_FALSE(LoadEngramTokenMap(kFixtureDir + "/no_such_map.json", f.config).ok());
}

}  // namespace
}  // namespace deepinfer::model
