// Metrics for judging an engine's outputs against a golden fixture (tests only).
//
// Conventions (those of the fixture README and golden.json):
//   - A "row" is the last dimension of a tensor: a logits row is [V], a stream row is one hc copy
//     [dim], a pre-mix row is [hc]. (golden.json counts 72 rows for DSpark logits [24, 3, V].)
//   - rel-RMS of a row = ||engine_row - golden_row|| / ||golden_row|| (0 when both are zero).
//   - KL(golden || engine) of a logits row = sum_v p_g(v) (log p_g(v) - log p_e(v)) with
//     p = softmax(row), computed in double.
//   - argmax ties resolve to the lower index (the fixture's greedy rule); the top-2 margin of a
//     row is its largest value minus its second largest.
// Any NaN in the engine's output makes the affected statistics NaN, and a NaN never passes a
// limit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/safetensors.h"

namespace deepinfer::model::test {

// A dense tensor copied out of a safetensors file (copied, so unaligned data is no problem).
template <typename T>
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<T> data;

  // Length of the last dimension (1 for a scalar).
  int64_t RowLen() const { return shape.empty() ? 1 : shape.back(); }
  int64_t Rows() const { return RowLen() == 0 ? 0 : static_cast<int64_t>(data.size()) / RowLen(); }
  std::string ShapeString() const;
};
using F32Tensor = HostTensor<float>;
using I64Tensor = HostTensor<int64_t>;

// Copies tensor `name`; errors name the file and the tensor (absent, or not F32 / I64).
StatusOr<F32Tensor> LoadF32(const io::SafetensorsFile& file, std::string_view name);
StatusOr<I64Tensor> LoadI64(const io::SafetensorsFile& file, std::string_view name);

// The rows `rows` of a tensor with rows of `row_len` elements, concatenated.
std::vector<float> GatherRows(std::span<const float> data, int64_t row_len,
                              std::span<const int64_t> rows);

// Index of the largest value (lower index on ties); -1 for an empty row.
int64_t Argmax(std::span<const float> row);
// Largest minus second largest value (0 for a row shorter than 2).
double Top2Margin(std::span<const float> row);
// ||engine - golden|| / ||golden|| of one row.
double RowRelRms(std::span<const float> golden, std::span<const float> engine);
// KL(softmax(golden) || softmax(engine)) of one row, in nats, clamped at >= 0.
double RowKl(std::span<const float> golden, std::span<const float> engine);

// Elementwise and per-row differences of two equally shaped float tensors (given as flat data
// and a row length). Empty input gives all zeros with rows = 0.
struct DiffStats {
  int64_t rows = 0;
  double rel_rms_row_mean = 0;
  double rel_rms_row_max = 0;
  int64_t worst_row = -1;  // row of rel_rms_row_max
  double mean_abs = 0;
  double max_abs = 0;
};
DiffStats ComputeDiff(std::span<const float> golden, std::span<const float> engine,
                      int64_t row_len);

// DiffStats plus the distribution statistics of logits rows.
struct LogitStats {
  DiffStats diff;
  double kl_row_mean = 0;
  double kl_row_max = 0;
  double argmax_agree_frac = 1;  // fraction of rows whose argmax agrees (1 for no rows)
};
LogitStats ComputeLogitStats(std::span<const float> golden, std::span<const float> engine,
                             int64_t row_len);

// The margin rule: every row whose golden top-2 margin exceeds `margin` must have the same
// argmax in golden and engine.
struct MarginRule {
  int64_t rows = 0;        // rows looked at
  int64_t covered = 0;     // rows with golden margin > margin
  int64_t violations = 0;  // covered rows whose argmax differs
  int64_t first_violation = -1;
};
MarginRule CheckArgmaxMargin(std::span<const float> golden, std::span<const float> engine,
                             int64_t row_len, double margin);

// Fraction of equal entries (1 for empty input).
double FractionEqual(std::span<const int64_t> golden, std::span<const int64_t> engine);

// One judged quantity: `value` must satisfy `value <relation> limit`.
enum class Relation { kLessEqual, kGreaterEqual };
struct MetricCheck {
  std::string name;  // e.g. "P1 prefill_logits rel_rms_row_mean"
  double value = 0;
  double limit = 0;
  Relation relation = Relation::kLessEqual;
  bool pass = false;
  bool skipped = false;  // not applicable to this golden (pass stays true)
  std::string note;      // context: rows covered, worst row, why skipped or failed
};

// A check whose pass is computed from value, limit and relation (NaN fails).
MetricCheck MakeCheck(std::string name, double value, double limit, Relation relation,
                      std::string note = {});
// A check that failed for a reason other than a number (missing tensor, shape mismatch).
MetricCheck FailedCheck(std::string name, std::string note);
// A check skipped for this golden (e.g. optional tensors absent), with the reason.
MetricCheck SkippedCheck(std::string name, std::string note);

// A table with one line per check: verdict, name, value, relation, limit, note; then a summary
// line "N checks: P passed, F failed, S skipped".
std::string FormatReport(const std::vector<MetricCheck>& checks);
bool AllPassed(const std::vector<MetricCheck>& checks);

}  // namespace deepinfer::model::test
