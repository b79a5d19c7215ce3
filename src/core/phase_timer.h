// PhaseTimer: opt-in wall-clock accounting of named phases, for finding where a forward pass
// spends its time. Enabled by DEEPINFER_PROFILE=1; then each ScopedPhase adds its duration to its
// phase, and the totals are printed to stderr at exit (sorted, with call counts). Disabled, a
// ScopedPhase costs one branch. PhaseTotalsNow() reads the running totals, so the difference of
// two readings is the profile of what ran between them (deepinfer bench's decode window).
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace deepinfer {

bool PhaseTimingEnabled();
void AddPhaseTime(const char* name, double seconds);

struct PhaseTotal {
  double seconds = 0;
  long calls = 0;
};
// The totals so far by phase name (empty while timing is disabled).
std::map<std::string, PhaseTotal> PhaseTotalsNow();

class ScopedPhase {
 public:
  explicit ScopedPhase(const char* name) : name_(PhaseTimingEnabled() ? name : nullptr) {
    if (name_) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedPhase() {
    if (name_) {
      AddPhaseTime(
          name_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
  }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace deepinfer
