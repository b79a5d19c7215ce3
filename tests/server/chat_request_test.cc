// The server's request parsers (src/server/chat_request.h): field mapping, the V4.1 prompt they
// render (compared with shared/fixtures/chat-v41 prompts) and the errors bad bodies get.
#include "server/chat_request.h"

#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"

namespace deepinfer::server {
namespace {

using Json = nlohmann::ordered_json;

Json Body(const std::string& text) {
  auto j = ParseBody(text);
  EXPECT_TRUE(j.ok()) << j.status().message();
  return j.ok() ? *j : Json();
}

TEST(ParseBodyTest, RejectsMalformedNonObjectAndDeepJson) {
  EXPECT_EQ(ParseBody("{\"a\":").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBody("[1,2]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBody("\"\xff\"").status().code(), StatusCode::kInvalidArgument);
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_EQ(ParseBody(deep).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseBody("{\"a\":[[1]]}").ok());
}

TEST(OpenAiChatTest, PlainChatRendersTheFixturePrompt) {
  // shared/fixtures/chat-v41/cases.jsonl "single_user_chat".
  auto r = ParseOpenAiChat(
      Body(R"({"model":"m","messages":[{"role":"user","content":"Hello! Who are you?"}]})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->thinking);
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->params.n, 1);
  EXPECT_FALSE(r->params.max_tokens.has_value());
  auto prompt = RenderChatPrompt(*r);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_EQ(*prompt, "<｜begin▁of▁sentence｜><｜User｜>Hello! Who are you?<｜Assistant｜></think>");
}

TEST(OpenAiChatTest, ReasoningEffortSwitchesThinkingOn) {
  // "system_user_thinking_max" and "thinking_effort_low" of the chat-v41 fixture.
  auto r = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"system","content":"You are a careful mathematician."},
          {"role":"user","content":"Prove that sqrt(2) is irrational."}],
          "reasoning_effort":"max"})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->thinking);
  EXPECT_EQ(*RenderChatPrompt(*r),
            "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 100 (range 1-100, the higher the "
            "value, the more thorough the reasoning)\n\nYou are a careful mathematician."
            "<｜User｜>Prove that sqrt(2) is irrational.<｜Assistant｜><think>");
  auto low = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"user","content":"Capital of Japan?"}],"reasoning_effort":"minimal"})"));
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(*RenderChatPrompt(*low),
            "<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 50 (range 1-100, the higher the "
            "value, the more thorough the reasoning)\n\n<｜User｜>Capital of "
            "Japan?<｜Assistant｜><think>");
  auto none = ParseOpenAiChat(
      Body(R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->thinking);
  auto kw = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"thinking":true}})"));
  ASSERT_TRUE(kw.ok());
  EXPECT_TRUE(kw->thinking);
  EXPECT_TRUE(RenderChatPrompt(*kw)->ends_with("<｜Assistant｜><think>"));
}

TEST(OpenAiChatTest, SamplingFieldsNAndUsage) {
  auto r = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":100,"max_completion_tokens":7,
          "n":3,"seed":42,"temperature":0.5,"top_p":0.9,"stop":"END","logprobs":true,
          "top_logprobs":2,"stream":true,"stream_options":{"include_usage":true}})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->params.max_tokens, 7);  // max_completion_tokens wins
  EXPECT_EQ(r->params.n, 3);           // one engine request with n samples
  EXPECT_EQ(r->params.seed, 42u);
  EXPECT_FLOAT_EQ(r->params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r->params.top_p, 0.9f);
  ASSERT_EQ(r->params.stop.size(), 1u);
  EXPECT_EQ(r->params.stop[0], "END");
  EXPECT_TRUE(r->params.logprobs);
  EXPECT_EQ(r->params.top_logprobs, 2);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
}

TEST(OpenAiChatTest, ToolsRenderAndToolChoiceNoneDropsThem) {
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
  auto with =
      ParseOpenAiChat(Body(R"({"messages":[{"role":"user","content":"w?"}],)" + tools + "}"));
  ASSERT_TRUE(with.ok()) << with.status().message();
  auto prompt = RenderChatPrompt(*with);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_NE(prompt->find("get_weather"), std::string::npos);
  auto none = ParseOpenAiChat(
      Body(R"({"messages":[{"role":"user","content":"w?"}],"tool_choice":"none",)" + tools + "}"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(RenderChatPrompt(*none)->find("get_weather"), std::string::npos);
  // A tool round trip: the assistant's call and the tool's result both reach the prompt.
  auto trip = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"user","content":"w?"},
          {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
          {"role":"tool","tool_call_id":"c1","content":"sunny, 21C"}],)" +
      tools + "}"));
  ASSERT_TRUE(trip.ok()) << trip.status().message();
  auto p = RenderChatPrompt(*trip);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NE(p->find("<｜DSML｜ invoke name=\"get_weather\">"), std::string::npos) << *p;
  EXPECT_NE(p->find("<tool_result>sunny, 21C</tool_result>"), std::string::npos) << *p;
}

TEST(OpenAiChatTest, ErrorsAreClientErrors) {
  const char* bad[] = {
      R"({"messages":[]})",
      R"({"messages":"hi"})",
      R"({"messages":[{"role":"robot","content":"x"}]})",
      R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})",
      R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})",
      R"({"messages":[{"role":"user","content":"x"}],"n":0})",
      R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":3})",
      R"({"messages":[{"role":"user","content":"x"}],"model":5})",
      R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"})",
      R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})",
  };
  for (const char* text : bad) {
    auto r = ParseOpenAiChat(Body(text));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(ErrorFromStatus(r.status()).http_status, 400) << text;
  }
  auto schema = ParseOpenAiChat(Body(
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  EXPECT_EQ(schema->constraint["response_format"]["type"], "json_schema");
  EXPECT_FALSE(ParseOpenAiChat(Body(R"({"messages":[{"role":"user","content":"x"}],
      "response_format":{"type":"json_object"},"regex":"a+"})"))
                   .ok());
  EXPECT_FALSE(
      ParseOpenAiChat(
          Body(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})"))
          .ok());
  EXPECT_TRUE(
      ParseOpenAiChat(
          Body(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"}})"))
          .ok());
}

TEST(OpenAiCompletionTest, PromptFormsAndDefaults) {
  auto text = ParseOpenAiCompletion(Body(R"({"prompt":"Once","logprobs":2})"));
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_FALSE(text->prompt_is_ids);
  EXPECT_EQ(text->prompt_text, "Once");
  EXPECT_EQ(text->params.max_tokens, 16);  // the OpenAI default
  EXPECT_TRUE(text->params.logprobs);
  EXPECT_EQ(text->params.top_logprobs, 2);
  auto ids = ParseOpenAiCompletion(Body(R"({"prompt":[[5,6,7]],"max_tokens":3})"));
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_TRUE(ids->prompt_is_ids);
  EXPECT_EQ(ids->prompt_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_FALSE(ParseOpenAiCompletion(Body(R"({"prompt":["a","b"]})")).ok());
  EXPECT_FALSE(ParseOpenAiCompletion(Body(R"({"prompt":[1,-2]})")).ok());
  EXPECT_FALSE(ParseOpenAiCompletion(Body(R"({"prompt":""})")).ok());
  EXPECT_FALSE(ParseOpenAiCompletion(Body(R"({"max_tokens":3})")).ok());
  EXPECT_FALSE(ParseOpenAiCompletion(Body(R"({"prompt":"a","echo":true})")).ok());
}

TEST(AnthropicMessagesTest, BlocksBecomeOpenAiMessages) {
  auto r = ParseAnthropicMessages(
      Body(R"({"model":"m","max_tokens":16,"system":[{"type":"text","text":"sys"}],
          "messages":[{"role":"user","content":"q"},
            {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":""},
              {"type":"text","text":"calling"},
              {"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"},
              {"type":"text","text":"more"}]}],
          "tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}],
          "thinking":{"type":"enabled","budget_tokens":1024},"stop_sequences":["END"],
          "temperature":0.2,"stream":true})"),
      false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->thinking);
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->params.max_tokens, 16);
  ASSERT_EQ(r->params.stop.size(), 1u);
  const Json& m = r->messages;
  ASSERT_EQ(m.size(), 5u) << m.dump();
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "sys");
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["reasoning_content"], "hmm");
  EXPECT_EQ(m[2]["content"], "calling");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(m[3]["tool_call_id"], "t1");
  EXPECT_EQ(m[4]["role"], "user");
  EXPECT_EQ(m[4]["content"], "more");
  EXPECT_EQ(r->tools[0]["function"]["parameters"]["type"], "object");
  auto prompt = RenderChatPrompt(*r);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_NE(prompt->find("<tool_result>r</tool_result>"), std::string::npos) << *prompt;
}

TEST(AnthropicMessagesTest, MaxTokensRequiredExceptForCounting) {
  const std::string no_max = R"({"messages":[{"role":"user","content":"q"}]})";
  auto r = ParseAnthropicMessages(Body(no_max), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorFromStatus(r.status()).http_status, 400);
  EXPECT_TRUE(ParseAnthropicMessages(Body(no_max), true).ok());
  EXPECT_FALSE(
      ParseAnthropicMessages(
          Body(R"({"max_tokens":4,"messages":[{"role":"user","content":[{"type":"image"}]}]})"),
          false)
          .ok());
  EXPECT_FALSE(
      ParseAnthropicMessages(
          Body(R"({"max_tokens":4,"temperature":1.5,"messages":[{"role":"user","content":"q"}]})"),
          false)
          .ok());
}

TEST(AnthropicMessagesTest, ThinkingOfTheWrongTypeIsABadRequest) {
  // Found by the request_parser fuzz target: a numeric thinking.type threw out of the parser.
  for (const char* thinking : {R"({"type":100})", R"({"type":null})", R"({"type":["enabled"]})",
                               R"("enabled")", R"({})"}) {
    auto r = ParseAnthropicMessages(
        Body(std::string(R"({"max_tokens":4,"messages":[{"role":"user","content":"q"}],)") +
             R"("thinking":)" + thinking + "}"),
        false);
    ASSERT_FALSE(r.ok()) << thinking;
    EXPECT_EQ(ErrorFromStatus(r.status()).http_status, 400) << thinking;
    EXPECT_NE(r.status().message().find("thinking.type"), std::string::npos) << thinking;
  }
}

// A served model's sampling defaults (generation_config.json) fill what a body leaves out, in
// all three APIs; the body's own fields win.
TEST(SamplingDefaultsTest, AllThreeParsersStartFromTheModelsDefaults) {
  engine::SamplingParams defaults;
  defaults.temperature = 0.6f;
  defaults.top_p = 0.95f;
  defaults.max_tokens = 48;
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  auto chat = ParseOpenAiChat(Body("{" + msgs + "}"), defaults);
  ASSERT_TRUE(chat.ok()) << chat.status().message();
  EXPECT_FLOAT_EQ(chat->params.temperature, 0.6f);
  EXPECT_FLOAT_EQ(chat->params.top_p, 0.95f);
  // max_tokens stays unset: the session fills in the model's, clamped to the context left.
  EXPECT_FALSE(chat->params.max_tokens.has_value());
  auto own = ParseOpenAiChat(
      Body("{" + msgs + R"(, "temperature": 0, "max_completion_tokens": 7})"), defaults);
  ASSERT_TRUE(own.ok());
  EXPECT_FLOAT_EQ(own->params.temperature, 0.0f);
  EXPECT_EQ(own->params.max_tokens, 7);
  EXPECT_FLOAT_EQ(own->params.top_p, 0.95f);
  // Completions: with a model max_new_tokens the API's 16 gives way (left to the session, as
  // above); without one, 16 stays.
  auto completion = ParseOpenAiCompletion(Body(R"({"prompt": "a"})"), defaults);
  ASSERT_TRUE(completion.ok());
  EXPECT_FALSE(completion->params.max_tokens.has_value());
  EXPECT_FLOAT_EQ(completion->params.temperature, 0.6f);
  engine::SamplingParams no_length = defaults;
  no_length.max_tokens.reset();
  auto sixteen = ParseOpenAiCompletion(Body(R"({"prompt": "a"})"), no_length);
  ASSERT_TRUE(sixteen.ok());
  EXPECT_EQ(sixteen->params.max_tokens, 16);
  // Anthropic: max_tokens is the body's (required); temperature and top_p come from the model.
  auto messages = ParseAnthropicMessages(Body("{" + msgs + R"(, "max_tokens": 9})"),
                                         /*count_only=*/false, defaults);
  ASSERT_TRUE(messages.ok()) << messages.status().message();
  EXPECT_EQ(messages->params.max_tokens, 9);
  EXPECT_FLOAT_EQ(messages->params.temperature, 0.6f);
  EXPECT_FLOAT_EQ(messages->params.top_p, 0.95f);
  // Without defaults the engine's own apply (temperature 1, as the OpenAI API's).
  auto plain = ParseOpenAiChat(Body("{" + msgs + "}"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FLOAT_EQ(plain->params.temperature, 1.0f);
  EXPECT_FALSE(plain->params.max_tokens.has_value());
}

TEST(ApiErrorTest, FormatsOfBothFamilies) {
  ApiError e = BadRequest("bad", "messages");
  nlohmann::json o = ErrorBody(ApiStyle::kOpenAi, e);
  EXPECT_EQ(o["error"]["message"], "bad");
  EXPECT_EQ(o["error"]["type"], "invalid_request_error");
  EXPECT_EQ(o["error"]["param"], "messages");
  EXPECT_TRUE(o["error"]["code"].is_null());
  e.http_status = 429;
  nlohmann::json a = ErrorBody(ApiStyle::kAnthropic, e);
  EXPECT_EQ(a["type"], "error");
  EXPECT_EQ(a["error"]["type"], "rate_limit_error");
  EXPECT_EQ(ErrorFromStatus(ResourceExhausted("full")).http_status, 429);
  EXPECT_EQ(ErrorFromStatus(Internal("x")).http_status, 500);
  EXPECT_EQ(DumpJson(nlohmann::json(std::string("a\xff"))), "\"a\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace deepinfer::server
