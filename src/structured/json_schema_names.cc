#include "structured/json_schema_names.h"

#include <algorithm>
#include <regex>

#include "structured/char_class.h"

namespace deepinfer::structured {
namespace {

bool Ascii(const std::string& x) {
  return std::all_of(x.begin(), x.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

int64_t CodePoints(const std::string& x) {
  int64_t n = 0;
  for (size_t p = 0; p < x.size();) {
    if (DecodeUtf8(x, &p) < 0) ++p;  // a stray byte counts as one
    ++n;
  }
  return n;
}

}  // namespace

StatusOr<bool> PatternFinds(const std::string& pattern, const std::string& name) {
  if (!Ascii(pattern) || !Ascii(name)) {
    return InvalidArgument(
        "property-name patterns: only ASCII patterns and names are supported ('" + pattern + "')");
  }
  try {
    return std::regex_search(name, std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return InvalidArgument("property-name pattern '" + pattern + "' is not a regex we read");
  }
}

StatusOr<bool> NameMeets(const Json& s, const std::string& name) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object()) return InvalidArgument("'propertyNames' must be a schema");
  bool ok = true;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (k == "type") {
      const Json types = v.is_array() ? v : Json::array({v});
      ok &= std::find(types.begin(), types.end(), Json("string")) != types.end();
    } else if (k == "const") {
      ok &= v == Json(name);
    } else if (k == "enum") {
      ok &= v.is_array() && std::find(v.begin(), v.end(), Json(name)) != v.end();
    } else if (k == "minLength" || k == "maxLength") {
      if (!v.is_number()) return InvalidArgument("'" + k + "' must be a number");
      const int64_t n = CodePoints(name);
      ok &= k == "minLength" ? n >= v.get<double>() : n <= v.get<double>();
    } else if (k == "pattern") {
      if (!v.is_string()) return InvalidArgument("'pattern' must be a string");
      DI_ASSIGN_OR_RETURN(bool found, PatternFinds(v.get<std::string>(), name));
      ok &= found;
    } else if (!IsAnnotation(k)) {
      return InvalidArgument(
          "JSON Schema keyword 'propertyNames' is supported with type, const, "
          "enum, minLength, maxLength and pattern only (not '" +
          k + "')");
    }
  }
  return ok;
}

}  // namespace deepinfer::structured
