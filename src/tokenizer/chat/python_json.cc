#include "tokenizer/chat/python_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"

namespace deepinfer::tokenizer {
namespace {

void AppendValue(const nlohmann::ordered_json& value, std::string* out) {
  using Type = nlohmann::ordered_json::value_t;
  switch (value.type()) {
    case Type::null:
    case Type::discarded:
      out->append("null");
      return;
    case Type::boolean:
      out->append(value.get<bool>() ? "true" : "false");
      return;
    case Type::number_integer:
      out->append(std::to_string(value.get<int64_t>()));
      return;
    case Type::number_unsigned:
      out->append(std::to_string(value.get<uint64_t>()));
      return;
    case Type::number_float:
      out->append(PyFloatRepr(value.get<double>()));
      return;
    case Type::string:
      AppendPyJsonQuoted(value.get_ref<const std::string&>(), out);
      return;
    case Type::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& item : value) {
        if (!first) out->append(", ");
        first = false;
        AppendValue(item, out);
      }
      out->push_back(']');
      return;
    }
    case Type::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out->append(", ");
        first = false;
        AppendPyJsonQuoted(key, out);
        out->append(": ");
        AppendValue(item, out);
      }
      out->push_back('}');
      return;
    }
    case Type::binary:
      break;
  }
  CHECK(false) << "PyJsonDumps: binary JSON values have no text form";
}

}  // namespace

std::string PyJsonDumps(const nlohmann::ordered_json& value) {
  std::string out;
  AppendValue(value, &out);
  return out;
}

void AppendPyJsonQuoted(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", u);
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string PyJsonQuote(std::string_view text) {
  std::string out;
  AppendPyJsonQuoted(text, &out);
  return out;
}

std::string PyFloatRepr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  // Shortest round-trip digits in scientific form: "[-]d[.ddd]e[+-]XX".
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  CHECK(ec == std::errc()) << "to_chars failed";
  std::string_view s(buf, end - buf);
  std::string out;
  if (s.front() == '-') {
    out.push_back('-');
    s.remove_prefix(1);
  }
  const size_t e_pos = s.find('e');
  CHECK(e_pos != std::string_view::npos) << s;
  std::string digits;
  for (char c : s.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  const int exponent = std::atoi(std::string(s.substr(e_pos + 1)).c_str());
  // Python (format_float_short, repr mode): the value is 0.DIGITS * 10^decpt; exponent notation
  // when decpt <= -4 or decpt > 16, else positional with at least one digit after the point.
  const int decpt = exponent + 1;
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    out.append(exp_buf);
  } else if (decpt <= 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-decpt), '0');
    out.append(digits);
  } else if (decpt >= n) {
    out.append(digits);
    out.append(static_cast<size_t>(decpt - n), '0');
    out.append(".0");
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(decpt), std::string::npos);
  }
  return out;
}

bool PyTruthy(const nlohmann::ordered_json& value) {
  using Type = nlohmann::ordered_json::value_t;
  switch (value.type()) {
    case Type::null:
    case Type::discarded:
      return false;
    case Type::boolean:
      return value.get<bool>();
    case Type::number_integer:
      return value.get<int64_t>() != 0;
    case Type::number_unsigned:
      return value.get<uint64_t>() != 0;
    case Type::number_float:
      return value.get<double>() != 0.0;
    case Type::string:
      return !value.get_ref<const std::string&>().empty();
    case Type::array:
    case Type::object:
      return !value.empty();
    case Type::binary:
      return !value.get_binary().empty();
  }
  return false;
}

int MaxJsonNesting(std::string_view json_text) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace deepinfer::tokenizer
