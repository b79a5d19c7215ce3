#include "router/health.h"

namespace deepinfer::router {

HealthTracker::Change HealthTracker::Record(bool pass) {
  if (!known_) {
    known_ = true;
    up_ = pass;
    return pass ? Change::kUp : Change::kDown;
  }
  if (up_) {
    fails_ = pass ? 0 : fails_ + 1;
    if (fails_ < t_.fails_to_down) return Change::kNone;
    up_ = false;
    fails_ = 0;
    return Change::kDown;
  }
  passes_ = pass ? passes_ + 1 : 0;
  if (passes_ < t_.passes_to_up) return Change::kNone;
  up_ = true;
  passes_ = 0;
  return Change::kUp;
}

}  // namespace deepinfer::router
