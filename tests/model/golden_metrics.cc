#include "golden_metrics.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/dtype.h"

namespace deepinfer::model::test {
namespace {

template <typename T>
StatusOr<HostTensor<T>> LoadAs(const io::SafetensorsFile& file, std::string_view name, DType want) {
  const TensorView* view = file.Find(name);
  if (view == nullptr) {
    return NotFound(file.path() + ": no tensor \"" + std::string(name) + "\"");
  }
  if (view->dtype != want) {
    return InvalidArgument(file.path() + ": tensor \"" + std::string(name) + "\" is " +
                           std::string(DTypeName(view->dtype)) + ", expected " +
                           std::string(DTypeName(want)));
  }
  HostTensor<T> t;
  t.shape = view->shape;
  t.data.resize(static_cast<size_t>(view->NumElements()));
  CHECK(view->n_bytes == t.data.size() * sizeof(T)) << name;
  if (!t.data.empty()) std::memcpy(t.data.data(), view->data, view->n_bytes);
  return t;
}

// log-softmax of a row in double.
void LogSoftmax(std::span<const float> row, std::vector<double>& out) {
  out.resize(row.size());
  double mx = -std::numeric_limits<double>::infinity();
  for (float v : row) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - mx);
  const double log_z = mx + std::log(sum);
  for (size_t i = 0; i < row.size(); ++i) out[i] = static_cast<double>(row[i]) - log_z;
}

bool AnyNan(std::span<const float> row) {
  return std::any_of(row.begin(), row.end(), [](float v) { return std::isnan(v); });
}

}  // namespace

template <typename T>
std::string HostTensor<T>::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
template struct HostTensor<float>;
template struct HostTensor<int64_t>;

StatusOr<F32Tensor> LoadF32(const io::SafetensorsFile& file, std::string_view name) {
  return LoadAs<float>(file, name, DType::kF32);
}
StatusOr<I64Tensor> LoadI64(const io::SafetensorsFile& file, std::string_view name) {
  return LoadAs<int64_t>(file, name, DType::kI64);
}

std::vector<float> GatherRows(std::span<const float> data, int64_t row_len,
                              std::span<const int64_t> rows) {
  std::vector<float> out;
  out.reserve(rows.size() * static_cast<size_t>(row_len));
  for (int64_t r : rows) {
    CHECK(r >= 0 && (r + 1) * row_len <= static_cast<int64_t>(data.size())) << r;
    out.insert(out.end(), data.begin() + r * row_len, data.begin() + (r + 1) * row_len);
  }
  return out;
}

int64_t Argmax(std::span<const float> row) {
  int64_t best = -1;
  for (size_t i = 0; i < row.size(); ++i) {
    // NaN never wins; a row of NaN gives -1.
    if (best < 0 ? !std::isnan(row[i]) : row[i] > row[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

double Top2Margin(std::span<const float> row) {
  if (row.size() < 2) return 0;
  double first = -std::numeric_limits<double>::infinity();
  double second = first;
  for (float v : row) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  return first - second;
}

double RowRelRms(std::span<const float> golden, std::span<const float> engine) {
  CHECK(golden.size() == engine.size());
  double diff2 = 0;
  double ref2 = 0;
  for (size_t i = 0; i < golden.size(); ++i) {
    const double d = static_cast<double>(engine[i]) - golden[i];
    diff2 += d * d;
    ref2 += static_cast<double>(golden[i]) * golden[i];
  }
  if (std::isnan(diff2)) return std::numeric_limits<double>::quiet_NaN();
  if (diff2 == 0) return 0;
  if (ref2 == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(diff2 / ref2);
}

double RowKl(std::span<const float> golden, std::span<const float> engine) {
  CHECK(golden.size() == engine.size());
  if (AnyNan(engine)) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> lg;
  std::vector<double> le;
  LogSoftmax(golden, lg);
  LogSoftmax(engine, le);
  double kl = 0;
  for (size_t i = 0; i < lg.size(); ++i) {
    const double p = std::exp(lg[i]);
    if (p > 0) kl += p * (lg[i] - le[i]);
  }
  return std::max(kl, 0.0);
}

DiffStats ComputeDiff(std::span<const float> golden, std::span<const float> engine,
                      int64_t row_len) {
  CHECK(golden.size() == engine.size()) << golden.size() << " vs " << engine.size();
  CHECK(row_len > 0);
  CHECK(golden.size() % static_cast<size_t>(row_len) == 0);
  DiffStats s;
  s.rows = static_cast<int64_t>(golden.size()) / row_len;
  if (s.rows == 0) return s;
  double sum_abs = 0;
  double sum_rel = 0;
  bool nan_seen = false;  // std::max drops NaN; a NaN anywhere must make the maxima NaN
  for (int64_t r = 0; r < s.rows; ++r) {
    auto g = golden.subspan(r * row_len, row_len);
    auto e = engine.subspan(r * row_len, row_len);
    const double rel = RowRelRms(g, e);
    sum_rel += rel;
    nan_seen |= std::isnan(rel);
    if (s.worst_row < 0 || rel > s.rel_rms_row_max) {
      s.rel_rms_row_max = rel;
      s.worst_row = r;
    }
    for (int64_t i = 0; i < row_len; ++i) {
      const double a = std::fabs(static_cast<double>(e[i]) - g[i]);
      sum_abs += a;
      s.max_abs = std::max(s.max_abs, a);
    }
  }
  if (nan_seen) {
    s.rel_rms_row_max = std::numeric_limits<double>::quiet_NaN();
    s.max_abs = std::numeric_limits<double>::quiet_NaN();
  }
  s.rel_rms_row_mean = sum_rel / static_cast<double>(s.rows);
  s.mean_abs = sum_abs / static_cast<double>(golden.size());
  return s;
}

LogitStats ComputeLogitStats(std::span<const float> golden, std::span<const float> engine,
                             int64_t row_len) {
  LogitStats s;
  s.diff = ComputeDiff(golden, engine, row_len);
  if (s.diff.rows == 0) return s;
  double sum_kl = 0;
  int64_t agree = 0;
  for (int64_t r = 0; r < s.diff.rows; ++r) {
    auto g = golden.subspan(r * row_len, row_len);
    auto e = engine.subspan(r * row_len, row_len);
    const double kl = RowKl(g, e);
    sum_kl += kl;
    s.kl_row_max =
        std::isnan(kl) || std::isnan(s.kl_row_max) ? kl + s.kl_row_max : std::max(s.kl_row_max, kl);
    if (Argmax(g) == Argmax(e)) ++agree;
  }
  s.kl_row_mean = sum_kl / static_cast<double>(s.diff.rows);
  s.argmax_agree_frac = static_cast<double>(agree) / static_cast<double>(s.diff.rows);
  return s;
}

MarginRule CheckArgmaxMargin(std::span<const float> golden, std::span<const float> engine,
                             int64_t row_len, double margin) {
  CHECK(golden.size() == engine.size());
  CHECK(row_len > 0);
  MarginRule m;
  m.rows = static_cast<int64_t>(golden.size()) / row_len;
  for (int64_t r = 0; r < m.rows; ++r) {
    auto g = golden.subspan(r * row_len, row_len);
    if (!(Top2Margin(g) > margin)) continue;
    ++m.covered;
    if (Argmax(g) != Argmax(engine.subspan(r * row_len, row_len))) {
      if (m.violations++ == 0) m.first_violation = r;
    }
  }
  return m;
}

double FractionEqual(std::span<const int64_t> golden, std::span<const int64_t> engine) {
  CHECK(golden.size() == engine.size());
  if (golden.empty()) return 1;
  size_t equal = 0;
  for (size_t i = 0; i < golden.size(); ++i) equal += golden[i] == engine[i];
  return static_cast<double>(equal) / static_cast<double>(golden.size());
}

MetricCheck MakeCheck(std::string name, double value, double limit, Relation relation,
                      std::string note) {
  MetricCheck c;
  c.name = std::move(name);
  c.value = value;
  c.limit = limit;
  c.relation = relation;
  c.pass = relation == Relation::kLessEqual ? value <= limit : value >= limit;
  c.note = std::move(note);
  return c;
}

MetricCheck FailedCheck(std::string name, std::string note) {
  MetricCheck c;
  c.name = std::move(name);
  c.value = std::numeric_limits<double>::quiet_NaN();
  c.limit = std::numeric_limits<double>::quiet_NaN();
  c.pass = false;
  c.note = std::move(note);
  return c;
}

MetricCheck SkippedCheck(std::string name, std::string note) {
  MetricCheck c = FailedCheck(std::move(name), std::move(note));
  c.pass = true;
  c.skipped = true;
  return c;
}

std::string FormatReport(const std::vector<MetricCheck>& checks) {
  size_t width = 10;
  for (const MetricCheck& c : checks) width = std::max(width, c.name.size());
  std::string out;
  char line[512];
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  for (const MetricCheck& c : checks) {
    const char* verdict = c.skipped ? "SKIP" : c.pass ? "ok  " : "FAIL";
    (c.skipped ? skipped : c.pass ? passed : failed)++;
    if (c.skipped || (std::isnan(c.value) && std::isnan(c.limit))) {
      std::snprintf(line, sizeof(line), "%s  %-*s  %38s", verdict, static_cast<int>(width),
                    c.name.c_str(), "");
    } else {
      std::snprintf(line, sizeof(line), "%s  %-*s  %16.6g %s %-16.6g", verdict,
                    static_cast<int>(width), c.name.c_str(), c.value,
                    c.relation == Relation::kLessEqual ? "<=" : ">=", c.limit);
    }
    out += line;
    if (!c.note.empty()) out += "  " + c.note;
    out += "\n";
  }
  std::snprintf(line, sizeof(line), "%zu checks: %d passed, %d failed, %d skipped\n", checks.size(),
                passed, failed, skipped);
  out += line;
  return out;
}

bool AllPassed(const std::vector<MetricCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const MetricCheck& c) { return c.pass; });
}

}  // namespace deepinfer::model::test
