// End to end: `deepinfer eval-golden` on the v41-tiny-a fixture, judged by the golden judge
// (bf16-rounding-emulated tier) in both index-key modes. The full table of metrics and limits is
// printed so CI logs show how close the engine is.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "fixture_util.h"
#include "golden_judge.h"

namespace deepinfer::model::test {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class GoldenFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFixtureTest, EvalGoldenPassesEveryCheck) {
  const std::string mode = GetParam();
  const std::string dir =
      ::testing::TempDir() + "golden_fixture_" + mode + "_" + std::to_string(getpid());
  fs::create_directories(dir);
  const std::string out = dir + "/out_" + mode + ".safetensors";
  const std::string log = dir + "/eval_golden.log";
  const std::string cmd = std::string("'") + DEEPINFER_BINARY + "' eval-golden --model '" +
                          kFixtureDir + "' --golden '" + kFixtureDir + "' --mode " + mode +
                          " --out '" + out + "' > '" + log + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string output = ReadText(log);
  std::cout << "$ " << cmd << "\n" << output;
  ASSERT_TRUE(WIFEXITED(status)) << "eval-golden did not exit normally (status " << status << ")";
  const int code = WEXITSTATUS(status);
  if (code == 2 && output.find("not implemented yet") != std::string::npos) {
    FAIL() << "deepinfer eval-golden is not implemented yet (issue 3): this test fails until it is";
  }
  ASSERT_EQ(code, 0) << "eval-golden failed:\n" << output;

  StatusOr<JudgeReport> report = JudgeGolden(kFixtureDir, out, mode, kTierBf16Emulated);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::cout << "golden judge, mode " << mode << ", tier " << kTierBf16Emulated << ":\n"
            << FormatReport(report->checks);
  for (const MetricCheck& c : report->checks) {
    EXPECT_TRUE(c.pass) << c.name << ": " << c.value << " vs limit " << c.limit << " " << c.note;
  }
  std::error_code ec;
  if (!HasFailure()) fs::remove_all(dir, ec);  // keep the OUT file of a failing run to look at
}

INSTANTIATE_TEST_SUITE_P(Modes, GoldenFixtureTest, ::testing::Values("official", "owner"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace deepinfer::model::test
