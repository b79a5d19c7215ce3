// bench-serve's stream parsing (tools/bench_http.h): SSE framing and the completion-stream timing.
#include "tools/bench_http.h"

#include <gtest/gtest.h>

namespace deepinfer::tools {
namespace {

TEST(BenchHttpTest, ParseBaseUrl) {
  auto ep = ParseBaseUrl("http://127.0.0.1:8123/");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->host, "127.0.0.1");
  EXPECT_EQ(ep->port, "8123");
  EXPECT_EQ(ep->base_path, "");
  ep = ParseBaseUrl("http://example:80/proxy/x");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->base_path, "/proxy/x");
  EXPECT_EQ(ParseBaseUrl("http://host").value().port, "80");
  EXPECT_FALSE(ParseBaseUrl("https://host:1").ok());
  EXPECT_FALSE(ParseBaseUrl("http://host:port").ok());
}

TEST(BenchHttpTest, SseEventsSplitAtBlankLinesAcrossReads) {
  std::string pending = "data: {\"a\":1}\n\ndata: par";
  std::vector<SseEvent> ev;
  TakeSseEvents(&pending, 1.0, &ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "{\"a\":1}");
  EXPECT_EQ(ev[0].t_s, 1.0);
  EXPECT_EQ(pending, "data: par");
  pending += "t\r\n\r\n: comment\n\nevent: x\ndata: l1\ndata: l2\n\n";
  TakeSseEvents(&pending, 2.0, &ev);
  ASSERT_EQ(ev.size(), 3u);  // the comment-only event has no data
  EXPECT_EQ(ev[1].data, "part");
  EXPECT_EQ(ev[1].t_s, 2.0);
  EXPECT_EQ(ev[2].data, "l1\nl2");
  EXPECT_TRUE(pending.empty());
}

std::string Chunk(const std::string& text) {
  return "{\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}";
}

TEST(BenchHttpTest, CompletionStreamTiming) {
  HttpStreamResult r;
  r.status = 200;
  r.end_s = 1.0;
  r.events = {{0.25, Chunk("a")},
              {0.5, Chunk("")},  // no text: neither a token time nor an ITL boundary
              {0.75, Chunk("b")},
              {0.875, Chunk("c")},
              {0.9, "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":4}}"},
              {0.95, "[DONE]"}};
  std::string why;
  RequestTiming t = TimingFromCompletionStream(r, &why);
  EXPECT_TRUE(why.empty()) << why;
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.ttft_s, 0.25);
  EXPECT_EQ(t.e2e_s, 1.0);
  ASSERT_EQ(t.itl_s.size(), 2u);
  EXPECT_EQ(t.itl_s[0], 0.5);
  EXPECT_EQ(t.itl_s[1], 0.125);
  EXPECT_EQ(t.prompt_tokens, 7);
  EXPECT_EQ(t.output_tokens, 4);  // from usage, not the 3 text events

  r.events.pop_back();  // no [DONE]
  t = TimingFromCompletionStream(r, &why);
  EXPECT_FALSE(t.ok);
  EXPECT_NE(why.find("[DONE]"), std::string::npos);

  HttpStreamResult err;
  err.status = 400;
  err.body = "{\"error\":{}}";
  why.clear();
  EXPECT_FALSE(TimingFromCompletionStream(err, &why).ok);
  EXPECT_NE(why.find("HTTP 400"), std::string::npos);

  HttpStreamResult mid;
  mid.status = 200;
  mid.events = {{0.1, Chunk("a")}, {0.2, "{\"error\":{\"message\":\"boom\"}}"}, {0.3, "[DONE]"}};
  why.clear();
  EXPECT_FALSE(TimingFromCompletionStream(mid, &why).ok);
  EXPECT_NE(why.find("boom"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer::tools
