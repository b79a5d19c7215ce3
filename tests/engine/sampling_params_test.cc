#include <gtest/gtest.h>

#include <cmath>

#include "engine/sampling/sampling_params.h"

namespace deepinfer::engine {
namespace {

// The error of `p.Validate(vocab)`, which must name `field`.
void ExpectInvalid(const SamplingParams& p, int64_t vocab, const std::string& field) {
  const Status st = p.Validate(vocab);
  ASSERT_FALSE(st.ok()) << field;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
}

TEST(SamplingParams, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams().Validate(1000).ok());
  EXPECT_FALSE(SamplingParams().greedy());
}

TEST(SamplingParams, RangesAreChecked) {
  auto with = [](auto edit) {
    SamplingParams p;
    edit(p);
    return p;
  };
  ExpectInvalid(with([](auto& p) { p.temperature = -0.1f; }), 10, "temperature");
  ExpectInvalid(with([](auto& p) { p.temperature = INFINITY; }), 10, "temperature");
  ExpectInvalid(with([](auto& p) { p.top_k = -1; }), 10, "top_k");
  ExpectInvalid(with([](auto& p) { p.top_p = 0.0f; }), 10, "top_p");
  ExpectInvalid(with([](auto& p) { p.top_p = 1.01f; }), 10, "top_p");
  ExpectInvalid(with([](auto& p) { p.min_p = 1.5f; }), 10, "min_p");
  ExpectInvalid(with([](auto& p) { p.repetition_penalty = 0.0f; }), 10, "repetition_penalty");
  ExpectInvalid(with([](auto& p) { p.presence_penalty = 2.5f; }), 10, "presence_penalty");
  ExpectInvalid(with([](auto& p) { p.frequency_penalty = -2.5f; }), 10, "frequency_penalty");
  ExpectInvalid(with([](auto& p) { p.logit_bias = {{3, 101.0f}}; }), 10, "logit_bias");
  ExpectInvalid(with([](auto& p) { p.logit_bias = {{10, 1.0f}}; }), 10, "logit_bias");
  ExpectInvalid(with([](auto& p) { p.logit_bias = {{4, 1.0f}, {2, 1.0f}}; }), 10, "logit_bias");
  ExpectInvalid(with([](auto& p) { p.n = 0; }), 10, "n =");
  ExpectInvalid(with([](auto& p) { p.n = 129; }), 10, "n =");
  ExpectInvalid(with([](auto& p) { p.max_tokens = 0; }), 10, "max_tokens");
  ExpectInvalid(with([](auto& p) { p.min_tokens = -1; }), 10, "min_tokens");
  ExpectInvalid(with([](auto& p) { p.max_tokens = 4, p.min_tokens = 5; }), 10, "min_tokens");
  ExpectInvalid(with([](auto& p) { p.stop_token_ids = {10}; }), 10, "stop_token_ids");
  ExpectInvalid(with([](auto& p) { p.stop = {""}; }), 10, "stop");
  ExpectInvalid(with([](auto& p) { p.logprobs = true, p.top_logprobs = 21; }), 10, "top_logprobs");
  ExpectInvalid(with([](auto& p) { p.top_logprobs = 2; }), 10, "top_logprobs");
  ExpectInvalid(with([](auto& p) { p.prompt_logprobs = 21; }), 10, "prompt_logprobs");
  // Without a vocabulary, token ids are only checked for sign.
  EXPECT_TRUE(with([](auto& p) { p.stop_token_ids = {10}; }).Validate(0).ok());
  ExpectInvalid(with([](auto& p) { p.stop_token_ids = {-1}; }), 0, "stop_token_ids");
}

}  // namespace
}  // namespace deepinfer::engine
