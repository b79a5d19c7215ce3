// `deepinfer serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key KEY]
//  [--served-model-name NAME] [--generation-config auto|off|PATH] [engine flags]`: the OpenAI- and
//  Anthropic-compatible HTTP server
// (docs/server.md). Binds loopback by default; --api-key or DEEPINFER_API_KEY turns on Bearer
// auth for every route but /health. SIGINT / SIGTERM drain in-flight requests and exit 0.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "api/generation_config.h"
#include "dist/expert_exchange_mpi.h"
#include "dist/mpi_world.h"
#include "server/engine_loop.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/pd_handoff.h"
#include "server/rank_hub.h"
#include "server/rank_worker.h"
#include "server/server_context.h"
#include "tools/cli.h"
#include "tools/engine_setup.h"
#include "tools/instance_fingerprint.h"

namespace deepinfer::tools {
namespace {

struct ServeArgs {
  std::string model_dir;
  std::string tokenizer_dir;
  std::string served_name;
  server::ServerOptions server;
  std::string max_body = "8M";
  int64_t max_pending = 256;
  EngineFlags engine;
  // Prefill/decode disaggregation (docs/disaggregation.md).
  std::string role = "both";
  std::string pd_host;  // default: --host
  int pd_port = -1;     // KV hand-off listener; -1 = none (decode: any free port)
  std::string generation_config = "auto";  // auto | off | a file or folder
};

// The sampling defaults --generation-config names: auto = the model folder's
// generation_config.json when it has one, off = the engine's own, else a file or a folder
// holding one (which must exist). Says at start-up which it uses.
StatusOr<engine::SamplingParams> SamplingDefaults(const ServeArgs& a) {
  if (a.generation_config == "off") return engine::SamplingParams{};
  const bool automatic = a.generation_config == "auto";
  StatusOr<api::GenerationDefaults> d =
      api::LoadGenerationConfig(automatic ? a.model_dir : a.generation_config);
  if (!d.ok()) {
    if (automatic && d.status().code() == StatusCode::kNotFound) return engine::SamplingParams{};
    return d.status();
  }
  if (!d->summary.empty()) {
    std::fprintf(stderr,
                 "deepinfer serve: sampling defaults from %s: %s (a request's own fields take "
                 "precedence; --generation-config off ignores them)\n",
                 d->file.c_str(), d->summary.c_str());
  }
  return d->params;
}

// The KV hand-off endpoint of a --role prefill|decode instance (or both with --pd-port);
// null for a plain instance.
StatusOr<std::unique_ptr<server::PdEndpoint>> MakePdEndpoint(const ServeArgs& a,
                                                             server::EngineLoop* loop,
                                                             const std::string& fingerprint) {
  if (a.role == "both" && a.pd_port < 0) return std::unique_ptr<server::PdEndpoint>();
  int port = a.pd_port;
  if (a.role == "decode" && port < 0) port = 0;
  if (a.role == "prefill") port = -1;
  return server::PdEndpoint::Create(loop, fingerprint,
                                    a.pd_host.empty() ? a.server.host : a.pd_host, port);
}

// Says at start-up what the model is: a folder made by scripts/default-model.sh carries a
// RANDOM_WEIGHTS note (--random) or the trained model's MODEL_CARD.md, whose first paragraph
// (after its title) is printed.
void DescribeModel(const std::string& model_dir) {
  std::ifstream note(model_dir + "/RANDOM_WEIGHTS");
  if (note) {
    std::string line;
    std::getline(note, line);
    std::fprintf(stderr,
                 "deepinfer serve: NOTE: this model has RANDOM weights (%s); its output is "
                 "meaningless text. It exists to exercise the server end to end.\n",
                 line.c_str());
    return;
  }
  std::ifstream card(model_dir + "/MODEL_CARD.md");
  if (!card) return;
  std::string line, paragraph;
  while (std::getline(card, line)) {
    if (line.empty() || line[0] == '#') {
      if (!paragraph.empty()) break;
      continue;
    }
    paragraph += (paragraph.empty() ? "" : " ") + line;
  }
  if (!paragraph.empty()) {
    std::fprintf(stderr, "deepinfer serve: model: %s (%s/MODEL_CARD.md)\n", paragraph.c_str(),
                 model_dir.c_str());
  }
}

std::string CurlExample(const std::string& url, const std::string& model, bool auth) {
  std::string s = "curl " + url + "/v1/chat/completions -H 'Content-Type: application/json'";
  if (auth) s += " -H \"Authorization: Bearer $DEEPINFER_API_KEY\"";
  s += " -d '{\"model\": \"" + model +
       "\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello!\"}], \"max_tokens\": 32}'";
  return s;
}

// One rank's load as /metrics shows it (the loop thread, between steps).
server::RankSnapshot DescribeRank(const LoadedEngine& e) {
  server::RankSnapshot r;
  const engine::EngineStats stats = e.engine->stats();
  r.running = stats.running;
  r.waiting = stats.waiting;
  r.kv_pages_used = stats.kv.used;
  r.kv_pages_capacity = stats.kv.capacity;
  r.prefix_queries = stats.kv.prefix_queries;
  r.prefix_hits = stats.kv.prefix_hits;
  r.tails_continued = stats.tails_continued;
  if (e.experts) {
    const dist::ExpertParallelStats& ep = e.experts->stats();
    r.rows_by_layer = ep.rows_by_layer;
    r.exchange_bytes = ep.bytes_sent + ep.bytes_received;
    r.exchange_seconds = ep.exchange_seconds;
  }
  return r;
}

// A rank other than 0 of a server over MPI ranks: no HTTP; its engine runs the requests rank 0
// places here (server/rank_worker.h). Every step ends with the expert exchange (expert parallel)
// and the exchange with rank 0, as rank 0's steps do, until rank 0 stops.
// Context parallelism over the ranks (tools/context_parallel_setup.h): null when off.
std::function<bool(const engine::Request&)> ContextSplits(LoadedEngine& e) {
  if (!e.context) return nullptr;
  return [&e](const engine::Request& r) {
    // A prefill leg's rows belong to a longer prompt than its own (page_handoff.h).
    return r.leg_of_prompt_len == 0 && e.context->Splits(e, r.prompt);
  };
}
std::function<void(const server::ContextJob&)> ContextPrefill(LoadedEngine& e) {
  if (!e.context) return nullptr;
  return [&e](const server::ContextJob& job) {
    e.context->Prefill(e, job.prompt, job.prompt_logprobs, job.decoder);
  };
}

Status ServeRank(LoadedEngine& e, const std::string& fingerprint) {
  std::signal(SIGTERM, SIG_IGN);  // rank 0 drains, then ends the rounds
  std::signal(SIGINT, SIG_IGN);
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  server::RankWorker worker(
      {.engine = e.engine.get(),
       .tokenizer = e.tokenizer.get(),
       .structured = e.structured.get(),
       .exchange =
           [&world](const std::vector<std::string>& out) { return world.ExchangeWithRoot(out); },
       .describe = [&e] { return DescribeRank(e); },
       .fingerprint = fingerprint,
       .prefill = ContextPrefill(e)});
  for (;;) {
    if (!e.engine->idle()) {
      if (Status s = e.engine->Step(); !s.ok()) {
        std::fprintf(stderr, "serve (rank %d): engine step failed: %s\n", world.rank(),
                     s.ToString().c_str());
      }
    }
    if (e.experts) {
      DI_RETURN_IF_ERROR(e.experts->EndStep(!e.engine->idle()).status());
      if (e.experts->stopped()) return Status::Ok();
    }
    DI_ASSIGN_OR_RETURN(const bool go_on, worker.Exchange());
    if (!go_on) {
      if (e.context)
        std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.context->Report().c_str());
      return Status::Ok();
    }
  }
}

Status RunServe(ServeArgs& a) {
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  if (a.server.api_key.empty()) {
    if (const char* env = std::getenv("DEEPINFER_API_KEY")) a.server.api_key = env;
  }
  DI_ASSIGN_OR_RETURN(a.server.max_body_bytes, ParseBytes(a.max_body));
  DescribeModel(a.model_dir);
  DI_ASSIGN_OR_RETURN(const engine::SamplingParams sampling_defaults, SamplingDefaults(a));
  std::fprintf(stderr, "deepinfer serve: loading %s\n", a.model_dir.c_str());
  DI_ASSIGN_OR_RETURN(LoadedEngine e, LoadEngine(a.model_dir, a.tokenizer_dir, a.engine));
  DI_ASSIGN_OR_RETURN(const std::string fingerprint, InstanceFingerprint(a.model_dir, e, a.engine));
  if (world.rank() != 0) return ServeRank(e, fingerprint);
  if (!e.draft_vocab_source.empty()) {
    std::fprintf(stderr, "deepinfer serve: DSpark drafts rank %zu of %lld token ids (%s)\n",
                 e.runner->draft_vocab_size(), static_cast<long long>(e.runner->vocab_size()),
                 e.draft_vocab_source.c_str());
  }
  std::unique_ptr<server::RankHub> hub;
  if (world.distributed()) {
    hub = std::make_unique<server::RankHub>(server::RankHubOptions{
        .n_ranks = world.size(),
        .max_context = e.runner->max_positions(),
        .exchange =
            [&world](const std::vector<std::string>& out) { return world.ExchangeWithRoot(out); },
        .describe = [&e] { return DescribeRank(e); },
        .page_tokens = e.runner->page_tokens(),
        .prompt_sensitive = e.runner->prompt_sensitive(),
        .cache_blocks = e.engine->stats().kv.capacity,
        .placement = {},  // the default thresholds
        .splits = ContextSplits(e),
        .prefill = ContextPrefill(e)});
  }
  // However rank 0 leaves (a start-up error, a bind failure, a stop), the other ranks' serving
  // loops end, once: the expert exchange's Stop round, or the hub's stop message.
  bool ranks_stopped = !world.distributed();
  const auto stop_ranks = [&] {
    if (ranks_stopped) return;
    ranks_stopped = true;
    if (e.experts) {
      e.experts->Stop();
    } else {
      hub->Stop();
    }
  };
  struct StopRanks {
    std::function<void()> stop;
    ~StopRanks() { stop(); }
  } stop_guard{stop_ranks};
  if (!e.tokenizer) {
    return InvalidArgument(
        "serve needs a tokenizer: the model folder has no tokenizer.json "
        "(give --tokenizer DIR)");
  }
  server::EngineLoopOptions lo;
  lo.max_pending = a.max_pending;
  if (e.experts) lo.after_step = [&e] { return e.experts->EndStep(false).status(); };
  if (world.distributed()) lo.on_exit = stop_ranks;
  lo.hub = hub.get();
  server::EngineLoop loop(e.engine.get(), lo);
  server::Metrics metrics;
  server::ServerContext ctx;
  ctx.loop = &loop;
  ctx.tokenizer = e.tokenizer.get();
  ctx.metrics = &metrics;
  ctx.model_name = a.served_name.empty()
                       ? std::filesystem::path(a.model_dir).lexically_normal().filename().string()
                       : a.served_name;
  if (ctx.model_name.empty()) ctx.model_name = "deepinfer";
  ctx.max_context = e.runner->max_positions();
  ctx.vocab_size = e.runner->vocab_size();
  ctx.eos_id = e.runner->eos_token_id();
  ctx.created = static_cast<int64_t>(std::time(nullptr));
  ctx.sampling_defaults = sampling_defaults;
  ctx.structured = e.structured.get();  // null: requests with structured outputs get 400
  ctx.fingerprint = fingerprint;
  ctx.role = a.role;
  ctx.page_tokens = e.runner->page_tokens();
  ctx.prompt_sensitive = e.runner->prompt_sensitive();
  DI_ASSIGN_OR_RETURN(std::unique_ptr<server::PdEndpoint> pd,
                      MakePdEndpoint(a, &loop, ctx.fingerprint));
  ctx.pd = pd.get();
  const bool auth = !a.server.api_key.empty();
  a.server.on_listening = [&](const std::string& host, uint16_t port) {
    const std::string url = "http://" + host + ":" + std::to_string(port);
    std::printf("deepinfer serve: listening on %s (model \"%s\", context %lld tokens%s)\n",
                url.c_str(), ctx.model_name.c_str(), static_cast<long long>(ctx.max_context),
                auth ? ", API key required" : "");
    if (ctx.pd != nullptr) {
      std::printf("role %s; KV hand-off %s; fingerprint %s\n", ctx.role.c_str(),
                  ctx.pd->address().empty() ? "sender only" : ctx.pd->address().c_str(),
                  ctx.fingerprint.c_str());
    }
    std::printf("try:\n  %s\n", CurlExample(url, ctx.model_name, auth).c_str());
    std::fflush(stdout);
  };
  loop.Start();
  Status s = server::Serve(ctx, a.server);  // stops the loop before returning
  loop.Stop();
  if (e.context) std::fprintf(stderr, "rank 0: %s\n", e.context->Report().c_str());
  if (s.ok()) std::fprintf(stderr, "deepinfer serve: stopped\n");
  return s;
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  CLI::App* cmd =
      app.add_subcommand("serve", "OpenAI- and Anthropic-compatible HTTP server (docs/server.md)");
  auto a = std::make_shared<ServeArgs>();
  cmd->add_option("--model", a->model_dir, "model folder (with tokenizer.json)")->required();
  cmd->add_option("--tokenizer", a->tokenizer_dir, "tokenizer folder (default: the model folder)");
  cmd->add_option("--host", a->server.host, "address to bind (default 127.0.0.1)");
  cmd->add_option("--port", a->server.port, "port (0 = any free port)");
  cmd->add_option("--api-key", a->server.api_key,
                  "require this Bearer key on every route but /health (or DEEPINFER_API_KEY)");
  cmd->add_option("--served-model-name", a->served_name,
                  "model name in the API (default: the model folder's name)");
  cmd->add_option("--max-pending", a->max_pending,
                  "most requests in the server at once; more get 429")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-body", a->max_body,
                  "largest request body (bytes, or 512K, 8M); more get 413");
  cmd->add_option("--drain-timeout", a->server.drain_timeout_s,
                  "seconds to let in-flight requests finish on SIGTERM before cancelling them");
  cmd->add_option("--role", a->role,
                  "prefill/decode disaggregation (docs/disaggregation.md): prefill (computes "
                  "prompts for decode instances), decode (takes their pages over UCX), both")
      ->check(CLI::IsMember({"prefill", "decode", "both"}));
  cmd->add_option("--pd-host", a->pd_host, "address of the KV hand-off listener (default --host)");
  cmd->add_option("--pd-port", a->pd_port,
                  "port of the KV hand-off listener (UCX; decode default: any free port)");
  cmd->add_option("--generation-config", a->generation_config,
                  "sampling defaults for the fields a request leaves out: auto (the model "
                  "folder's generation_config.json, if any), off (the engine's), or a "
                  "generation_config.json / a folder holding one")
      ->capture_default_str();
  AddEngineFlags(cmd, &a->engine);
  cmd->callback([a, exit_code] {
    const Status s = RunServe(*a);
    if (!s.ok()) {
      std::fprintf(stderr, "serve: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
