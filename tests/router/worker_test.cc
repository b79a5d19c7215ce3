// Worker addresses, GET /internal/info, the compatibility check, and a worker going down
// dropping its block keys.
#include "router/worker.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepinfer::router {
namespace {

TEST(ParseWorkerUrl, Forms) {
  StatusOr<Endpoint> e = ParseWorkerUrl("http://127.0.0.1:8001/");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 8001);
  EXPECT_EQ(e->url, "http://127.0.0.1:8001");
  e = ParseWorkerUrl("localhost:9000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "localhost");
  EXPECT_EQ(e->url, "http://localhost:9000");
  e = ParseWorkerUrl("http://[::1]:8000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  for (const char* bad : {"https://h:1", "http://h", "http://h:0", "http://h:70000", "h:1x",
                          "http://h:1/v1", ":80"}) {
    EXPECT_FALSE(ParseWorkerUrl(bad).ok()) << bad;
  }
}

TEST(ParseWorkerInfo, Fields) {
  const nlohmann::json body = {
      {"model", "m"},         {"fingerprint", "f1"},      {"role", "decode"},
      {"page_tokens", 64},    {"prompt_sensitive", true}, {"pd_address", "10.0.0.1:7000"},
      {"max_model_len", 8192}};
  StatusOr<WorkerInfo> info = ParseWorkerInfo(body);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->model, "m");
  EXPECT_EQ(info->fingerprint, "f1");
  EXPECT_EQ(info->role, "decode");
  EXPECT_EQ(info->page_tokens, 64);
  EXPECT_TRUE(info->prompt_sensitive);
  EXPECT_EQ(info->pd_address, "10.0.0.1:7000");
  nlohmann::json null_address = body;
  null_address["pd_address"] = nullptr;
  EXPECT_EQ(ParseWorkerInfo(null_address)->pd_address, "");
  EXPECT_FALSE(ParseWorkerInfo(nlohmann::json::array()).ok());
  nlohmann::json bad = body;
  bad["page_tokens"] = "64";
  EXPECT_FALSE(ParseWorkerInfo(bad).ok());
}

TEST(CheckCompatible, ModelAndFingerprintMustMatch) {
  WorkerInfo ref;
  ref.model = "m";
  ref.fingerprint = "f1";
  EXPECT_TRUE(CheckCompatible(ref, ref).ok());
  WorkerInfo other = ref;
  other.role = "decode";  // roles may differ
  other.pd_address = "x:1";
  EXPECT_TRUE(CheckCompatible(ref, other).ok());
  other.model = "m2";
  const Status s = CheckCompatible(ref, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("m2"), std::string::npos);
  EXPECT_NE(s.message().find("\"m\""), std::string::npos);
  other.model = "m";
  other.fingerprint = "f2";
  EXPECT_NE(CheckCompatible(ref, other).message().find("f2"), std::string::npos);
}

TEST(Worker, RoutableAndDownDropsTheKeys) {
  Worker w(*ParseWorkerUrl("127.0.0.1:1"), 100);
  EXPECT_FALSE(w.routable());  // no probe yet
  w.RecordProbe(true);
  EXPECT_TRUE(w.routable());
  w.SetRefused(true);
  EXPECT_FALSE(w.routable());
  w.SetRefused(false);
  const std::vector<engine::BlockKey> keys = {{1, 2}, {3, 4}};
  w.cache().Insert(keys);
  w.RecordProbe(false);
  w.RecordProbe(false);
  EXPECT_EQ(w.cache().size(), 2);  // still up
  w.RecordProbe(false);
  EXPECT_FALSE(w.up());
  EXPECT_EQ(w.cache().size(), 0);
}

}  // namespace
}  // namespace deepinfer::router
