// `mpirun -n N deepinfer generate --batch FILE`: one instance over N ranks with attention data
// parallelism (docs/scaleout.md). Every rank loads the whole model and runs its own engine (its
// own scheduler, KV cache and prefix cache). Rank 0 reads FILE and broadcasts it; every rank
// computes the same placement of the lines by tokens of work (dist/work_assignment.h: prompt
// tokens + max_tokens x n), runs its lines, and rank 0 gathers the results and prints them in
// input order, exactly as the single process prints them. A request's output depends on the
// request alone, so its bytes are the single process's; only `cached_tokens` (where the prefix
// cache served the prompt) reports where the work ran. Errors on any rank (an unreadable file,
// an engine failure) reach rank 0, which returns the first; every rank still completes every
// collective, so no rank hangs on a failed peer that is alive.
#pragma once

#include <string>

#include "core/status.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

Status RunDistributedBatch(LoadedEngine& e, const std::string& batch_file);

// Tokens of work of one batch line (what the placement balances): its prompt tokens (prompt_ids,
// or the tokenized prompt; bytes / 4 without a tokenizer) plus max_tokens (16 when absent) times
// n. A line that is not a JSON object counts 1.
int64_t BatchLineWork(const LoadedEngine& e, const std::string& line);

}  // namespace deepinfer::tools
