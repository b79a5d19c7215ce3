#include "structured/json_schema_formats.h"

namespace deepinfer::structured {
namespace {

constexpr const char* kDate =
    R"([12] [0-9]{3} "-" ()"
    R"(("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | )"
    R"(("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | )"
    R"("02" "-" ("0" [1-9] | "1" [0-9] | "2" [0-8])))";
constexpr const char* kTime =
    R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? )"
    R"(("Z" | [+\-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";
constexpr const char* kUuid =
    R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" )"
    R"([0-9a-fA-F]{12})";
constexpr const char* kEmail = R"([a-zA-Z0-9_%+\-]+ ("." [a-zA-Z0-9_%+\-]+)* "@" )"
                               R"([a-zA-Z0-9] [a-zA-Z0-9\-]* ("." [a-zA-Z0-9] [a-zA-Z0-9\-]*)+)";
constexpr const char* kOctet =
    R"(("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]))";
constexpr const char* kUri =
    R"([a-zA-Z] [a-zA-Z0-9+.\-]* ":" ([a-zA-Z0-9._~:/?#@!$&'()*+,;=\-] | "%" [0-9a-fA-F]{2})+)";

}  // namespace

StatusOr<std::string> FormatEbnf(const std::string& format) {
  if (format == "date") return "(" + std::string(kDate) + ")";
  if (format == "time") return "(" + std::string(kTime) + ")";
  if (format == "date-time") return "(" + std::string(kDate) + ") \"T\" (" + kTime + ")";
  if (format == "uuid") return "(" + std::string(kUuid) + ")";
  if (format == "email") return "(" + std::string(kEmail) + ")";
  if (format == "ipv4") {
    const std::string o = kOctet;
    return "(" + o + " \".\" " + o + " \".\" " + o + " \".\" " + o + ")";
  }
  if (format == "uri") return "(" + std::string(kUri) + ")";
  return InvalidArgument("string format '" + format + "' is not supported");
}

bool IsStandardFormat(const std::string& format) {
  static const char* const kStandard[] = {
      "date-time", "date",          "time", "duration",     "email",        "idn-email",
      "hostname",  "idn-hostname",  "ipv4", "ipv6",         "uri",          "uri-reference",
      "iri",       "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer",
      "regex"};
  for (const char* f : kStandard) {
    if (format == f) return true;
  }
  return false;
}

}  // namespace deepinfer::structured
