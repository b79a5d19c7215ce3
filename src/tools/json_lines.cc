#include "tools/json_lines.h"

#include <cstdio>
#include <istream>
#include <ostream>

#include "tokenizer/chat/python_json.h"

namespace deepinfer::tools {

namespace {
constexpr int kMaxNesting = 256;
}

std::string JsonLine(const nlohmann::ordered_json& value) {
  const std::string raw = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    const auto next = [&](size_t k) {
      return i + k < raw.size() ? static_cast<unsigned char>(raw[i + k]) : 0;
    };
    unsigned code = 0;
    size_t len = 0;
    if (c == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) {
      code = next(1);
      len = 2;
    } else if (c == 0xE2 && next(1) == 0x80 && (next(2) == 0xA8 || next(2) == 0xA9)) {
      code = 0x2000 | (next(2) - 0x80);
      len = 3;
    } else if (c == 0xEF && next(1) == 0xBB && next(2) == 0xBF) {
      code = 0xFEFF;
      len = 3;
    }
    if (len == 0) {
      out.push_back(raw[i]);
      continue;
    }
    // These code points only occur inside strings of the dump, where an escape is equivalent.
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", code);
    out += buf;
    i += len - 1;
  }
  return out;
}

void RunJsonLines(std::istream& in, std::ostream& out, const JsonLineHandler& handler) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    nlohmann::ordered_json result;
    if (tokenizer::MaxJsonNesting(line) > kMaxNesting) {
      result = {{"error", "input line nests deeper than " + std::to_string(kMaxNesting)}};
    } else {
      const auto record = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_discarded() || !record.is_object()) {
        result = {{"error", "input line is not a JSON object"}};
      } else {
        StatusOr<nlohmann::ordered_json> answer = handler(record);
        result = answer.ok() ? std::move(answer).value()
                             : nlohmann::ordered_json{{"error", answer.status().message()}};
      }
    }
    out << JsonLine(result) << '\n';
    out.flush();
  }
}

}  // namespace deepinfer::tools
