#include "structured/number_ranges.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
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

// A decimal as written by std::to_chars (fixed, shortest round trip): sign, integer part and
// fraction digits without trailing zeros.
struct Decimal {
  bool negative = false;
  int64_t whole = 0;
  std::string fraction;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

Decimal ToDecimal(double v) {
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  std::string text(buf, r.ptr);
  Decimal d;
  if (!text.empty() && text[0] == '-') d.negative = true, text.erase(0, 1);
  const size_t dot = text.find('.');
  d.whole = std::stoll(text.substr(0, dot));
  if (dot != std::string::npos) d.fraction = text.substr(dot + 1);
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.whole == 0 && d.fraction.empty()) d.negative = false;
  return d;
}

Decimal Negate(Decimal d) {
  if (d.whole != 0 || !d.fraction.empty()) d.negative = !d.negative;
  return d;
}

// Magnitude comparison of two non-negative decimals, then with signs.
bool LessMagnitude(const Decimal& x, const Decimal& y) {
  if (x.whole != y.whole) return x.whole < y.whole;
  return x.fraction < y.fraction;  // no trailing zeros: lexicographic order is numeric order
}
bool Less(const Decimal& x, const Decimal& y) {
  if (x.negative != y.negative) return x.negative;
  return x.negative ? LessMagnitude(y, x) : LessMagnitude(x, y);
}

std::string Digit(char c) { return "\"" + std::string(1, c) + "\""; }
std::string DigitRange(char a, char b) {
  return a == b ? Digit(a) : "[" + std::string(1, a) + "-" + std::string(1, b) + "]";
}

// Fraction digit strings d (from position i on, the digits before equal to f's) with
// 0.d >= 0.f; f has no trailing zeros. May be empty once f is used up.
std::string FractionAtLeast(const std::string& f, size_t i) {
  if (i >= f.size()) return "[0-9]*";
  std::vector<std::string> alts;
  if (f[i] < '9') alts.push_back(DigitRange(f[i] + 1, '9') + " [0-9]*");
  alts.push_back(Digit(f[i]) + " " + FractionAtLeast(f, i + 1));
  return Join(alts);
}

// The same with 0.d <= 0.g; may_end: d may stop here (not at its first digit).
std::string FractionAtMost(const std::string& g, size_t i, bool may_end) {
  if (i >= g.size()) return may_end ? "\"0\"*" : "\"0\"+";
  std::vector<std::string> alts;
  if (g[i] > '0') alts.push_back(DigitRange('0', g[i] - 1) + " [0-9]*");
  alts.push_back(Digit(g[i]) + " " + FractionAtMost(g, i + 1, true));
  if (may_end) alts.push_back("\"\"");
  return Join(alts);
}

// 0.f <= 0.d <= 0.g (0.f <= 0.g), digits before position i equal to both.
std::string FractionBetween(const std::string& f, const std::string& g, size_t i) {
  if (i >= f.size()) return FractionAtMost(g, i, i > 0);
  const char fi = f[i], gi = i < g.size() ? g[i] : '0';
  if (fi == gi) return Digit(fi) + " " + FractionBetween(f, g, i + 1);
  std::vector<std::string> alts;  // fi < gi since 0.f <= 0.g
  alts.push_back(Digit(fi) + " " + FractionAtLeast(f, i + 1));
  if (gi - fi > 1) alts.push_back(DigitRange(fi + 1, gi - 1) + " [0-9]*");
  alts.push_back(Digit(gi) + " " + FractionAtMost(g, i + 1, true));
  return Join(alts);
}

// Unsigned decimals (integer part without leading zeros, optional fraction) in [lo, hi]
// (hi: nullopt = unbounded); lo <= hi, both non-negative.
std::string NonNegative(const Decimal& lo, const std::optional<Decimal>& hi) {
  const std::string a = std::to_string(lo.whole);
  std::vector<std::string> alts;
  if (hi && hi->whole == lo.whole) {
    if (lo.fraction.empty()) alts.push_back("\"" + a + "\"");
    alts.push_back("\"" + a + ".\" " + FractionBetween(lo.fraction, hi->fraction, 0));
    return Join(alts);
  }
  alts.push_back("\"" + a + "\" " +
                 (lo.fraction.empty() ? std::string("(\".\" [0-9]+)?")
                                      : "\".\" " + FractionAtLeast(lo.fraction, 0)));
  const int64_t mid_hi = hi ? hi->whole - 1 : kNone;
  if (mid_hi == kNone || lo.whole + 1 <= mid_hi) {
    alts.push_back(Magnitude(lo.whole + 1, mid_hi) + " (\".\" [0-9]+)?");
  }
  if (hi) {
    const std::string b = std::to_string(hi->whole);
    alts.push_back("\"" + b + "\" (\".\" " + FractionAtMost(hi->fraction, 0, false) + ")?");
  }
  return Join(alts);
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

StatusOr<std::string> IntegersOtherThan(std::vector<int64_t> excluded) {
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  for (int64_t v : excluded) {
    if (std::fabs(static_cast<double>(v)) > kLimit) {
      return InvalidArgument("integer " + std::to_string(v) + " beyond +-1e15");
    }
  }
  // The gaps around and between the excluded values.
  std::vector<std::string> alts;
  std::optional<int64_t> from;  // nullopt: from minus infinity
  for (int64_t v : excluded) {
    if (!from || *from <= v - 1) {
      for (std::string& a : IntegerAlternatives(from, v - 1)) alts.push_back(std::move(a));
    }
    from = v + 1;
  }
  for (std::string& a : IntegerAlternatives(from, std::nullopt)) alts.push_back(std::move(a));
  return Join(alts);
}

StatusOr<std::string> NumberRangeEbnf(const NumberBounds& bounds) {
  DI_RETURN_IF_ERROR(CheckBounds(bounds));
  // Inclusive decimal bounds; an exclusive bound moves to the neighbouring double.
  std::optional<Decimal> lo, hi;
  if (bounds.minimum) {
    lo = ToDecimal(bounds.exclusive_minimum ? std::nextafter(*bounds.minimum, kInf)
                                            : *bounds.minimum);
  }
  if (bounds.maximum) {
    hi = ToDecimal(bounds.exclusive_maximum ? std::nextafter(*bounds.maximum, -kInf)
                                            : *bounds.maximum);
  }
  if (lo && hi && Less(*hi, *lo)) return InvalidArgument("no number lies within the bounds");
  std::vector<std::string> alts;
  const Decimal zero;
  if (!hi || !hi->negative) {  // x >= 0, written without a sign
    const Decimal from = lo && !lo->negative ? *lo : zero;
    alts.push_back(NonNegative(from, hi));
  }
  if (!lo || lo->negative) {  // "-" y with y in [max(0, -hi), -lo] ("-0" is 0: within bounds)
    const Decimal from = hi && hi->negative ? Negate(*hi) : zero;
    std::optional<Decimal> to;
    if (lo) to = Negate(*lo);
    alts.push_back("\"-\" " + NonNegative(from, to));
  }
  return Join(alts);
}

}  // namespace deepinfer::structured
