// StreamLedger (router/stream_resume.h): a second worker's answer, chunked differently and with
// its own ids, becomes exactly the rest of what the client got from the first; the content the
// client ends up with equals the uninterrupted answer's, whatever the split; a contradicting
// answer is refused.
#include "router/stream_resume.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace deepinfer::router {
namespace {

using nlohmann::json;

std::string Chat(const std::string& id, int index, const json& delta, const json& finish = nullptr,
                 const json& logprobs = nullptr) {
  json c = {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", id == "a" ? 100 : 200},
            {"model", "m"},
            {"choices", json::array({{{"index", index},
                                      {"delta", delta},
                                      {"logprobs", logprobs},
                                      {"finish_reason", finish}}})}};
  return "data: " + c.dump() + "\n\n";
}

// The content of an OpenAI chat stream: per choice its text and finish, plus [DONE] and ids.
struct ChatContent {
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  std::map<int, int> roles, logprob_entries;
  std::set<std::string> ids;
  int done = 0, usage = 0;
};

ChatContent Read(const std::string& stream) {
  ChatContent out;
  size_t at = 0;
  for (size_t end; (end = stream.find("\n\n", at)) != std::string::npos; at = end + 2) {
    const std::string data = stream.substr(at + 6, end - at - 6);
    if (data == "[DONE]") {
      ++out.done;
      continue;
    }
    const json j = json::parse(data);
    out.ids.insert(j["id"].get<std::string>() + "/" + j["created"].dump());
    if (j["choices"].empty()) ++out.usage;
    for (const json& c : j["choices"]) {
      const int i = c["index"];
      const json& d = c["delta"];
      if (d.contains("role")) ++out.roles[i];
      if (d.contains("content")) out.text[i] += d["content"].get<std::string>();
      if (!c["finish_reason"].is_null()) out.finish[i] += c["finish_reason"].get<std::string>();
      if (c["logprobs"].is_object()) out.logprob_entries[i] += c["logprobs"]["content"].size();
    }
  }
  return out;
}

json Lp(int n) {
  json l = json::array();
  for (int k = 0; k < n; ++k) l.push_back({{"token", "t"}, {"logprob", -1.0 * k}});
  return {{"content", l}};
}

// Two choices, the second worker chunked differently.
std::vector<std::string> FirstAnswer() {
  return {Chat("a", 0, {{"role", "assistant"}, {"content", ""}}),
          Chat("a", 1, {{"role", "assistant"}, {"content", ""}}),
          Chat("a", 0, {{"content", "Hel"}}, nullptr, Lp(1)),
          Chat("a", 1, {{"content", "Wo"}}, nullptr, Lp(1)),
          Chat("a", 0, {{"content", "lo wor"}}, nullptr, Lp(2)),
          Chat("a", 1, {{"content", "rld"}}, nullptr, Lp(1)),
          Chat("a", 0, {{"content", "ld"}}, nullptr, Lp(1)),
          Chat("a", 0, json::object(), "stop"),
          Chat("a", 1, json::object(), "length"),
          "data: {\"id\":\"a\",\"created\":100,\"choices\":[],\"usage\":{\"total_tokens\":9}}\n\n",
          "data: [DONE]\n\n"};
}
std::vector<std::string> SecondAnswer() {
  return {Chat("b", 0, {{"role", "assistant"}, {"content", ""}}),
          Chat("b", 0, {{"content", "Hello"}}, nullptr, Lp(2)),
          Chat("b", 1, {{"role", "assistant"}, {"content", ""}}),
          Chat("b", 1, {{"content", "World"}}, nullptr, Lp(2)),
          Chat("b", 0, {{"content", " world"}}, nullptr, Lp(2)),
          Chat("b", 0, json::object(), "stop"),
          Chat("b", 1, json::object(), "length"),
          "data: {\"id\":\"b\",\"created\":200,\"choices\":[],\"usage\":{\"total_tokens\":9}}\n\n",
          "data: [DONE]\n\n"};
}

TEST(StreamLedgerTest, EveryCutPointGivesTheUninterruptedContent) {
  const std::vector<std::string> first = FirstAnswer();
  std::string whole;
  for (const std::string& e : first) whole += e;
  const ChatContent want = Read(whole);
  ASSERT_EQ(want.text.at(0), "Hello world");
  ASSERT_EQ(want.text.at(1), "World");
  for (size_t cut = 0; cut <= first.size(); ++cut) {
    StreamLedger ledger(server::ApiStyle::kOpenAi);
    std::string client;
    for (size_t k = 0; k < cut; ++k) {
      ledger.Sent(first[k]);
      client += first[k];
    }
    ledger.BeginResume();
    std::string second;
    for (const std::string& e : SecondAnswer()) second += e;
    // Bytes in pieces of 7, cutting events anywhere.
    for (size_t at = 0; at < second.size(); at += 7) {
      StatusOr<std::string> more = ledger.Continue(std::string_view(second).substr(at, 7));
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      client += *more;
    }
    const ChatContent got = Read(client);
    EXPECT_EQ(got.text, want.text) << "cut after event " << cut;
    EXPECT_EQ(got.finish, want.finish) << "cut after event " << cut;
    EXPECT_EQ(got.roles, (std::map<int, int>{{0, 1}, {1, 1}})) << "cut after event " << cut;
    EXPECT_EQ(got.logprob_entries, want.logprob_entries) << "cut after event " << cut;
    EXPECT_EQ(got.done, 1);
    EXPECT_EQ(got.usage, 1);
    // One envelope throughout: the first answer's when the client had any of it.
    EXPECT_EQ(got.ids.size(), 1u) << "cut after event " << cut;
    if (cut > 0) {
      EXPECT_EQ(*got.ids.begin(), "a/100");
    }
  }
}

TEST(StreamLedgerTest, AContradictingAnswerIsRefused) {
  StreamLedger ledger(server::ApiStyle::kOpenAi);
  ledger.Sent(Chat("a", 0, {{"role", "assistant"}, {"content", ""}}));
  ledger.Sent(Chat("a", 0, {{"content", "Hello"}}));
  ledger.BeginResume();
  EXPECT_TRUE(ledger.Continue(Chat("b", 0, {{"role", "assistant"}, {"content", ""}})).ok());
  const StatusOr<std::string> bad = ledger.Continue(Chat("b", 0, {{"content", "Help me"}}));
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("content at byte 0"), std::string::npos);
}

TEST(StreamLedgerTest, CompletionLogprobListsAreCutAlike) {
  auto chunk = [](const std::string& id, const std::vector<std::string>& toks, const json& fin) {
    std::string text;
    json lps = json::array(), offs = json::array();
    for (const std::string& t : toks) {
      offs.push_back(text.size());
      text += t;
      lps.push_back(-0.5);
    }
    json c = {{"id", id},
              {"object", "text_completion"},
              {"created", 1},
              {"choices", json::array({{{"index", 0},
                                        {"text", text},
                                        {"logprobs",
                                         {{"tokens", toks},
                                          {"token_logprobs", lps},
                                          {"top_logprobs", json::array()},
                                          {"text_offset", offs}}},
                                        {"finish_reason", fin}}})}};
    return "data: " + c.dump() + "\n\n";
  };
  StreamLedger ledger(server::ApiStyle::kOpenAi);
  ledger.Sent(chunk("a", {"ab", "c"}, nullptr));
  ledger.BeginResume();
  StatusOr<std::string> more = ledger.Continue(chunk("b", {"ab", "c", "de"}, "length"));
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  const json j = json::parse(more->substr(6, more->size() - 8));
  const json& c = j["choices"][0];
  EXPECT_EQ(j["id"], "a");
  EXPECT_EQ(c["text"], "de");
  EXPECT_EQ(c["logprobs"]["tokens"], json::array({"de"}));
  EXPECT_EQ(c["logprobs"]["token_logprobs"].size(), 1u);
  EXPECT_EQ(c["logprobs"]["text_offset"], json::array({3}));
  EXPECT_EQ(c["finish_reason"], "length");
}

TEST(StreamLedgerTest, AnthropicBlocksResumeWhereTheyStopped) {
  auto ev = [](const std::string& type, const json& data) {
    return "event: " + type + "\ndata: " + data.dump() + "\n\n";
  };
  auto delta = [&](int index, const std::string& kind, const std::string& text) {
    return ev("content_block_delta", {{"type", "content_block_delta"},
                                      {"index", index},
                                      {"delta", {{"type", kind + "_delta"}, {kind, text}}}});
  };
  auto start = [&](int index, const std::string& kind) {
    return ev(
        "content_block_start",
        {{"type", "content_block_start"}, {"index", index}, {"content_block", {{"type", kind}}}});
  };
  auto stop = [&](int index) {
    return ev("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
  };
  const std::string msg_start = ev("message_start", {{"type", "message_start"}});
  const std::string ping = ev("ping", {{"type", "ping"}});
  const std::string msg_delta = ev("message_delta", {{"type", "message_delta"}});
  const std::string msg_stop = ev("message_stop", {{"type", "message_stop"}});
  StreamLedger ledger(server::ApiStyle::kAnthropic);
  for (const std::string& e : {msg_start, ping, start(0, "thinking"), delta(0, "thinking", "Hmm"),
                               stop(0), start(1, "text"), delta(1, "text", "Hi th")}) {
    ledger.Sent(e);
  }
  ledger.BeginResume();
  std::string rest;
  for (const std::string& e :
       {msg_start, ping, start(0, "thinking"), delta(0, "thinking", "Hm"),
        delta(0, "thinking", "m"), stop(0), start(1, "text"), delta(1, "text", "Hi"),
        delta(1, "text", " there"), stop(1), msg_delta, msg_stop}) {
    StatusOr<std::string> more = ledger.Continue(e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    rest += *more;
  }
  EXPECT_EQ(rest, delta(1, "text", "ere") + stop(1) + msg_delta + msg_stop);
}

}  // namespace
}  // namespace deepinfer::router
