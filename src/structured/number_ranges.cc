#include "structured/number_ranges.h"

#include <cmath>
#include <vector>

namespace deepinfer::structured {
namespace {

constexpr double kLimit = 1e15;
constexpr int64_t kNone = INT64_MAX;  // an open upper end

std::string Join(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Digit strings of equal length from x to y (x <= y), leading zeros allowed.
std::string SameLength(const std::string& x, const std::string& y) {
  if (x.empty()) return "\"\"";
  if (x == y) return "\"" + x + "\"";
  if (x[0] == y[0])
    return "\"" + std::string(1, x[0]) + "\" " + SameLength(x.substr(1), y.substr(1));
  const size_t rest = x.size() - 1;
  const std::string zeros(rest, '0'), nines(rest, '9');
  auto any_digits = [&]() {
    return rest == 0 ? std::string() : " [0-9]{" + std::to_string(rest) + "}";
  };
  if (x.substr(1) == zeros && y.substr(1) == nines) {
    return "[" + std::string(1, x[0]) + "-" + std::string(1, y[0]) + "]" + any_digits();
  }
  std::vector<std::string> alts;
  alts.push_back("\"" + std::string(1, x[0]) + "\" " + SameLength(x.substr(1), nines));
  if (y[0] - x[0] > 1) {
    alts.push_back("[" + std::string(1, x[0] + 1) + "-" + std::string(1, y[0] - 1) + "]" +
                   any_digits());
  }
  alts.push_back("\"" + std::string(1, y[0]) + "\" " + SameLength(zeros, y.substr(1)));
  return Join(alts);
}

// Non-negative integers in [a, b] (b == kNone: unbounded), no leading zeros.
std::string Magnitude(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  const std::string sa = std::to_string(a);
  const size_t max_len = b == kNone ? sa.size() : std::to_string(b).size();
  int64_t pow = 1;
  for (size_t n = 1; n < sa.size(); ++n) pow *= 10;  // 10^(len(a)-1)
  for (size_t n = sa.size(); n <= max_len; ++n, pow *= 10) {
    const int64_t lo = std::max(a, n == 1 ? 0 : pow);
    const int64_t top = pow * 10 - 1;  // largest n-digit number
    const int64_t hi = b == kNone ? top : std::min(b, top);
    if (lo > hi) continue;
    alts.push_back(SameLength(std::to_string(lo), std::to_string(hi)));
  }
  if (b == kNone) alts.push_back("[1-9] [0-9]{" + std::to_string(sa.size()) + ",}");
  return Join(alts);
}

// Integers in [lo, hi]; nullopt ends are open.
std::vector<std::string> IntegerAlternatives(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // negatives: "-" then a magnitude in [max(1, -hi), -lo]
    const int64_t mag_lo = hi ? std::max<int64_t>(1, -*hi) : 1;
    const int64_t mag_hi = lo ? -*lo : kNone;
    if (mag_hi == kNone || mag_lo <= mag_hi) alts.push_back("\"-\" " + Magnitude(mag_lo, mag_hi));
  }
  if (!hi || *hi >= 0) {
    const int64_t a = lo ? std::max<int64_t>(0, *lo) : 0;
    const int64_t b = hi ? *hi : kNone;
    if (b == kNone || a <= b) alts.push_back(Magnitude(a, b));
  }
  return alts;
}

Status CheckBounds(const NumberBounds& b) {
  for (const auto& v : {b.minimum, b.maximum}) {
    if (v && !(std::fabs(*v) <= kLimit)) {
      return InvalidArgument("numeric bound " + std::to_string(*v) + " beyond +-1e15");
    }
  }
  return Status::Ok();
}

std::optional<int64_t> IntLo(const NumberBounds& b) {
  if (!b.minimum) return std::nullopt;
  return static_cast<int64_t>(b.exclusive_minimum ? std::floor(*b.minimum) + 1
                                                  : std::ceil(*b.minimum));
}
std::optional<int64_t> IntHi(const NumberBounds& b) {
  if (!b.maximum) return std::nullopt;
  return static_cast<int64_t>(b.exclusive_maximum ? std::ceil(*b.maximum) - 1
                                                  : std::floor(*b.maximum));
}

}  // namespace

StatusOr<std::string> IntegerRangeEbnf(const NumberBounds& bounds) {
  DI_RETURN_IF_ERROR(CheckBounds(bounds));
  auto lo = IntLo(bounds), hi = IntHi(bounds);
  if (lo && hi && *lo > *hi) return InvalidArgument("no integer lies within the bounds");
  return Join(IntegerAlternatives(lo, hi));
}

StatusOr<std::string> NumberRangeEbnf(const NumberBounds& bounds) {
  DI_RETURN_IF_ERROR(CheckBounds(bounds));
  auto lo = IntLo(bounds), hi = IntHi(bounds);
  std::vector<std::string> alts;
  if (!lo || !hi || *lo <= *hi) alts = IntegerAlternatives(lo, hi);
  const std::string fraction = " \".\" [0-9]+";
  // Non-negative I with [I, I+1) inside the bounds.
  {
    const int64_t a = lo ? std::max<int64_t>(0, *lo) : 0;
    const int64_t b =
        bounds.maximum ? static_cast<int64_t>(std::floor(*bounds.maximum)) - 1 : kNone;
    if (b == kNone || (b >= 0 && a <= b)) alts.push_back(Magnitude(a, b) + fraction);
  }
  // "-k.f" with (-(k+1), -k] inside the bounds.
  {
    const int64_t a = hi ? std::max<int64_t>(0, -*hi) : 0;
    const int64_t b =
        bounds.minimum ? static_cast<int64_t>(std::floor(-*bounds.minimum)) - 1 : kNone;
    if (b == kNone || (b >= 0 && a <= b)) alts.push_back("\"-\" " + Magnitude(a, b) + fraction);
  }
  // At an exclusive integral bound, the bound's own integer part with a non-zero fraction:
  // lo.f (f > 0) for exclusiveMinimum lo >= 0, -k.f for exclusiveMaximum -k <= 0.
  const std::string nonzero_fraction = " \".\" [0-9]* [1-9]";
  auto integral = [](double v) { return std::floor(v) == v; };
  if (bounds.minimum && bounds.exclusive_minimum && integral(*bounds.minimum) &&
      *bounds.minimum >= 0 && (!bounds.maximum || *bounds.minimum + 1 <= *bounds.maximum)) {
    alts.push_back("\"" + std::to_string(static_cast<int64_t>(*bounds.minimum)) + "\"" +
                   nonzero_fraction);
  }
  if (bounds.maximum && bounds.exclusive_maximum && integral(*bounds.maximum) &&
      *bounds.maximum <= 0 && (!bounds.minimum || *bounds.maximum - 1 >= *bounds.minimum)) {
    alts.push_back("\"-" + std::to_string(static_cast<int64_t>(-*bounds.maximum)) + "\"" +
                   nonzero_fraction);
  }
  if (alts.empty()) return InvalidArgument("no number lies within the bounds");
  return Join(alts);
}

}  // namespace deepinfer::structured
