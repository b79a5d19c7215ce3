#include "tools/generate_batch.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/request_text.h"
#include "api/response_format.h"
#include "api/sampling_params_json.h"
#include "api/structured_outputs.h"
#include "dist/mpi_world.h"
#include "tools/distributed_batch.h"
#include "tools/json_lines.h"

namespace deepinfer::tools {
namespace {

using ordered_json = nlohmann::ordered_json;

// Fields a batch line may carry besides the sampling fields SamplingParamsFromJson reads.
const std::set<std::string>& KnownFields() {
  static const std::set<std::string> known = {"prompt",
                                              "prompt_ids",
                                              "priority",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "top_k",
                                              "min_p",
                                              "seed",
                                              "n",
                                              "stop",
                                              "stop_token_ids",
                                              "ignore_eos",
                                              "min_tokens",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "repetition_penalty",
                                              "logit_bias",
                                              "logprobs",
                                              "top_logprobs",
                                              "prompt_logprobs",
                                              "response_format",
                                              "regex",
                                              "grammar",
                                              "thinking"};
  return known;
}

// The structured-output fields of a line (response_format, regex, grammar; null ones left out),
// as api::AttachGrammar reads them.
nlohmann::json ConstraintFields(const ordered_json& line) {
  nlohmann::json fields = nlohmann::json::object();
  for (const char* key : {"response_format", "regex", "grammar"}) {
    if (line.contains(key) && !line[key].is_null()) {
      fields[key] = std::string(key) == "response_format" ? api::ResponseFormatField(line[key])
                                                          : nlohmann::json::parse(line[key].dump());
    }
  }
  return fields;
}

// One sample's output as it arrives.
struct SampleState {
  std::vector<int32_t> ids;
  std::vector<engine::SampleResult> samples;
  std::string text;  // with a tokenizer only (Job::text)
  std::optional<engine::FinishReason> finish;
  Status error;
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann's json members are not noexcept-movable
struct Job {
  ordered_json result;  // the output line: fields set when the request is refused or done
  std::vector<SampleState> samples;        // params.n of them
  std::shared_ptr<api::RequestText> text;  // null without a tokenizer
  std::vector<engine::SampleResult> prompt_logprobs;
  uint64_t seed = 0;
  int64_t cached_tokens = 0;
};

StatusOr<ordered_json> ParseObject(const std::string& line) {
  ordered_json j;
  try {
    j = ordered_json::parse(line);
  } catch (const std::exception& ex) {
    return InvalidArgument(std::string("not JSON: ") + ex.what());
  }
  if (!j.is_object()) return InvalidArgument("a line must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (!KnownFields().count(key)) return InvalidArgument("unknown field \"" + key + "\"");
  }
  return j;
}

// The prompt of a parsed line: its text tokenized, or its ids.
StatusOr<std::vector<int32_t>> PromptIds(const LoadedEngine& e, const ordered_json& j) {
  const bool has_text = j.contains("prompt"), has_ids = j.contains("prompt_ids");
  if (has_text == has_ids) return InvalidArgument("give exactly one of prompt and prompt_ids");
  if (has_text) {
    if (!j["prompt"].is_string()) return InvalidArgument("prompt must be a string");
    if (!e.tokenizer) return InvalidArgument("prompt text needs a tokenizer; use prompt_ids");
    return e.tokenizer->Encode(j["prompt"].get<std::string>(), true);
  }
  if (!j["prompt_ids"].is_array()) return InvalidArgument("prompt_ids must be an array");
  std::vector<int32_t> ids;
  for (const auto& v : j["prompt_ids"]) {
    if (!v.is_number_integer()) return InvalidArgument("prompt_ids must hold integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

StatusOr<engine::Request> ParseLine(const LoadedEngine& e, const std::string& line, Job* job) {
  DI_ASSIGN_OR_RETURN(ordered_json j, ParseObject(line));
  engine::Request r;
  DI_ASSIGN_OR_RETURN(r.params, api::SamplingParamsFromJson(nlohmann::json::parse(line)));
  if (j.contains("priority")) {
    if (!j["priority"].is_number_integer()) return InvalidArgument("priority must be an integer");
    r.priority = j["priority"].get<int>();
  }
  DI_ASSIGN_OR_RETURN(r.prompt, PromptIds(e, j));
  bool thinking = false;
  if (j.contains("thinking")) {
    if (!j["thinking"].is_boolean()) return InvalidArgument("thinking must be a boolean");
    thinking = j["thinking"].get<bool>();
  }
  DI_RETURN_IF_ERROR(api::AttachGrammar(e.structured.get(), ConstraintFields(j), thinking, &r));
  job->samples.resize(static_cast<size_t>(r.params.n));
  // Every sample gets its own text (stop strings are checked per sample).
  DI_ASSIGN_OR_RETURN(job->text, api::RequestText::Attach(e.tokenizer.get(), true, &r));
  return r;
}

ordered_json SampleJson(const engine::SampleResult& s) {
  ordered_json o;
  o["id"] = s.token;
  o["logprob"] = s.logprob;
  ordered_json top = ordered_json::array();
  for (const auto& t : s.top) top.push_back({{"id", t.token}, {"logprob", t.logprob}});
  o["top_logprobs"] = top;
  return o;
}

ordered_json SampleLine(const SampleState& s, bool logprobs, bool has_text) {
  ordered_json o;
  o["ids"] = s.ids;
  if (has_text) o["text"] = s.text;
  o["finish_reason"] = engine::FinishReasonName(*s.finish);
  if (logprobs) {
    ordered_json lp = ordered_json::array();
    for (const auto& r : s.samples) lp.push_back(SampleJson(r));
    o["logprobs"] = lp;
  }
  return o;
}

// The output line of a finished job: one sample's fields at the top level, n samples under
// "samples"; an error of any sample makes the line an error line.
void FinishLine(Job* job, const engine::SamplingParams& params, int64_t prompt_len) {
  for (const SampleState& s : job->samples) {
    if (*s.finish == engine::FinishReason::kError) {
      job->result["error"] = s.error.ToString();
      return;
    }
  }
  if (job->samples.size() == 1) {
    const ordered_json one = SampleLine(job->samples[0], params.logprobs, job->text != nullptr);
    for (const auto& [k, v] : one.items()) job->result[k] = v;
  } else {
    ordered_json all = ordered_json::array();
    for (const SampleState& s : job->samples)
      all.push_back(SampleLine(s, params.logprobs, job->text != nullptr));
    job->result["samples"] = all;
  }
  job->result["seed"] = job->seed;
  job->result["prompt_tokens"] = prompt_len;
  job->result["cached_tokens"] = job->cached_tokens;
  if (params.prompt_logprobs) {
    ordered_json lp = ordered_json::array({nullptr});  // the first prompt token has none
    for (const auto& r : job->prompt_logprobs) lp.push_back(SampleJson(r));
    job->result["prompt_logprobs"] = lp;
  }
}

}  // namespace

StatusOr<LinePrompt> ReadLinePrompt(const LoadedEngine& e, const std::string& line) {
  DI_ASSIGN_OR_RETURN(ordered_json j, ParseObject(line));
  LinePrompt p;
  DI_ASSIGN_OR_RETURN(engine::SamplingParams params,
                      api::SamplingParamsFromJson(nlohmann::json::parse(line)));
  p.prompt_logprobs = params.prompt_logprobs;
  DI_ASSIGN_OR_RETURN(p.ids, PromptIds(e, j));
  return p;
}

StatusOr<std::vector<std::string>> RunBatchLines(LoadedEngine& e,
                                                 const std::vector<BatchLine>& lines) {
  std::vector<std::unique_ptr<Job>> jobs;
  for (const BatchLine& batch_line : lines) {
    const std::string& line = batch_line.text;
    auto job = std::make_unique<Job>();
    job->result["index"] = batch_line.index;
    Job* raw = job.get();
    jobs.push_back(std::move(job));
    StatusOr<engine::Request> r = ParseLine(e, line, raw);
    if (!r.ok()) {
      raw->result["error"] = r.status().ToString();
      continue;
    }
    const engine::SamplingParams params = r->params;
    const int64_t prompt_len = static_cast<int64_t>(r->prompt.size());
    // The same callback serves every sample: outputs carry their sample index.
    r->on_output = [raw, params, prompt_len](const engine::RequestOutput& o) {
      SampleState& s = raw->samples[static_cast<size_t>(o.sample_index)];
      s.ids.insert(s.ids.end(), o.new_tokens.begin(), o.new_tokens.end());
      if (raw->text) {
        api::SampleText& text = raw->text->sample(o.sample_index);
        if (o.finished) text.Finish();
        s.text += text.Take();
      }
      if (params.logprobs) s.samples.insert(s.samples.end(), o.samples.begin(), o.samples.end());
      if (!o.prompt_logprobs.empty()) raw->prompt_logprobs = o.prompt_logprobs;
      if (!o.finished) return;
      s.finish = o.finished;
      s.error = o.error;
      raw->seed = o.seed;
      raw->cached_tokens = std::max(raw->cached_tokens, o.prefix_hit_tokens);
      for (const SampleState& other : raw->samples) {
        if (!other.finish) return;
      }
      FinishLine(raw, params, prompt_len);
    };
    auto id = e.engine->Add(*std::move(r));
    if (!id.ok()) raw->result["error"] = id.status().ToString();
  }
  DI_RETURN_IF_ERROR(e.RunUntilIdle());
  std::vector<std::string> out;
  out.reserve(jobs.size());
  for (const auto& job : jobs) out.push_back(JsonLine(job->result));
  return out;
}

std::vector<BatchLine> ReadBatchLines(std::istream& in) {
  std::vector<BatchLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back({static_cast<int64_t>(lines.size()), line});
  }
  return lines;
}

Status RunBatch(LoadedEngine& e, std::istream& in, std::ostream& out) {
  DI_ASSIGN_OR_RETURN(std::vector<std::string> results, RunBatchLines(e, ReadBatchLines(in)));
  for (const std::string& r : results) out << r << "\n";
  out.flush();
  return Status::Ok();
}

Status GenerateBatch(const std::string& model_dir, const std::string& tokenizer_dir,
                     const EngineFlags& flags, const std::string& batch_file) {
  DI_ASSIGN_OR_RETURN(LoadedEngine e, LoadEngine(model_dir, tokenizer_dir, flags));
  if (dist::MpiWorld::Instance().distributed()) return RunDistributedBatch(e, batch_file);
  if (batch_file == "-") return RunBatch(e, std::cin, std::cout);
  std::ifstream in(batch_file);
  if (!in) return NotFound("cannot open " + batch_file);
  return RunBatch(e, in, std::cout);
}

}  // namespace deepinfer::tools
