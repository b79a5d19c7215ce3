#include "model/deepseek_v41/draft_vocab.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

Status CheckIds(std::vector<int32_t>* ids, int64_t vocab, const std::string& where) {
  if (ids->empty()) return InvalidArgument(where + ": the draft vocabulary is empty");
  for (const int32_t id : *ids) {
    if (id < 0 || id >= vocab) {
      return InvalidArgument(where + ": token id " + std::to_string(id) + " is outside [0, " +
                             std::to_string(vocab) + ")");
    }
  }
  std::sort(ids->begin(), ids->end());
  const auto dup = std::adjacent_find(ids->begin(), ids->end());
  if (dup != ids->end()) {
    return InvalidArgument(where + ": token id " + std::to_string(*dup) + " is listed twice");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<DraftVocabulary> DraftVocabulary::Build(const Model& model, std::vector<int32_t> ids) {
  const ModelConfig& c = model.config();
  if (!c.dspark_enabled()) return InvalidArgument("a draft vocabulary needs DSpark stages");
  DI_RETURN_IF_ERROR(CheckIds(&ids, c.vocab_size, "draft vocabulary"));
  const ModelWeights& w = model.weights();
  const DraftHeadWeights& dh = *w.layers[c.n_layers + c.n_mtp_layers - 1].draft_head;
  const int64_t dim = c.dim, rank = c.dspark_markov_rank;
  DraftVocabulary v;
  v.ids_ = std::move(ids);
  v.head_.resize(static_cast<size_t>(v.size() * dim));
  v.markov_.resize(static_cast<size_t>(v.size() * rank));
  for (int64_t r = 0; r < v.size(); ++r) {
    const int64_t id = v.ids_[static_cast<size_t>(r)];
    std::copy_n(w.head.bf16() + id * dim, dim, v.head_.data() + r * dim);
    std::copy_n(dh.markov_head.bf16() + id * rank, rank, v.markov_.data() + r * rank);
  }
  return v;
}

StatusOr<std::vector<int32_t>> ReadDraftVocabularyFile(const std::string& path, int64_t vocab) {
  DI_ASSIGN_OR_RETURN(nlohmann::json doc, io::LoadJsonFile(path));
  const nlohmann::json* list = &doc;
  if (doc.is_object()) {
    if (!doc.contains("ids")) return InvalidArgument(path + ": no \"ids\" array");
    list = &doc["ids"];
  }
  if (!list->is_array()) {
    return InvalidArgument(path + ": a draft vocabulary is an array of token ids");
  }
  std::vector<int32_t> ids;
  ids.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& v = (*list)[i];
    if (!v.is_number_integer()) {
      return InvalidArgument(path + ": entry " + std::to_string(i) + " is not a token id");
    }
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab) {
      return InvalidArgument(path + ": entry " + std::to_string(i) + " (" + std::to_string(id) +
                             ") is outside [0, " + std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  DI_RETURN_IF_ERROR(CheckIds(&ids, vocab, path));
  return ids;
}

Status WriteDraftVocabularyFile(const std::string& path, std::span<const int32_t> ids,
                                const std::string& source) {
  std::vector<int32_t> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  const nlohmann::json doc = {{"ids", sorted}, {"source", source}};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << doc.dump() << "\n";
  out.close();
  if (!out) return Internal("cannot write " + path);
  return Status::Ok();
}

}  // namespace deepinfer::model
