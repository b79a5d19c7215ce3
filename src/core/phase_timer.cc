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
  std::map<std::string, std::pair<double, long>> by_name;
  ~Totals() {
    std::vector<std::pair<std::string, std::pair<double, long>>> v(by_name.begin(), by_name.end());
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    for (const auto& [name, t] : v) {
      std::fprintf(stderr, "phase %-28s %10.3f ms %8ld calls\n", name.c_str(), t.first * 1e3,
                   t.second);
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
  auto& e = t.by_name[name];
  e.first += seconds;
  ++e.second;
}

}  // namespace deepinfer
