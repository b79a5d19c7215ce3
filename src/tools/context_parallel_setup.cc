#include "tools/context_parallel_setup.h"

#include <cstdio>
#include <cstdlib>

#include "dist/mpi_world.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

bool ContextParallelSetup::Splits(const LoadedEngine& e, std::span<const int32_t> prompt) const {
  return (every_prompt || static_cast<int64_t>(prompt.size()) >= min_tokens) &&
         engine::CheckContextParallelPrompt(*e.engine, prompt).ok();
}

void ContextParallelSetup::Prefill(LoadedEngine& e, std::span<const int32_t> prompt,
                                   std::optional<int32_t> prompt_logprobs, int decoder) {
  StatusOr<engine::ContextParallelReport> r = engine::ContextParallelPrefill(
      *e.runner, *e.engine, prompt, prompt_logprobs, decoder, *exchange, options);
  if (!r.ok()) {
    std::fprintf(stderr, "rank %d: context parallel prefill of a %zu-token prompt: %s\n",
                 exchange->rank(), prompt.size(), r.status().ToString().c_str());
    std::fflush(stderr);
    std::_Exit(1);  // the others wait on this rank: mpirun ends the job
  }
  ++prompts;
  if (exchange->rank() == decoder) ++decoded_here;
  computed_tokens += r->computed_tokens;
  prefix_tokens += r->prefix_tokens;
  bytes_sent += r->bytes_sent;
  seconds += r->seconds;
}

std::string ContextParallelSetup::Report() const {
  char line[256];
  std::snprintf(line, sizeof line,
                "context parallel: %lld prompts (%lld decoded here), %lld positions computed "
                "over the ranks, %lld from a cached prefix, %.1f KB sent, %.2f s",
                static_cast<long long>(prompts), static_cast<long long>(decoded_here),
                static_cast<long long>(computed_tokens), static_cast<long long>(prefix_tokens),
                static_cast<double>(bytes_sent) / 1e3, seconds);
  return line;
}

StatusOr<std::unique_ptr<ContextParallelSetup>> AttachContextParallel(const LoadedEngine& e,
                                                                      const EngineFlags& flags) {
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  if (flags.context_parallel == "off" || !world.distributed() || world.size() < 2) {
    return std::unique_ptr<ContextParallelSetup>();
  }
  if (flags.expert_parallel != "off") {
    return InvalidArgument(
        "--context-parallel needs --expert-parallel off: the ranks of a context-parallel "
        "prefill are at different layers, so each must hold every expert");
  }
  DI_RETURN_IF_ERROR(engine::CheckContextParallel(*e.runner, *e.engine));
  auto setup = std::make_unique<ContextParallelSetup>();
  setup->every_prompt = flags.context_parallel == "on";
  setup->min_tokens = flags.context_parallel_min_tokens;
  setup->options.chunks_per_rank = flags.context_parallel_chunks;
  setup->exchange = std::make_unique<dist::MpiContextExchange>();  // collective
  return setup;
}

}  // namespace deepinfer::tools
