// What the KV hand-off tests share (page_handoff_test.cc, context_parallel_prefill_test.cc): a
// request run to its end with its ids and logprob bits, and a prefill leg's bundle.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/page_handoff.h"

namespace deepinfer::engine::testing {

struct HandoffRun {
  std::vector<int32_t> ids;
  std::vector<uint32_t> logprob_bits;
  int64_t prefix_hit = 0;
};

// `prompt` through `engine` (ignore_eos, logprobs) until idle.
inline HandoffRun RunToEnd(Engine* engine, const std::vector<int32_t>& prompt, float temperature,
                           uint64_t seed, int32_t max_tokens) {
  HandoffRun o;
  Request r;
  r.prompt = prompt;
  r.params.temperature = temperature;
  r.params.seed = seed;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.params.logprobs = true;
  r.on_output = [&o](const RequestOutput& ro) {
    o.ids.insert(o.ids.end(), ro.new_tokens.begin(), ro.new_tokens.end());
    for (const SampleResult& s : ro.samples) {
      uint32_t bits;
      std::memcpy(&bits, &s.logprob, 4);
      o.logprob_bits.push_back(bits);
    }
    o.prefix_hit = ro.prefix_hit_tokens;
  };
  EXPECT_TRUE(engine->Add(std::move(r)).ok());
  const Status s = engine->RunUntilIdle();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

// A prefill leg of `prompt` (all but its last token, one output) on `engine`, exported with its
// sequence tail under `fingerprint`.
inline PageBundle PrefillLegBundle(Engine* engine, const std::vector<int32_t>& prompt,
                                   const std::string& fingerprint) {
  const std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
  Request r;
  r.prompt = head;
  r.leg_of_prompt_len = static_cast<int64_t>(prompt.size());
  r.params.max_tokens = 1;
  std::shared_ptr<const SequenceTail> tail;
  int finals = 0;
  r.on_output = [&](const RequestOutput& ro) {
    if (!ro.finished) return;
    ++finals;
    tail = ro.tail;
  };
  EXPECT_TRUE(engine->Add(std::move(r)).ok());
  EXPECT_TRUE(engine->RunUntilIdle().ok());
  EXPECT_EQ(finals, 1);
  EXPECT_NE(tail, nullptr);
  auto bundle = engine->ExportPromptPages(head, fingerprint, tail);
  EXPECT_TRUE(bundle.ok()) << bundle.status().ToString();
  EXPECT_NE(bundle->tail, nullptr);
  return std::move(*bundle);
}

}  // namespace deepinfer::engine::testing
