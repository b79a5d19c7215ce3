// The router's decisions for one request in prefill/decode mode (docs/disaggregation.md),
// separate from the HTTP that carries them out (router.cc):
//
//   1. decode worker D: power of two choices over the decode pool; it must have a KV hand-off
//      address (pd_address), else there is no hand-off: D computes the prompt itself.
//   2. prefill worker P: cache-aware over the prefill pool; POST P /internal/pd/prefill
//      {"path", "request", "decode": D's pd_address}.
//   3. P answered 200: the original request goes unchanged to D, whose answer streams back.
//      P failed (no connection, or a status other than 200 and 4xx): once more with another P
//      if there is one, else D directly (a pd_fallback). P answered 4xx: the request itself is
//      at fault; D gets it directly and answers the same error (not a fallback).
#pragma once

#include <cstdint>

namespace deepinfer::router {

enum class PrefillOutcome {
  kOk,        // 200: the pages are on D
  kFailed,    // connection error, 5xx, or anything but 200 / 4xx
  kRejected,  // 4xx: the request is bad (D will say so)
};

enum class PdNext {
  kPrefill,       // (again) a prefill leg, on a prefill worker not tried yet
  kDecode,        // the request to D, its prompt's pages there
  kDecodeDirect,  // the request to D, which computes the prompt itself
};

class PdPlan {
 public:
  static constexpr int kMaxPrefillAttempts = 2;  // the first try and one retry

  // The first step: has D a hand-off address, and is a prefill worker routable.
  PdNext Start(bool decode_has_address, int64_t prefill_routable);
  // After a prefill leg; prefill_untried: routable prefill workers not tried yet.
  PdNext AfterPrefill(PrefillOutcome outcome, int64_t prefill_untried);

  // Whether the request went to D without its pages because of a failure (counted in
  // deepinfer_router_pd_fallbacks_total).
  bool fallback() const { return fallback_; }
  int prefill_attempts() const { return prefill_attempts_; }

 private:
  int prefill_attempts_ = 0;
  bool fallback_ = false;
};

}  // namespace deepinfer::router
