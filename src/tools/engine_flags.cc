// The engine flags of `generate`, `serve` and `bench` on a CLI11 command (engine_setup.h).
#include <CLI/CLI.hpp>

#include "tools/engine_setup.h"

namespace deepinfer::tools {

void AddEngineFlags(CLI::App* cmd, EngineFlags* f) {
  cmd->add_option(
      "--kv-budget", f->kv_budget,
      "memory for the KV cache system: pages + per-sequence state (bytes, or 512M, 4G)");
  cmd->add_option("--max-running", f->max_running, "most sequences in a step")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prefill-chunk", f->prefill_chunk,
                  "most prompt tokens of one sequence per step")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-batch-tokens", f->max_batch_tokens, "token budget of a step")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--prefix-cache", f->prefix_cache, "reuse cached prompt pages: on or off")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--async-schedule", f->async_schedule,
                  "run the forward call while the previous step's tokens are delivered: on or off")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--mode", f->mode, "index-key mode: official or owner")
      ->check(CLI::IsMember({"official", "owner"}));
  cmd->add_option("--page-tokens", f->page_tokens, "positions per KV page (0 = default)");
  cmd->add_option("--decoder-replay", f->decoder_replay,
                  "layers after the last KV source run only on the last rows of a prefill "
                  "(approximate): off, on (window + 12) or a row count; needs --prefix-cache off");
  cmd->add_option("--spec", f->spec, "speculative decoding with the DSpark heads: dspark or off")
      ->check(CLI::IsMember({"dspark", "off"}));
  cmd->add_option("--spec-policy", f->spec_policy,
                  "verified draft length: cost (confidence + step-cost scheduler), fixed, "
                  "threshold")
      ->check(CLI::IsMember({"cost", "fixed", "threshold"}));
  cmd->add_option("--spec-length", f->spec_length,
                  "drafts per step with --spec-policy fixed (0 = the whole block)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--spec-threshold", f->spec_threshold,
                  "--spec-policy threshold: verify drafts while sigmoid(confidence) >= this")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--spec-draft-vocab", f->spec_draft_vocab,
                  "token ids DSpark drafts are ranked over (frequency-ranked drafting): auto "
                  "(the model folder's dspark_draft_vocab.json if present), all, or a JSON file "
                  "of ids; outputs never depend on it, only the acceptance and the draft's cost");
  cmd->add_option("--spec-draft-sampling", f->spec_draft_sampling,
                  "how DSpark drafts for sampled requests: coupled (drawn from the drafter's "
                  "distribution with the uniform the sampler will use at that position) or greedy; "
                  "outputs never depend on it, only the acceptance")
      ->check(CLI::IsMember({"coupled", "greedy"}));
  cmd->add_option("--expert-parallel", f->expert_parallel,
                  "under mpirun: spread the routed experts over the ranks (on) or load all of "
                  "them on every rank (off: attention data parallelism only)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--eplb-interval", f->eplb_interval,
                  "expert parallel: rebalance the experts over the ranks every N steps from the "
                  "measured load (0 = never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--eplb-redundant", f->eplb_redundant,
                  "expert parallel with EPLB: extra copies of the hottest experts per layer")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--context-parallel", f->context_parallel,
                  "under mpirun: split a prompt's prefill over the ranks (on: every prompt, auto: "
                  "prompts of --context-parallel-min-tokens or more); needs --expert-parallel off")
      ->check(CLI::IsMember({"on", "off", "auto"}));
  cmd->add_option("--context-parallel-min-tokens", f->context_parallel_min_tokens,
                  "--context-parallel auto: the shortest prompt split over the ranks")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--context-parallel-chunks", f->context_parallel_chunks,
                  "context parallel: chunks dealt round-robin to each rank (more: a shorter "
                  "pipeline fill)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--check-integrity", f->check_integrity,
                  "check every invariant of the page pool after every engine step (on/off; "
                  "slower; debug builds always do); a violation fails the step loudly")
      ->check(CLI::IsMember({"on", "off"}));
  AddJsonSchemaStrictFlag(cmd, &f->json_schema_strict);
  cmd->add_option("--grammar-precompute-ms", f->grammar_precompute_ms,
                  "structured outputs: time a newly compiled grammar (schema, regex, EBNF, tool "
                  "calls) spends building its token-mask entries before its request starts, so "
                  "that its first tokens find them built (0: each entry on first use; masks are "
                  "the same either way)")
      ->check(CLI::NonNegativeNumber);
}

void AddJsonSchemaStrictFlag(CLI::App* cmd, std::string* value) {
  cmd->add_option("--json-schema-strict", *value,
                  "JSON Schema constraints: on = one shape typed consumers parse (no keys beyond "
                  "the listed ones unless additionalProperties allows them, keys in schema order, "
                  "integers without a fraction; as xgrammar's strict mode); off = every instance "
                  "the specification accepts (extra keys where additionalProperties is absent, "
                  "small objects in any key order, 1.0 for an integer)")
      ->check(CLI::IsMember({"on", "off"}));
}

std::string EngineFlags::Describe() const {
  return "kv-budget=" + kv_budget + " max-running=" + std::to_string(max_running) +
         " prefill-chunk=" + std::to_string(prefill_chunk) +
         " max-batch-tokens=" + std::to_string(max_batch_tokens) + " prefix-cache=" + prefix_cache +
         " async-schedule=" + async_schedule + " mode=" + mode +
         " page-tokens=" + std::to_string(page_tokens) + " decoder-replay=" + decoder_replay +
         " spec=" + spec + " spec-policy=" + spec_policy +
         " spec-length=" + std::to_string(spec_length) +
         " spec-threshold=" + std::to_string(spec_threshold) +
         " spec-draft-vocab=" + spec_draft_vocab + " spec-draft-sampling=" + spec_draft_sampling +
         " expert-parallel=" + expert_parallel + " eplb-interval=" + std::to_string(eplb_interval) +
         " eplb-redundant=" + std::to_string(eplb_redundant) +
         " context-parallel=" + context_parallel +
         " context-parallel-min-tokens=" + std::to_string(context_parallel_min_tokens) +
         " context-parallel-chunks=" + std::to_string(context_parallel_chunks) +
         " json-schema-strict=" + json_schema_strict +
         " grammar-precompute-ms=" + std::to_string(grammar_precompute_ms);
}

}  // namespace deepinfer::tools
