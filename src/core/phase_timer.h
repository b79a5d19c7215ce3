// PhaseTimer: opt-in wall-clock accounting of named phases, for finding where a forward pass
// spends its time. Enabled by DEEPINFER_PROFILE=1; then each ScopedPhase adds its duration to its
// phase, and the totals are printed to stderr at exit (sorted, with call counts). Disabled, a
// ScopedPhase costs one branch.
#pragma once

#include <chrono>

namespace deepinfer {

bool PhaseTimingEnabled();
void AddPhaseTime(const char* name, double seconds);

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
