#include "server/pd_handoff.h"

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dist/ucx_rpc.h"
#include "engine/engine.h"
#include "engine/page_handoff.h"
#include "server/engine_loop.h"
#include "server/rank_hub.h"

namespace deepinfer::server {
namespace {

std::string ReplyError(const std::string& message) {
  return nlohmann::json{{"ok", false}, {"error", message}}.dump();
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

PdEndpoint::PdEndpoint(EngineLoop* loop, std::string fingerprint)
    : loop_(loop), fingerprint_(std::move(fingerprint)) {
  const char* fault = std::getenv("DEEPINFER_FAULT");
  corrupt_fault_ = fault != nullptr && std::string(fault) == "pd_corrupt_page";
}

PdEndpoint::~PdEndpoint() {
  server_.reset();  // no more bundles; a reply still pending on the loop goes nowhere
  blocking_.join();
}

StatusOr<std::unique_ptr<PdEndpoint>> PdEndpoint::Create(EngineLoop* loop, std::string fingerprint,
                                                         const std::string& listen_host,
                                                         int listen_port) {
  std::unique_ptr<PdEndpoint> pd(new PdEndpoint(loop, std::move(fingerprint)));
  DI_ASSIGN_OR_RETURN(pd->client_, dist::UcxRpcClient::Create());
  if (listen_port >= 0) {
    PdEndpoint* self = pd.get();
    DI_ASSIGN_OR_RETURN(pd->server_, dist::UcxRpcServer::Start(
                                         listen_host, static_cast<uint16_t>(listen_port),
                                         [self](const std::string& wire,
                                                const std::function<void(std::string)>& reply) {
                                           self->Receive(wire, reply);
                                         }));
    pd->address_ = pd->server_->address();
  }
  return pd;
}

net::any_io_executor PdEndpoint::blocking_executor() { return blocking_.get_executor(); }

PdCounters PdEndpoint::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void PdEndpoint::Receive(const std::string& wire, const std::function<void(std::string)>& respond) {
  auto refuse = [this, &respond](const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.receive_failures;
    }
    respond(ReplyError(why));
  };
  StatusOr<engine::PageBundle> bundle = engine::DecodeBundle(wire);
  if (!bundle.ok()) return refuse(bundle.status().message());
  auto shared = std::make_shared<engine::PageBundle>(std::move(*bundle));
  const Status posted = loop_->Post([this, shared, respond](engine::Engine* engine) {
    if (engine == nullptr) {
      respond(ReplyError("the decode instance is shutting down"));
      return;
    }
    std::vector<engine::BlockKey> keys;
    for (const engine::PageBlock& b : shared->blocks) keys.push_back(b.key);
    RankHub* hub = loop_->hub_on_loop_thread();
    const int rank = hub != nullptr ? hub->PlacePages(keys) : 0;
    auto done = [this, respond](const StatusOr<engine::ImportResult>& r) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!r.ok()) {
        ++counters_.receive_failures;
        respond(ReplyError(r.status().message()));
        return;
      }
      ++counters_.bundles_received;
      counters_.pages_imported += r->imported;
      counters_.tails_held += r->tail_held ? 1 : 0;
      respond(nlohmann::json{{"ok", true},
                             {"imported", r->imported},
                             {"cached", r->cached},
                             {"dropped", r->dropped},
                             {"tail", r->tail_held}}
                  .dump());
    };
    if (rank != 0) {
      // Another rank of this instance imports it at the next exchange (rank_hub.h); only this
      // path needs the wire form again.
      hub->ShipPages(rank, engine::EncodeBundle(*shared), std::move(keys), std::move(done));
      return;
    }
    StatusOr<engine::ImportResult> r = engine->ImportPages(*shared, fingerprint_);
    if (r.ok() && hub != nullptr) hub->NotePages(0, keys);
    done(r);
  });
  if (!posted.ok()) refuse(posted.message());
}

StatusOr<engine::PageBundle> PdEndpoint::Export(
    const engine::Engine& engine, const std::vector<int32_t>& prompt,
    std::shared_ptr<const engine::SequenceTail> tail) const {
  return engine.ExportPromptPages(prompt, fingerprint_, std::move(tail));
}

StatusOr<HandoffReport> PdEndpoint::Send(engine::PageBundle bundle, int64_t prompt_tokens,
                                         const std::string& decode_address, double timeout_s,
                                         std::chrono::steady_clock::time_point started) {
  auto fail = [&](const std::string& why) -> Status {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.failures;
    return Internal("KV hand-off to decode instance " + decode_address + ": " + why);
  };
  HandoffReport report;
  report.prompt_tokens = prompt_tokens;
  report.pages = static_cast<int64_t>(bundle.blocks.size());
  if (corrupt_fault_ && !bundle.blocks.empty()) bundle.blocks[0].bytes[0] ^= 0x5a;
  const std::string wire = engine::EncodeBundle(bundle);
  report.bytes = static_cast<int64_t>(wire.size());
  StatusOr<std::string> reply = client_->Call(decode_address, wire, timeout_s);
  if (!reply.ok()) {
    const std::string pages =
        report.pages == 0 ? "an empty bundle" : "pages 0.." + std::to_string(report.pages - 1);
    return fail("transfer of " + pages + " failed: " + reply.status().message());
  }
  const nlohmann::json j = nlohmann::json::parse(*reply, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.value("ok", false)) {
    return fail(j.is_object() && j.contains("error") && j["error"].is_string()
                    ? j["error"].get<std::string>()
                    : "malformed reply");
  }
  report.imported = j.value("imported", int64_t{0});
  report.cached = j.value("cached", int64_t{0});
  report.dropped = j.value("dropped", int64_t{0});
  report.tail = j.value("tail", false);
  report.seconds = Since(started);
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.handoffs;
  counters_.bytes_sent += report.bytes;
  counters_.seconds += report.seconds;
  return report;
}

}  // namespace deepinfer::server
