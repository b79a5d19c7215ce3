// The /metrics text: cancelled requests and the speculative-decoding counters.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace deepinfer::server {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

struct StatsWithSpec {
  struct {
    int64_t draft_calls = 2, drafted = 8, verified = 6, accepted = 3;
    std::vector<int64_t> accept_histogram = {1, 0, 1};
  } spec;
};
struct StatsWithoutSpec {};

TEST(Metrics, SpecDecodeCountersComeFromTheEngineStats) {
  const SpecDecodeCounters c = SpecDecodeOf(StatsWithSpec{});
  std::string out;
  RenderSpecDecode(c, &out);
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_draft_calls_total 2")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_draft_tokens_total 8")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_verified_tokens_total 6")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_accepted_tokens_total 3")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_acceptance_rate 0.5")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_verify_calls_total{accepted=\"2\"} 1")) << out;
  const SpecDecodeCounters zero = SpecDecodeOf(StatsWithoutSpec{});
  EXPECT_EQ(zero.drafted, 0);
  EXPECT_EQ(zero.accepted, 0);
  EXPECT_TRUE(zero.accept_histogram.empty());
}

TEST(Metrics, RenderCountsCancelledRequests) {
  Metrics m;
  m.CountCancelled(1);
  m.CountCancelled(2);
  const std::string out = m.Render(EngineSnapshot{});
  EXPECT_TRUE(HasLine(out, "deepinfer_requests_cancelled_total 3")) << out;
  EXPECT_TRUE(HasLine(out, "deepinfer_spec_decode_accepted_tokens_total 0")) << out;
}

}  // namespace
}  // namespace deepinfer::server
