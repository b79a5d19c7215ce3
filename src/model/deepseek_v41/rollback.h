// Rollback of speculative rows (DSpark verification, v41_model.md §3.11).
//
// A verify forward feeds n rows (the last accepted token and n-1 drafts) at positions
// [L, L+n); afterwards only the first `keep` rows are accepted. RollbackSpeculation then puts
// the sequence exactly where a run that fed only those `keep` rows would be:
//   * window ring slots of the rejected positions get their previous contents back (the
//     checkpoint saved them: slot = position % window, distinct for n <= window);
//   * the pooling compressors' partial groups: every slot write of the call was journaled
//     (GroupUndoLog, filled by RunCompressor while state->group_undo is set), and the writes
//     of rejected positions are undone newest first, which also restores kept-row values that
//     a later rejected row overwrote (n > ratio);
//   * n_entries of every KV source: back to the entries the kept positions complete (entries
//     past it are dead storage, rewritten before anything reads them);
//   * page headers: a page the rejected rows completed is incomplete again (header reset as
//     Allocate leaves it), so the prefix cache never sees it;
//   * Engram history: the checkpoint's history advanced over the kept tokens;
//   * tokens and length.
// Ring tails in the pages at rejected positions are dead (rewritten when those positions are
// consumed again, before the page can complete). DSpark rings are not touched by Forward:
// the engine extends them with the taps of accepted rows only (dspark_length must be <= L).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/deepseek_v41/engram_hash.h"
#include "model/deepseek_v41/sequence_state.h"

namespace deepinfer::model {

class Model;

// Journal of partial-group slot writes: for each write, the layer, the position written and
// the slot's previous kv and score ([head_dim] fp32 each).
struct GroupUndoLog {
  struct Write {
    int layer = 0;
    int64_t position = 0;
    int64_t slot = 0;
    size_t offset = 0;  // into values: kv then score, head_dim floats each
  };
  std::vector<Write> writes;
  std::vector<float> values;
};

// Called by RunCompressor before it overwrites `slot` of layer `layer`'s partial group.
void RecordGroupWrite(GroupUndoLog* log, int layer, int64_t position, int64_t slot, const float* kv,
                      const float* score, int64_t head_dim);

struct SpeculationCheckpoint {
  int64_t length = -1;  // L; -1 = no checkpoint
  int64_t rows = 0;     // n
  EngramHistory engram_history;
  std::vector<int64_t> n_entries;  // per backbone layer
  std::vector<uint16_t> ring;      // per layer, per row r < n: slot of position L+r [head_dim]
  GroupUndoLog groups;
};

// Saves what a forward of `rows` rows at state->length can overwrite and starts journaling the
// partial-group writes (state->group_undo points into *cp until Rollback/EndSpeculation).
// rows must be in [1, window].
Status BeginSpeculation(SequenceState* state, int64_t rows, SpeculationCheckpoint* cp);

// After the forward call: keeps the first keep_length - L rows (0 <= that <= n), undoes the
// rest (see above) and stops journaling. keep_length == L + n only stops journaling.
Status RollbackSpeculation(const Model& model, SequenceState* state, SpeculationCheckpoint* cp,
                           int64_t keep_length);

// Prefix reuse for DSpark: after Model::AdoptPrefix, restores the stage rings of the last
// min(window, length) positions from the pages' DSpark ring tails and sets dspark_length to
// the sequence length. Valid only when every adopted page was written by a sequence that
// extended its DSpark stages over all of the page's positions (an engine with DSpark on
// extends every sequence).
Status RestoreDSparkFromTails(SequenceState* state);
// The same for the window positions before `until` (a page boundary) only: the rings already
// hold the positions from `until` to the length (context parallelism: the decoding rank's last
// chunk, extended by its own rank; engine/context_parallel_prefill.h).
Status RestoreDSparkFromTails(SequenceState* state, int64_t until);

}  // namespace deepinfer::model
