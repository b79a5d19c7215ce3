// Errors as the two API families write them.
//   OpenAI:    {"error": {"message", "type", "param", "code"}}
//   Anthropic: {"type": "error", "error": {"type", "message"}}
// with the HTTP status that goes with them (400 bad request, 401 auth, 404 unknown route,
// 413 body too large, 429 queue full, 500 internal).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace deepinfer::server {

enum class ApiStyle { kOpenAi, kAnthropic };

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // OpenAI "param" (empty = null)
  std::string code;   // OpenAI "code" (empty = null)
};

ApiError BadRequest(std::string message, std::string param = "");
// A Status from parsing or from the engine: InvalidArgument, OutOfRange and Unimplemented are the
// client's fault (400); ResourceExhausted is 429; the rest is 500.
ApiError ErrorFromStatus(const Status& status);

// OpenAI "type" / Anthropic "error.type" for a status code.
const char* OpenAiErrorType(int http_status);
const char* AnthropicErrorType(int http_status);

nlohmann::json ErrorBody(ApiStyle style, const ApiError& error);

// JSON text with invalid UTF-8 replaced by U+FFFD (token pieces can split characters); never
// throws.
std::string DumpJson(const nlohmann::json& value);

}  // namespace deepinfer::server
