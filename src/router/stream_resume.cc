#include "router/stream_resume.h"

#include <algorithm>
#include <vector>

namespace deepinfer::router {
namespace {

using ojson = nlohmann::ordered_json;

// An SSE event's type (Anthropic `event:` line; empty for OpenAI) and its data.
struct SseParts {
  std::string type;
  std::string data;
};

SseParts SplitEvent(const std::string& event) {
  SseParts p;
  size_t at = 0;
  while (at < event.size()) {
    size_t end = event.find('\n', at);
    if (end == std::string::npos) end = event.size();
    std::string_view line(event.data() + at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind("event:", 0) == 0) {
      p.type = std::string(line.substr(line.size() > 6 && line[6] == ' ' ? 7 : 6));
    } else if (line.rfind("data:", 0) == 0) {
      if (!p.data.empty()) p.data += '\n';
      p.data += line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
    }
    at = end + 1;
  }
  return p;
}

std::string Dump(const ojson& j) {
  return j.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

ojson ParseData(const std::string& data) { return ojson::parse(data, nullptr, false); }

// The field of an Anthropic delta that carries its text ("text", "thinking", "partial_json",
// "signature"): its one member other than "type".
std::string DeltaKey(const ojson& delta) {
  if (!delta.is_object()) return {};
  for (auto it = delta.begin(); it != delta.end(); ++it) {
    if (it.key() != "type" && it.value().is_string()) return it.key();
  }
  return {};
}

int64_t IndexOf(const ojson& j) {
  const auto it = j.find("index");
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

void StreamLedger::Sent(std::string_view bytes) {
  pending_ += bytes;
  for (size_t end; (end = pending_.find("\n\n")) != std::string::npos;) {
    Record(pending_.substr(0, end));
    pending_.erase(0, end + 2);
  }
}

void StreamLedger::BeginResume() {
  resuming_ = true;
  pending_.clear();  // a cut-off event of the dead worker never reached the client whole
  for (auto& [index, unit] : units_) {
    for (auto& [name, field] : unit.fields) field.resumed = 0;
  }
}

StatusOr<std::string> StreamLedger::Continue(std::string_view bytes) {
  pending_ += bytes;
  std::string out;
  for (size_t end; (end = pending_.find("\n\n")) != std::string::npos;) {
    const std::string event = pending_.substr(0, end);
    pending_.erase(0, end + 2);
    DI_ASSIGN_OR_RETURN(std::string piece, Resume(event));
    out += piece;
  }
  return out;
}

void StreamLedger::Record(const std::string& event) {
  const SseParts p = SplitEvent(event);
  if (p.data == "[DONE]") {
    once_["[DONE]"] = true;
    return;
  }
  const ojson j = ParseData(p.data);
  if (!j.is_object()) return;
  if (style_ == server::ApiStyle::kAnthropic) {
    if (p.type == "message_start" || p.type == "message_delta" || p.type == "message_stop") {
      once_[p.type] = true;
    } else if (p.type == "content_block_start") {
      units_[IndexOf(j)].started = true;
    } else if (p.type == "content_block_stop") {
      units_[IndexOf(j)].ended = true;
    } else if (p.type == "content_block_delta" && j.contains("delta")) {
      const std::string key = DeltaKey(j["delta"]);
      if (!key.empty()) units_[IndexOf(j)].fields[key].text += j["delta"][key].get<std::string>();
    }
    return;
  }
  if (id_.is_null() && j.contains("id")) id_ = j["id"];
  if (created_.is_null() && j.contains("created")) created_ = j["created"];
  const auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) return;
  if (choices->empty() && j.contains("usage") && !j["usage"].is_null()) once_["usage"] = true;
  for (const ojson& c : *choices) {
    Unit& u = units_[IndexOf(c)];
    if (c.contains("text") && c["text"].is_string())
      u.fields["text"].text += c["text"].get<std::string>();
    if (const auto d = c.find("delta"); d != c.end() && d->is_object()) {
      if (d->contains("role")) u.started = true;
      for (const char* key : {"content", "reasoning_content"}) {
        if (d->contains(key) && (*d)[key].is_string()) {
          u.fields[key].text += (*d)[key].get<std::string>();
        }
      }
      if (d->contains("tool_calls") && (*d)["tool_calls"].is_array()) {
        u.fields["tool_calls"].entries += static_cast<int64_t>((*d)["tool_calls"].size());
      }
    }
    if (const auto lp = c.find("logprobs"); lp != c.end() && lp->is_object()) {
      for (const char* key : {"tokens", "content"}) {
        if (lp->contains(key) && (*lp)[key].is_array()) {
          u.fields["logprobs"].entries += static_cast<int64_t>((*lp)[key].size());
        }
      }
    }
    if (c.contains("finish_reason") && !c["finish_reason"].is_null()) u.ended = true;
  }
}

StatusOr<std::string> StreamLedger::TakeText(Unit* unit, const std::string& name,
                                             const std::string& piece) {
  Field& f = unit->fields[name];
  const size_t r = static_cast<size_t>(f.resumed);
  f.resumed += static_cast<int64_t>(piece.size());
  const size_t sent = f.text.size();
  const size_t overlap = r >= sent ? 0 : std::min(piece.size(), sent - r);
  if (piece.compare(0, overlap, f.text, r, overlap) != 0) {
    return DataLoss("the resumed answer differs from what the client already has (" + name +
                    " at byte " + std::to_string(r) + ")");
  }
  std::string rest = piece.substr(overlap);
  f.text += rest;
  return rest;
}

ojson StreamLedger::TakeEntries(Unit* unit, const std::string& name, const ojson& list) {
  Field& f = unit->fields[name];
  const int64_t n = static_cast<int64_t>(list.size());
  const int64_t drop = std::clamp<int64_t>(f.entries - f.resumed, 0, n);
  f.resumed += n;
  f.entries += n - drop;
  ojson kept = ojson::array();
  for (int64_t i = drop; i < n; ++i) kept.push_back(list[static_cast<size_t>(i)]);
  return kept;
}

StatusOr<std::string> StreamLedger::Resume(const std::string& event) {
  const SseParts p = SplitEvent(event);
  if (p.data == "[DONE]") {
    if (once_["[DONE]"]) return std::string();
    once_["[DONE]"] = true;
    return std::string("data: [DONE]\n\n");
  }
  ojson j = ParseData(p.data);
  if (!j.is_object()) return event + "\n\n";  // not ours to interpret: pass it on
  if (style_ == server::ApiStyle::kAnthropic) {
    DI_ASSIGN_OR_RETURN(std::optional<ojson> out, ResumeAnthropic(p.type, std::move(j)));
    if (!out) return std::string();
    return "event: " + p.type + "\ndata: " + Dump(*out) + "\n\n";
  }
  DI_ASSIGN_OR_RETURN(std::optional<ojson> out, ResumeOpenAi(std::move(j)));
  if (!out) return std::string();
  return "data: " + Dump(*out) + "\n\n";
}

StatusOr<std::optional<ojson>> StreamLedger::ResumeOpenAi(ojson chunk) {
  if (chunk.contains("error")) return std::optional<ojson>(std::move(chunk));
  if (!id_.is_null() && chunk.contains("id")) chunk["id"] = id_;
  if (!created_.is_null() && chunk.contains("created")) chunk["created"] = created_;
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return std::optional<ojson>(std::move(chunk));
  if (choices->empty()) {  // the usage chunk
    if (once_["usage"]) return std::optional<ojson>();
    once_["usage"] = true;
    return std::optional<ojson>(std::move(chunk));
  }
  ojson kept = ojson::array();
  for (ojson c : *choices) {
    Unit& u = units_[IndexOf(c)];
    bool has = false;
    if (c.contains("text") && c["text"].is_string()) {
      DI_ASSIGN_OR_RETURN(std::string rest, TakeText(&u, "text", c["text"].get<std::string>()));
      has |= !rest.empty();
      c["text"] = rest;
    }
    if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
      if (d->contains("role")) {
        if (u.started) {
          d->erase("role");
          if (d->contains("content") && (*d)["content"] == "") d->erase("content");
        } else {
          u.started = true;
          has = true;
        }
      }
      for (const char* key : {"content", "reasoning_content"}) {
        if (!d->contains(key) || !(*d)[key].is_string()) continue;
        DI_ASSIGN_OR_RETURN(std::string rest, TakeText(&u, key, (*d)[key].get<std::string>()));
        if (rest.empty()) {
          d->erase(key);
        } else {
          (*d)[key] = rest;
          has = true;
        }
      }
      if (d->contains("tool_calls") && (*d)["tool_calls"].is_array()) {
        ojson calls = TakeEntries(&u, "tool_calls", (*d)["tool_calls"]);
        if (calls.empty()) {
          d->erase("tool_calls");
        } else {
          (*d)["tool_calls"] = std::move(calls);
          has = true;
        }
      }
    }
    if (auto lp = c.find("logprobs"); lp != c.end() && lp->is_object()) {
      if (lp->contains("content") && (*lp)["content"].is_array()) {
        (*lp)["content"] = TakeEntries(&u, "logprobs", (*lp)["content"]);
        has |= !(*lp)["content"].empty();
      } else if (lp->contains("tokens") && (*lp)["tokens"].is_array()) {
        // Completions: four parallel lists, cut alike.
        const ojson tokens = TakeEntries(&u, "logprobs", (*lp)["tokens"]);
        const size_t drop = (*lp)["tokens"].size() - tokens.size();
        for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
          if (!lp->contains(key) || !(*lp)[key].is_array()) continue;
          ojson& list = (*lp)[key];
          ojson cut = ojson::array();
          for (size_t i = drop; i < list.size(); ++i) cut.push_back(list[i]);
          list = std::move(cut);
        }
        has |= !tokens.empty();
      }
    }
    if (c.contains("finish_reason") && !c["finish_reason"].is_null()) {
      if (u.ended) {
        c["finish_reason"] = nullptr;
      } else {
        u.ended = true;
        has = true;
      }
    }
    if (has) kept.push_back(std::move(c));
  }
  if (kept.empty()) return std::optional<ojson>();
  chunk["choices"] = std::move(kept);
  return std::optional<ojson>(std::move(chunk));
}

StatusOr<std::optional<ojson>> StreamLedger::ResumeAnthropic(const std::string& type, ojson event) {
  if (type == "ping") return std::optional<ojson>();
  if (type == "message_start" || type == "message_delta" || type == "message_stop") {
    if (once_[type]) return std::optional<ojson>();
    once_[type] = true;
    return std::optional<ojson>(std::move(event));
  }
  Unit& u = units_[IndexOf(event)];
  if (type == "content_block_start" || type == "content_block_stop") {
    bool& done = type == "content_block_start" ? u.started : u.ended;
    if (done) return std::optional<ojson>();
    done = true;
    return std::optional<ojson>(std::move(event));
  }
  if (type == "content_block_delta" && event.contains("delta")) {
    const std::string key = DeltaKey(event["delta"]);
    if (key.empty()) return std::optional<ojson>(std::move(event));
    DI_ASSIGN_OR_RETURN(std::string rest,
                        TakeText(&u, key, event["delta"][key].get<std::string>()));
    if (rest.empty()) return std::optional<ojson>();
    event["delta"][key] = rest;
  }
  return std::optional<ojson>(std::move(event));
}

}  // namespace deepinfer::router
