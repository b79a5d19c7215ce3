#include "server/rank_wire.h"

#include <optional>
#include <utility>

namespace deepinfer::server {
namespace {

using nlohmann::json;

template <typename T>
json Optional(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
std::optional<T> ReadOptional(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}

json ParamsJson(const engine::SamplingParams& p) {
  json bias = json::array();
  for (const auto& [id, b] : p.logit_bias) bias.push_back({id, b});
  return {{"temperature", p.temperature},
          {"top_k", p.top_k},
          {"top_p", p.top_p},
          {"min_p", p.min_p},
          {"repetition_penalty", p.repetition_penalty},
          {"presence_penalty", p.presence_penalty},
          {"frequency_penalty", p.frequency_penalty},
          {"logit_bias", std::move(bias)},
          {"seed", Optional(p.seed)},
          {"n", p.n},
          {"max_tokens", Optional(p.max_tokens)},
          {"min_tokens", p.min_tokens},
          {"ignore_eos", p.ignore_eos},
          {"stop_token_ids", p.stop_token_ids},
          {"stop", p.stop},
          {"logprobs", p.logprobs},
          {"top_logprobs", p.top_logprobs},
          {"prompt_logprobs", Optional(p.prompt_logprobs)}};
}

engine::SamplingParams ParamsOf(const json& j) {
  engine::SamplingParams p;
  p.temperature = j.at("temperature").get<float>();
  p.top_k = j.at("top_k").get<int32_t>();
  p.top_p = j.at("top_p").get<float>();
  p.min_p = j.at("min_p").get<float>();
  p.repetition_penalty = j.at("repetition_penalty").get<float>();
  p.presence_penalty = j.at("presence_penalty").get<float>();
  p.frequency_penalty = j.at("frequency_penalty").get<float>();
  for (const json& b : j.at("logit_bias")) {
    p.logit_bias.emplace_back(b.at(0).get<int32_t>(), b.at(1).get<float>());
  }
  p.seed = ReadOptional<uint64_t>(j.at("seed"));
  p.n = j.at("n").get<int32_t>();
  p.max_tokens = ReadOptional<int64_t>(j.at("max_tokens"));
  p.min_tokens = j.at("min_tokens").get<int64_t>();
  p.ignore_eos = j.at("ignore_eos").get<bool>();
  p.stop_token_ids = j.at("stop_token_ids").get<std::vector<int32_t>>();
  p.stop = j.at("stop").get<std::vector<std::string>>();
  p.logprobs = j.at("logprobs").get<bool>();
  p.top_logprobs = j.at("top_logprobs").get<int32_t>();
  p.prompt_logprobs = ReadOptional<int32_t>(j.at("prompt_logprobs"));
  return p;
}

json StatusJson(const Status& s) { return {static_cast<int>(s.code()), s.message()}; }

Status StatusOf(const json& j) {
  const int code = j.at(0).get<int>();
  if (code < 0 || code > static_cast<int>(StatusCode::kInternal)) {
    throw std::out_of_range("status code");
  }
  return {static_cast<StatusCode>(code), j.at(1).get<std::string>()};
}

json SamplesJson(const std::vector<engine::SampleResult>& samples) {
  json out = json::array();
  for (const engine::SampleResult& s : samples) {
    json top = json::array();
    for (const engine::TokenLogprob& t : s.top) top.push_back({t.token, t.logprob});
    out.push_back({s.token, s.logprob, std::move(top)});
  }
  return out;
}

std::vector<engine::SampleResult> SamplesOf(const json& j) {
  std::vector<engine::SampleResult> out;
  for (const json& s : j) {
    engine::SampleResult r;
    r.token = s.at(0).get<int32_t>();
    r.logprob = s.at(1).get<float>();
    for (const json& t : s.at(2)) {
      r.top.push_back({.token = t.at(0).get<int32_t>(), .logprob = t.at(1).get<float>()});
    }
    out.push_back(std::move(r));
  }
  return out;
}

json OutputJson(const engine::RequestOutput& o) {
  return {{"request_id", o.request_id},
          {"sample_index", o.sample_index},
          {"new_tokens", o.new_tokens},
          {"samples", SamplesJson(o.samples)},
          {"n_output", o.n_output},
          {"finished", o.finished ? json(static_cast<int>(*o.finished)) : json(nullptr)},
          {"error", StatusJson(o.error)},
          {"seed", o.seed},
          {"prefix_hit_tokens", o.prefix_hit_tokens},
          {"prompt_logprobs", SamplesJson(o.prompt_logprobs)}};
}

engine::RequestOutput OutputOf(const json& j) {
  engine::RequestOutput o;
  o.request_id = j.at("request_id").get<uint64_t>();
  o.sample_index = j.at("sample_index").get<int64_t>();
  o.new_tokens = j.at("new_tokens").get<std::vector<int32_t>>();
  o.samples = SamplesOf(j.at("samples"));
  o.n_output = j.at("n_output").get<int64_t>();
  if (const json& f = j.at("finished"); !f.is_null()) {
    const int reason = f.get<int>();
    if (reason < 0 || reason > static_cast<int>(engine::FinishReason::kError)) {
      throw std::out_of_range("finish reason");
    }
    o.finished = static_cast<engine::FinishReason>(reason);
  }
  o.error = StatusOf(j.at("error"));
  o.seed = j.at("seed").get<uint64_t>();
  o.prefix_hit_tokens = j.at("prefix_hit_tokens").get<int64_t>();
  o.prompt_logprobs = SamplesOf(j.at("prompt_logprobs"));
  return o;
}

json SnapshotJson(const RankSnapshot& s) {
  return {s.running,       s.waiting,        s.kv_pages_used,    s.kv_pages_capacity,
          s.rows_by_layer, s.exchange_bytes, s.exchange_seconds, s.prefix_queries,
          s.prefix_hits,   s.tails_continued};
}

RankSnapshot SnapshotOf(const json& j) {
  RankSnapshot s;
  s.running = j.at(0).get<int64_t>();
  s.waiting = j.at(1).get<int64_t>();
  s.kv_pages_used = j.at(2).get<int64_t>();
  s.kv_pages_capacity = j.at(3).get<int64_t>();
  s.rows_by_layer = j.at(4).get<std::vector<int64_t>>();
  s.exchange_bytes = j.at(5).get<int64_t>();
  s.exchange_seconds = j.at(6).get<double>();
  s.prefix_queries = j.at(7).get<int64_t>();
  s.prefix_hits = j.at(8).get<int64_t>();
  s.tails_continued = j.at(9).get<int64_t>();
  return s;
}

std::string Pack(const json& j) {
  const std::vector<uint8_t> bytes = json::to_msgpack(j);
  return {bytes.begin(), bytes.end()};
}

// The message in `bytes`, or DataLoss naming what it was meant to be.
template <typename Message, typename Read>
StatusOr<Message> Unpack(std::string_view bytes, const char* what, Read read) {
  try {
    const json j = json::from_msgpack(bytes.begin(), bytes.end());
    return read(j);
  } catch (const json::exception& e) {
    return DataLoss(std::string("a malformed ") + what + " message between ranks: " + e.what());
  } catch (const std::out_of_range& e) {
    return DataLoss(std::string("a malformed ") + what + " message between ranks: " + e.what());
  }
}

}  // namespace

std::string EncodeToRank(const ToRank& m) {
  json requests = json::array();
  for (const RemoteRequest& r : m.requests) {
    requests.push_back({{"id", r.id},
                        {"prompt", r.prompt},
                        {"params", ParamsJson(r.params)},
                        {"sample_index", r.sample_index},
                        {"priority", r.priority},
                        {"speculative", r.speculative},
                        {"leg_of_prompt_len", r.leg_of_prompt_len},
                        {"constraint", r.form.constraint},
                        {"thinking", r.form.thinking},
                        {"export_pages", r.form.export_pages}});
  }
  json pages = json::array();
  for (const RemotePages& p : m.pages) {
    pages.push_back({p.id, json::binary(std::vector<uint8_t>(p.wire.begin(), p.wire.end()))});
  }
  json context = json::array();
  for (const ContextJob& c : m.context) {
    context.push_back({c.prompt, c.decoder, c.prompt_logprobs ? *c.prompt_logprobs : -1});
  }
  return Pack({{"context", std::move(context)},
               {"requests", std::move(requests)},
               {"cancels", m.cancels},
               {"pages", std::move(pages)},
               {"stop", m.stop}});
}

std::string EncodeFromRank(const FromRank& m) {
  json verdicts = json::array();
  for (const RemoteVerdict& v : m.verdicts) verdicts.push_back({v.id, StatusJson(v.status)});
  json outputs = json::array();
  for (const RemoteOutput& o : m.outputs) {
    json one = {o.id, OutputJson(o.output)};
    if (o.has_pages) {
      one.push_back(StatusJson(o.pages_status));
      one.push_back(json::binary(std::vector<uint8_t>(o.pages.begin(), o.pages.end())));
    }
    outputs.push_back(std::move(one));
  }
  json imports = json::array();
  for (const RemoteImport& i : m.imports) {
    imports.push_back({i.id, StatusJson(i.status), i.result.imported, i.result.cached,
                       i.result.dropped, i.result.tail_held});
  }
  return Pack({{"verdicts", std::move(verdicts)},
               {"outputs", std::move(outputs)},
               {"imports", std::move(imports)},
               {"snapshot", SnapshotJson(m.snapshot)}});
}

StatusOr<ToRank> DecodeToRank(std::string_view bytes) {
  return Unpack<ToRank>(bytes, "request", [](const json& j) {
    ToRank m;
    for (const json& r : j.at("requests")) {
      RemoteRequest q;
      q.id = r.at("id").get<uint64_t>();
      q.prompt = r.at("prompt").get<std::vector<int32_t>>();
      q.params = ParamsOf(r.at("params"));
      q.sample_index = r.at("sample_index").get<int64_t>();
      q.priority = r.at("priority").get<int>();
      q.speculative = r.at("speculative").get<bool>();
      q.leg_of_prompt_len = r.at("leg_of_prompt_len").get<int64_t>();
      q.form.constraint = r.at("constraint");
      q.form.thinking = r.at("thinking").get<bool>();
      q.form.export_pages = r.at("export_pages").get<bool>();
      m.requests.push_back(std::move(q));
    }
    m.cancels = j.at("cancels").get<std::vector<uint64_t>>();
    for (const json& p : j.at("pages")) {
      const json::binary_t& bytes = p.at(1).get_binary();
      m.pages.push_back({.id = p.at(0).get<uint64_t>(), .wire = {bytes.begin(), bytes.end()}});
    }
    m.stop = j.at("stop").get<bool>();
    for (const json& c : j.at("context")) {
      const int k = c.at(2).get<int>();
      m.context.push_back({.prompt = c.at(0).get<std::vector<int32_t>>(),
                           .decoder = c.at(1).get<int>(),
                           .prompt_logprobs = k >= 0 ? std::optional<int32_t>(k) : std::nullopt});
    }
    return m;
  });
}

StatusOr<FromRank> DecodeFromRank(std::string_view bytes) {
  return Unpack<FromRank>(bytes, "reply", [](const json& j) {
    FromRank m;
    for (const json& v : j.at("verdicts")) {
      m.verdicts.push_back({.id = v.at(0).get<uint64_t>(), .status = StatusOf(v.at(1))});
    }
    for (const json& o : j.at("outputs")) {
      RemoteOutput out{.id = o.at(0).get<uint64_t>(), .output = OutputOf(o.at(1))};
      if (o.size() > 2) {
        const json::binary_t& bytes = o.at(3).get_binary();
        out.has_pages = true;
        out.pages_status = StatusOf(o.at(2));
        out.pages.assign(bytes.begin(), bytes.end());
      }
      m.outputs.push_back(std::move(out));
    }
    for (const json& i : j.at("imports")) {
      m.imports.push_back({.id = i.at(0).get<uint64_t>(),
                           .status = StatusOf(i.at(1)),
                           .result = {.imported = i.at(2).get<int64_t>(),
                                      .cached = i.at(3).get<int64_t>(),
                                      .dropped = i.at(4).get<int64_t>(),
                                      .tail_held = i.at(5).get<bool>()}});
    }
    m.snapshot = SnapshotOf(j.at("snapshot"));
    return m;
  });
}

}  // namespace deepinfer::server
