#include "api/sampling_params_json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace deepinfer::api {

using engine::kMaxTopLogprobs;
using engine::SamplingParams;

namespace {

// JSON field readers: an absent or null field leaves *out unchanged.

bool Present(const nlohmann::json& body, const char* field) {
  const auto it = body.find(field);
  return it != body.end() && !it->is_null();
}

Status TypeError(const char* field, const char* expected, const nlohmann::json& value) {
  return InvalidArgument(std::string(field) + " must be " + expected + ", got " +
                         value.type_name() + " " + value.dump());
}

Status ReadFloat(const nlohmann::json& body, const char* field, float* out) {
  if (!Present(body, field)) return Status::Ok();
  const nlohmann::json& v = body.at(field);
  if (!v.is_number()) return TypeError(field, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
    return InvalidArgument(std::string(field) + " must be a finite number, got " + v.dump());
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status ReadInt(const nlohmann::json& body, const char* field, int64_t lo, int64_t hi,
               int64_t* out) {
  if (!Present(body, field)) return Status::Ok();
  const nlohmann::json& v = body.at(field);
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) {
      return engine::ParamRangeError(field, v.dump(), "<= " + engine::ParamText(hi));
    }
    *out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    *out = v.get<int64_t>();
  } else {
    return TypeError(field, "an integer", v);
  }
  if (*out < lo || *out > hi) {
    return engine::ParamRangeError(
        field, v.dump(), "in [" + engine::ParamText(lo) + ", " + engine::ParamText(hi) + "]");
  }
  return Status::Ok();
}

Status ReadInt32(const nlohmann::json& body, const char* field, int32_t* out) {
  int64_t v = *out;
  DI_RETURN_IF_ERROR(ReadInt(body, field, std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max(), &v));
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

Status ReadBool(const nlohmann::json& body, const char* field, bool* out) {
  if (!Present(body, field)) return Status::Ok();
  const nlohmann::json& v = body.at(field);
  if (!v.is_boolean()) return TypeError(field, "a boolean", v);
  *out = v.get<bool>();
  return Status::Ok();
}

Status ReadStop(const nlohmann::json& body, std::vector<std::string>* out) {
  if (!Present(body, "stop")) return Status::Ok();
  const nlohmann::json& v = body.at("stop");
  if (v.is_string()) {
    *out = {v.get<std::string>()};
    return Status::Ok();
  }
  if (!v.is_array()) return TypeError("stop", "a string or a list of strings", v);
  out->clear();
  for (const auto& item : v) {
    if (!item.is_string()) return TypeError("stop", "a string or a list of strings", v);
    out->push_back(item.get<std::string>());
  }
  return Status::Ok();
}

Status ReadStopTokenIds(const nlohmann::json& body, std::vector<int32_t>* out) {
  if (!Present(body, "stop_token_ids")) return Status::Ok();
  const nlohmann::json& v = body.at("stop_token_ids");
  if (!v.is_array()) return TypeError("stop_token_ids", "a list of integers", v);
  out->clear();
  for (const auto& item : v) {
    if (!item.is_number_integer() || item.get<int64_t>() < 0 ||
        item.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument("stop_token_ids must hold token ids (integers in [0, 2^31)), got " +
                             item.dump());
    }
    out->push_back(static_cast<int32_t>(item.get<int64_t>()));
  }
  return Status::Ok();
}

Status ReadLogitBias(const nlohmann::json& body, std::vector<std::pair<int32_t, float>>* out) {
  if (!Present(body, "logit_bias")) return Status::Ok();
  const nlohmann::json& v = body.at("logit_bias");
  if (!v.is_object()) return TypeError("logit_bias", "an object of \"token id\": bias", v);
  out->clear();
  for (const auto& [key, bias] : v.items()) {
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 ||
        id > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument("logit_bias key \"" + key + "\" is not a token id");
    }
    if (!bias.is_number()) return TypeError("logit_bias value", "a number", bias);
    out->emplace_back(static_cast<int32_t>(id), static_cast<float>(bias.get<double>()));
  }
  std::sort(out->begin(), out->end());
  return Status::Ok();
}

}  // namespace

StatusOr<SamplingParams> SamplingParamsFromJson(const nlohmann::json& body,
                                                const SamplingParams& base) {
  if (!body.is_object()) return TypeError("the request", "a JSON object", body);
  SamplingParams p = base;
  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  DI_RETURN_IF_ERROR(ReadFloat(body, "temperature", &p.temperature));
  DI_RETURN_IF_ERROR(ReadInt32(body, "top_k", &p.top_k));
  if (p.top_k == -1) p.top_k = 0;
  DI_RETURN_IF_ERROR(ReadFloat(body, "top_p", &p.top_p));
  DI_RETURN_IF_ERROR(ReadFloat(body, "min_p", &p.min_p));
  DI_RETURN_IF_ERROR(ReadFloat(body, "repetition_penalty", &p.repetition_penalty));
  DI_RETURN_IF_ERROR(ReadFloat(body, "presence_penalty", &p.presence_penalty));
  DI_RETURN_IF_ERROR(ReadFloat(body, "frequency_penalty", &p.frequency_penalty));
  DI_RETURN_IF_ERROR(ReadLogitBias(body, &p.logit_bias));
  if (Present(body, "seed")) {
    const nlohmann::json& v = body.at("seed");
    if (v.is_number_unsigned()) {
      p.seed = v.get<uint64_t>();
    } else if (v.is_number_integer()) {
      p.seed = static_cast<uint64_t>(v.get<int64_t>());
    } else {
      return TypeError("seed", "an integer", v);
    }
  }
  DI_RETURN_IF_ERROR(ReadInt32(body, "n", &p.n));
  if (Present(body, "max_tokens")) {
    int64_t max_tokens = 0;
    DI_RETURN_IF_ERROR(ReadInt(body, "max_tokens", 1, kI64Max, &max_tokens));
    p.max_tokens = max_tokens;
  }
  DI_RETURN_IF_ERROR(ReadInt(body, "min_tokens", 0, kI64Max, &p.min_tokens));
  DI_RETURN_IF_ERROR(ReadBool(body, "ignore_eos", &p.ignore_eos));
  DI_RETURN_IF_ERROR(ReadStopTokenIds(body, &p.stop_token_ids));
  DI_RETURN_IF_ERROR(ReadStop(body, &p.stop));
  if (Present(body, "logprobs")) {
    const nlohmann::json& v = body.at("logprobs");
    if (v.is_boolean()) {
      p.logprobs = v.get<bool>();
    } else if (v.is_number_integer()) {  // completions API: logprobs = k
      int64_t k = 0;
      DI_RETURN_IF_ERROR(ReadInt(body, "logprobs", 0, kMaxTopLogprobs, &k));
      p.logprobs = true;
      p.top_logprobs = static_cast<int32_t>(k);
    } else {
      return TypeError("logprobs", "a boolean or an integer", v);
    }
  }
  DI_RETURN_IF_ERROR(ReadInt32(body, "top_logprobs", &p.top_logprobs));
  if (Present(body, "prompt_logprobs")) {
    int32_t k = 0;
    DI_RETURN_IF_ERROR(ReadInt32(body, "prompt_logprobs", &k));
    p.prompt_logprobs = k;
  }
  DI_RETURN_IF_ERROR(p.Validate(/*vocab=*/0));
  return p;
}

}  // namespace deepinfer::api
