// When a failed attempt is tried again on another worker, and after how long.
//
// Retried: the connection to the worker could not be made, broke, or the worker answered 502 /
// 503 — and nothing of the answer has reached the client yet. At most max_retries more
// attempts, each on a worker not tried before for this request, after a backoff of
// base_s x factor^k, k = 0, 1, ..., times a uniform factor in [1 - jitter, 1 + jitter].
// Once bytes have reached the client a failure ends the stream with an error event (the seam
// for resuming a started stream elsewhere is router.cc's StreamBroke).
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace deepinfer::router {

struct RetryOptions {
  int max_retries = 2;
  double base_s = 0.050;
  double factor = 1.5;
  double jitter = 0.2;
};

class Backoff {
 public:
  Backoff(const RetryOptions& options, uint64_t seed) : options_(options), rng_(seed) {}
  // Whether another attempt may follow `failed_attempts` failed ones.
  bool MayRetry(int failed_attempts) const { return failed_attempts <= options_.max_retries; }
  // The wait before retry number `retry` (0-based).
  std::chrono::duration<double> Delay(int retry);

 private:
  RetryOptions options_;
  std::mt19937_64 rng_;
};

// Whether a worker's HTTP status is a failure worth another worker (502 Bad Gateway, 503
// Service Unavailable: the worker is overloaded, shutting down, or its own upstream failed).
inline bool RetryableStatus(int status) { return status == 502 || status == 503; }

}  // namespace deepinfer::router
