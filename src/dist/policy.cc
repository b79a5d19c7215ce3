#include "dist/policy.h"

#include "dist/cache_aware.h"
#include "dist/power_of_two.h"
#include "dist/round_robin.h"

namespace deepinfer::dist {

std::optional<PolicyKind> ParsePolicyKind(const std::string& name) {
  if (name == "cache-aware") return PolicyKind::kCacheAware;
  if (name == "power-of-two") return PolicyKind::kPowerOfTwo;
  if (name == "round-robin") return PolicyKind::kRoundRobin;
  return std::nullopt;
}

const char* PolicyName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kCacheAware:
      return "cache-aware";
    case PolicyKind::kPowerOfTwo:
      return "power-of-two";
    case PolicyKind::kRoundRobin:
      return "round-robin";
  }
  return "?";
}

std::unique_ptr<Policy> MakePolicy(PolicyKind kind, const PolicyOptions& options) {
  switch (kind) {
    case PolicyKind::kCacheAware:
      return std::make_unique<CacheAware>(options);
    case PolicyKind::kPowerOfTwo:
      return std::make_unique<PowerOfTwo>(options.seed);
    case PolicyKind::kRoundRobin:
      return std::make_unique<RoundRobin>();
  }
  return nullptr;
}

}  // namespace deepinfer::dist
