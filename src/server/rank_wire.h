// What rank 0 of a server over MPI ranks and another rank say to each other once per engine
// step (docs/scaleout.md "Serving over ranks"): rank 0 hands a rank the requests it placed there,
// the cancels of its clients and the KV hand-offs it placed there; the rank answers with
// Engine::Add's verdicts, the outputs its engine delivered, the hand-offs' Engine::ImportPages
// results, and a snapshot of its load for /metrics. Messages are MessagePack
// (nlohmann-json): floats travel as they are, so logprobs arrive bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/page_handoff.h"
#include "engine/request.h"
#include "engine/sampling/sampling_params.h"

namespace deepinfer::server {

// What a rank needs to rebuild an engine::Request a GenerationSession made: the structured-output
// fields and thinking flag give it its grammar (api::AttachGrammar), params.stop its stop check
// (api::RequestText); everything else is data.
// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann member; its move throws only bad_alloc
struct RemoteForm {
  nlohmann::json constraint;  // ChatRequest::constraint, or null
  bool thinking = false;
  // The prefill leg of PD (server/pd_handoff.h): the rank exports the prompt's cached pages as
  // the request ends (kLength or kStop) and sends them with its last output.
  bool export_pages = false;
  // Rank 0 only, never on the wire: where those pages go (before the last output is delivered).
  std::function<void(StatusOr<engine::PageBundle>)> on_pages;
};

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann member; its move throws only bad_alloc
struct RemoteRequest {
  uint64_t id = 0;  // rank 0's relay id
  std::vector<int32_t> prompt;
  engine::SamplingParams params;
  int64_t sample_index = 0;
  int priority = 0;
  bool speculative = true;
  int64_t leg_of_prompt_len = 0;  // engine::Request::leg_of_prompt_len
  RemoteForm form;
};

// One rank's load, as /metrics shows it per rank.
struct RankSnapshot {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_pages_used = 0;
  int64_t kv_pages_capacity = 0;
  int64_t prefix_queries = 0;          // prompt blocks looked up in the rank's prefix cache
  int64_t prefix_hits = 0;             // and found
  int64_t tails_continued = 0;         // requests that continued a handed-over sequence tail
  std::vector<int64_t> rows_by_layer;  // (row, expert) pairs this rank's experts ran, per layer
  int64_t exchange_bytes = 0;          // expert exchange bytes sent + received
  double exchange_seconds = 0.0;       // inside the expert exchange's MPI calls
};

// A page bundle for the rank's engine (engine::EncodeBundle's bytes, as the decode instance got
// them).
struct RemotePages {
  uint64_t id = 0;  // rank 0's relay id
  std::string wire;
};

// A prompt whose prefill every rank of the instance runs together (context parallelism,
// engine/context_parallel_prefill.h) for the request rank `decoder` runs (its prompt logprobs
// scored on the way when it asks for them).
struct ContextJob {
  std::vector<int32_t> prompt;
  int decoder = 0;
  std::optional<int32_t> prompt_logprobs;
};

struct ToRank {
  // The same list to every rank, run in order right after the exchange, before the requests
  // (one of which, on the decoding rank, continues the sequence).
  std::vector<ContextJob> context;
  std::vector<RemoteRequest> requests;
  std::vector<uint64_t> cancels;
  std::vector<RemotePages> pages;
  bool stop = false;  // rank 0 stops: the rank's serving loop ends
};

struct RemoteVerdict {
  uint64_t id = 0;
  Status status;
};

struct RemoteOutput {
  uint64_t id = 0;
  engine::RequestOutput output;  // request_id is the rank's own engine id
  // With export_pages, on the last output: the prompt's pages (engine::EncodeBundle), or why
  // they could not be exported.
  bool has_pages = false;
  Status pages_status;
  std::string pages;
};

struct RemoteImport {
  uint64_t id = 0;
  Status status;  // the bundle refused (malformed, fingerprint, checksum), else Ok
  engine::ImportResult result;
};

struct FromRank {
  std::vector<RemoteVerdict> verdicts;  // before any output of the same request
  std::vector<RemoteOutput> outputs;    // in delivery order
  std::vector<RemoteImport> imports;
  RankSnapshot snapshot;
};

std::string EncodeToRank(const ToRank& m);
std::string EncodeFromRank(const FromRank& m);
// DataLoss when the bytes are not such a message.
StatusOr<ToRank> DecodeToRank(std::string_view bytes);
StatusOr<FromRank> DecodeFromRank(std::string_view bytes);

}  // namespace deepinfer::server
