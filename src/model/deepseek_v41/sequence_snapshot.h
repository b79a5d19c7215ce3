// A sequence's state outside its pages, as bytes: what a KV hand-off ships besides the pages so
// that another process continues the sequence exactly where it stands (engine/page_handoff.h).
//
// It holds every per-sequence cache of SequenceState (sequence_state.h): per backbone layer the
// window ring, the first ring position and the entry count, and a pooling compressor's partial
// group; the DSpark stage rings and how far they reach; the token history, the Engram look-back
// and the prompt length. With the pages the sequence's table held (the complete ones and its
// partly written last one), restoring it into a fresh state of the same model gives a state
// equal to the sender's: every later forward call computes the same bytes.
//
// Wire form: "DISQ", u32 version, i64 length, prompt_length, dspark_length, the tokens, the
// Engram ids, u32 layer count and per layer i64 ring_from, i64 n_entries and the ring, group kv
// and group score arrays, u32 stage count and per stage its ring (arrays: u64 count, elements).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "model/deepseek_v41/sequence_state.h"

namespace deepinfer::model {

// The state must have no open speculation.
std::string EncodeSequenceState(const SequenceState& state);

// Fills `fresh` (NewSequenceState of the receiving model, nothing consumed yet) from `wire`.
// DataLoss when the bytes are malformed; InvalidArgument when they describe another model's
// state (layer count, ring or group sizes differ). Pages are the caller's: the table must cover
// `length` positions before the next forward call.
Status RestoreSequenceState(std::string_view wire, SequenceState* fresh);

}  // namespace deepinfer::model
