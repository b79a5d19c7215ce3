// A worker's health as the router's probes see it: a run of failures takes it down, a run of
// passes brings it back, so that one lost probe does not flap a worker. Pure state: the probes
// (health_checker.h) and the request path feed it.
#pragma once

namespace deepinfer::router {

struct HealthThresholds {
  int fails_to_down = 3;  // consecutive failed probes that mark an up worker down
  int passes_to_up = 2;   // consecutive passed probes that mark a down worker up
};

class HealthTracker {
 public:
  enum class Change { kNone, kUp, kDown };

  explicit HealthTracker(HealthThresholds t = {}) : t_(t) {}

  // One probe result. The first one decides at once (a worker that answers at start-up is up
  // without a second probe); afterwards the thresholds apply. Returns the transition, if any.
  Change Record(bool pass);

  bool up() const { return up_; }
  bool known() const { return known_; }  // false until the first probe

 private:
  HealthThresholds t_;
  bool known_ = false;
  bool up_ = false;
  int fails_ = 0;   // consecutive, while up
  int passes_ = 0;  // consecutive, while down
};

}  // namespace deepinfer::router
