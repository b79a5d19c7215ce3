#include "golden_judge.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "model/deepseek_v41/config.h"

namespace deepinfer::model::test {
namespace {

using nlohmann::json;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The multi-index of flat row `row` over all but the last dimension of `shape`, e.g. "(2, 13, 1)".
std::string RowIndex(const std::vector<int64_t>& shape, int64_t row) {
  if (shape.size() < 2 || row < 0) return "(" + std::to_string(row) + ")";
  std::vector<int64_t> idx(shape.size() - 1);
  for (size_t d = idx.size(); d-- > 0;) {
    idx[d] = row % shape[d];
    row /= shape[d];
  }
  std::string s = "(";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + ")";
}

// "<label> <key>", the name of a check.
std::string CheckName(const std::string& label, std::string_view key) {
  std::string name = label;
  name += ' ';
  name += key;
  return name;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

class Judge {
 public:
  Judge(io::SafetensorsFile golden, io::SafetensorsFile out, json desc, std::string mode,
        std::string tier, std::vector<int> engram_layers)
      : golden_(std::move(golden)),
        out_(std::move(out)),
        desc_(std::move(desc)),
        mode_(std::move(mode)),
        tier_(std::move(tier)),
        engram_layers_(std::move(engram_layers)) {}

  JudgeReport Run() {
    FreeRunning();
    TeacherForced();
    Engram();
    return std::move(report_);
  }

 private:
  // --- recording ---------------------------------------------------------------------------
  void Add(MetricCheck c) { report_.checks.push_back(std::move(c)); }
  void Fail(std::string name, std::string note) {
    Add(FailedCheck(std::move(name), std::move(note)));
  }

  // --- golden access -----------------------------------------------------------------------
  bool GoldenOptional(const std::string& name) const {
    auto tensors = desc_.find("tensors");
    if (tensors == desc_.end() || !tensors->contains(name)) return false;
    const json& t = (*tensors)[name];
    return t.is_object() && t.value("optional", false);
  }

  // True when every golden tensor of `names` exists. Otherwise records one check named `what`:
  // skipped when all the missing ones are optional, failed when any is required.
  bool NeedGolden(const std::string& what, const std::vector<std::string>& names) {
    std::string missing;
    bool required_missing = false;
    for (const std::string& n : names) {
      if (golden_.Find(n) != nullptr) continue;
      missing += (missing.empty() ? "" : ", ") + n;
      required_missing |= !GoldenOptional(n);
    }
    if (missing.empty()) return true;
    if (required_missing) {
      Fail(what, "golden lacks required tensor(s) " + missing);
    } else {
      std::fprintf(stderr, "[golden judge] %s skipped: optional golden tensor(s) %s absent\n",
                   what.c_str(), missing.c_str());
      Add(SkippedCheck(what, "optional golden tensor(s) absent: " + missing));
    }
    return false;
  }

  template <typename T>
  std::optional<HostTensor<T>> LoadChecked(const io::SafetensorsFile& file, const std::string& name,
                                           const std::string& what) {
    StatusOr<HostTensor<T>> t = [&]() -> StatusOr<HostTensor<T>> {
      if constexpr (std::is_same_v<T, float>) {
        return LoadF32(file, name);
      } else {
        return LoadI64(file, name);
      }
    }();
    if (!t.ok()) {
      Fail(what, t.status().message());
      return std::nullopt;
    }
    return std::move(*t);
  }

  // Records `name` as an expected OUT tensor, then loads it; a missing tensor or a wrong dtype or
  // shape is a failed check (named after the tensor) and gives nullopt.
  template <typename T>
  std::optional<HostTensor<T>> Out(const std::string& name, const std::vector<int64_t>& shape,
                                   const std::string& golden_name,
                                   std::vector<int64_t> slices = {}) {
    const DType dtype = std::is_same_v<T, float> ? DType::kF32 : DType::kI64;
    auto known = std::find_if(report_.outputs.begin(), report_.outputs.end(),
                              [&](const ExpectedOutput& o) { return o.name == name; });
    if (known == report_.outputs.end()) {
      report_.outputs.push_back({name, dtype, shape, golden_name, std::move(slices)});
    }
    const std::string what = "OUT " + name;
    if (out_.Find(name) == nullptr) {
      Fail(what, "missing from OUT (expected " + std::string(DTypeName(dtype)) + " " +
                     ShapeStr(shape) + ")");
      return std::nullopt;
    }
    std::optional<HostTensor<T>> t = LoadChecked<T>(out_, name, what);
    if (t && t->shape != shape) {
      Fail(what, "shape " + ShapeStr(t->shape) + ", expected " + ShapeStr(shape));
      return std::nullopt;
    }
    return t;
  }

  // The golden tensor name for a logical name of golden.json `modes`.
  std::optional<std::string> ModeName(const std::string& logical) {
    const json& m = desc_["modes"][mode_];
    if (!m.contains(logical) || !m[logical].is_string()) {
      Fail("modes." + mode_ + "." + logical, "golden.json modes has no such entry");
      return std::nullopt;
    }
    return m[logical].get<std::string>();
  }

  // The tolerance table at tolerances/<path...>, or nullptr with a failed check.
  const json* Tolerance(std::initializer_list<std::string> path) {
    const json* j = &desc_["tolerances"];
    std::string where = "tolerances";
    for (const std::string& p : path) {
      where += "." + p;
      if (!j->is_object() || !j->contains(p)) {
        Fail(where, "golden.json has no such tolerance entry");
        return nullptr;
      }
      j = &(*j)[p];
    }
    return j;
  }

  // --- limits ------------------------------------------------------------------------------
  // Applies every key of `limits` to golden vs engine (rows of `row_len`; `shape` only names the
  // worst row). Keys: max_abs, mean_abs, rel_rms_row_mean, rel_rms_row_max, kl_row_mean,
  // kl_row_max (<= limit), argmax_agree_frac_min (>= limit), argmax_margin (the margin rule).
  void ApplyLimits(const std::string& label, const json& limits, std::span<const float> golden,
                   std::span<const float> engine, int64_t row_len,
                   const std::vector<int64_t>& shape, const std::string& rows_note = {}) {
    if (!limits.is_object()) {
      Fail(label, "tolerance entry is not an object");
      return;
    }
    const LogitStats s = ComputeLogitStats(golden, engine, row_len);
    const DiffStats& d = s.diff;
    const std::string rows = rows_note.empty() ? std::to_string(d.rows) + " rows" : rows_note;
    for (const auto& [key, value] : limits.items()) {
      const std::string name = CheckName(label, key);
      if (!value.is_number()) {
        Fail(name, "tolerance is not a number");
        continue;
      }
      const double limit = value.get<double>();
      const Relation le = Relation::kLessEqual;
      if (key == "max_abs") {
        Add(MakeCheck(name, d.max_abs, limit, le, rows));
      } else if (key == "mean_abs") {
        Add(MakeCheck(name, d.mean_abs, limit, le, rows));
      } else if (key == "rel_rms_row_mean") {
        Add(MakeCheck(name, d.rel_rms_row_mean, limit, le, rows));
      } else if (key == "rel_rms_row_max") {
        Add(MakeCheck(name, d.rel_rms_row_max, limit, le,
                      rows + ", worst row " + RowIndex(shape, d.worst_row)));
      } else if (key == "kl_row_mean") {
        Add(MakeCheck(name, s.kl_row_mean, limit, le, rows));
      } else if (key == "kl_row_max") {
        Add(MakeCheck(name, s.kl_row_max, limit, le, rows));
      } else if (key == "argmax_agree_frac_min") {
        Add(MakeCheck(label + " argmax_agree_frac", s.argmax_agree_frac, limit,
                      Relation::kGreaterEqual, rows));
      } else if (key == "argmax_margin") {
        const MarginRule m = CheckArgmaxMargin(golden, engine, row_len, limit);
        std::string note = "margin > " + Num(limit) + " on " + std::to_string(m.covered) + " of " +
                           std::to_string(m.rows) + " rows";
        if (m.violations > 0)
          note += "; first disagreement at row " + RowIndex(shape, m.first_violation);
        Add(MakeCheck(label + " argmax disagreements where golden margin > " + Num(limit),
                      static_cast<double>(m.violations), 0, le, note));
      } else {
        Fail(name, "tolerance key not understood by the judge");
      }
    }
  }

  // Golden `golden_name` vs OUT `out_name` (same shape) under `limits`.
  void CompareF32(const std::string& label, const std::string& out_name,
                  const std::string& golden_name, const json& limits) {
    if (!NeedGolden(label, {golden_name})) return;
    auto g = LoadChecked<float>(golden_, golden_name, label);
    if (!g) return;
    auto e = Out<float>(out_name, g->shape, golden_name);
    if (!e) return;
    ApplyLimits(label, limits, g->data, e->data, g->RowLen(), g->shape);
  }

  // --- protocol 1 --------------------------------------------------------------------------
  void FreeRunning() {
    const json* fr = Tolerance({"free_running"});
    if (fr == nullptr) return;
    for (const auto& [key, value] : fr->items()) {
      if (key != "logits" && key != "dspark" && key != "dspark_draft_ids_equal_frac_min") {
        Fail("tolerances.free_running." + key, "tolerance key not understood by the judge");
      }
    }
    if (const json* logits = Tolerance({"free_running", "logits"})) {
      for (const char* logical :
           {"prefill_logits", "full_logits", "decode_logits", "greedy_logits"}) {
        if (auto name = ModeName(logical)) CompareF32("P1 " + *name, *name, *name, *logits);
      }
      GreedyIds(*logits);
    }
    if (const json* streams = Tolerance({"debug_streams", tier_})) {
      for (const auto& [key, limits] : streams->items()) {
        const std::string name = "debug." + key;
        CompareF32("P1 " + name, name, name, limits);
      }
    }
    HashIds();
    const json* dspark = Tolerance({"free_running", "dspark"});
    const json* ids_frac = Tolerance({"free_running", "dspark_draft_ids_equal_frac_min"});
    if (ids_frac != nullptr && !ids_frac->is_number()) {
      Fail("tolerances.free_running.dspark_draft_ids_equal_frac_min", "not a number");
    } else if (dspark != nullptr && ids_frac != nullptr) {
      Dspark("P1 dspark", *dspark, /*out_prefix=*/"", ids_frac->get<double>());
    }
  }

  void HashIds() {
    const std::string name = "debug.engram_hash_ids";
    const std::string label = "P1 " + name + " equal_frac";
    if (!NeedGolden(label, {name})) return;
    auto g = LoadChecked<int64_t>(golden_, name, label);
    if (!g) return;
    auto e = Out<int64_t>(name, g->shape, name);
    if (!e) return;
    std::string note = "exact";
    for (size_t i = 0; i < g->data.size(); ++i) {
      if (g->data[i] != e->data[i]) {
        note = "first difference at flat index " + std::to_string(i) + ": " +
               std::to_string(e->data[i]) + " vs golden " + std::to_string(g->data[i]);
        break;
      }
    }
    Add(MakeCheck(label, FractionEqual(g->data, e->data), 1.0, Relation::kGreaterEqual, note));
  }

  // greedy_ids[0] against the golden where the golden margin exceeds the free-running argmax
  // margin, and against the engine's own greedy_logits[0] (both are the last prompt position).
  void GreedyIds(const json& logit_limits) {
    auto ids_name = ModeName("greedy_ids");
    auto logits_name = ModeName("greedy_logits");
    if (!ids_name || !logits_name) return;
    const std::string label = "P1 " + *ids_name + "[0]";
    if (!NeedGolden(label, {*ids_name, *logits_name})) return;
    auto g_ids = LoadChecked<int64_t>(golden_, *ids_name, label);
    auto g_logits = LoadChecked<float>(golden_, *logits_name, label);
    if (!g_ids || !g_logits) return;
    auto e_ids = Out<int64_t>(*ids_name, g_ids->shape, *ids_name);
    if (!e_ids || e_ids->data.empty() || g_logits->data.empty()) return;
    const int64_t v = g_logits->RowLen();
    const std::span<const float> g_row0(g_logits->data.data(), v);
    const double margin = Top2Margin(g_row0);
    const std::string ids_note = "engine " + std::to_string(e_ids->data[0]) + ", golden " +
                                 std::to_string(g_ids->data[0]) + ", golden margin " + Num(margin);
    if (!logit_limits.contains("argmax_margin") || !logit_limits["argmax_margin"].is_number()) {
      Fail(label + " equals golden", "tolerances.free_running.logits has no numeric argmax_margin");
    } else if (const double limit = logit_limits["argmax_margin"].get<double>(); margin > limit) {
      Add(MakeCheck(label + " equals golden", e_ids->data[0] == g_ids->data[0] ? 1 : 0, 1,
                    Relation::kGreaterEqual, ids_note));
    } else {
      Add(SkippedCheck(label + " equals golden",
                       ids_note + " <= " + Num(limit) + " (too small to demand agreement)"));
    }
    if (out_.Find(*logits_name) == nullptr) return;  // reported by the logits comparison
    auto e_logits = LoadChecked<float>(out_, *logits_name, label);
    if (!e_logits || e_logits->shape != g_logits->shape) return;
    const int64_t own = Argmax(std::span<const float>(e_logits->data.data(), v));
    Add(MakeCheck(
        label + " equals argmax of OUT " + *logits_name + "[0]", e_ids->data[0] == own ? 1 : 0, 1,
        Relation::kGreaterEqual,
        "engine id " + std::to_string(e_ids->data[0]) + ", its own argmax " + std::to_string(own)));
  }

  // --- DSpark (protocols 1 and 3) ------------------------------------------------------------
  // Compares the DSpark outputs `out_prefix` + golden name with the golden. A block (decode
  // step) is compared only where column 0 (the start token) agrees, draft row j (logits,
  // confidence) only while ids 0..j agree; hidden rows depend on the start token only.
  // `limits` keys: confidence_*, logits_*, hidden_* (metric keys of ApplyLimits) and
  // argmax_margin (a compared draft must agree where its golden margin exceeds it).
  // `ids_equal_frac_min` >= 0: fraction of all id entries that must agree (protocol 1);
  // < 0: column 0 must equal the golden's exactly (protocol 3 feeds it).
  void Dspark(const std::string& label, const json& limits, const std::string& out_prefix,
              double ids_equal_frac_min) {
    auto ids_name = ModeName("dspark_draft_ids");
    auto conf_name = ModeName("dspark_confidence_logits");
    auto logits_name = ModeName("dspark_logits");
    if (!ids_name || !conf_name || !logits_name) return;
    if (!NeedGolden(label, {*ids_name, *conf_name, *logits_name})) return;
    auto g_ids = LoadChecked<int64_t>(golden_, *ids_name, label);
    auto g_conf = LoadChecked<float>(golden_, *conf_name, label);
    auto g_logits = LoadChecked<float>(golden_, *logits_name, label);
    if (!g_ids || !g_conf || !g_logits) return;
    if (g_ids->shape.size() != 2 || g_conf->shape.size() != 2 || g_logits->shape.size() != 3 ||
        g_conf->shape[0] != g_ids->shape[0] || g_conf->shape[1] + 1 != g_ids->shape[1] ||
        g_logits->shape[0] != g_ids->shape[0] || g_logits->shape[1] != g_conf->shape[1]) {
      Fail(label, "golden DSpark shapes are inconsistent: ids " + ShapeStr(g_ids->shape) +
                      ", confidence " + ShapeStr(g_conf->shape) + ", logits " +
                      ShapeStr(g_logits->shape));
      return;
    }
    auto e_ids = Out<int64_t>(out_prefix + *ids_name, g_ids->shape, *ids_name);
    auto e_conf = Out<float>(out_prefix + *conf_name, g_conf->shape, *conf_name);
    auto e_logits = Out<float>(out_prefix + *logits_name, g_logits->shape, *logits_name);
    // Hidden rows are judged only when the limits ask for them (protocol 3).
    std::optional<F32Tensor> g_hidden;
    std::optional<F32Tensor> e_hidden;
    bool wants_hidden = false;
    for (const auto& [key, value] : limits.items()) wants_hidden |= StartsWith(key, "hidden_");
    if (wants_hidden) {
      auto hidden_name = ModeName("dspark_hidden");
      if (hidden_name && NeedGolden(label + " hidden", {*hidden_name})) {
        g_hidden = LoadChecked<float>(golden_, *hidden_name, label + " hidden");
        if (g_hidden) {
          e_hidden = Out<float>(out_prefix + *hidden_name, g_hidden->shape, *hidden_name);
        }
      }
    }
    const int64_t steps = g_ids->shape[0];
    const int64_t block = g_conf->shape[1];
    const int64_t vocab = g_logits->shape[2];
    const int64_t cols = block + 1;

    if (e_ids) {
      if (ids_equal_frac_min >= 0) {
        Add(MakeCheck(label + " draft_ids equal_frac", FractionEqual(g_ids->data, e_ids->data),
                      ids_equal_frac_min, Relation::kGreaterEqual, "all entries"));
      } else {
        int64_t equal = 0;
        for (int64_t k = 0; k < steps; ++k) equal += e_ids->data[k * cols] == g_ids->data[k * cols];
        Add(MakeCheck(label + " draft_ids column 0 equals the fed start token",
                      steps ? static_cast<double>(equal) / steps : 1.0, 1.0,
                      Relation::kGreaterEqual, std::to_string(steps) + " steps"));
      }
    }
    if (!e_ids) return;  // nothing can be gated without the engine's ids

    // Rows (flat k * block + j) that may be compared.
    std::vector<int64_t> draft_rows;
    std::vector<int64_t> block_rows;
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t* g = &g_ids->data[k * cols];
      const int64_t* e = &e_ids->data[k * cols];
      if (g[0] != e[0]) continue;
      for (int64_t j = 0; j < block; ++j) block_rows.push_back(k * block + j);
      for (int64_t j = 0; j < block; ++j) {
        draft_rows.push_back(k * block + j);
        if (g[j + 1] != e[j + 1]) break;
      }
    }
    const std::string draft_note = std::to_string(draft_rows.size()) + " of " +
                                   std::to_string(steps * block) + " draft rows compared";
    const std::string block_note = std::to_string(block_rows.size()) + " of " +
                                   std::to_string(steps * block) + " rows compared";

    std::map<std::string, json> groups;  // prefix -> limits with the prefix stripped
    for (const auto& [key, value] : limits.items()) {
      if (key == "argmax_margin") {
        if (value.is_number()) {
          DraftMargin(label, value.get<double>(), *g_ids, *e_ids, *g_logits, draft_rows);
        } else {
          Fail(CheckName(label, key), "tolerance is not a number");
        }
        continue;
      }
      const size_t us = key.find('_');
      const std::string prefix = us == std::string::npos ? key : key.substr(0, us);
      if (us == std::string::npos ||
          (prefix != "confidence" && prefix != "logits" && prefix != "hidden")) {
        Fail(CheckName(label, key), "tolerance key not understood by the judge");
        continue;
      }
      groups[prefix][key.substr(us + 1)] = value;
    }
    if (groups.count("confidence") && e_conf) {
      ApplyLimits(label + " confidence", groups["confidence"],
                  GatherRows(g_conf->data, 1, draft_rows), GatherRows(e_conf->data, 1, draft_rows),
                  1, {static_cast<int64_t>(draft_rows.size()), 1}, draft_note);
    }
    if (groups.count("logits") && e_logits) {
      std::vector<int64_t> shape = {static_cast<int64_t>(draft_rows.size()), vocab};
      ApplyLimits(label + " logits", groups["logits"],
                  GatherRows(g_logits->data, vocab, draft_rows),
                  GatherRows(e_logits->data, vocab, draft_rows), vocab, shape, draft_note);
    }
    if (groups.count("hidden") && e_hidden) {
      const int64_t dim = g_hidden->RowLen();
      ApplyLimits(label + " hidden", groups["hidden"], GatherRows(g_hidden->data, dim, block_rows),
                  GatherRows(e_hidden->data, dim, block_rows), dim,
                  {static_cast<int64_t>(block_rows.size()), dim}, block_note);
    }
  }

  // A compared draft row j of step k decides id column j + 1: it must agree where the golden
  // margin of that row exceeds `margin`.
  void DraftMargin(const std::string& label, double margin, const I64Tensor& g_ids,
                   const I64Tensor& e_ids, const F32Tensor& g_logits,
                   const std::vector<int64_t>& draft_rows) {
    const int64_t block = g_logits.shape[1];
    const int64_t vocab = g_logits.shape[2];
    int64_t covered = 0;
    int64_t violations = 0;
    std::string first;
    for (int64_t r : draft_rows) {
      const int64_t k = r / block;
      const int64_t j = r % block;
      if (!(Top2Margin(std::span<const float>(&g_logits.data[r * vocab], vocab)) > margin)) {
        continue;
      }
      ++covered;
      const int64_t col = k * (block + 1) + j + 1;
      if (g_ids.data[col] != e_ids.data[col] && violations++ == 0) {
        first = "; first at step " + std::to_string(k) + " draft " + std::to_string(j) +
                ": engine " + std::to_string(e_ids.data[col]) + ", golden " +
                std::to_string(g_ids.data[col]);
      }
    }
    Add(MakeCheck(label + " draft id disagreements where golden margin > " + Num(margin),
                  static_cast<double>(violations), 0, Relation::kLessEqual,
                  "margin > " + Num(margin) + " on " + std::to_string(covered) + " of " +
                      std::to_string(draft_rows.size()) + " compared drafts" + first));
  }

  // --- protocols 2 and 3 -------------------------------------------------------------------
  void TeacherForced() {
    const json* tf = Tolerance({"teacher_forced", tier_});
    if (tf == nullptr) return;
    const std::vector<std::string> prefill_in = {"tf.prefill_block_in",
                                                 "tf.prefill_block_pre_mix_in"};
    const std::vector<std::string> decode_in = {
        "tf.prefill_block_in", "tf.prefill_block_pre_mix_in", mode_ + ".tf.decode_block_in",
        mode_ + ".tf.decode_block_pre_mix_in"};
    for (const auto& [key, limits] : tf->items()) {
      if (key == "logits") {
        for (const char* logical : {"prefill_logits", "decode_logits"}) {
          auto name = ModeName(logical);
          if (!name) continue;
          const std::string label = "P2 tf.run." + *name;
          if (!NeedGolden(label,
                          std::string(logical) == "prefill_logits" ? prefill_in : decode_in)) {
            continue;
          }
          CompareF32(label, "tf.run." + *name, *name, limits);
        }
      } else if (key == "dspark") {
        const std::string label = "P3 tf.run dspark";
        if (NeedGolden(label, {"tf.dspark_prompt_main_hidden", mode_ + ".tf.dspark_main_hidden"})) {
          Dspark(label, limits, "tf.run.", /*ids_equal_frac_min=*/-1);
        }
      } else if (StartsWith(key, "prefill_")) {
        const std::string name = "tf." + key;
        if (NeedGolden("P2 " + name, prefill_in)) CompareF32("P2 " + name, name, name, limits);
      } else if (StartsWith(key, "decode_")) {
        const std::string name = mode_ + ".tf." + key;
        if (NeedGolden("P2 " + name, decode_in)) CompareF32("P2 " + name, name, name, limits);
      } else {
        Fail("tolerances.teacher_forced." + tier_ + "." + key,
             "tolerance key not understood by the judge");
      }
    }
  }

  // The engine's Engram applied to the golden input of each Engram layer, against the golden
  // stream entering that layer (after Engram), under the prefill block-output limits.
  void Engram() {
    const std::string label = "Engram tf.engram.prefill_block_in";
    if (engram_layers_.empty()) {
      Add(SkippedCheck(label, "the model has no Engram layers"));
      return;
    }
    const json* limits = Tolerance({"teacher_forced", tier_, "prefill_block_out"});
    if (limits == nullptr) return;
    if (!NeedGolden(label, {"tf.prefill_block_in", "tf.prefill_block_out"})) return;
    auto g = LoadChecked<float>(golden_, "tf.prefill_block_in", label);
    if (!g) return;
    if (g->shape.empty()) {
      Fail(label, "golden tf.prefill_block_in is a scalar");
      return;
    }
    const int64_t n_layers = g->shape[0];
    const int64_t per_layer = n_layers ? static_cast<int64_t>(g->data.size()) / n_layers : 0;
    std::vector<int64_t> slices;
    for (int l : engram_layers_) {
      if (l < 0 || l >= n_layers) {
        Fail(label, "Engram layer " + std::to_string(l) + " outside tf.prefill_block_in " +
                        ShapeStr(g->shape));
        return;
      }
      slices.push_back(l);
    }
    std::vector<int64_t> shape = g->shape;
    shape[0] = static_cast<int64_t>(slices.size());
    const std::vector<float> golden_slices = GatherRows(g->data, per_layer, slices);
    auto e = Out<float>("tf.engram.prefill_block_in", shape, "tf.prefill_block_in", slices);
    if (!e) return;
    ApplyLimits(label, *limits, golden_slices, e->data, g->RowLen(), shape);
  }

  io::SafetensorsFile golden_;
  io::SafetensorsFile out_;
  const json desc_;
  const std::string mode_;
  const std::string tier_;
  const std::vector<int> engram_layers_;
  JudgeReport report_;
};

}  // namespace

StatusOr<JudgeReport> JudgeGolden(const std::string& golden_dir, const std::string& out_file,
                                  std::string_view mode, std::string_view tier) {
  DI_ASSIGN_OR_RETURN(json desc, io::LoadJsonFile(golden_dir + "/golden.json"));
  DI_ASSIGN_OR_RETURN(io::SafetensorsFile golden,
                      io::SafetensorsFile::Open(golden_dir + "/golden.safetensors"));
  DI_ASSIGN_OR_RETURN(io::SafetensorsFile out, io::SafetensorsFile::Open(out_file));
  DI_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(golden_dir));
  const std::string m(mode);
  const std::string t(tier);
  if (!desc.contains("modes") || !desc["modes"].is_object() || !desc["modes"].contains(m) ||
      !desc["modes"][m].is_object()) {
    return InvalidArgument(golden_dir + "/golden.json: unknown mode \"" + m + "\"");
  }
  if (!desc.contains("tolerances") || !desc["tolerances"].is_object()) {
    return InvalidArgument(golden_dir + "/golden.json: no tolerances");
  }
  const json& tol = desc["tolerances"];
  const bool tier_known = (tol.contains("debug_streams") && tol["debug_streams"].contains(t)) ||
                          (tol.contains("teacher_forced") && tol["teacher_forced"].contains(t));
  if (!tier_known) {
    return InvalidArgument(golden_dir + "/golden.json: unknown tier \"" + t + "\"");
  }
  Judge judge(std::move(golden), std::move(out), std::move(desc), m, t, config.engram_layer_ids);
  return judge.Run();
}

}  // namespace deepinfer::model::test
