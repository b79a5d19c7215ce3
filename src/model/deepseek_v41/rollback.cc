#include "model/deepseek_v41/rollback.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

void RecordGroupWrite(GroupUndoLog* log, int layer, int64_t position, int64_t slot, const float* kv,
                      const float* score, int64_t head_dim) {
  GroupUndoLog::Write w;
  w.layer = layer;
  w.position = position;
  w.slot = slot;
  w.offset = log->values.size();
  log->values.insert(log->values.end(), kv, kv + head_dim);
  log->values.insert(log->values.end(), score, score + head_dim);
  log->writes.push_back(w);
}

Status BeginSpeculation(SequenceState* state, int64_t rows, SpeculationCheckpoint* cp) {
  if (state->layers.empty()) return InvalidArgument("BeginSpeculation: no layers");
  const int64_t hd = state->page_layout().head_dim;
  const int64_t win = static_cast<int64_t>(state->layers[0].ring.size()) / hd;
  if (rows < 1 || rows > win) {
    return InvalidArgument("BeginSpeculation: " + std::to_string(rows) +
                           " rows; a verify call holds 1 .. window (" + std::to_string(win) +
                           ") rows");
  }
  if (state->group_undo != nullptr) {
    return InvalidArgument("BeginSpeculation: a speculation is already open");
  }
  cp->length = state->length;
  cp->rows = rows;
  cp->engram_history = state->engram_history;
  cp->n_entries.resize(state->layers.size());
  cp->ring.resize(state->layers.size() * static_cast<size_t>(rows * hd));
  for (size_t li = 0; li < state->layers.size(); ++li) {
    const LayerCache& c = state->layers[li];
    cp->n_entries[li] = c.n_entries;
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(c.ring.data() + ((cp->length + r) % win) * hd, hd,
                  cp->ring.data() + (li * rows + r) * hd);
    }
  }
  cp->groups.writes.clear();
  cp->groups.values.clear();
  state->group_undo = &cp->groups;
  return Status::Ok();
}

Status RollbackSpeculation(const Model& model, SequenceState* state, SpeculationCheckpoint* cp,
                           int64_t keep_length) {
  if (cp->length < 0 || state->group_undo != &cp->groups) {
    return InvalidArgument("RollbackSpeculation without a matching BeginSpeculation");
  }
  const int64_t l0 = cp->length, n = cp->rows;
  if (state->length != l0 + n) {
    return InvalidArgument("RollbackSpeculation: the sequence is at " +
                           std::to_string(state->length) + ", the verify call should end at " +
                           std::to_string(l0 + n));
  }
  if (keep_length < l0 || keep_length > l0 + n) {
    return InvalidArgument("RollbackSpeculation: keep length " + std::to_string(keep_length) +
                           " outside [" + std::to_string(l0) + ", " + std::to_string(l0 + n) + "]");
  }
  if (state->dspark_length > keep_length) {
    return InvalidArgument("RollbackSpeculation: the DSpark rings already hold rejected rows");
  }
  state->group_undo = nullptr;
  cp->length = -1;
  if (keep_length == l0 + n) return Status::Ok();
  const int64_t hd = state->page_layout().head_dim;
  const int64_t win = static_cast<int64_t>(state->layers[0].ring.size()) / hd;
  const std::vector<LayerDescriptor>& descs = model.layers();
  const int64_t keep = keep_length - l0;
  // Window rings: the slots of rejected positions.
  for (size_t li = 0; li < state->layers.size(); ++li) {
    LayerCache& c = state->layers[li];
    for (int64_t r = keep; r < n; ++r) {
      std::copy_n(cp->ring.data() + (li * n + r) * hd, hd, c.ring.data() + ((l0 + r) % win) * hd);
    }
  }
  // Partial groups: undo the rejected writes, newest first.
  const GroupUndoLog& log = cp->groups;
  for (auto it = log.writes.rbegin(); it != log.writes.rend(); ++it) {
    if (it->position < keep_length) continue;
    LayerCache& c = state->layers[static_cast<size_t>(it->layer)];
    std::copy_n(log.values.data() + it->offset, hd, c.group_kv.data() + it->slot * hd);
    std::copy_n(log.values.data() + it->offset + hd, hd, c.group_score.data() + it->slot * hd);
  }
  // Entry counts.
  for (size_t li = 0; li < state->layers.size(); ++li) {
    const LayerDescriptor& d = descs[li];
    if (!d.owns_compressor) continue;
    const int64_t entries = keep_length / d.compress_ratio;
    LayerCache& c = state->layers[li];
    CHECK_GE(entries, cp->n_entries[li]);
    CHECK_LE(entries, c.n_entries);
    c.n_entries = entries;
  }
  // Pages the rejected rows completed.
  const int64_t p = state->page_layout().page_tokens;
  for (int64_t page = keep_length / p; page < static_cast<int64_t>(state->pages.size()); ++page) {
    if ((page + 1) * p > keep_length) {
      *state->kv_store->header(state->pages[static_cast<size_t>(page)]) = KvPageHeader{};
    }
  }
  // Engram history: re-advanced over the kept tokens.
  state->engram_history = cp->engram_history;
  const EngramHashPlan& plan = model.engram_plan();
  const std::span<const int32_t> kept =
      std::span<const int32_t>(state->tokens)
          .subspan(static_cast<size_t>(l0), static_cast<size_t>(keep));
  if (plan.n_layers() > 0 && !kept.empty()) {
    std::vector<int64_t> scratch(kept.size() * plan.n_layers() * plan.n_cols());
    HashTokens(plan, model.engram_token_map(), kept, &state->engram_history, scratch.data());
  }
  state->tokens.resize(static_cast<size_t>(keep_length));
  state->length = keep_length;
  return Status::Ok();
}

Status RestoreDSparkFromTails(SequenceState* state) {
  return RestoreDSparkFromTails(state, state->length);
}

Status RestoreDSparkFromTails(SequenceState* state, int64_t until) {
  const int64_t h = state->length;
  if (state->dspark.empty()) return Status::Ok();
  const int64_t hd = state->page_layout().head_dim;
  const int64_t win = static_cast<int64_t>(state->dspark[0].size()) / hd;
  for (int64_t pos = std::max<int64_t>(0, h - win); pos < std::min(until, h); ++pos) {
    for (size_t s = 0; s < state->dspark.size(); ++s) {
      const uint16_t* tail = state->RingTail(-1, static_cast<int>(s), pos);
      if (tail == nullptr) return Internal("RestoreDSparkFromTails: no tail for a window position");
      std::copy_n(tail, hd, state->dspark[s].data() + (pos % win) * hd);
    }
  }
  state->dspark_length = h;
  return Status::Ok();
}

}  // namespace deepinfer::model
