// ProgressBar: a one-line progress display on stderr for slow loads (opening and validating a
// checkpoint, paging it in).
//
// Quiet by default where it would be noise: it draws only when the stream is a terminal (or
// `force` is set), only once `delay` has passed since construction (fast loads print nothing),
// and redraws at most every `min_redraw`. Not thread-safe: update it from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace deepinfer::io {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::string label;
    uint64_t total = 0;
    bool bytes = false;                      // show counts as KiB/MiB/GiB
    bool force = false;                      // draw even if the stream is not a terminal
    std::ostream* out = nullptr;             // nullptr: std::cerr (drawn only if fd 2 is a TTY)
    std::function<Clock::time_point()> now;  // injectable clock; empty: Clock::now
    Clock::duration delay = std::chrono::seconds(1);
    Clock::duration min_redraw = std::chrono::milliseconds(100);
    int width = 30;  // characters inside the brackets
  };

  explicit ProgressBar(Options options);
  ~ProgressBar();  // calls Finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Add(uint64_t n) { Set(done_ + n); }
  void Set(uint64_t done);
  // Draws the final state and ends the line, if anything was drawn; idempotent.
  void Finish();

  bool enabled() const { return enabled_; }
  uint64_t done() const { return done_; }

  // The line drawn, without the leading '\r':
  //   "label [##########--------------------]  33%  1.0/3.0 GiB  2.5 s"
  // Percent is floor(100 * done / total); done is clamped to total; total 0 shows 100%.
  static std::string FormatLine(std::string_view label, uint64_t done, uint64_t total, bool bytes,
                                double elapsed_s, int width);
  // "512 B", "1.5 KiB", "3.0 GiB" (one decimal above bytes).
  static std::string FormatBytes(uint64_t n);

 private:
  Clock::time_point Now() const;
  void Draw(Clock::time_point now);

  Options options_;
  std::ostream* out_;
  bool enabled_;
  bool drawn_ = false;
  bool finished_ = false;
  uint64_t done_ = 0;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace deepinfer::io
