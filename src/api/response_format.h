#pragma once
// The wire form of a request's response_format between the API parsers and the grammar compiler
// (api/structured_outputs.h). Depends on nlohmann::json only, so the request parsers (and their
// fuzz target) use it without the structured-output layer.

#include <nlohmann/json.hpp>

namespace deepinfer::api {

// A request's response_format as the constraint carries it. The constraint is a nlohmann::json,
// which sorts object keys, and a schema's property order is the order its properties are
// generated in: a json_schema's schema also travels as its JSON text in the request's own key
// order (json_schema.schema_text), which FromRequest compiles.
nlohmann::json ResponseFormatField(const nlohmann::ordered_json& response_format);

}  // namespace deepinfer::api
