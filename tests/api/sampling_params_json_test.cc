#include "api/sampling_params_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace deepinfer::api {
namespace {

using nlohmann::json;

TEST(SamplingParamsJson, ReadsOpenAiFields) {
  const json body = json::parse(R"({
    "model": "ignored", "messages": [], "max_tokens": 64, "temperature": 0.7, "top_p": 0.9,
    "top_k": 40, "min_p": 0.05, "seed": 1234, "n": 2, "stop": ["\n\n", "END"],
    "stop_token_ids": [1, 2], "ignore_eos": true, "min_tokens": 3, "presence_penalty": 0.5,
    "frequency_penalty": -0.5, "repetition_penalty": 1.1, "logit_bias": {"10": -100, "9": 5.5},
    "logprobs": true, "top_logprobs": 5, "prompt_logprobs": 1})");
  auto p = SamplingParamsFromJson(body);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->max_tokens, 64);
  EXPECT_FLOAT_EQ(p->temperature, 0.7f);
  EXPECT_FLOAT_EQ(p->top_p, 0.9f);
  EXPECT_EQ(p->top_k, 40);
  EXPECT_FLOAT_EQ(p->min_p, 0.05f);
  EXPECT_EQ(p->seed, 1234u);
  EXPECT_EQ(p->n, 2);
  EXPECT_EQ(p->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(p->stop_token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(p->ignore_eos);
  EXPECT_EQ(p->min_tokens, 3);
  EXPECT_FLOAT_EQ(p->presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p->frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(p->repetition_penalty, 1.1f);
  // Sorted by numeric id ("10" sorts before "9" as a string).
  ASSERT_EQ(p->logit_bias.size(), 2u);
  EXPECT_EQ(p->logit_bias[0], (std::pair<int32_t, float>{9, 5.5f}));
  EXPECT_EQ(p->logit_bias[1], (std::pair<int32_t, float>{10, -100.0f}));
  EXPECT_TRUE(p->logprobs);
  EXPECT_EQ(p->top_logprobs, 5);
  EXPECT_EQ(p->prompt_logprobs, 1);
}

TEST(SamplingParamsJson, AlternativeSpellings) {
  auto p = SamplingParamsFromJson(
      json::parse(R"({"stop": "###", "top_k": -1, "logprobs": 3, "seed": -1, "top_p": null,
                      "temperature": 0})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->stop, std::vector<std::string>{"###"});
  EXPECT_EQ(p->top_k, 0);
  EXPECT_TRUE(p->logprobs);
  EXPECT_EQ(p->top_logprobs, 3);
  EXPECT_EQ(p->seed, ~uint64_t{0});
  EXPECT_FLOAT_EQ(p->top_p, 1.0f);  // null = absent = default
  EXPECT_TRUE(p->greedy());
  EXPECT_FALSE(p->max_tokens.has_value());
  auto empty = SamplingParamsFromJson(json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->seed.has_value());
}

TEST(SamplingParamsJson, ErrorsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"temperature": "hot"})", "temperature"},
      {R"({"temperature": -1})", "temperature"},
      {R"({"top_p": 2})", "top_p"},
      {R"({"top_k": 1.5})", "top_k"},
      {R"({"top_k": -2})", "top_k"},
      {R"({"max_tokens": 0})", "max_tokens"},
      {R"({"max_tokens": 1e3})", "max_tokens"},
      {R"({"n": 0})", "n"},
      {R"({"stop": [1]})", "stop"},
      {R"({"stop": 5})", "stop"},
      {R"({"stop_token_ids": [-1]})", "stop_token_ids"},
      {R"({"ignore_eos": 1})", "ignore_eos"},
      {R"({"logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"logit_bias": {"5": "x"}})", "logit_bias"},
      {R"({"logit_bias": {"5": 300}})", "logit_bias"},
      {R"({"logit_bias": [1]})", "logit_bias"},
      {R"({"logprobs": "yes"})", "logprobs"},
      {R"({"logprobs": 50})", "logprobs"},
      {R"({"top_logprobs": 3})", "top_logprobs"},
      {R"({"seed": 1.5})", "seed"},
      {R"({"seed": "1"})", "seed"},
      {R"({"presence_penalty": 3})", "presence_penalty"},
      {R"({"min_tokens": -3})", "min_tokens"},
      {R"({"prompt_logprobs": 100})", "prompt_logprobs"},
  };
  for (const auto& [text, field] : cases) {
    auto p = SamplingParamsFromJson(json::parse(text));
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(p.status().message().find(field), std::string::npos)
        << text << " -> " << p.status().message();
  }
  EXPECT_FALSE(SamplingParamsFromJson(json::array()).ok());
}

}  // namespace
}  // namespace deepinfer::api
