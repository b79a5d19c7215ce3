#include "model/deepseek_v41/sequence_snapshot.h"

#include <cstring>

#include "core/byte_io.h"
#include "core/check.h"

namespace deepinfer::model {
namespace {

constexpr char kMagic[4] = {'D', 'I', 'S', 'Q'};
constexpr uint32_t kVersion = 1;

// Takes an array into `into` only when its length is the one the receiving model expects.
template <typename T>
Status TakeSized(ByteReader* r, const char* what, size_t index, std::vector<T>* into) {
  std::vector<T> v;
  if (!r->GetArray(&v)) return DataLoss(std::string("sequence state: ") + what + " cut short");
  if (v.size() != into->size()) {
    return InvalidArgument("sequence state: " + std::string(what) + " " + std::to_string(index) +
                           " holds " + std::to_string(v.size()) + " values, this model's " +
                           std::to_string(into->size()));
  }
  *into = std::move(v);
  return Status::Ok();
}

}  // namespace

std::string EncodeSequenceState(const SequenceState& state) {
  CHECK(state.group_undo == nullptr) << "a sequence state with an open speculation";
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  PutValue(&out, kVersion);
  PutValue(&out, state.length);
  PutValue(&out, state.prompt_length);
  PutValue(&out, state.dspark_length);
  PutArray(&out, state.tokens);
  PutValue(&out, state.engram_history.ids);
  PutValue(&out, static_cast<uint32_t>(state.layers.size()));
  for (const LayerCache& c : state.layers) {
    PutValue(&out, c.ring_from);
    PutValue(&out, c.n_entries);
    PutArray(&out, c.ring);
    PutArray(&out, c.group_kv);
    PutArray(&out, c.group_score);
  }
  PutValue(&out, static_cast<uint32_t>(state.dspark.size()));
  for (const std::vector<uint16_t>& ring : state.dspark) PutArray(&out, ring);
  return out;
}

Status RestoreSequenceState(std::string_view wire, SequenceState* fresh) {
  if (fresh->length != 0) return InvalidArgument("sequence state: the target is not fresh");
  ByteReader r(wire);
  std::string magic;
  uint32_t version = 0;
  if (!r.Take(sizeof(kMagic), &magic) || std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
    return DataLoss("sequence state: bad magic");
  }
  if (!r.Get(&version) || version != kVersion) {
    return DataLoss("sequence state: version " + std::to_string(version) + ", expected " +
                    std::to_string(kVersion));
  }
  SequenceState& s = *fresh;
  uint32_t n_layers = 0, n_stages = 0;
  if (!r.Get(&s.length) || !r.Get(&s.prompt_length) || !r.Get(&s.dspark_length) ||
      !r.GetArray(&s.tokens) || !r.Get(&s.engram_history.ids) || !r.Get(&n_layers)) {
    return DataLoss("sequence state: header cut short");
  }
  if (s.length < 0 || static_cast<int64_t>(s.tokens.size()) != s.length || s.dspark_length < 0 ||
      s.dspark_length > s.length || s.prompt_length < 0) {
    return DataLoss("sequence state: " + std::to_string(s.tokens.size()) + " tokens for " +
                    std::to_string(s.length) + " positions (DSpark rings at " +
                    std::to_string(s.dspark_length) + ")");
  }
  if (n_layers != s.layers.size()) {
    return InvalidArgument("sequence state of " + std::to_string(n_layers) +
                           " layers, this model has " + std::to_string(s.layers.size()));
  }
  for (size_t i = 0; i < s.layers.size(); ++i) {
    LayerCache& c = s.layers[i];
    if (!r.Get(&c.ring_from) || !r.Get(&c.n_entries)) {
      return DataLoss("sequence state: layer " + std::to_string(i) + " cut short");
    }
    DI_RETURN_IF_ERROR(TakeSized(&r, "ring of layer", i, &c.ring));
    DI_RETURN_IF_ERROR(TakeSized(&r, "partial group of layer", i, &c.group_kv));
    DI_RETURN_IF_ERROR(TakeSized(&r, "group scores of layer", i, &c.group_score));
  }
  if (!r.Get(&n_stages)) return DataLoss("sequence state: stage count cut short");
  if (n_stages != s.dspark.size()) {
    return InvalidArgument("sequence state of " + std::to_string(n_stages) +
                           " DSpark stages, this model has " + std::to_string(s.dspark.size()));
  }
  for (size_t i = 0; i < s.dspark.size(); ++i) {
    DI_RETURN_IF_ERROR(TakeSized(&r, "ring of DSpark stage", i, &s.dspark[i]));
  }
  if (r.left() != 0) {
    return DataLoss("sequence state: " + std::to_string(r.left()) + " bytes past its end");
  }
  return Status::Ok();
}

}  // namespace deepinfer::model
