#include "router/retry.h"

#include <cmath>

namespace deepinfer::router {

std::chrono::duration<double> Backoff::Delay(int retry) {
  const double base = options_.base_s * std::pow(options_.factor, retry);
  std::uniform_real_distribution<double> jitter(1 - options_.jitter, 1 + options_.jitter);
  return std::chrono::duration<double>(base * jitter(rng_));
}

}  // namespace deepinfer::router
