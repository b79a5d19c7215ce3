#include "io/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace deepinfer::io {
namespace {

using namespace std::chrono_literals;

TEST(ProgressFormat, Line) {
  EXPECT_EQ(ProgressBar::FormatLine("load", 1, 3, false, 2.54, 12),
            "load [####--------]  33%  1 / 3  2.5 s");
  EXPECT_EQ(ProgressBar::FormatLine("load", 0, 3, false, 0, 4), "load [----]   0%  0 / 3  0.0 s");
  EXPECT_EQ(ProgressBar::FormatLine("x", 5, 3, false, 1, 4), "x [####] 100%  3 / 3  1.0 s");
  EXPECT_EQ(ProgressBar::FormatLine("x", 0, 0, false, 1, 4), "x [####] 100%  0 / 0  1.0 s");
  EXPECT_EQ(ProgressBar::FormatLine("pages", uint64_t{3} << 30, uint64_t{6} << 30, true, 10, 10),
            "pages [#####-----]  50%  3.0 GiB / 6.0 GiB  10.0 s");
}

TEST(ProgressFormat, Bytes) {
  EXPECT_EQ(ProgressBar::FormatBytes(0), "0 B");
  EXPECT_EQ(ProgressBar::FormatBytes(1023), "1023 B");
  EXPECT_EQ(ProgressBar::FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(ProgressBar::FormatBytes(uint64_t{5} << 20), "5.0 MiB");
  EXPECT_EQ(ProgressBar::FormatBytes(uint64_t{3} << 40), "3.0 TiB");
}

struct FakeClock {
  ProgressBar::Clock::time_point t{};
  std::function<ProgressBar::Clock::time_point()> Fn() {
    return [this] { return t; };
  }
};

ProgressBar::Options Opts(FakeClock& clock, std::ostream& out, bool force) {
  ProgressBar::Options o;
  o.label = "L";
  o.total = 10;
  o.force = force;
  o.out = &out;
  o.now = clock.Fn();
  o.width = 10;
  return o;
}

TEST(ProgressBar, QuietDuringTheFirstSecondThenThrottled) {
  FakeClock clock;
  std::ostringstream out;
  {
    ProgressBar bar(Opts(clock, out, /*force=*/true));
    EXPECT_TRUE(bar.enabled());
    bar.Set(1);
    clock.t += 999ms;
    bar.Set(2);
    EXPECT_EQ(out.str(), "");  // a fast job prints nothing
    clock.t += 1ms;
    bar.Set(3);
    EXPECT_EQ(out.str(), "\rL [###-------]  30%  3 / 10  1.0 s");
    clock.t += 50ms;
    bar.Add(1);  // within min_redraw: no redraw
    EXPECT_EQ(out.str(), "\rL [###-------]  30%  3 / 10  1.0 s");
    EXPECT_EQ(bar.done(), 4u);
    clock.t += 50ms;
    bar.Add(1);
    EXPECT_EQ(out.str(),
              "\rL [###-------]  30%  3 / 10  1.0 s\rL [#####-----]  50%  5 / 10  1.1 s");
    bar.Set(10);
    clock.t += 400ms;
  }  // the destructor finishes: final state and a newline
  EXPECT_EQ(out.str(),
            "\rL [###-------]  30%  3 / 10  1.0 s\rL [#####-----]  50%  5 / 10  1.1 s"
            "\rL [##########] 100%  10 / 10  1.5 s\n");
}

TEST(ProgressBar, FastJobPrintsNothingEvenOnFinish) {
  FakeClock clock;
  std::ostringstream out;
  ProgressBar bar(Opts(clock, out, true));
  bar.Set(10);
  bar.Finish();
  bar.Finish();
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressBar, NotForcedOnAStreamIsSilent) {
  FakeClock clock;
  std::ostringstream out;
  ProgressBar bar(Opts(clock, out, /*force=*/false));
  EXPECT_FALSE(bar.enabled());
  clock.t += 5s;
  bar.Set(5);
  bar.Finish();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace deepinfer::io
