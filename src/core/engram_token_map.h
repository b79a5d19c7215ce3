// EngramTokenMap: token id -> compressed id, the lookup of DeepSeek-V4.1's Engram n-gram hash
// (v41_model.md §3.9). Plain data with two producers, the tokenizer (tokenizer/engram_token_map.h
// builds it from the vocabulary) and a checkpoint folder's engram_token_map.json
// (model/deepseek_v41/engram_token_map.h), and one consumer, the model's hasher, which validates
// it against the config first.
#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer {

struct EngramTokenMap {
  int32_t compressed_vocab_size = 0;  // N: number of distinct compressed ids
  std::vector<int32_t> map;           // [vocab] token id -> compressed id in [0, N)
  bool operator==(const EngramTokenMap&) const = default;
};

}  // namespace deepinfer
