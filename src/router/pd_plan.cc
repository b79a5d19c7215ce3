#include "router/pd_plan.h"

namespace deepinfer::router {

PdNext PdPlan::Start(bool decode_has_address, int64_t prefill_routable) {
  if (!decode_has_address || prefill_routable == 0) {
    fallback_ = true;
    return PdNext::kDecodeDirect;
  }
  ++prefill_attempts_;
  return PdNext::kPrefill;
}

PdNext PdPlan::AfterPrefill(PrefillOutcome outcome, int64_t prefill_untried) {
  switch (outcome) {
    case PrefillOutcome::kOk:
      return PdNext::kDecode;
    case PrefillOutcome::kRejected:
      return PdNext::kDecodeDirect;
    case PrefillOutcome::kFailed:
      break;
  }
  if (prefill_attempts_ < kMaxPrefillAttempts && prefill_untried > 0) {
    ++prefill_attempts_;
    return PdNext::kPrefill;
  }
  fallback_ = true;
  return PdNext::kDecodeDirect;
}

}  // namespace deepinfer::router
