// api::RequestText on the DeepSeek-V3 tokenizer: per-sample text and stop strings, wired the way
// Engine::Add wires samples (copy of the request, sample_index + i, prepare_sample).
#include "api/request_text.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace deepinfer::api {
namespace {

const tokenizer::Tokenizer& V3() {
  static const auto* tok = [] {
    auto loaded = tokenizer::Tokenizer::Load(DEEPINFER_TOKENIZER_DIR);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString() << " (run scripts/install-deps.sh)";
    return loaded.ok() ? std::move(loaded).value().release() : nullptr;
  }();
  if (!tok) std::abort();
  return *tok;
}

// Feeds `text`'s tokens to `request`'s stop check until it reports a stop; returns the count fed.
size_t Feed(const engine::Request& request, const std::string& text) {
  const std::vector<int32_t> ids = V3().Encode(text, false).value();
  std::vector<int32_t> output;
  for (int32_t id : ids) {
    output.push_back(id);
    if (request.stop_check(output)) break;
  }
  return output.size();
}

TEST(RequestText, EachSampleHasItsOwnTextAndStopStrings) {
  engine::Request r;
  r.params.n = 2;
  r.params.stop = {"STOP"};
  auto text = RequestText::Attach(&V3(), true, &r);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  ASSERT_NE(*text, nullptr);
  engine::Request second = r;  // as Engine::Add forks sample 1
  second.sample_index += 1;
  r.prepare_sample(&second);

  Feed(r, "alpha beta STOP gamma");
  SampleText& s0 = (*text)->sample(0);
  EXPECT_TRUE(s0.stopped());
  EXPECT_EQ(s0.matched_stop(), "STOP");
  s0.Finish();  // a stop string ended it: nothing held back is released
  EXPECT_EQ(s0.Take(), "alpha beta ");
  EXPECT_EQ(s0.Take(), "");

  Feed(second, "one two ST");
  SampleText& s1 = (*text)->sample(1);
  EXPECT_FALSE(s1.stopped());
  const std::string before = s1.Take();
  s1.Finish();  // the partial stop string is ordinary text after all
  EXPECT_EQ(before + s1.Take(), "one two ST");
}

TEST(RequestText, NoTokenizerMeansNoText) {
  engine::Request r;
  auto none = RequestText::Attach(nullptr, true, &r);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_FALSE(r.stop_check);
  r.params.stop = {"x"};
  EXPECT_EQ(RequestText::Attach(nullptr, true, &r).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace deepinfer::api
