// A TCP port number in decimal text: the one parse behind every "host:port" the project reads
// (the router's worker URLs, UCX hand-off addresses).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer {

// 1 .. 65535, all of `text` digits; nullopt otherwise.
inline std::optional<uint16_t> ParsePort(std::string_view text) {
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(port);
}

}  // namespace deepinfer
