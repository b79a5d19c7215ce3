#include "core/phase_timer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace deepinfer {
namespace {

struct Totals {
  std::mutex mu;
  std::map<std::string, PhaseTotal> by_name;
  ~Totals() {
    std::vector<std::pair<std::string, PhaseTotal>> v(by_name.begin(), by_name.end());
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    for (const auto& [name, t] : v) {
      std::fprintf(stderr, "phase %-28s %10.3f ms %8ld calls\n", name.c_str(), t.seconds * 1e3,
                   t.calls);
    }
  }
};

Totals& GetTotals() {
  static Totals totals;
  return totals;
}

}  // namespace

bool PhaseTimingEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("DEEPINFER_PROFILE");
    return v != nullptr && v[0] == '1';
  }();
  return enabled;
}

void AddPhaseTime(const char* name, double seconds) {
  Totals& t = GetTotals();
  std::lock_guard<std::mutex> lock(t.mu);
  PhaseTotal& e = t.by_name[name];
  e.seconds += seconds;
  ++e.calls;
}

std::map<std::string, PhaseTotal> PhaseTotalsNow() {
  if (!PhaseTimingEnabled()) return {};
  Totals& t = GetTotals();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.by_name;
}

}  // namespace deepinfer
