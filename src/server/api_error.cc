#include "server/api_error.h"

namespace deepinfer::server {

ApiError BadRequest(std::string message, std::string param) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError ErrorFromStatus(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
      e.http_status = 400;
      break;
    case StatusCode::kUnimplemented:
      e.http_status = 400;
      e.code = "not_supported";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      break;
    default:
      e.http_status = 500;
      break;
  }
  return e;
}

const char* OpenAiErrorType(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable";
    default:
      return "server_error";
  }
}

const char* AnthropicErrorType(int http_status) {
  switch (http_status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

nlohmann::json ErrorBody(ApiStyle style, const ApiError& error) {
  if (style == ApiStyle::kAnthropic) {
    return {
        {"type", "error"},
        {"error", {{"type", AnthropicErrorType(error.http_status)}, {"message", error.message}}}};
  }
  nlohmann::json e = {{"message", error.message},
                      {"type", OpenAiErrorType(error.http_status)},
                      {"param", nullptr},
                      {"code", nullptr}};
  if (!error.param.empty()) e["param"] = error.param;
  if (!error.code.empty()) e["code"] = error.code;
  return {{"error", e}};
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace deepinfer::server
