#include "tokenizer/tokenizer_spec.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace deepinfer::tokenizer {
namespace {

using PlainJson = nlohmann::json;

Status Bad(std::string_view name, const std::string& what) {
  return InvalidArgument(std::string(name) + ": " + what);
}

// SAX handler that streams model.vocab and model.merges (the bulk of a tokenizer.json: 256k
// entries) straight into the spec and builds an ordinary DOM for everything else, where those
// two appear as an empty object and an empty array. About 5x faster than a full DOM parse.
class SpecSax : public nlohmann::json_sax<PlainJson> {
 public:
  explicit SpecSax(TokenizerSpec* spec) : spec_(spec) {}
  PlainJson& root() { return root_; }
  const std::string& error() const { return error_; }

  bool null() override { return Value(PlainJson()); }
  bool boolean(bool v) override { return Value(v); }
  bool number_integer(number_integer_t v) override { return Value(v); }
  bool number_unsigned(number_unsigned_t v) override { return Value(v); }
  bool number_float(number_float_t v, const string_t&) override { return Value(v); }
  bool binary(binary_t&) override { return Fail("unexpected binary value"); }
  bool string(string_t& v) override {
    if (capture_ == Capture::kMerges) {
      if (merge_depth_ == 0) {
        const size_t space = v.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 >= v.size() ||
            v.find(' ', space + 1) != std::string::npos) {
          return Fail("model.merges[" + std::to_string(spec_->merges.size()) + "] \"" + v +
                      "\" is not two tokens separated by one space");
        }
        spec_->merges.emplace_back(v.substr(0, space), v.substr(space + 1));
      } else {
        if (merge_parts_.size() >= 2) return Fail(MergeShapeError());
        merge_parts_.push_back(std::move(v));
      }
      return true;
    }
    return Value(std::move(v));
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override {
    if (capture_ != Capture::kNone) return Fail(CaptureError());
    const bool is_vocab = stack_.size() == 2 && key_ == "vocab" && keys_.back() == "model";
    PlainJson* obj = Put(PlainJson::object());
    if (is_vocab) {
      capture_ = Capture::kVocab;
      return true;
    }
    stack_.push_back(obj);
    keys_.push_back(key_);
    return true;
  }
  bool end_object() override {
    if (capture_ == Capture::kVocab) {
      capture_ = Capture::kNone;
      return true;
    }
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (capture_ == Capture::kMerges) {
      if (merge_depth_ != 0) return Fail(MergeShapeError());
      merge_depth_ = 1;
      merge_parts_.clear();
      return true;
    }
    if (capture_ != Capture::kNone) return Fail(CaptureError());
    const bool is_merges = stack_.size() == 2 && key_ == "merges" && keys_.back() == "model";
    PlainJson* arr = Put(PlainJson::array());
    if (is_merges) {
      capture_ = Capture::kMerges;
      merge_depth_ = 0;
      return true;
    }
    stack_.push_back(arr);
    keys_.push_back(key_);
    return true;
  }
  bool end_array() override {
    if (capture_ == Capture::kMerges) {
      if (merge_depth_ == 0) {
        capture_ = Capture::kNone;
        return true;
      }
      if (merge_parts_.size() != 2) return Fail(MergeShapeError());
      spec_->merges.emplace_back(std::move(merge_parts_[0]), std::move(merge_parts_[1]));
      merge_depth_ = 0;
      return true;
    }
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    return Fail("JSON parse error at byte " + std::to_string(position) + ": " + e.what());
  }

 private:
  enum class Capture { kNone, kVocab, kMerges };

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  std::string CaptureError() const {
    return capture_ == Capture::kVocab ? "model.vocab[\"" + key_ + "\"] is not an integer id"
                                       : MergeShapeError();
  }
  std::string MergeShapeError() const {
    return "model.merges[" + std::to_string(spec_->merges.size()) +
           "] is neither \"a b\" nor [a, b]";
  }
  // A scalar (or, via Put, a container) at the current position.
  bool Value(PlainJson v) {
    if (capture_ == Capture::kVocab) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return Fail("model.vocab[\"" + key_ + "\"] is not a non-negative 32-bit id");
      }
      spec_->vocab.emplace_back(std::move(key_), v.get<int32_t>());
      return true;
    }
    if (capture_ == Capture::kMerges) return Fail(MergeShapeError());
    Put(std::move(v));
    return true;
  }
  PlainJson* Put(PlainJson v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    PlainJson& top = *stack_.back();
    if (top.is_object()) {
      PlainJson& slot = top[key_];
      slot = std::move(v);
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }

  TokenizerSpec* spec_;
  PlainJson root_;
  std::vector<PlainJson*> stack_;  // open containers of the DOM part
  std::vector<std::string> keys_;  // the key each open container sits under ("" in arrays)
  std::string key_;
  Capture capture_ = Capture::kNone;
  int merge_depth_ = 0;
  std::vector<std::string> merge_parts_;
  std::string error_;
};

StatusOr<PlainJson> Parse(std::string_view text, std::string_view name) {
  PlainJson json = PlainJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Bad(name, "not valid JSON");
  if (!json.is_object()) return Bad(name, "top level is not a JSON object");
  return json;
}

// The GPT-2 pre-tokenizer regex that a ByteLevel step with use_regex=true applies.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Status ParsePreTokenizer(const PlainJson& pt, std::string_view name, TokenizerSpec* spec) {
  if (pt.is_null()) return Bad(name, "pre_tokenizer is null; a byte-level BPE needs ByteLevel");
  if (!pt.is_object() || !pt.contains("type") || !pt["type"].is_string()) {
    return Bad(name, "pre_tokenizer has no \"type\"");
  }
  const std::string type = pt["type"];
  if (type == "Sequence") {
    if (!pt.contains("pretokenizers") || !pt["pretokenizers"].is_array()) {
      return Bad(name, "pre_tokenizer Sequence without a \"pretokenizers\" array");
    }
    bool saw_byte_level = false;
    for (const PlainJson& step : pt["pretokenizers"]) {
      if (saw_byte_level) {
        return Unimplemented(std::string(name) + ": pre-tokenizer steps after ByteLevel");
      }
      DI_RETURN_IF_ERROR(ParsePreTokenizer(step, name, spec));
      saw_byte_level = step.value("type", "") == "ByteLevel";
    }
    if (!saw_byte_level) {
      return Unimplemented(std::string(name) + ": pre_tokenizer Sequence must end with ByteLevel");
    }
    return Status::Ok();
  }
  if (type == "Split") {
    if (pt.value("behavior", "") != "Isolated" || pt.value("invert", false)) {
      return Unimplemented(std::string(name) + ": Split pre-tokenizer with behavior \"" +
                           pt.value("behavior", "") + "\"" +
                           (pt.value("invert", false) ? " and invert" : "") +
                           " (only Isolated, not inverted)");
    }
    const PlainJson& pattern = pt.contains("pattern") ? pt["pattern"] : PlainJson();
    SplitSpec split;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      split.pattern = pattern["Regex"];
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      split.pattern = pattern["String"];
      split.literal = true;
    } else {
      return Bad(name, "Split pre-tokenizer without a {\"Regex\"|\"String\": ...} pattern");
    }
    spec->splits.push_back(std::move(split));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    if (pt.value("add_prefix_space", false)) {
      return Unimplemented(std::string(name) + ": ByteLevel pre-tokenizer with add_prefix_space");
    }
    if (pt.value("use_regex", true)) spec->splits.push_back({std::string(kGpt2Pattern), false});
    return Status::Ok();
  }
  return Unimplemented(std::string(name) + ": pre-tokenizer type \"" + type + "\"");
}

Status ParseNormalizer(const PlainJson& n, std::string_view name) {
  if (n.is_null()) return Status::Ok();
  if (n.is_object() && n.value("type", "") == "Sequence" && n.contains("normalizers") &&
      n["normalizers"].is_array() && n["normalizers"].empty()) {
    return Status::Ok();
  }
  return Unimplemented(std::string(name) + ": normalizer " + n.dump().substr(0, 200) +
                       " (only none or an empty Sequence)");
}

Status ParseModel(const PlainJson& model, std::string_view name, TokenizerSpec* spec) {
  if (!model.is_object() || model.value("type", "") != "BPE") {
    return Unimplemented(std::string(name) + ": model type is not BPE");
  }
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return Unimplemented(std::string(name) + ": BPE dropout");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "") {
      return Unimplemented(std::string(name) + ": BPE " + key);
    }
  }
  // The vocab and merges themselves were streamed into *spec by SpecSax.
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return Bad(name, "model.vocab is missing or not an object");
  }
  if (!model.contains("merges") || !model["merges"].is_array()) {
    return Bad(name, "model.merges is missing or not an array");
  }
  if (spec->vocab.empty()) return Bad(name, "model.vocab is empty");
  return Status::Ok();
}

Status ParseAddedTokens(const PlainJson& added, std::string_view name, TokenizerSpec* spec) {
  if (added.is_null()) return Status::Ok();
  if (!added.is_array()) return Bad(name, "added_tokens is not an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const PlainJson& t = added[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
        !t.contains("content") || !t["content"].is_string()) {
      return Bad(name, where + " needs an integer \"id\" and a string \"content\"");
    }
    const int64_t id = t["id"].get<int64_t>();
    if (id < 0 || id > INT32_MAX) return Bad(name, where + " has an out-of-range id");
    AddedTokenSpec spec_token;
    spec_token.id = static_cast<int32_t>(id);
    spec_token.content = t["content"];
    if (spec_token.content.empty()) return Bad(name, where + " has empty content");
    spec_token.special = t.value("special", false);
    spec_token.normalized = t.value("normalized", !spec_token.special);
    for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
      if (t.value(flag, false)) {
        return Unimplemented(std::string(name) + ": " + where + " sets " + flag);
      }
    }
    spec->added_tokens.push_back(std::move(spec_token));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss("error reading " + path);
  return ss.str();
}

// tokenizer_config.json names a token either as a string or as {"content": ...}.
StatusOr<std::string> TokenContent(const PlainJson& v, std::string_view name, const char* key) {
  if (v.is_null()) return std::string();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return Bad(name, std::string(key) + " is neither a string nor {\"content\": ...}");
}

}  // namespace

StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view text, std::string_view name) {
  TokenizerSpec spec;
  SpecSax sax(&spec);
  if (!PlainJson::sax_parse(text, &sax)) {
    return Bad(name, sax.error().empty() ? "not valid JSON" : sax.error());
  }
  PlainJson& json = sax.root();
  if (!json.is_object()) return Bad(name, "top level is not a JSON object");
  if (!json.contains("model")) return Bad(name, "no \"model\"");
  DI_RETURN_IF_ERROR(ParseModel(json["model"], name, &spec));
  DI_RETURN_IF_ERROR(ParseNormalizer(json.value("normalizer", PlainJson()), name));
  const PlainJson pre_tokenizer = json.value("pre_tokenizer", PlainJson());
  if (pre_tokenizer.is_object() && pre_tokenizer.value("type", "") == "Split") {
    return Unimplemented(std::string(name) +
                         ": pre_tokenizer Split alone; it must be ByteLevel or a Sequence that "
                         "must end with ByteLevel");
  }
  DI_RETURN_IF_ERROR(ParsePreTokenizer(pre_tokenizer, name, &spec));
  DI_RETURN_IF_ERROR(ParseAddedTokens(json.value("added_tokens", PlainJson()), name, &spec));
  const PlainJson decoder = json.value("decoder", PlainJson());
  if (!decoder.is_object() || decoder.value("type", "") != "ByteLevel") {
    return Unimplemented(std::string(name) + ": decoder is not ByteLevel");
  }
  return spec;
}

Status ParseTokenizerConfig(std::string_view text, std::string_view name, TokenizerSpec* spec) {
  DI_ASSIGN_OR_RETURN(PlainJson json, Parse(text, name));
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    if (json.contains(key) && !json[key].is_boolean())
      return Bad(name, std::string(key) + " is not a boolean");
  }
  spec->add_bos_token = json.value("add_bos_token", false);
  spec->add_eos_token = json.value("add_eos_token", false);
  DI_ASSIGN_OR_RETURN(spec->bos_token,
                      TokenContent(json.value("bos_token", PlainJson()), name, "bos_token"));
  DI_ASSIGN_OR_RETURN(spec->eos_token,
                      TokenContent(json.value("eos_token", PlainJson()), name, "eos_token"));
  return Status::Ok();
}

StatusOr<TokenizerSpec> LoadTokenizerSpec(const std::string& dir) {
  const std::string json_path = dir + "/tokenizer.json";
  DI_ASSIGN_OR_RETURN(std::string text, ReadFile(json_path));
  DI_ASSIGN_OR_RETURN(TokenizerSpec spec, ParseTokenizerJson(text, json_path));
  const std::string config_path = dir + "/tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    DI_ASSIGN_OR_RETURN(std::string config, ReadFile(config_path));
    DI_RETURN_IF_ERROR(ParseTokenizerConfig(config, config_path, &spec));
  }
  return spec;
}

}  // namespace deepinfer::tokenizer
