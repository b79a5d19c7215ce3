#include "io/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace deepinfer::io {

ProgressBar::ProgressBar(Options options)
    : options_(std::move(options)), out_(options_.out ? options_.out : &std::cerr) {
  enabled_ = options_.force || (options_.out == nullptr && ::isatty(STDERR_FILENO) == 1);
  start_ = Now();
  last_draw_ = start_;
}

ProgressBar::~ProgressBar() { Finish(); }

ProgressBar::Clock::time_point ProgressBar::Now() const {
  return options_.now ? options_.now() : Clock::now();
}

void ProgressBar::Set(uint64_t done) {
  done_ = done;
  if (!enabled_ || finished_) return;
  const Clock::time_point now = Now();
  if (now - start_ < options_.delay) return;
  if (drawn_ && now - last_draw_ < options_.min_redraw) return;
  Draw(now);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!drawn_) return;
  Draw(Now());
  *out_ << '\n';
  out_->flush();
}

void ProgressBar::Draw(Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  *out_ << '\r'
        << FormatLine(options_.label, done_, options_.total, options_.bytes, elapsed,
                      options_.width);
  out_->flush();
  drawn_ = true;
  last_draw_ = now;
}

std::string ProgressBar::FormatBytes(uint64_t n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string ProgressBar::FormatLine(std::string_view label, uint64_t done, uint64_t total,
                                    bool bytes, double elapsed_s, int width) {
  done = std::min(done, total);
  width = std::max(width, 0);
  // Fractions in integers so that the bar and the percent never disagree by rounding.
  const uint64_t percent =
      total == 0 ? 100 : static_cast<uint64_t>(static_cast<unsigned __int128>(done) * 100 / total);
  const int filled =
      total == 0 ? width : static_cast<int>(static_cast<unsigned __int128>(done) * width / total);
  std::string line(label);
  line += " [";
  line.append(static_cast<size_t>(filled), '#');
  line.append(static_cast<size_t>(width - filled), '-');
  line += "] ";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%3llu%%  ", static_cast<unsigned long long>(percent));
  line += buf;
  if (bytes) {
    line += FormatBytes(done) + " / " + FormatBytes(total);
  } else {
    line += std::to_string(done) + " / " + std::to_string(total);
  }
  std::snprintf(buf, sizeof(buf), "  %.1f s", elapsed_s);
  line += buf;
  return line;
}

}  // namespace deepinfer::io
