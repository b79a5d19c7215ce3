#include "model/deepseek_v41/index_key_schedule.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer::model {

IndexKeySchedule::IndexKeySchedule(const std::vector<LayerDescriptor>& layers) {
  for (const LayerDescriptor& d : layers) {
    if (d.is_mtp) continue;
    ratio_.push_back(d.compress_ratio);
    own_key_layer_.push_back(d.index_key_layer);
    if (d.owns_compressor && d.has_indexer) owners_.push_back({d.index, d.compress_ratio});
    if (d.has_indexer) index_layers_.push_back(d.index);
  }
}

int IndexKeySchedule::LastPublisher(size_t end, int64_t pos, int64_t prompt_len) const {
  for (size_t i = end; i-- > 0;) {
    const Owner& o = owners_[i];
    const bool publishes = pos < prompt_len ? prompt_len >= o.ratio : (pos + 1) % o.ratio == 0;
    if (publishes) return o.layer;
  }
  return -1;
}

int IndexKeySchedule::SlotAfter(int64_t pos, int64_t prompt_len) const {
  if (owners_.empty()) return -1;
  // The owner with the smallest ratio publishes at least every `ratio` generated rows, so this
  // walks back at most that many rows before it finds one or reaches the prefill.
  for (int64_t p = pos; p >= 0; --p) {
    const int o = LastPublisher(owners_.size(), p, prompt_len);
    if (o >= 0 || p < prompt_len) return o;  // a prompt row: the state after the prefill
  }
  return -1;
}

int IndexKeySchedule::KeyLayer(int li, int64_t pos, int64_t prompt_len) const {
  const auto l = static_cast<size_t>(li);
  CHECK(l < ratio_.size() && own_key_layer_[l] >= 0) << "layer " << li << " has no indexer";
  const auto end = static_cast<size_t>(
      std::upper_bound(owners_.begin(), owners_.end(), li,
                       [](int layer, const Owner& o) { return layer < o.layer; }) -
      owners_.begin());
  int key = LastPublisher(end, pos, prompt_len);
  int64_t available = 0;  // entries of `key` the reference slot holds for this row
  if (key >= 0) {
    available = (pos + 1) / ratio_[static_cast<size_t>(key)];
  } else if (pos >= prompt_len) {
    key = SlotAfter(pos - 1, prompt_len);
    if (key >= 0) available = pos / ratio_[static_cast<size_t>(key)];
  }
  if (key < 0 || (pos + 1) / ratio_[l] > available) return own_key_layer_[l];
  return key;
}

int64_t IndexKeySchedule::MaxRowsPerCall(int64_t pos0, int64_t n_rows, int64_t prompt_len) const {
  for (int64_t i = std::max<int64_t>(0, prompt_len - pos0); i < n_rows; ++i) {
    const int64_t pos = pos0 + i;
    for (int li : index_layers_) {
      const int key = KeyLayer(li, pos, prompt_len);
      if (key <= li) continue;  // written by this call's rows before layer li runs
      const int64_t visible = (pos + 1) / ratio_[static_cast<size_t>(li)];
      const int64_t written = pos0 / ratio_[static_cast<size_t>(key)];
      if (visible > written) return std::max<int64_t>(i, 1);
    }
  }
  return n_rows;
}

}  // namespace deepinfer::model
