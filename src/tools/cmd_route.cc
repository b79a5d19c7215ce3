// `deepinfer route --port P [--host H] --worker URL... [--prefill URL... --decode URL...]
//  [--policy cache-aware|power-of-two|round-robin] [--tokenizer DIR] [--api-key K]
//  [--worker-api-key K]`: one OpenAI- and Anthropic-compatible endpoint in front of N
// `deepinfer serve` workers (router/router.h; docs/server.md "Router"). --api-key (or
// DEEPINFER_API_KEY) guards the router as serve's guards a worker; --worker-api-key is what the
// router sends to the workers (default: the client's own credentials go through).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "dist/policy.h"
#include "router/router.h"
#include "tools/cli.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {
namespace {

struct RouteArgs {
  router::RouterOptions router;
  std::string policy = "cache-aware";
  std::string max_body = "8M";
  double health_interval_s = 1.0;
};

Status RunRoute(RouteArgs& a) {
  router::RouterOptions& o = a.router;
  if (o.http.api_key.empty()) {
    if (const char* env = std::getenv("DEEPINFER_API_KEY")) o.http.api_key = env;
  }
  DI_ASSIGN_OR_RETURN(o.http.max_body_bytes, ParseBytes(a.max_body));
  o.policy = *dist::ParsePolicyKind(a.policy);  // checked by CLI11
  o.health_check.interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(a.health_interval_s));
  const bool auth = !o.http.api_key.empty();
  const std::string policy = a.policy;
  const size_t n_workers = o.workers.size() + o.prefill.size() + o.decode.size();
  const bool pd = !o.prefill.empty();
  o.http.on_listening = [=](const std::string& host, uint16_t port) {
    std::printf("deepinfer route: listening on http://%s:%u (%zu workers%s, policy %s%s)\n",
                host.c_str(), port, n_workers, pd ? ", prefill/decode" : "", policy.c_str(),
                auth ? ", API key required" : "");
    std::fflush(stdout);
  };
  Status s = router::RunRouter(std::move(o));
  if (s.ok()) std::fprintf(stderr, "deepinfer route: stopped\n");
  return s;
}

}  // namespace

void RegisterRoute(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "route", "one OpenAI/Anthropic endpoint in front of N `deepinfer serve` workers");
  auto a = std::make_shared<RouteArgs>();
  router::RouterOptions& o = a->router;
  cmd->add_option("--host", o.http.host, "address to bind (default 127.0.0.1)");
  cmd->add_option("--port", o.http.port, "port (0 = any free port)")->required();
  cmd->add_option("--worker", o.workers, "a worker's URL (http://host:port), one or more");
  cmd->add_option(
      "--prefill", o.prefill,
      "prefill/decode mode: the prefill workers (with --decode; docs/disaggregation.md)");
  cmd->add_option("--decode", o.decode, "prefill/decode mode: the decode workers");
  cmd->add_option("--policy", a->policy,
                  "cache-aware (least in-flight + uncached prompt tokens), power-of-two, "
                  "round-robin (default cache-aware)")
      ->check(CLI::IsMember({"cache-aware", "power-of-two", "round-robin"}));
  cmd->add_option("--tokenizer", o.tokenizer_dir,
                  "tokenizer folder (the workers' model folder): cache-aware routing tokenizes "
                  "prompts to find the workers' cached pages");
  cmd->add_option("--api-key", o.http.api_key,
                  "require this Bearer key on every route but /health (or DEEPINFER_API_KEY)");
  cmd->add_option("--worker-api-key", o.worker_api_key,
                  "the key to send to the workers (default: the client's credentials)");
  cmd->add_option("--balance-abs-tokens", o.policy_options.balance_abs_tokens,
                  "cache-aware: in-flight token spread above which (with --balance-rel) the "
                  "least loaded worker gets the request (default 65536)");
  cmd->add_option("--balance-rel", o.policy_options.balance_rel,
                  "cache-aware: max/min in-flight ratio above which the load counts as uneven "
                  "(default 1.5)");
  cmd->add_option("--cache-threshold", o.policy_options.cache_threshold,
                  "cache-aware: a worker holding at least this fraction of the prompt gets it "
                  "unless the load is uneven (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--pd-min-prompt-tokens", o.pd_min_prompt_tokens,
                  "PD mode: shorter prompts go straight to a decode instance (0 = none do)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cache-blocks", o.cache_blocks,
                  "page-block keys the router lists per worker (LRU; default 65536)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-retries", o.retry.max_retries,
                  "tries on other workers when one fails before answering (default 2)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--health-interval", a->health_interval_s,
                  "seconds between health probes of each worker (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-body", a->max_body,
                  "largest request body (bytes, or 512K, 8M); more get 413");
  cmd->add_option("--drain-timeout", o.http.drain_timeout_s,
                  "seconds to let in-flight requests finish on SIGTERM before closing them");
  cmd->callback([a, exit_code] {
    const Status s = RunRoute(*a);
    if (!s.ok()) {
      std::fprintf(stderr, "route: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
