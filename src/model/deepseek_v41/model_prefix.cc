// Model::AdoptPrefix: continuing a sequence from cached pages (kv_pages.h).
#include <algorithm>
#include <string>

#include "model/deepseek_v41/model.h"

namespace deepinfer::model {

Status Model::AdoptPrefix(SequenceState* state, std::span<const int32_t> tokens) const {
  const KvPageLayout& l = state->page_layout();
  const int64_t h = static_cast<int64_t>(tokens.size());
  if (state->length != 0) return InvalidArgument("AdoptPrefix: the sequence is not fresh");
  if (h % l.page_tokens != 0) {
    return InvalidArgument("AdoptPrefix: " + std::to_string(h) +
                           " tokens is not a multiple of the page length " +
                           std::to_string(l.page_tokens));
  }
  if (state->covered() < h) {
    return InvalidArgument("AdoptPrefix: the page table covers " +
                           std::to_string(state->covered()) + " of " + std::to_string(h) +
                           " positions");
  }
  for (int64_t p = 0; p < h / l.page_tokens; ++p) {
    if (!state->kv_store->header(state->pages[static_cast<size_t>(p)])->complete) {
      return InvalidArgument("AdoptPrefix: page " + std::to_string(p) + " is not complete");
    }
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= config_.vocab_size) {
      return InvalidArgument("AdoptPrefix: token id " + std::to_string(t) + " out of range");
    }
  }
  if (h == 0) return Status::Ok();
  AdoptPositions(state, tokens);
  for (size_t li = 0; li < state->layers.size(); ++li) {
    DI_RETURN_IF_ERROR(RestoreRing(state, static_cast<int>(li)));
  }
  return Status::Ok();
}

Status Model::RestoreRing(SequenceState* state, int layer) const {
  const int64_t hd = config_.head_dim, win = config_.window_size, h = state->length;
  // The latents of positions [h - window, h) from the page tails.
  std::vector<uint16_t>& ring = state->layers[static_cast<size_t>(layer)].ring;
  for (int64_t pos = std::max<int64_t>(0, h - win); pos < h; ++pos) {
    const uint16_t* tail = state->RingTail(layer, -1, pos);
    if (tail == nullptr) return Internal("no ring tail for window position " + std::to_string(pos));
    std::copy_n(tail, hd, ring.data() + (pos % win) * hd);
  }
  return Status::Ok();
}

void Model::AdoptPositions(SequenceState* state, std::span<const int32_t> tokens) const {
  const auto h = static_cast<int64_t>(tokens.size());
  // Entry counts: every KV source has all entries of the positions before h (h is a multiple
  // of every ratio, so no partial group is pending).
  for (size_t li = 0; li < state->layers.size(); ++li) {
    const LayerDescriptor& d = layers_[li];
    if (d.owns_compressor) state->layers[li].n_entries = h / d.compress_ratio;
  }
  // Engram history: the compressed ids of the last tokens.
  state->engram_history = EngramHistory{};
  if (engram_plan_.n_layers() > 0) {
    const size_t keep = std::min<size_t>(tokens.size(), static_cast<size_t>(kEngramMaxNgram - 1));
    std::vector<int64_t> scratch(keep * engram_plan_.n_layers() * engram_plan_.n_cols());
    HashTokens(engram_plan_, token_map_, tokens.subspan(tokens.size() - keep),
               &state->engram_history, scratch.data());
  }
  state->length = h;
  // DSpark rings are not restored (the pages' DSpark tails are written, but whether the writer
  // extended its stages that far is not recorded yet): drafting restarts from position h.
  state->dspark_length = 0;
  state->tokens.assign(tokens.begin(), tokens.end());
}

}  // namespace deepinfer::model
