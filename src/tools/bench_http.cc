#include "tools/bench_http.h"

#include <nlohmann/json.hpp>

#include "server/asio.h"

namespace deepinfer::tools {
namespace {

namespace net = server::net;
namespace beast = server::beast;
namespace http = server::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

http::request<http::string_body> MakeRequest(http::verb verb, const HttpEndpoint& ep,
                                             const std::string& path, const std::string& api_key) {
  http::request<http::string_body> req{verb, ep.base_path + path, 11};
  req.set(http::field::host, ep.host + ":" + ep.port);
  req.set(http::field::user_agent, "deepinfer-bench-serve");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  return req;
}

}  // namespace

StatusOr<HttpEndpoint> ParseBaseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return InvalidArgument("--base-url must start with http:// (got '" + url + "')");
  }
  std::string rest = url.substr(scheme.size());
  HttpEndpoint ep;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    ep.base_path = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    ep.host = rest;
    ep.port = "80";
  } else {
    ep.host = rest.substr(0, colon);
    ep.port = rest.substr(colon + 1);
  }
  if (ep.host.empty() || ep.port.empty() ||
      ep.port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("--base-url: cannot read host and port from '" + url + "'");
  }
  return ep;
}

void TakeSseEvents(std::string* pending, double t_s, std::vector<SseEvent>* out) {
  while (true) {
    // An event ends at the first blank line: "\n\n" or "\r\n\r\n".
    size_t end = pending->find("\n\n");
    size_t sep = 2;
    const size_t crlf = pending->find("\r\n\r\n");
    if (crlf != std::string::npos && (end == std::string::npos || crlf < end)) {
      end = crlf;
      sep = 4;
    }
    if (end == std::string::npos) return;
    const std::string block = pending->substr(0, end);
    pending->erase(0, end + sep);
    std::string data;
    bool has_data = false;
    size_t pos = 0;
    while (pos <= block.size()) {
      size_t nl = block.find('\n', pos);
      if (nl == std::string::npos) nl = block.size();
      std::string line = block.substr(pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) == 0) {
        std::string v = line.substr(5);
        if (!v.empty() && v[0] == ' ') v.erase(0, 1);
        if (has_data) data += '\n';
        data += v;
        has_data = true;
      }
      pos = nl + 1;
    }
    if (has_data) out->push_back({t_s, std::move(data)});
  }
}

HttpStreamResult PostStreaming(const HttpEndpoint& ep, const std::string& path,
                               const std::string& json_body, const std::string& api_key,
                               double timeout_s) {
  HttpStreamResult r;
  const Clock::time_point t0 = Clock::now();
  try {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3)));
    stream.connect(resolver.resolve(ep.host, ep.port));
    http::request<http::string_body> req = MakeRequest(http::verb::post, ep, path, api_key);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    req.body() = json_body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(stream, buffer, parser);
    r.status = static_cast<int>(parser.get().result_int());
    const auto ct = parser.get()[http::field::content_type];
    const bool sse =
        std::string(ct.data(), ct.size()).find("text/event-stream") != std::string::npos;
    std::string pending;
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof(chunk);
      beast::error_code ec;
      http::read_some(stream, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw beast::system_error(ec);
      const size_t n = sizeof(chunk) - parser.get().body().size;
      if (n == 0) continue;
      if (sse) {
        pending.append(chunk, n);
        TakeSseEvents(&pending, Since(t0), &r.events);
      } else {
        r.body.append(chunk, n);
      }
    }
    r.end_s = Since(t0);
    if (sse && !pending.empty()) {
      pending += "\n\n";  // a last event without its blank line
      TakeSseEvents(&pending, r.end_s, &r.events);
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& ex) {
    r.error = ex.what();
    r.end_s = Since(t0);
  }
  return r;
}

StatusOr<std::string> HttpGet(const HttpEndpoint& ep, const std::string& path,
                              const std::string& api_key, double timeout_s) {
  try {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3)));
    stream.connect(resolver.resolve(ep.host, ep.port));
    http::request<http::string_body> req = MakeRequest(http::verb::get, ep, path, api_key);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (res.result_int() != 200) {
      return Internal("GET " + path + ": HTTP " + std::to_string(res.result_int()) + ": " +
                      res.body());
    }
    return res.body();
  } catch (const std::exception& ex) {
    return Internal("GET " + path + ": " + ex.what());
  }
}

RequestTiming TimingFromCompletionStream(const HttpStreamResult& r, std::string* why) {
  RequestTiming t;
  t.e2e_s = r.end_s;
  if (!r.error.empty()) {
    *why = "transport: " + r.error;
    return t;
  }
  if (r.status != 200) {
    *why = "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 300);
    return t;
  }
  bool done = false, got_text = false;
  double last_text = 0;
  int64_t text_events = 0, usage_tokens = -1;
  for (const SseEvent& e : r.events) {
    if (e.data == "[DONE]") {
      done = true;
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(e.data, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      *why = "an event is not JSON: " + e.data.substr(0, 200);
      return t;
    }
    if (j.contains("error")) {
      *why = "error event: " + j["error"].dump().substr(0, 300);
      return t;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      const auto& u = j["usage"];
      t.prompt_tokens = u.value("prompt_tokens", int64_t{0});
      usage_tokens = u.value("completion_tokens", int64_t{0});
      const auto details = u.find("prompt_tokens_details");
      if (details != u.end() && details->is_object()) {
        t.cached_tokens = details->value("cached_tokens", int64_t{0});
      }
    }
    if (!j.contains("choices") || !j["choices"].is_array()) continue;
    for (const auto& c : j["choices"]) {
      const auto it = c.find("text");
      if (it == c.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) continue;
      if (!got_text) {
        t.ttft_s = e.t_s;
        got_text = true;
      } else {
        t.itl_s.push_back(e.t_s - last_text);
      }
      last_text = e.t_s;
      ++text_events;
    }
  }
  if (!done) {
    *why = "the stream ended without [DONE]";
    return t;
  }
  t.output_tokens = usage_tokens >= 0 ? usage_tokens : text_events;
  if (!got_text) {
    if (t.output_tokens > 0) {
      *why = "no event carried text";
      return t;
    }
    t.ttft_s = t.e2e_s;  // nothing generated: the first (and last) byte is the answer
  }
  t.ok = true;
  return t;
}

}  // namespace deepinfer::tools
