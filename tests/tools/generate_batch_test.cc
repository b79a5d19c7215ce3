// `deepinfer generate --batch` on the fixture model: one output line per input line in input
// order, refused lines as error lines that disturb nothing, sampling fields honoured, n samples
// and prompt logprobs in the output.
#include "tools/generate_batch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace deepinfer::tools {
namespace {

using nlohmann::json;

const std::string kFixture = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";

std::vector<json> RunLines(const std::string& input, EngineFlags flags = {}) {
  flags.kv_budget = "64M";
  flags.max_running = 8;
  flags.prefill_chunk = 16;
  auto e = LoadEngine(kFixture, "", flags);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  std::istringstream in(input);
  std::ostringstream out;
  const Status s = RunBatch(*e, in, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<json> lines;
  std::istringstream read(out.str());
  std::string line;
  while (std::getline(read, line)) lines.push_back(json::parse(line));
  return lines;
}

TEST(GenerateBatchTest, OneLinePerInputInOrderWithErrorsInPlace) {
  const std::string input =
      R"({"prompt_ids": [5, 6, 7, 8, 9, 10], "max_tokens": 5, "temperature": 0, "ignore_eos": true})"
      "\n"
      R"({"prompt_ids": [5, 6, 7], "max_tokens": 3, "bogus": 1})"
      "\n"
      "not json\n"
      R"({"prompt_ids": [11, 12, 13, 14], "max_tokens": 4, "seed": 9, "ignore_eos": true,)"
      R"( "logprobs": true, "top_logprobs": 2})"
      "\n"
      R"({"prompt_ids": [5, 6, 7, 8, 9, 10], "max_tokens": 5, "temperature": 0, "ignore_eos": true})"
      "\n"
      R"({"prompt_ids": [1, 2], "max_tokens": 3, "temperature": -1})"
      "\n";
  const auto lines = RunLines(input);
  ASSERT_EQ(lines.size(), 6u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["index"], i);
  EXPECT_TRUE(lines[1].contains("error"));
  EXPECT_NE(lines[1]["error"].get<std::string>().find("bogus"), std::string::npos);
  EXPECT_TRUE(lines[2].contains("error"));
  EXPECT_TRUE(lines[5].contains("error"));
  EXPECT_EQ(lines[0]["ids"].size(), 5u);
  EXPECT_EQ(lines[0]["finish_reason"], "length");
  EXPECT_EQ(lines[0]["prompt_tokens"], 6);
  EXPECT_EQ(lines[0]["ids"], lines[4]["ids"]);  // greedy: the same prompt, the same output
  EXPECT_EQ(lines[3]["seed"], 9);
  ASSERT_EQ(lines[3]["logprobs"].size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(lines[3]["logprobs"][k]["id"], lines[3]["ids"][k]);
    EXPECT_EQ(lines[3]["logprobs"][k]["top_logprobs"].size(), 2u);
    EXPECT_LE(lines[3]["logprobs"][k]["logprob"].get<double>(), 0.0);
  }
}

TEST(GenerateBatchTest, ParallelSamplesAndPromptLogprobs) {
  const std::string one =
      R"({"prompt_ids": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "max_tokens": 6, "seed": 4,)"
      R"( "ignore_eos": true, "prompt_logprobs": 1})";
  const std::string three =
      R"({"prompt_ids": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "max_tokens": 6, "seed": 4,)"
      R"( "ignore_eos": true, "n": 3})";
  const auto lines = RunLines(one + "\n" + three + "\n");
  ASSERT_EQ(lines.size(), 2u);
  // n = 1: prompt logprobs, null for the first prompt token, then one entry per token.
  const json& plp = lines[0]["prompt_logprobs"];
  ASSERT_EQ(plp.size(), 11u);
  EXPECT_TRUE(plp[0].is_null());
  for (size_t i = 1; i < plp.size(); ++i) {
    EXPECT_EQ(plp[i]["id"], 3 + static_cast<int>(i));
    EXPECT_EQ(plp[i]["top_logprobs"].size(), 1u);
    EXPECT_GE(plp[i]["top_logprobs"][0]["logprob"].get<double>(), plp[i]["logprob"].get<double>());
  }
  // n = 3: three samples; the first one is the n = 1 request's output (same seed, index 0).
  ASSERT_TRUE(lines[1].contains("samples"));
  ASSERT_EQ(lines[1]["samples"].size(), 3u);
  EXPECT_EQ(lines[1]["samples"][0]["ids"], lines[0]["ids"]);
  EXPECT_NE(lines[1]["samples"][1]["ids"], lines[1]["samples"][0]["ids"]);
  for (const json& s : lines[1]["samples"]) {
    EXPECT_EQ(s["ids"].size(), 6u);
    EXPECT_EQ(s["finish_reason"], "length");
  }
}

}  // namespace
}  // namespace deepinfer::tools
