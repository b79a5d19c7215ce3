#include "tools/generate_batch.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

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

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann's json members are not noexcept-movable
struct Job {
  ordered_json result;  // filled when finished or refused
  std::vector<int32_t> ids;
  std::vector<engine::SampleResult> samples;
  std::shared_ptr<TextStream> text;
  bool done = false;
};

StatusOr<engine::Request> ParseLine(const LoadedEngine& e, const std::string& line, Job* job) {
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
  engine::Request r;
  DI_ASSIGN_OR_RETURN(r.params, engine::SamplingParamsFromJson(nlohmann::json::parse(line)));
  if (r.params.n != 1) return Unimplemented("n > 1 is not supported by generate --batch yet");
  if (r.params.prompt_logprobs) return Unimplemented("prompt_logprobs is not supported yet");
  if (j.contains("priority")) {
    if (!j["priority"].is_number_integer()) return InvalidArgument("priority must be an integer");
    r.priority = j["priority"].get<int>();
  }
  const bool has_text = j.contains("prompt"), has_ids = j.contains("prompt_ids");
  if (has_text == has_ids) return InvalidArgument("give exactly one of prompt and prompt_ids");
  if (has_text) {
    if (!j["prompt"].is_string()) return InvalidArgument("prompt must be a string");
    if (!e.tokenizer) return InvalidArgument("prompt text needs a tokenizer; use prompt_ids");
    DI_ASSIGN_OR_RETURN(r.prompt, e.tokenizer->Encode(j["prompt"].get<std::string>(), true));
  } else {
    if (!j["prompt_ids"].is_array()) return InvalidArgument("prompt_ids must be an array");
    for (const auto& v : j["prompt_ids"]) {
      if (!v.is_number_integer()) return InvalidArgument("prompt_ids must hold integers");
      r.prompt.push_back(v.get<int32_t>());
    }
  }
  bool thinking = false;
  if (j.contains("thinking")) {
    if (!j["thinking"].is_boolean()) return InvalidArgument("thinking must be a boolean");
    thinking = j["thinking"].get<bool>();
  }
  DI_RETURN_IF_ERROR(AttachGrammar(e, nlohmann::json::parse(line), thinking, &r));
  job->text = std::make_shared<TextStream>();
  DI_RETURN_IF_ERROR(AttachTextStream(e.tokenizer.get(), &r, job->text));
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

}  // namespace

Status RunBatch(LoadedEngine& e, std::istream& in, std::ostream& out) {
  std::vector<std::unique_ptr<Job>> jobs;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto job = std::make_unique<Job>();
    const int64_t index = static_cast<int64_t>(jobs.size());
    job->result["index"] = index;
    Job* raw = job.get();
    jobs.push_back(std::move(job));
    StatusOr<engine::Request> r = ParseLine(e, line, raw);
    if (r.ok()) {
      const bool logprobs = r->params.logprobs;
      const int64_t prompt_len = static_cast<int64_t>(r->prompt.size());
      r->on_output = [raw, logprobs, prompt_len, &e](const engine::RequestOutput& o) {
        raw->ids.insert(raw->ids.end(), o.new_tokens.begin(), o.new_tokens.end());
        if (logprobs) raw->samples.insert(raw->samples.end(), o.samples.begin(), o.samples.end());
        if (!o.finished) return;
        raw->done = true;
        if (*o.finished == engine::FinishReason::kError) {
          raw->result["error"] = o.error.ToString();
          return;
        }
        raw->result["ids"] = raw->ids;
        if (raw->text->detok) {
          if (!raw->text->stop_string_hit) raw->text->text += raw->text->detok->Finish();
          raw->result["text"] = raw->text->text;
        }
        raw->result["finish_reason"] = engine::FinishReasonName(*o.finished);
        raw->result["seed"] = o.seed;
        raw->result["prompt_tokens"] = prompt_len;
        raw->result["cached_tokens"] = o.prefix_hit_tokens;
        if (logprobs) {
          ordered_json lp = ordered_json::array();
          for (const auto& s : raw->samples) lp.push_back(SampleJson(s));
          raw->result["logprobs"] = lp;
        }
      };
      auto id = e.engine->Add(*std::move(r));
      if (!id.ok()) raw->result["error"] = id.status().ToString();
    } else {
      raw->result["error"] = r.status().ToString();
    }
  }
  DI_RETURN_IF_ERROR(e.engine->RunUntilIdle());
  for (const auto& job : jobs) out << JsonLine(job->result) << "\n";
  out.flush();
  return Status::Ok();
}

Status GenerateBatch(const std::string& model_dir, const std::string& tokenizer_dir,
                     const EngineFlags& flags, const std::string& batch_file) {
  DI_ASSIGN_OR_RETURN(LoadedEngine e, LoadEngine(model_dir, tokenizer_dir, flags));
  if (batch_file == "-") return RunBatch(e, std::cin, std::cout);
  std::ifstream in(batch_file);
  if (!in) return NotFound("cannot open " + batch_file);
  return RunBatch(e, in, std::cout);
}

}  // namespace deepinfer::tools
